"""The VS Code extension's keys and settings in code-server (fake engine): the trigger
command with automatic suggestions off, a language turned off getting no request, and
accepting a suggestion a word and then a line at a time. Harness: vscode_workbench.py.

`GROUNDSPEC_DOCS_SCREENSHOT=1` also writes the editor with its suggestion to
docs/images/suggestion.png (the README shows it).
"""

from __future__ import annotations

import os
import shutil
import time
from collections.abc import Callable
from pathlib import Path

from . import vscode_workbench
from .vscode_workbench import ROOT, VSCODE_MARKS, Workbench, code_server, wait_for

pytestmark = VSCODE_MARKS
announce = vscode_workbench.announce  # the fixture, shared by the code-server tests

FAKE = {"GROUNDSPEC_FAKE_TEXT": "fake_completion()", "GROUNDSPEC_FAKE_DELAY_MS": "0"}
QUIET_SECONDS = 3.0  # long enough for an automatic request (debounceMs is 0) to show
RUST = "fn main() {\n    let total = \n}\n"
GEOMETRY = (
    "import math\n\n\ndef area(radius: float) -> float:\n    return math.pi * radius ** 2\n\n\n"
    "def circumference(radius: float) -> float:\n    return \n"
)
GEOMETRY_SUGGESTION = "math.pi * radius"


def type_at_end_of_line(bench: Workbench, line: int, text: str) -> None:
    from selenium.webdriver.common.keys import Keys

    bench.find(".monaco-editor .view-lines")[0].click()
    bench.go_to_line(line)
    bench.keys(Keys.END, text)


def no_ghost_text(bench: Workbench) -> bool:
    return not "".join(e.text for e in bench.find(".ghost-text-decoration"))


def test_trigger_command_asks_when_automatic_suggestions_are_off(
    tmp_path: Path, announce: Callable[[str], None]
) -> None:
    from selenium.webdriver.common.keys import Keys

    settings = {"groundspec.autoTrigger": False}
    with code_server(tmp_path, announce, ["--fake"], FAKE, settings=settings) as bench:
        bench.open_from_explorer("app.py")
        bench.wait_ready()
        type_at_end_of_line(bench, 8, "x")
        time.sleep(QUIET_SECONDS)
        assert no_ghost_text(bench)
        assert bench.completions_for("app.py") == 0  # typing sent no request
        bench.run_command("groundspec: Trigger Inline Suggestion")
        ghost = bench.ghost_text(30)
        print(f"ghost text after the trigger command: {ghost!r}")
        assert "fake_completion()" in ghost.replace("\u00a0", " ")
        asked = bench.completions_for("app.py")
        assert asked >= 1

        # Dismissed, typed on: still nothing; then its key, Alt+\, asks again.
        bench.keys(Keys.ESCAPE, "y")
        time.sleep(QUIET_SECONDS)
        assert no_ghost_text(bench) and bench.completions_for("app.py") == asked
        bench.chord(Keys.ALT, "\\")
        assert "fake_completion()" in bench.ghost_text(30).replace("\u00a0", " ")
        assert bench.completions_for("app.py") > asked


def test_only_the_languages_served_start_the_server(
    tmp_path: Path, announce: Callable[[str], None]
) -> None:
    """`groundspec.languages: ["rust"]`: app.py starts no server (no models loaded for a
    file groundspec does not serve); opening lib.rs starts it and gets a suggestion."""
    settings = {"groundspec.languages": ["rust"]}
    files = {"lib.rs": RUST}
    with code_server(tmp_path, announce, ["--fake"], FAKE, settings=settings, files=files) as bench:
        bench.open_from_explorer("app.py")
        type_at_end_of_line(bench, 8, "x")
        time.sleep(QUIET_SECONDS)
        assert not bench.server_log.exists(), "a server started for a file it does not serve"
        assert not bench.status_bar()

        bench.open_from_explorer("lib.rs")
        bench.wait_ready()
        type_at_end_of_line(bench, 2, "1 + ")
        assert "fake_completion()" in bench.ghost_text(30).replace("\u00a0", " ")
        assert bench.completions_for("lib.rs") >= 1
        assert bench.completions_for("app.py") == 0


def test_a_language_turned_off_gets_no_request(
    tmp_path: Path, announce: Callable[[str], None]
) -> None:
    """`"[python]": {"groundspec.enable": false}`: typing in app.py sends nothing and the
    status bar says so; lib.rs, in the same window, still gets its suggestion."""
    settings = {"[python]": {"groundspec.enable": False}}
    files = {"lib.rs": RUST}
    with code_server(tmp_path, announce, ["--fake"], FAKE, settings=settings, files=files) as bench:
        bench.open_from_explorer("app.py")
        wait_for("the off icon in the status bar", lambda: bench.status_icon("circle-slash"), 60)
        type_at_end_of_line(bench, 8, "x")
        time.sleep(QUIET_SECONDS)
        assert no_ghost_text(bench)
        bench.screenshot("vscode-language-off.png")
        assert bench.completions_for("app.py") == 0

        bench.open_from_explorer("lib.rs")
        wait_for("the status bar back on", lambda: not bench.status_icon("circle-slash"), 15)
        type_at_end_of_line(bench, 2, "1 + ")
        assert "fake_completion()" in bench.ghost_text(30).replace("\u00a0", " ")
        assert bench.completions_for("lib.rs") >= 1
        assert bench.completions_for("app.py") == 0


def test_accept_a_word_then_the_line(tmp_path: Path, announce: Callable[[str], None]) -> None:
    """Ctrl+Right (VS Code's acceptNextWord) takes part of the suggestion, Shift+Tab (the
    extension's binding of acceptNextLine) the rest of its line."""
    from selenium.webdriver.common.keys import Keys

    env = {**FAKE, "GROUNDSPEC_FAKE_TEXT": GEOMETRY_SUGGESTION}
    files = {"geometry.py": GEOMETRY}
    with code_server(tmp_path, announce, ["--fake"], env, files=files) as bench:
        geometry = bench.folder / "geometry.py"
        bench.open_from_explorer("geometry.py")
        bench.wait_ready()
        type_at_end_of_line(bench, 9, "2 * ")
        assert GEOMETRY_SUGGESTION in bench.ghost_text(30).replace("\u00a0", " ")
        save_docs_screenshot(bench)
        full_line = f"    return 2 * {GEOMETRY_SUGGESTION}"

        bench.chord(Keys.CONTROL, Keys.ARROW_RIGHT)
        bench.save()
        wait_for("the first word saved", lambda: last_line(geometry) != "    return 2 * ", 15)
        partial = last_line(geometry)
        print(f"after accept word: {partial!r}")
        assert full_line.startswith(partial) and len(partial) < len(full_line)

        bench.chord(Keys.SHIFT, Keys.TAB)
        bench.save()
        wait_for("the rest of the line saved", lambda: last_line(geometry) == full_line, 15)


def last_line(path: Path) -> str:
    return path.read_text().rstrip("\n").split("\n")[-1]


def save_docs_screenshot(bench: Workbench) -> None:
    """The editor with its ghost text, for the README (GROUNDSPEC_DOCS_SCREENSHOT=1)."""
    shot = bench.element_screenshot(
        ".part.editor", vscode_workbench.artifacts_dir() / "suggestion.png"
    )
    if os.environ.get("GROUNDSPEC_DOCS_SCREENSHOT") == "1":
        docs = ROOT / "docs" / "images" / "suggestion.png"
        docs.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(shot, docs)
        bench.announce(f"docs screenshot: {docs}")
