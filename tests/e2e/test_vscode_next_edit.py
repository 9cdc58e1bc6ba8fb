"""Next-edit suggestions in the VS Code extension, in code-server with the fake engine.

The fake engine proposes the user's last rename carried to the other lines of the window
(speculator/fake.py), so renaming `name` to `attr_name` on the getattr line brings a
proposal for the two lines above: drawn as `name` struck through with `attr_name` after
it, and a hint at the cursor that it is above. Tab applies it as one edit (one undo
step), Escape dismisses it, typing drops it, with `groundspec.nextEdit` off nothing is
asked for, and with `groundspec.nextEditAutoTrigger` off only the command asks.
Harness: vscode_workbench.py.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from next_edit_sample import CARRIED, RENAMED
from next_edit_sample import PLUGINS as CODE

from . import vscode_workbench
from .vscode_workbench import VSCODE_MARKS, Workbench, code_server, wait_for

pytestmark = VSCODE_MARKS
announce = vscode_workbench.announce  # the fixture, shared by the code-server tests

NAME = "plugins.py"
# Ghost text and the suggest widget would take Tab; these tests are about next edits.
SETTINGS: dict[str, Any] = {
    "groundspec.autoTrigger": False,
    "groundspec.nextEditDebounceMs": 200,
    "editor.quickSuggestions": {"other": "off", "comments": "off", "strings": "off"},
}
QUIET_SECONDS = 3.0

# What the editor draws: per view line, the struck-through text (the deletion style), and
# the after-text of decorations (CSS ::after content: the new text and the hint).
DRAWN_JS = """
const struck = [], after = [];
for (const line of document.querySelectorAll('.monaco-editor .view-lines .view-line')) {
  let text = '';
  for (const el of line.querySelectorAll('span')) {
    if (el.children.length === 0 && getComputedStyle(el).textDecorationLine.includes('line-through')) {
      text += el.textContent;
    }
    for (const pseudo of ['::before', '::after']) {
      const content = getComputedStyle(el, pseudo).content;
      if (content && content !== 'none' && content !== 'normal') after.push(content);
    }
  }
  if (text) struck.push(text);
}
return [struck, after];
"""


@dataclass
class Drawn:
    struck: list[str]
    after: list[str]

    @property
    def shown(self) -> bool:
        return bool(self.struck) or any("attr_name" in text for text in self.after)


def drawn(bench: Workbench) -> Drawn:
    struck, after = bench.driver.execute_script(DRAWN_JS)
    clean = [text.strip('"').replace("\u00a0", " ") for text in after]
    return Drawn([text.replace("\u00a0", " ") for text in struck], clean)


def rename_on_line_6(bench: Workbench) -> None:
    """`name` -> `attr_name` in `getattr(plugin, name)`, typed as a person would."""
    from selenium.webdriver.common.keys import Keys

    bench.find(".monaco-editor .view-lines")[0].click()
    bench.go_to_line(6)
    bench.keys(Keys.END, Keys.LEFT, Keys.BACKSPACE * 4, "attr_name")


@contextmanager
def renamed_in_code_server(
    tmp_path: Path, announce: Callable[[str], None], settings: dict[str, Any]
) -> Iterator[Workbench]:
    """code-server on the fake engine with CODE open, `name` just renamed on line 6."""
    files = {NAME: CODE}
    with code_server(tmp_path, announce, ["--fake"], {}, settings=settings, files=files) as bench:
        bench.open_from_explorer(NAME)
        bench.wait_ready()
        rename_on_line_6(bench)
        yield bench


def wait_proposal(bench: Workbench) -> Drawn:
    def ready() -> Drawn | None:
        now = drawn(bench)
        return now if sum(text == "attr_name" for text in now.after) == 2 else None

    result: Drawn = wait_for("the next edit drawn", ready, 30)
    print(f"drawn: {result}")
    return result


def test_a_rename_brings_a_proposal_that_tab_applies_as_one_edit(
    tmp_path: Path, announce: Callable[[str], None]
) -> None:
    from selenium.webdriver.common.keys import Keys

    with renamed_in_code_server(tmp_path, announce, SETTINGS) as bench:
        path = bench.folder / NAME
        shown = wait_proposal(bench)
        bench.screenshot("vscode-next-edit.png")
        assert shown.struck == ["name", "name"]  # lines 2 and 3, in the deletion style
        hints = [text for text in shown.after if "next edit" in text]
        assert hints and hints[0].startswith("↑ groundspec: next edit at line 2"), shown.after
        assert bench.next_edits_for(NAME) >= 1

        bench.keys(Keys.TAB)
        wait_for("the proposal gone once accepted", lambda: not drawn(bench).struck, 10)
        bench.save()
        wait_for("the carried rename saved", lambda: path.read_text() == CARRIED, 15)
        assert bench.cursor_line() == 3  # the cursor jumped to the end of the edit

        # One undo step takes the whole proposal back, and only it.
        bench.chord(Keys.CONTROL, "z")
        bench.save()
        wait_for("one undo back to the user's rename", lambda: path.read_text() == RENAMED, 15)


def test_escape_dismisses_and_typing_drops_a_stale_proposal(
    tmp_path: Path, announce: Callable[[str], None]
) -> None:
    from selenium.webdriver.common.action_chains import ActionChains
    from selenium.webdriver.common.keys import Keys

    settings = {**SETTINGS, "groundspec.nextEditDebounceMs": 1000}
    with renamed_in_code_server(tmp_path, announce, settings) as bench:
        path = bench.folder / NAME
        wait_proposal(bench)
        bench.keys(Keys.ESCAPE)
        wait_for("the proposal dismissed", lambda: not drawn(bench).shown, 10)
        asked = bench.next_edits_for(NAME)
        time.sleep(QUIET_SECONDS)
        assert not drawn(bench).shown and bench.next_edits_for(NAME) == asked  # not asked again
        bench.save()
        wait_for("the file as the user left it", lambda: path.read_text() == RENAMED, 15)

        # Alt+Shift+\ asks at once; a letter typed then drops that proposal and is kept.
        chain = ActionChains(bench.driver).key_down(Keys.ALT).key_down(Keys.SHIFT)
        chain.send_keys("\\").key_up(Keys.SHIFT).key_up(Keys.ALT).perform()
        wait_proposal(bench)
        assert bench.next_edits_for(NAME) == asked + 1
        bench.keys(Keys.END, "s")
        wait_for("the stale proposal dropped", lambda: not drawn(bench).shown, 5)
        # After the pause it is asked for again, for the text as it is now: the fake has
        # nothing to carry for one letter typed at the line's end, past the `)` (a new
        # edit: typed right after `attr_name` within 8 s, it would extend the rename).
        wait_for("a new ask after the pause", lambda: bench.next_edits_for(NAME) == asked + 2, 15)
        time.sleep(1.0)
        assert not drawn(bench).shown
        bench.save()
        typed = RENAMED.replace("attr_name)", "attr_name)s")
        wait_for(
            "the letter typed kept, nothing else changed", lambda: path.read_text() == typed, 15
        )


def test_next_edits_off_sends_no_request(tmp_path: Path, announce: Callable[[str], None]) -> None:
    settings = {**SETTINGS, "groundspec.nextEdit": False}
    with renamed_in_code_server(tmp_path, announce, settings) as bench:
        time.sleep(QUIET_SECONDS)
        assert not drawn(bench).shown
        bench.run_command("groundspec: Suggest Next Edit")  # the command says why, asks nothing
        wait_for("the off message", lambda: "groundspec.nextEdit is off" in toasts(bench), 15)
        time.sleep(QUIET_SECONDS)
        assert not drawn(bench).shown
        assert bench.next_edits_for(NAME) == 0


def test_manual_mode_asks_only_on_request(tmp_path: Path, announce: Callable[[str], None]) -> None:
    from selenium.webdriver.common.keys import Keys

    settings = {**SETTINGS, "groundspec.nextEditAutoTrigger": False}
    with renamed_in_code_server(tmp_path, announce, settings) as bench:
        time.sleep(QUIET_SECONDS)  # pauses in typing ask nothing
        assert not drawn(bench).shown and bench.next_edits_for(NAME) == 0
        bench.run_command("groundspec: Suggest Next Edit")
        wait_proposal(bench)
        assert bench.next_edits_for(NAME) == 1
        bench.keys(Keys.TAB)
        wait_for("the proposal applied", lambda: not drawn(bench).struck, 10)
        bench.save()
        wait_for(
            "the carried rename saved", lambda: (bench.folder / NAME).read_text() == CARRIED, 15
        )
        time.sleep(QUIET_SECONDS)  # the edit applied is no reason to ask either
        assert bench.next_edits_for(NAME) == 1


def toasts(bench: Workbench) -> str:
    return " ".join(e.text for e in bench.find(".notification-toast"))


SHAPES = "def describe(radius):\n    return str(radius)\n"
MAIN = "from shapes import describe\n\n\ndef main():\n    return describe(1.0)\n"


def test_a_rename_in_one_file_is_proposed_in_the_file_opened_next(
    tmp_path: Path, announce: Callable[[str], None]
) -> None:
    """`describe` renamed in shapes.py, then main.py opened: the extension asks on the
    editor change, and Tab applies the rename where main.py uses the name."""
    from selenium.webdriver.common.action_chains import ActionChains
    from selenium.webdriver.common.keys import Keys

    files = {"shapes.py": SHAPES, "main.py": MAIN}
    with code_server(tmp_path, announce, ["--fake"], {}, settings=SETTINGS, files=files) as bench:
        bench.open_from_explorer("shapes.py")
        bench.wait_ready()
        bench.go_to_line(1)
        bench.keys(Keys.HOME, Keys.RIGHT * len("def describe"), "_circle")
        bench.save()
        shapes = bench.folder / "shapes.py"
        wait_for("the rename saved", lambda: "describe_circle" in shapes.read_text(), 15)
        bench.open_from_explorer("main.py")
        # Drawn in place, or (line 1 scrolled off by the click) hinted at the cursor.
        wait_for("the rename proposed in main.py", lambda: proposed_here(bench), 30)
        # Dismissed, then back from the other tab with nothing edited: not asked again.
        bench.keys(Keys.ESCAPE)
        wait_for("the proposal dismissed", lambda: not proposed_here(bench), 10)
        asked = bench.next_edits_for("main.py")
        for name in ("shapes.py", "main.py"):
            bench.find(f'.tab[aria-label^="{name}"]')[0].click()
            time.sleep(1.0)
        time.sleep(QUIET_SECONDS)
        assert bench.next_edits_for("main.py") == asked and not proposed_here(bench)
        chain = ActionChains(bench.driver).key_down(Keys.ALT).key_down(Keys.SHIFT)
        chain.send_keys("\\").key_up(Keys.SHIFT).key_up(Keys.ALT).perform()
        wait_for("the rename proposed when asked", lambda: proposed_here(bench), 30)
        bench.keys(Keys.TAB)
        # Applied asynchronously (a WorkspaceEdit): saved once the editor shows it.
        wait_for("the import renamed", lambda: "import describe_circle" in bench.editor_text(), 15)
        bench.save()
        main = bench.folder / "main.py"
        import_renamed = MAIN.replace("import describe", "import describe_circle")
        wait_for("the import saved", lambda: main.read_text() == import_renamed, 15)


def proposed_here(bench: Workbench) -> bool:
    after = drawn(bench).after
    return "_circle" in after or any("next edit at line 1" in text for text in after)
