"""The VS Code extension (clients/vscode) in a real VS Code: code-server, driven by Chromium.

The test installs the built .vsix, opens a Python file from the Explorer, types,
waits for the ghost text, accepts it with Tab, and refactors a selection through the
diff-editor preview (accepted once, discarded once), checking the saved file each time.
The server is `groundspec serve --fake` (passed with `groundspec.serverArgs`) except in
the test marked `model`. Keybindings, the trigger command and per-language settings:
test_vscode_features.py; the harness: vscode_workbench.py.

`.ci/code-server.sh` installs code-server, Chromium and chromedriver, `clients/ci.sh`
builds the .vsix; without code-server these tests are skipped. Select them with
`-m vscode`. Screenshots go to $GROUNDSPEC_ARTIFACTS (default /tmp/groundspec-artifacts)
and their paths are printed.
"""

from __future__ import annotations

import contextlib
import json
import os
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from . import vscode_workbench
from .vscode_workbench import SOURCE, VSCODE_MARKS, Workbench, code_server, wait_for

FAKE_TEXT = "fake_completion()"
# `groundspec serve --fake` answers an invoked request with the text and its alternatives.
CYCLE_TEXT = "first_item()"
CYCLE_ITEMS = [CYCLE_TEXT, f"alt1_{CYCLE_TEXT}", f"alt2_{CYCLE_TEXT}"]
# A workspace may not choose the executable: serverPath is a machine setting, so this is ignored.
WORKSPACE_SETTINGS = {
    ".vscode/settings.json": json.dumps({"groundspec.serverPath": "/nonexistent"})
}

pytestmark = VSCODE_MARKS
announce = vscode_workbench.announce  # the fixture, shared by the code-server tests


def type_and_accept(bench: Workbench, timeout: float) -> tuple[str, set[str]]:
    """Type at the end of `result = `, wait for ghost text, Tab, save.

    Returns the ghost text and the texts the status bar item showed before it was ready."""
    from selenium.webdriver.common.keys import Keys

    bench.open_from_explorer("app.py")
    # The extension's status item shows the speed once the server answered groundspec/stats.
    statuses: set[str] = set()

    def ready() -> bool:
        statuses.add(bench.status_bar())
        return "tok/s" in bench.status_bar()

    wait_for("groundspec ready in the status bar", ready, timeout)
    bench.find(".monaco-editor .view-lines")[0].click()
    bench.chord(Keys.CONTROL, Keys.END)
    bench.keys(Keys.UP, Keys.END, "are")
    ghost = bench.ghost_text(timeout)
    print(f"ghost text: {ghost!r}; status bar: {bench.status_bar()!r}")
    bench.screenshot("vscode-ghost-text.png")
    bench.keys(Keys.TAB)
    bench.save()
    return ghost, statuses


def test_ghost_text_tab_and_refactor_in_code_server(
    tmp_path: Path, announce: Callable[[str], None]
) -> None:
    """Also: the workspace's .vscode/settings.json names a serverPath that does not exist,
    and the server starts all the same (a machine setting comes from the user alone)."""
    env = {"GROUNDSPEC_FAKE_TEXT": FAKE_TEXT, "GROUNDSPEC_FAKE_DELAY_MS": "0"}
    with code_server(tmp_path, announce, ["--fake"], env, files=WORKSPACE_SETTINGS) as bench:
        app = bench.folder / "app.py"
        ghost, _ = type_and_accept(bench, timeout=90)
        assert FAKE_TEXT in ghost.replace("\u00a0", " ")
        accepted = SOURCE.replace("result = \n", f"result = are{FAKE_TEXT}\n")
        wait_for("the accepted suggestion in app.py", lambda: app.read_text() == accepted, 15)

        # Lines 4-5 (area) refactored: the diff editor shows the change, accepted.
        refactor(bench, first_line=4, instruction="add type hints")
        assert app.read_text() == accepted  # nothing applied before it is accepted
        bench.screenshot("vscode-refactor-preview.png")
        bench.run_command("groundspec: Accept Refactor")
        wait_for("the preview closed", lambda: not bench.find(".monaco-diff-editor"), 15)
        wait_for(
            "the refactor in the editor", lambda: "# add type hints" in bench.editor_text(), 15
        )
        bench.save()
        expected = accepted.replace("def area(radius):", "# add type hints\ndef area(radius):")
        with contextlib.suppress(AssertionError):
            wait_for("the refactor saved in app.py", lambda: app.read_text() == expected, 15)
        assert app.read_text() == expected

        # Lines 5-6 (area, now one line lower) refactored again, discarded.
        refactor(bench, first_line=5, instruction="rename radius")
        bench.run_command("groundspec: Discard Refactor")
        wait_for("the preview closed", lambda: not bench.find(".monaco-diff-editor"), 15)
        assert "# rename radius" not in bench.editor_text()
        bench.save()
        time.sleep(1)
        assert app.read_text() == expected
        bench.screenshot("vscode-refactor.png")


