"""A server killed under VS Code (code-server) is started again by the extension's
error handler (clients/vscode/src/recovery.ts): the editor's text is intact, the user
is told once with the log one click away, and suggestions resume (fake engine)."""

from __future__ import annotations

import os
import signal
from collections.abc import Callable
from pathlib import Path

from . import vscode_workbench
from .vscode_workbench import VSCODE_MARKS, code_server, wait_for

pytestmark = VSCODE_MARKS
announce = vscode_workbench.announce


def server_pids(log_file: Path) -> set[int]:
    """The groundspec servers started with `--log-file log_file` (this test's only)."""
    pids = set()
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                argv = (entry / "cmdline").read_bytes().split(b"\0")
            except OSError:
                continue
            if str(log_file).encode() in argv and b"serve" in argv:
                pids.add(int(entry.name))
    return pids


def test_a_killed_server_is_restarted_and_suggestions_resume(
    tmp_path: Path, announce: Callable[[str], None]
) -> None:
    from selenium.webdriver.common.keys import Keys

    env = {"GROUNDSPEC_FAKE_TEXT": "fake_completion()", "GROUNDSPEC_FAKE_DELAY_MS": "0"}
    with code_server(tmp_path, announce, ["--fake"], env) as bench:
        bench.open_from_explorer("app.py")
        bench.wait_ready(90)
        bench.find(".monaco-editor .view-lines")[0].click()
        bench.chord(Keys.CONTROL, Keys.END)
        bench.keys(Keys.UP, Keys.END, "are")
        assert "fake_completion()" in bench.ghost_text(60).replace("\u00a0", " ")
        bench.keys(Keys.ESCAPE)
        first = wait_for("the server's pid", lambda: server_pids(bench.server_log), 15)
        for pid in first:
            os.kill(pid, signal.SIGKILL)
        # The toast slides in: its text is read once its button has been drawn too.
        toasts = wait_for(
            "the restart notification, with its button",
            lambda: [t for t in bench.find(".notification-toast") if "Open log" in t.text],
            30,
        )
        assert "exited unexpectedly; restarting it" in toasts[0].text
        bench.screenshot("vscode-restarted.png")
        restarted = wait_for("a new server", lambda: server_pids(bench.server_log) - first, 30)
        assert restarted
        assert "result = are" in bench.editor_text()  # nothing typed is lost
        bench.wait_ready(60)
        bench.find(".monaco-editor .view-lines")[0].click()
        bench.chord(Keys.CONTROL, Keys.END)
        bench.keys(Keys.UP, Keys.END, "a")
        assert "fake_completion()" in bench.ghost_text(60).replace("\u00a0", " ")
