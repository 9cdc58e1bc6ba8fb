"""A name imported into a package's `__init__.py`, exported in its `__all__` by
the draft (speculator/next_edit/exports.py, no model)."""

from __future__ import annotations

from speculator.edits import EditHistory
from speculator.next_edit.core import NextEditRequest, prepare
from speculator.next_edit.exports import export_lines

PACKAGE = """\
\"\"\"The shapes package.\"\"\"

import sys
from typing import Any

from .circle import Circle
from .square import Square

__all__ = [
    "Circle",
    "Square",
]
"""

VERSIONS = """\
from . import py38, py39, py310

__all__ = (
    "py38",
    "py39",
    "py310",
)
"""


def added(text: str, anchor: str, new: str) -> str:
    """`text` with the line `new` added after the line `anchor`."""
    return text.replace(anchor + "\n", anchor + "\n" + new + "\n", 1)


def test_a_name_imported_from_the_package_is_exported_where_it_sorts() -> None:
    after = added(PACKAGE, "from .circle import Circle", "from .oval import Oval")
    assert export_lines(PACKAGE, after, "shapes/__init__.py", "python") == {
        10: '    "Circle",\n    "Oval",'
    }


def test_the_draft_writes_the_entry_and_the_window_goes_there() -> None:
    line = "from .oval import Oval"
    after = added(PACKAGE, "from .circle import Circle", line)
    at = after.index(line)
    history = EditHistory()
    history.record("u", at, "", line + "\n")
    request = NextEditRequest(
        text=after, cursor=at + len(line), edits=history.edits("u"), path="shapes/__init__.py"
    )
    plan = prepare(request)
    assert plan is not None and plan.draft_change is not None
    assert plan.draft_change.edit.new_text == '    "Oval",\n'
    assert '"Circle",\n    "Oval",\n    "Square",' in plan.job.draft


def test_numbers_sort_as_numbers_and_a_tuple_is_kept_a_tuple() -> None:
    after = VERSIONS.replace("py310\n", "py310, py311\n", 1)
    assert export_lines(VERSIONS, after, "stdlibs/__init__.py", "python") == {
        5: '    "py310",\n    "py311",'
    }


def test_a_name_that_sorts_first_goes_first() -> None:
    after = added(PACKAGE, "from .circle import Circle", "from .arc import Arc")
    assert export_lines(PACKAGE, after, "shapes/__init__.py", "python") == {
        10: '    "Arc",\n    "Circle",'
    }


def test_stdlib_private_and_listed_names_are_not_exported() -> None:
    for line in (
        "from pathlib import Path",
        "from typing import Protocol",
        "from .circle import _radius",
        "from .square import Square as Square",
    ):
        after = added(PACKAGE, "from .square import Square", line)
        assert export_lines(PACKAGE, after, "shapes/__init__.py", "python") == {}, line


def test_only_a_package_init_with_one_entry_a_line_is_rewritten() -> None:
    after = added(PACKAGE, "from .circle import Circle", "from .oval import Oval")
    assert export_lines(PACKAGE, after, "shapes/api.py", "python") == {}
    assert export_lines(PACKAGE, after, "shapes/__init__.py", "javascript") == {}
    one_line = PACKAGE.replace('[\n    "Circle",\n    "Square",\n]', '["Circle", "Square"]')
    after = added(one_line, "from .circle import Circle", "from .oval import Oval")
    assert export_lines(one_line, after, "shapes/__init__.py", "python") == {}


def test_code_that_does_not_parse_gives_nothing() -> None:
    after = added(PACKAGE, "from .circle import Circle", "from .oval import (Oval")
    assert export_lines(PACKAGE, after, "shapes/__init__.py", "python") == {}


def test_a_last_entry_without_its_comma_is_not_copied() -> None:
    bare = PACKAGE.replace('    "Square",\n]', '    "Square"\n]')
    after = added(bare, "from .square import Square", "from .triangle import Triangle")
    assert export_lines(bare, after, "shapes/__init__.py", "python") == {}
