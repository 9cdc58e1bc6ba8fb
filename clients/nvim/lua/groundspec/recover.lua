-- A server that exits unexpectedly (a crash, a kill) is started again, with
-- backoff, at most MAX_RESTARTS times a session; the user is told once, with
-- the log that has the server's last words (its stderr goes to the LSP log).
-- A server that was asked to stop (:LspStop, quitting Neovim) exits 0 and is
-- left alone.
local M = {}

M.MAX_RESTARTS = 3
M.BACKOFF_MS = { 500, 2000, 5000 }

local restarts = 0
local told = false

local function unexpected(code, signal)
  if vim.v.exiting ~= vim.NIL then
    return false -- Neovim is quitting
  end
  return (code ~= nil and code ~= 0) or (signal ~= nil and signal ~= 0)
end

--- The client's on_exit: `restart()` starts the server again for the buffers
--- (called on the main loop, after the backoff).
function M.on_exit(code, signal, restart)
  if not unexpected(code, signal) then
    return
  end
  local why = ("exited unexpectedly (code %s, signal %s)"):format(code, signal)
  local log = vim.lsp.get_log_path()
  restarts = restarts + 1
  if restarts > M.MAX_RESTARTS then
    vim.notify(
      ("groundspec: the server %s again; not restarting it after %d restarts. Its log: %s"):format(
        why,
        M.MAX_RESTARTS,
        log
      ),
      vim.log.levels.ERROR
    )
    return
  end
  if not told then
    told = true
    vim.notify(
      ("groundspec: the server %s; restarting it. Its log (please attach it to a bug report): %s"):format(
        why,
        log
      ),
      vim.log.levels.WARN
    )
  end
  vim.defer_fn(restart, M.BACKOFF_MS[restarts] or M.BACKOFF_MS[#M.BACKOFF_MS])
end

return M
