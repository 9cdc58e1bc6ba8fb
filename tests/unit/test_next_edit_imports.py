"""The import for a name just used, copied from other files' imports
(speculator/next_edit/imports.py), and where the server finds those files
(lsp_server.next_edit.import_sources)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from lsprotocol import types

from lsp_server import requests as rq
from lsp_server.convert import LineIndex
from lsp_server.documents import DocumentStore
from lsp_server.next_edit import import_sources
from speculator.edits import EditHistory
from speculator.fake import FakeEngine
from speculator.languages import new_parser
from speculator.next_edit.core import NextEditRequest, prepare
from speculator.next_edit.imports import (
    import_for,
    import_lines,
    imported_names,
    unbound_names,
    uses_shown,
)
from speculator.next_edit.proposal import IMPORT_BAR_POWER, MIN_CONFIDENCE, bar_of
from speculator.next_edit.window import Hunk
from speculator.syntax import utf8
from speculator.types import Snippet
from speculator.workspace import WorkspaceIndex

CODE = '''"""Config loading."""
import json
from typing import Any


def load(name: str) -> dict[str, Any]:
    with open(name) as f:
        return json.load(f)
'''
AT = CODE.index("    with open")
OTHERS = [
    Snippet("pkg/other.py", "import os\nfrom pathlib import Path\nfrom typing import Any, cast\n"),
    Snippet("pkg/more.py", "from pathlib import Path, PurePath\nimport numpy as np\n"),
    Snippet("lib/odd.py", "from .paths import Path\n"),
]


def typed(line: str, code: str = CODE, at: int = AT) -> NextEditRequest:
    history = EditHistory()
    history.record("u", at, "", line)
    return NextEditRequest(
        text=code[:at] + line + code[at:],
        cursor=at + len(line) - 1,
        edits=history.edits("u"),
        path="pkg/config.py",
        min_confidence=0.0,
        import_sources=lambda name: [s for s in OTHERS if name in s.text],
    )


def proposed(request: NextEditRequest) -> str:
    text = request.text
    for edit in FakeEngine().next_edit(request).edits:
        text = text[: edit.start] + edit.new_text + text[edit.end :]
    return text


def names_used(line: str) -> list[str]:
    text = CODE[:AT] + line + CODE[AT:]
    parser = new_parser("python")
    assert parser is not None
    row = CODE[:AT].count("\n")
    return unbound_names(text, parser.parse(utf8(text)).root_node, [(row, row + 1)])[0]


def test_a_name_imported_elsewhere_is_imported_after_the_last_import() -> None:
    request = typed("    root = Path(name).parent\n")
    assert proposed(request) == request.text.replace(
        "from typing import Any\n", "from typing import Any\nfrom pathlib import Path\n"
    )


def test_a_name_from_a_module_already_imported_from_joins_its_line() -> None:
    request = typed("    value = cast(dict, json.load(open(name)))\n")
    assert proposed(request) == request.text.replace(
        "from typing import Any\n", "from typing import Any, cast\n"
    )


def test_a_file_without_imports_gets_one_below_its_docstring() -> None:
    code = '"""Config."""\n\n\ndef load(name):\n    return name\n'
    at = code.index("    return")
    request = typed("    name = np.asarray(name)\n", code, at)
    assert proposed(request).startswith('"""Config."""\n\nimport numpy as np\n\n\ndef load')


def test_a_name_an_earlier_edit_used_is_imported_after_an_edit_elsewhere() -> None:
    request = typed("    root = Path(name).parent\n")
    later = request.text.index("        return json.load(f)")
    history = EditHistory()
    history.record("u", AT, "", "    root = Path(name).parent\n")
    history.record("u", later + len("        return "), "json.load(f)", "json.loads(f.read())")
    text = request.text.replace("json.load(f)", "json.loads(f.read())")
    request = replace(request, text=text, cursor=len(text) - 2, edits=history.edits("u"))
    assert len(request.edits) == 2
    assert proposed(request) == text.replace(
        "from typing import Any\n", "from typing import Any\nfrom pathlib import Path\n"
    )


def test_a_name_another_recent_edit_binds_or_uses_is_not_imported() -> None:
    text = CODE[:AT] + "    found = Path(name)\n    base = found.parent\n" + CODE[AT:]
    parser = new_parser("python")
    assert parser is not None
    root = parser.parse(utf8(text)).root_node
    row = CODE[:AT].count("\n")
    assert unbound_names(text, root, [(row + 1, row + 2)]) == [[]]  # `found` is used above
    assert unbound_names(text, root, [(row, row + 1), (row + 1, row + 2)]) == [["Path"], []]
    assert unbound_names(text, root, [(row + 1, row + 2), (row, row + 1)]) == [[], ["Path"]]


def test_names_bound_here_members_builtins_and_names_mentioned_are_not_imported() -> None:
    assert names_used("    root = Path(name).parent\n") == ["Path"]
    assert names_used("    path = open(name)\n") == []  # bound here; a builtin
    assert names_used("    os.environ.get(Any)\n") == ["os"]  # `Any` is imported
    assert names_used("    for item in items: pass\n") == ["items"]
    assert names_used("    g(key=PurePath, **kw)\n") == ["g", "PurePath", "kw"]
    assert names_used("    def inner(a: Path = DEFAULT): pass\n") == ["Path", "DEFAULT"]


def test_the_commonest_import_is_copied_and_relative_ones_only_beside_their_file() -> None:
    assert import_for("Path", "pkg/config.py", OTHERS) == "from pathlib import Path"
    assert import_for("np", "pkg/config.py", OTHERS) == "import numpy as np"
    assert import_for("Path", "lib/config.py", OTHERS[2:]) == "from .paths import Path"
    assert import_for("Path", "pkg/config.py", OTHERS[2:]) is None
    aliased = [Snippet("a.py", "from os import path as osp\nfrom x import (\n    a,\n    b,\n)\n")]
    assert import_for("osp", "m.py", aliased) == "from os import path as osp"
    assert import_for("b", "m.py", aliased) == "from x import b"
    assert import_for("nothing", "m.py", aliased) is None


def test_an_import_statement_is_read_into_the_names_it_binds() -> None:
    def bound(statement: str) -> list[tuple[str, str]]:
        return [(item.bound, item.line) for item in imported_names(statement)]

    assert bound("import os.path, numpy as np  # both") == [
        ("os", "import os.path"),
        ("np", "import numpy as np"),
    ]
    assert bound("from . import (\n    a,  # first\n    b as c,\n)") == [
        ("a", "from . import a"),
        ("c", "from . import b as c"),
    ]
    assert bound("from x import a as a, *") == [("a", "from x import a")]
    assert bound("from x import a.b") == bound("import a b") == bound("x = 1") == []


def test_nothing_is_looked_up_without_sources_or_for_many_new_names() -> None:
    lines = typed("    a = Path(b, c, d, e)\n")
    row = CODE[:AT].count("\n")
    edit = [((row, row + 1), "")]
    assert import_lines(lines.text, lines.path, edit, "python", None) == {}
    sources = lines.import_sources
    assert import_lines(lines.text, lines.path, edit, "python", sources) == {}
    assert import_lines(lines.text, lines.path, edit, "go", sources) == {}


def test_the_server_looks_in_the_other_open_documents_and_the_workspace(tmp_path: Path) -> None:
    (tmp_path / "tools.py").write_text(
        "import numpy as np\n\n\ndef mean(x):\n    return np.mean(x)\n"
    )
    store = DocumentStore(1_000_000)
    for name, text in (("a.py", "from pathlib import Path\n"), ("b.py", CODE)):
        uri = (tmp_path / name).as_uri()
        item = types.TextDocumentItem(uri=uri, language_id="python", version=1, text=text)
        store.open(item)
    own = (tmp_path / "b.py").as_uri()
    src = rq.Resolved(CODE, LineIndex(CODE), "python", str(tmp_path / "b.py"), own, 1)
    with WorkspaceIndex(str(tmp_path), watch=False) as index:
        assert index.wait_ready(10)
        sources = import_sources(store, src, str(tmp_path), index)
        assert [s.path for s in sources("Path")][0] == "a.py"  # open ones first
        assert any("import numpy as np" in s.text for s in sources("np"))
    assert import_sources(store, src, str(tmp_path), None)("np") == []


def test_names_the_edit_binds_and_this_modules_own_names_are_not_imported() -> None:
    assert names_used("    def inner(key, lead): return key + lead + Path\n") == ["Path"]
    own = [Snippet("pkg/main.py", "from pkg.config import load\nfrom .config import save\n")]
    assert import_for("load", "pkg/config.py", own) is None
    assert import_for("save", "pkg/config.py", own) is None
    assert import_for("load", "pkg/myconfig.py", own) == "from pkg.config import load"
    assert import_for("os", "pkg/pos.py", [Snippet("a.py", "import os\n")]) == "import os"


def test_a_name_the_edit_took_away_is_not_imported_back() -> None:
    code = (
        'import json\nfrom pathlib import Path\nROOT = Path(".")\n\n\ndef f():\n    return ROOT\n'
    )
    old = 'from pathlib import Path\nROOT = Path(".")'
    start = code.index(old)
    history = EditHistory()
    history.record("u", start, old, 'ROOT = Path(".")')
    request = NextEditRequest(
        text=code.replace(old, 'ROOT = Path(".")'),
        cursor=start,
        edits=history.edits("u"),
        path="pkg/config.py",
        min_confidence=0.0,
        import_sources=lambda name: OTHERS,
    )
    assert FakeEngine().next_edit(request).edits == []  # the import deleted stays deleted


def test_a_file_that_imports_relatively_gets_its_package_imported_so() -> None:
    absolute = [Snippet("tests/t.py", "from speculator.next_edit.proposal import TokenTrace\n")]
    here = "speculator/generators/local.py"
    assert import_for("TokenTrace", here, absolute, relative=True) == (
        "from ..next_edit.proposal import TokenTrace"
    )
    assert import_for("TokenTrace", here, absolute) == (
        "from speculator.next_edit.proposal import TokenTrace"
    )
    nested = [Snippet("speculator/next_edit/a.py", "from ..types import Snippet\n")]
    assert import_for("Snippet", "speculator/slots.py", nested, relative=True) == (
        "from .types import Snippet"
    )
    assert import_for("Snippet", "speculator/slots.py", nested) is None  # not this file's way
    package = [
        Snippet("bench/a.py", "from speculator import provision\nfrom pathlib import Path\n")
    ]
    assert import_for("provision", "speculator/x.py", package, True) == "from . import provision"
    assert import_for("Path", "speculator/x.py", package, True) == "from pathlib import Path"


def test_an_import_copied_from_another_file_needs_less_confidence() -> None:
    plan = prepare(typed("    root = Path(name).parent\n"))
    assert plan is not None and plan.draft_change is not None
    assert plan.draft_change.edit.new_text == "from pathlib import Path\n"
    assert plan.draft_change.bar_power == IMPORT_BAR_POWER > 1
    assert bar_of(plan.draft_change, MIN_CONFIDENCE) < MIN_CONFIDENCE


BLOCK = (
    "    base = name.strip()\n"
    "    if not base:\n"
    "        raise ValueError('no name')\n"
    "    root = Path(base).parent\n"
    "    tail = base.rsplit('/', 1)[-1]\n"
    "    stem = tail.split('.')[0]\n"
)


def test_a_scored_import_is_shown_the_lines_of_a_long_edit_that_use_it() -> None:
    plan = prepare(typed(BLOCK))
    assert plan is not None and plan.draft_change is not None
    assert plan.draft_change.edit.new_text == "from pathlib import Path\n"
    diff = plan.prompt.text.split("Recent edits:")[1].split("Code around the cursor")[0]
    assert "+    root = Path(base).parent\n" in diff
    assert "rsplit" not in diff and "raise ValueError" not in diff


def test_a_short_edit_is_shown_whole_to_a_scored_import() -> None:
    plan = prepare(typed("    root = Path(name).parent\n"))
    assert plan is not None
    diff = plan.prompt.text.split("Recent edits:")[1].split("Code around the cursor")[0]
    # the edit with its context line, as for any other draft
    assert " def load(name: str) -> dict[str, Any]:\n+    root = Path(name).parent\n" in diff


def test_a_model_that_rewrites_is_shown_a_long_edit_whole() -> None:
    plan = prepare(replace(typed(BLOCK), prompt_format="zeta2"))
    assert plan is not None
    assert "rsplit" in plan.prompt.text and "raise ValueError" in plan.prompt.text


def test_uses_shown_leaves_out_long_edits_without_a_use_unless_none_is_left() -> None:
    long_edit = Hunk("a.py", 3, ["x = 1"], [f"y{i} = {i}" for i in range(6)], ["above"], [])
    short = Hunk("a.py", 20, ["a = 1"], ["a = 2"], [], [])
    using = Hunk("b.py", 0, [], [f"z{i} = Path({i})" for i in range(6)], [], [])
    shown = uses_shown([long_edit, short, using], ["Path"])
    assert shown[0] == short
    assert shown[1] == Hunk("b.py", 0, [], [f"z{i} = Path({i})" for i in range(4)], [], [])
    assert len(shown) == 2
    assert uses_shown([long_edit], ["Path"]) == [long_edit]
    assert uses_shown([long_edit], []) == [long_edit]
