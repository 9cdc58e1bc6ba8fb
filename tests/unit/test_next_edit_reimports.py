"""A name imported anew is taken out of the import that brought it before
(speculator/next_edit/reimports.py; runs the real ruff, no model)."""

from __future__ import annotations

from speculator.edits import Edit, EditHistory
from speculator.next_edit.core import NextEditRequest, prepare
from speculator.next_edit.proposal import TextEdit
from speculator.next_edit.reimports import reimport_lines

USES = "\n\ndef run(f: Callable, items: Sequence) -> TypeVar:\n    return f(items)\n"


def added_line(text: str, after: str, line: str) -> tuple[str, Edit]:
    """`text` with `line` typed on a new line below the line `after`, and that edit."""
    at = text.index(after + "\n") + len(after) + 1
    return text[:at] + line + "\n" + text[at:], Edit(at, "", line + "\n")


def test_a_name_imported_anew_is_taken_out_of_the_old_import() -> None:
    text = "import os\nfrom typing import Callable, Sequence, TypeVar\n" + USES
    after, edit = added_line(text, "import os", "from collections.abc import Callable, Sequence")
    assert reimport_lines(text, after, edit, "m.py", "python") == {2: "from typing import TypeVar"}


def test_an_import_left_with_no_name_goes() -> None:
    text = "import os\nfrom typing import Callable\nfrom typing import Sequence, TypeVar\n" + USES
    after, edit = added_line(text, "import os", "from collections.abc import Callable")
    assert reimport_lines(text, after, edit, "m.py", "python") == {2: None}


def test_a_parenthesized_import_loses_just_the_names_line() -> None:
    text = "import os\nfrom typing import (\n    Callable,\n    Sequence,\n    TypeVar,\n)\n" + USES
    after, edit = added_line(text, "import os", "from collections.abc import Sequence")
    rewrites = reimport_lines(text, after, edit, "m.py", "python")
    assert rewrites == {
        2: "from typing import (\n    Callable,\n    TypeVar,\n)",
        3: None,
        4: None,
        5: None,
        6: None,
    }


def test_only_a_redefinition_the_edit_made_between_imports_is_followed() -> None:
    text = "import os\nfrom typing import Callable, Sequence, TypeVar\n" + USES
    # The edit is no import: nothing to take out.
    after, edit = added_line(text, "import os", "Callable = print")
    assert reimport_lines(text, after, edit, "m.py", "python") == {}
    # Two imports of the name before the edit: not the edit's doing.
    twice = "from collections.abc import Callable\n" + text
    after, edit = added_line(twice, "import os", "import sys")
    assert reimport_lines(twice, after, edit, "m.py", "python") == {}
    # Another language.
    assert reimport_lines(text, text, Edit(0, "", ""), "m.js", "javascript") == {}


def drafted_after_typing(text: str, at: int, lines: str) -> tuple[str, TextEdit]:
    """`text` with `lines` typed at `at`, and the draft change the next edit makes."""
    history = EditHistory()
    history.record("u", at, "", lines)
    after = text[:at] + lines + text[at:]
    request = NextEditRequest(
        text=after, cursor=at + len(lines) - 1, edits=history.edits("u"), path="m.py"
    )
    plan = prepare(request)
    assert plan is not None and plan.draft_change is not None
    return after, plan.draft_change.edit


def test_the_draft_takes_the_old_import_out() -> None:
    text = "import os\nfrom typing import Callable, Sequence, TypeVar\n" + USES
    line = "from collections.abc import Callable, Sequence\n"
    after, edit = drafted_after_typing(text, text.index("from typing"), line)
    assert edit.apply(after) == after.replace(
        "from typing import Callable, Sequence, TypeVar", "from typing import TypeVar"
    )


def test_imports_moved_below_are_taken_out_above_not_pasted_again() -> None:
    # The lines scored are cut out of the window: cut above the pasted copy, the
    # draft would read as `import hashlib`/`import json` inserted at the top.
    text = "import os\nimport json\nimport hashlib\n\nfrom pkg import utils\n\n"
    text += "utils.run(os, json, hashlib)\n"
    pasted = "import json\nimport os\n"
    after, edit = drafted_after_typing(text, text.index("\n\nfrom pkg") + 1, pasted)
    moved = edit.apply(after)
    assert moved.startswith("import hashlib\nimport json\nimport os\n\nfrom pkg import utils\n")
