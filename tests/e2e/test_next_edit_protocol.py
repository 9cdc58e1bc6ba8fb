"""groundspec/nextEdit and textDocument/copilotInlineEdit against `serve --fake`
over raw stdio, played as shared/nes/README.md plays a task: didOpen, didChange,
then the request. The fake engine's rewrite is the draft (the last edit carried
on), so a rename is carried to the lines above."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from next_edit_sample import PLUGINS as CODE

from .raw import RawServer

URI = "file:///work/plugins.py"
RENAMED_LINE = 5


@pytest.fixture
def server() -> Iterator[RawServer]:
    srv = RawServer()
    srv.initialize()
    yield srv
    srv.close()


def open_and_rename(server: RawServer) -> dict:
    """Open CODE, rename `name` to `attr_name` on the getattr line; the cursor after it."""
    item = {"uri": URI, "languageId": "python", "version": 1, "text": CODE}
    server.notify("textDocument/didOpen", {"textDocument": item})
    col = CODE.splitlines()[RENAMED_LINE].index("name)")
    change = {
        "range": {
            "start": {"line": RENAMED_LINE, "character": col},
            "end": {"line": RENAMED_LINE, "character": col + 4},
        },
        "text": "attr_name",
    }
    server.notify(
        "textDocument/didChange",
        {"textDocument": {"uri": URI, "version": 2}, "contentChanges": [change]},
    )
    return {"line": RENAMED_LINE, "character": col + len("attr_name")}


def applied(text: str, edits: list[dict], key: str) -> str:
    lines = text.split("\n")
    starts = [0]
    for line in lines:
        starts.append(starts[-1] + len(line) + 1)
    for edit in sorted(
        edits,
        key=lambda e: (e["range"]["start"]["line"], e["range"]["start"]["character"]),
        reverse=True,
    ):
        r = edit["range"]
        a = starts[r["start"]["line"]] + r["start"]["character"]
        b = starts[r["end"]["line"]] + r["end"]["character"]
        text = text[:a] + edit[key] + text[b:]
    return text


def test_next_edit_carries_the_rename_in_the_contract_shape(server: RawServer) -> None:
    cursor = open_and_rename(server)
    params = {"textDocument": {"uri": URI}, "position": cursor, "speculation": "off"}
    result = server.call("groundspec/nextEdit", params)["result"]
    assert set(result) == {"edits", "stats"}
    assert result["stats"]["speculation"] == "off"
    (edit,) = result["edits"]
    assert set(edit) == {"range", "newText"}
    after = CODE.replace("getattr(plugin, name)", "getattr(plugin, attr_name)")
    assert applied(after, result["edits"], "newText") == CODE.replace("name", "attr_name")


def test_copilot_inline_edit_answers_the_same_in_copilots_shape(server: RawServer) -> None:
    cursor = open_and_rename(server)
    ours = server.call("groundspec/nextEdit", {"textDocument": {"uri": URI}, "position": cursor})
    params = {"textDocument": {"uri": URI, "version": 2}, "position": cursor}
    theirs = server.call("textDocument/copilotInlineEdit", params)["result"]
    (edit,) = theirs["edits"]
    assert edit["text"] == ours["result"]["edits"][0]["newText"]
    assert edit["range"] == ours["result"]["edits"][0]["range"]
    assert edit["textDocument"] == {"uri": URI, "version": 2}
    assert edit["command"]["command"] == "groundspec.accepted"


def test_no_recent_edit_no_suggestion_and_history_dropped_on_close(server: RawServer) -> None:
    cursor = open_and_rename(server)
    server.notify("textDocument/didClose", {"textDocument": {"uri": URI}})
    item = {"uri": URI, "languageId": "python", "version": 3, "text": CODE}
    server.notify("textDocument/didOpen", {"textDocument": item})
    result = server.call("groundspec/nextEdit", {"textDocument": {"uri": URI}, "position": cursor})
    assert result["result"]["edits"] == []


def test_bad_input_gets_a_clear_error(server: RawServer) -> None:
    unknown = server.call(
        "groundspec/nextEdit",
        {"textDocument": {"uri": "file:///nope.py"}, "position": {"line": 0, "character": 0}},
    )
    assert "didOpen" in unknown["error"]["message"]
    cursor = open_and_rename(server)
    missing = server.call("groundspec/nextEdit", {"textDocument": {"uri": URI}})
    assert missing["error"]["code"] == -32602
    far = dict(cursor, line=999)
    out = server.call("groundspec/nextEdit", {"textDocument": {"uri": URI}, "position": far})
    assert "out of range" in out["error"]["message"]


def test_an_automatic_request_typed_over_answers_nothing(server: RawServer) -> None:
    cursor = open_and_rename(server)
    params = {"textDocument": {"uri": URI, "version": 2}, "position": cursor}
    msg_id = server.request("textDocument/copilotInlineEdit", params)
    typed = {"range": {"start": cursor, "end": cursor}, "text": "x"}
    server.notify(
        "textDocument/didChange",
        {"textDocument": {"uri": URI, "version": 3}, "contentChanges": [typed]},
    )
    assert server.answer(msg_id)["result"] == {"edits": []}


def test_an_automatic_request_for_a_file_closed_meanwhile_answers_nothing(
    server: RawServer,
) -> None:
    cursor = open_and_rename(server)
    params = {"textDocument": {"uri": URI, "version": 2}, "position": cursor}
    msg_id = server.request("textDocument/copilotInlineEdit", params)
    server.notify("textDocument/didClose", {"textDocument": {"uri": URI}})
    assert server.answer(msg_id) == {"jsonrpc": "2.0", "id": msg_id, "result": {"edits": []}}


SHAPES_URI, MAIN_URI = "file:///work/shapes.py", "file:///work/main.py"
SHAPES = "def describe(radius):\n    return str(radius)\n"
MAIN = "from shapes import describe\n\n\ndef main():\n    return describe(1.0)\n"


def test_a_rename_made_in_another_file_is_proposed_in_the_file_opened_next(
    server: RawServer,
) -> None:
    for uri, text in ((SHAPES_URI, SHAPES), (MAIN_URI, MAIN)):
        item = {"uri": uri, "languageId": "python", "version": 1, "text": text}
        server.notify("textDocument/didOpen", {"textDocument": item})
    rename = {
        "range": {"start": {"line": 0, "character": 4}, "end": {"line": 0, "character": 12}},
        "text": "describe_circle",
    }
    server.notify(
        "textDocument/didChange",
        {"textDocument": {"uri": SHAPES_URI, "version": 2}, "contentChanges": [rename]},
    )
    params = {"textDocument": {"uri": MAIN_URI}, "position": {"line": 0, "character": 0}}
    (edit,) = server.call("groundspec/nextEdit", params)["result"]["edits"]
    first = applied(MAIN, [edit], "newText")
    assert first == MAIN.replace("import describe", "import describe_circle")


LOADER_URI = "file:///work/app/loader.py"
LOADER = "from pathlib import Path\n\n\ndef read(name):\n    return Path(name).read_text()\n"
CONFIG_URI = "file:///work/app/config.py"
CONFIG = '"""Settings."""\nimport json\n\n\ndef load(name):\n    with open(name) as f:\n        return json.load(f)\n'


def test_a_name_used_here_and_imported_in_another_open_file_gets_its_import(
    server: RawServer,
) -> None:
    for uri, text in ((LOADER_URI, LOADER), (CONFIG_URI, CONFIG)):
        item = {"uri": uri, "languageId": "python", "version": 1, "text": text}
        server.notify("textDocument/didOpen", {"textDocument": item})
    typed = "    name = Path(name).expanduser()\n"
    at = {"line": 5, "character": 0}
    change = {"range": {"start": at, "end": at}, "text": typed}
    server.notify(
        "textDocument/didChange",
        {"textDocument": {"uri": CONFIG_URI, "version": 2}, "contentChanges": [change]},
    )
    now = applied(CONFIG, [{"range": {"start": at, "end": at}, "newText": typed}], "newText")
    params = {"textDocument": {"uri": CONFIG_URI}, "position": {"line": 5, "character": 34}}
    (edit,) = server.call("groundspec/nextEdit", params)["result"]["edits"]
    assert applied(now, [edit], "newText") == now.replace(
        "import json\n", "import json\nfrom pathlib import Path\n"
    )
    server.notify("textDocument/didClose", {"textDocument": {"uri": LOADER_URI}})
    assert server.call("groundspec/nextEdit", params)["result"]["edits"] == []


def test_with_next_edit_rewrite_the_model_writes_even_where_the_draft_carries_nothing(
    server: RawServer,
) -> None:
    item = {"uri": URI, "languageId": "python", "version": 1, "text": CODE}
    server.notify("textDocument/didOpen", {"textDocument": item})
    line = CODE.splitlines().index("            continue")
    change = {
        "range": {"start": {"line": line, "character": 12}, "end": {"line": line, "character": 20}},
        "text": "break",
    }
    server.notify(
        "textDocument/didChange",
        {"textDocument": {"uri": URI, "version": 2}, "contentChanges": [change]},
    )
    params = {"textDocument": {"uri": URI}, "position": {"line": line, "character": 17}}
    scored_only = server.call("groundspec/nextEdit", params)["result"]
    server.notify("workspace/didChangeConfiguration", {"settings": {"nextEditRewrite": True}})
    rewritten = server.call("groundspec/nextEdit", params)["result"]
    assert scored_only["edits"] == rewritten["edits"] == []
    assert scored_only["stats"]["generatedTokens"] == 0  # the model was not asked
    assert rewritten["stats"]["generatedTokens"] > 0  # it wrote the window: nothing changed