def refactor(bench: Workbench, first_line: int, instruction: str) -> None:
    """Select two lines from `first_line`, refactor them, wait for the diff preview."""
    from selenium.webdriver.common.keys import Keys

    bench.find(".monaco-editor .view-lines")[0].click()
    bench.go_to_line(first_line)
    bench.keys(Keys.HOME)
    bench.chord(Keys.SHIFT, Keys.DOWN + Keys.DOWN)
    bench.run_command("groundspec: Refactor Selection with an Instruction")
    wait_for(
        "the instruction box",
        lambda: "refactor" in bench.find(".quick-input-widget")[0].text,
        15,
    )
    bench.keys(instruction, Keys.ENTER)
    wait_for(
        "the refactor in the diff editor",
        lambda: any(f"# {instruction}" in e.text for e in bench.find(".monaco-diff-editor")),
        30,
    )


def test_next_inline_suggestion_cycles_through_all_items(
    tmp_path: Path, announce: Callable[[str], None]
) -> None:
    """VS Code's "next inline suggestion" (Alt+]) asks explicitly and shows each item the
    server returns: the extension passes them all on. The fake engine returns three."""
    from selenium.webdriver.common.keys import Keys

    env = {"GROUNDSPEC_FAKE_TEXT": CYCLE_TEXT, "GROUNDSPEC_FAKE_DELAY_MS": "0"}
    with code_server(tmp_path, announce, ["--fake"], env) as bench:
        bench.open_from_explorer("app.py")
        wait_for("groundspec ready in the status bar", lambda: "tok/s" in bench.status_bar(), 60)
        bench.find(".monaco-editor .view-lines")[0].click()
        bench.go_to_line(8)
        bench.keys(Keys.END, "x")
        seen = [bench.ghost_text(30)]
        for _ in range(len(CYCLE_ITEMS)):
            bench.chord(Keys.ALT, "]")
            wait_for(
                "the next inline suggestion",
                lambda: bench.ghost_text(5) != seen[-1],
                15,
            )
            seen.append(bench.ghost_text(5))
        print(f"inline suggestions seen while cycling: {seen}")
        assert seen[0] == CYCLE_ITEMS[0]
        assert sorted(set(seen)) == sorted(CYCLE_ITEMS)


def test_missing_models_shown_once_with_the_fix(
    tmp_path: Path, announce: Callable[[str], None]
) -> None:
    """A missing model: the status bar item turns to an error and one notification says
    how to fix it, however often the user types."""
    from selenium.webdriver.common.keys import Keys

    env = {"GROUNDSPEC_TARGET_MODEL": str(tmp_path / "missing.gguf")}
    with code_server(tmp_path, announce, [], env) as bench:
        bench.open_from_explorer("app.py")
        wait_for(
            "the error in the status bar",
            lambda: bench.find(".statusbar-item[id*='groundspec'] .codicon-error"),
            60,
        )
        bench.find(".monaco-editor .view-lines")[0].click()
        bench.go_to_line(8)
        bench.keys(Keys.END, "abc")
        time.sleep(3)  # completion requests fail meanwhile; none may add a message
        messages = [e.text for e in bench.find(".notification-list-item-message")]
        bench.screenshot("vscode-missing-models.png")
        print(f"notifications: {messages}; status tooltip: {bench.status_tooltip()!r}")
        assert len(messages) == 1, messages
        assert "groundspec models fetch" in messages[0]
        assert "groundspec models fetch" in bench.status_tooltip()


@pytest.mark.model
@pytest.mark.skipif(
    os.environ.get("GROUNDSPEC_VSCODE_REAL_MODELS") != "1",
    reason="opt-in (GROUNDSPEC_VSCODE_REAL_MODELS=1): the real models in code-server",
)
def test_real_models_in_code_server(tmp_path: Path, announce: Callable[[str], None]) -> None:
    """The default models behind the extension: some ghost text appears and Tab inserts it."""
    with code_server(tmp_path, announce, [], {}) as bench:
        ghost, statuses = type_and_accept(bench, timeout=240)
        ghost = ghost.replace("\u00a0", " ")
        bench.announce(f"status bar while the models loaded: {sorted(statuses)}")
        assert any("loading" in status for status in statuses), statuses
        assert ghost.strip()
        first_line = ghost.splitlines()[0].strip()
        wait_for(
            "the accepted suggestion in app.py",
            lambda: first_line in (bench.folder / "app.py").read_text(),
            15,
        )
