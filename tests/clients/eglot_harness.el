;;; eglot_harness.el --- Emacs + eglot against `groundspec serve', in batch mode -*- lexical-binding: t -*-
;;
;; emacs --batch -Q -l eglot_harness.el, with the environment:
;;   GS_SERVER_CMD  the server command as a JSON list, e.g. ["groundspec", "serve", "--fake"]
;;   GS_FILE        a Python file; point goes to the end of its last line
;;   GS_RESULT      where the JSON result is written: the server eglot connected to,
;;                  the completion candidates at point, and the buffer after
;;                  `completion-at-point' inserted the (single) candidate.
(require 'eglot)
(require 'python)
(require 'json)

(defun gs-harness-run ()
  (let ((command (json-parse-string (getenv "GS_SERVER_CMD") :array-type 'list)))
    (setq eglot-server-programs `((python-mode . ,command))
          eglot-sync-connect t
          eglot-connect-timeout 60
          eglot-autoshutdown t))
  (find-file (getenv "GS_FILE"))
  (python-mode)
  (goto-char (point-max))
  (skip-chars-backward "\n")
  (call-interactively #'eglot)
  (let* ((server (eglot-current-server))
         (capf (eglot-completion-at-point))
         (prefix (buffer-substring-no-properties (nth 0 capf) (nth 1 capf)))
         (candidates (all-completions prefix (nth 2 capf))))
    (completion-at-point)
    (let ((result `((server . ,(plist-get (eglot--server-info server) :name))
                    (candidates . ,(vconcat (mapcar #'substring-no-properties candidates)))
                    (buffer . ,(buffer-substring-no-properties (point-min) (point-max))))))
      (with-temp-file (getenv "GS_RESULT")
        (insert (json-encode result))))
    (eglot-shutdown server)))

(condition-case err
    (gs-harness-run)
  (error
   (message "eglot harness failed: %S" err)
   (kill-emacs 1)))
(kill-emacs 0)
