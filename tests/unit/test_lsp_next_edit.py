"""How the server names files in a next-edit prompt (lsp_server/next_edit.py)."""

from __future__ import annotations

from lsprotocol import types

from lsp_server.documents import DocumentStore
from lsp_server.next_edit import request_for, shown_path
from lsp_server.options import ServerOptions
from lsp_server.requests import Resolved


def test_a_file_under_the_workspace_root_is_named_from_it() -> None:
    assert shown_path("/home/ann/proj/src/app.py", "/home/ann/proj") == "src/app.py"
    assert shown_path("/home/ann/proj/src/app.py", "/home/ann/proj/") == "src/app.py"
    assert shown_path("/tmp/scratch.py", "/home/ann/proj") == "/tmp/scratch.py"
    assert shown_path("/tmp/scratch.py", None) == "/tmp/scratch.py"
    assert shown_path("untitled:Untitled-1", "/home/ann/proj") == "untitled:Untitled-1"


def test_the_request_names_this_file_and_the_others_from_the_root() -> None:
    store = DocumentStore(100_000)
    for name in ("a.py", "b.py"):
        item = types.TextDocumentItem(f"file:///w/pkg/{name}", "python", 1, "x = 1\n")
        store.open(item)
    edit = types.TextDocumentContentChangePartial(
        range=types.Range(types.Position(0, 0), types.Position(0, 1)), text="y"
    )
    store.change("file:///w/pkg/b.py", 2, [edit])
    store.change("file:///w/pkg/a.py", 2, [edit])
    doc = store.get("file:///w/pkg/a.py")
    src = Resolved(doc.text, doc.index, "python", "/w/pkg/a.py", doc.uri, doc.version, doc)
    request = request_for(store, src, 1, "auto", ServerOptions(), root="/w")
    assert request.path == "pkg/a.py"
    assert [path for path, _before, _edit in request.elsewhere] == ["pkg/b.py"]


def test_the_rewrite_option_has_the_model_write_the_window_too() -> None:
    store = DocumentStore(100_000)
    store.open(types.TextDocumentItem("file:///w/a.py", "python", 1, "x = 1\n"))
    edit = types.TextDocumentContentChangePartial(
        range=types.Range(types.Position(0, 0), types.Position(0, 1)), text="y"
    )
    store.change("file:///w/a.py", 2, [edit])
    doc = store.get("file:///w/a.py")
    src = Resolved(doc.text, doc.index, "python", "/w/a.py", doc.uri, doc.version, doc)
    default = request_for(store, src, 1, "auto", ServerOptions(), root="/w")
    rewriting = request_for(store, src, 1, "auto", ServerOptions(next_edit_rewrite=True))
    assert default.draft_only is None  # as the format says: qwen only scores the draft
    assert rewriting.draft_only is False
