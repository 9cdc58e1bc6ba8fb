"""Issue 11's probes against `groundspec serve --fake` over raw stdio."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest

from .raw import RawServer, frame

URI = "file:///probe.py"
HERE = {"start": {"line": 0, "character": 0}, "end": {"line": 0, "character": 0}}


@pytest.fixture
def server() -> Iterator[RawServer]:
    srv = RawServer()
    srv.initialize()
    yield srv
    srv.close()


def document(server: RawServer) -> dict:
    reply = server.call("groundspec/debug/document", {"uri": URI})
    return reply["result"]


def open_probe(server: RawServer, text: str) -> None:
    item = {"uri": URI, "languageId": "python", "version": 1, "text": text}
    server.notify("textDocument/didOpen", {"textDocument": item})


def test_traffic_continues_after_every_kind_of_broken_frame(server: RawServer) -> None:
    """Item 2: one malformed frame used to wedge the connection."""
    broken = [
        b"Content-Length: abc\r\n\r\n{}",
        b"Content-Length: -1\r\n\r\n{}",
        b"Content-Length: 2\r\nContent-Length: 9\r\n\r\n{}",
        b"Content-Length: 1\r\n\r\n{}",
        b"\x07\xfe junk",
        b"Content-Length: 2\n\n{}",
        b"Content-Type: text/plain\r\n\r\n{}",
    ]
    for junk in broken:
        server.send_bytes(junk)
        assert "result" in server.call("groundspec/stats", {}, timeout=5), junk
    # A length longer than the body: served once the stream stalls.
    body = json.dumps({"jsonrpc": "2.0", "id": "long", "method": "groundspec/stats"}).encode()
    server.send_bytes(b"Content-Length: 900\r\n\r\n" + body)
    assert "result" in server.answer("long", timeout=5)


def test_nested_jsonrpc_keys_are_plain_data(server: RawServer) -> None:
    """Item 3: only the top-level object is a JSON-RPC message."""
    nested = {"jsonrpc": "2.0", "id": 77, "method": "shutdown"}
    params = {"text": "x", "position": {"line": 0, "character": 1}, "extra": nested}
    msg_id = server.request("groundspec/complete", params)
    assert server.answer(msg_id)["result"]["text"] == "fake_completion()"
    reply = server.call(
        "workspace/executeCommand", {"command": "groundspec.accepted", "arguments": [nested]}
    )
    assert "result" in reply
    assert "result" in server.call("groundspec/stats", {})  # no shutdown happened


def test_lone_surrogates_are_stored_and_batches_apply_whole(server: RawServer) -> None:
    """Item 4: such text was never stored, or half a batch was applied."""
    open_probe(server, "a\ud800b\n")
    assert document(server)["text"] == "a\ud800b\n"
    changes = [{"range": HERE, "text": "\ud83d"}, {"range": HERE, "text": "X"}]
    params = {"textDocument": {"uri": URI, "version": 2}, "contentChanges": changes}
    server.notify("textDocument/didChange", params)
    assert document(server) == {"uri": URI, "version": 2, "text": "X\ud83da\ud800b\n"}
    backwards = {"start": {"line": 0, "character": 2}, "end": {"line": 0, "character": 0}}
    changes = [{"range": HERE, "text": "Y"}, {"range": backwards, "text": "Z"}]
    params = {"textDocument": {"uri": URI, "version": 3}, "contentChanges": changes}
    server.notify("textDocument/didChange", params)
    assert document(server)["version"] == 2  # nothing of the failed batch applied


def test_lifecycle_errors_follow_the_specification() -> None:
    """Item 6: -32002 before initialize, InvalidRequest after shutdown or with an id."""
    server = RawServer()
    try:
        assert server.call("groundspec/stats", {})["error"]["code"] == -32002
        server.initialize()
        didsave = {"textDocument": {"uri": URI}}
        assert server.call("textDocument/didSave", didsave)["error"]["code"] == -32600
        assert server.call("initialize", {"capabilities": {}})["error"]["code"] == -32600
        assert "result" in server.call("shutdown")
        assert server.call("groundspec/stats", {})["error"]["code"] == -32600
        server.notify("exit")
        assert server.proc.wait(10) == 0
    finally:
        server.close()


def test_malformed_notifications_are_logged_not_shown(server: RawServer) -> None:
    """Item 6: 772 pop-ups in 12,000 messages."""
    for _ in range(5):
        server.notify("textDocument/didChange", {"textDocument": 5, "contentChanges": "x"})
        server.notify("textDocument/didOpen", None)
        server.send(b'{"jsonrpc": "2.0", "method": "textDocument/didClose", "params": [1, 2]}')
    server.call("groundspec/stats", {})
    shown = []
    while not server.messages.empty():
        shown.append(server.messages.get())
    assert not [m for m in shown if m.get("method") == "window/showMessage"]


def test_a_failed_model_load_answers_each_request_without_a_traceback() -> None:
    """Item 7: the editors issue saw a full traceback per request."""
    server = RawServer(env={"GROUNDSPEC_TARGET_MODEL": "/nonexistent/t.gguf"}, fake=False)
    try:
        server.initialize()
        params = {"text": "x", "position": {"line": 0, "character": 1}}
        errors = [server.call("groundspec/complete", params)["error"] for _ in range(3)]
        assert all("load" in error["message"] for error in errors)
        server.close()
        log = b"".join(server.stderr).decode()
        assert "Traceback" not in log
    finally:
        server.close()


def test_framing_answers_match_requests(server: RawServer) -> None:
    """Two frames in one write, then one frame split over writes: one answer each."""
    first = {"jsonrpc": "2.0", "id": 501, "method": "groundspec/stats"}
    second = {"jsonrpc": "2.0", "id": 502, "method": "groundspec/stats"}
    server.send_bytes(frame(first) + frame(second))
    data = frame({"jsonrpc": "2.0", "id": 503, "method": "groundspec/stats"})
    server.send_bytes(data[:10])
    server.send_bytes(data[10:])
    for msg_id in (501, 502, 503):
        assert server.answer(msg_id)["id"] == msg_id


def test_broken_responses_from_the_client_are_dropped(server: RawServer) -> None:
    for msg_id in ([1], {"a": 1}, None, 3.5, "unknown"):
        server.send({"jsonrpc": "2.0", "id": msg_id, "result": {"x": 1}})
        server.send({"jsonrpc": "2.0", "id": msg_id, "error": {"code": "bad"}})
    assert "result" in server.call("groundspec/stats", {})


def test_a_change_whose_text_is_not_a_string_is_dropped(server: RawServer) -> None:
    """A null or numeric `text` used to be inserted as "None" or "42"."""
    open_probe(server, "ab\n")
    for version, text in enumerate([None, 42, ["x"]], start=2):
        changes = [{"range": HERE, "text": text}]
        params = {"textDocument": {"uri": URI, "version": version}, "contentChanges": changes}
        server.notify("textDocument/didChange", params)
        server.notify(
            "textDocument/didChange",
            {"textDocument": {"uri": URI, "version": version}, "contentChanges": [{"text": text}]},
        )
    assert document(server) == {"uri": URI, "version": 1, "text": "ab\n"}
    item = {"uri": "file:///null.py", "languageId": "python", "version": 1, "text": None}
    server.notify("textDocument/didOpen", {"textDocument": item})
    reply = server.call("groundspec/debug/document", {"uri": "file:///null.py"})
    assert "unknown document" in reply["error"]["message"]


@pytest.mark.parametrize("answer", [None, {}, 5, {"applied": True}, {"applied": False}])
def test_an_apply_edit_answer_without_applied_is_not_applied(
    server: RawServer, answer: object
) -> None:
    """groundspec.refactor failed with "malformed response: TypeError: argument of type
    'NoneType' is not iterable" when the editor answered workspace/applyEdit with null
    (or an object without `applied`). Unless it says `applied: true`, the rewrite comes
    back with `applied: false`, for the caller to apply itself."""
    open_probe(server, "def f():\n    return 1\n")
    target = {"start": {"line": 0, "character": 0}, "end": {"line": 1, "character": 12}}
    args = [{"uri": URI, "range": target, "instruction": "Add a comment"}]
    msg_id = server.request(
        "workspace/executeCommand", {"command": "groundspec.refactor", "arguments": args}
    )
    asked = server.messages.get(timeout=10)
    assert asked["method"] == "workspace/applyEdit", asked
    server.send({"jsonrpc": "2.0", "id": asked["id"], "result": answer})
    reply = server.answer(msg_id)
    assert "result" in reply, reply
    assert reply["result"]["newText"] == "# Add a comment\ndef f():\n    return 1"
    assert reply["result"]["applied"] is (answer == {"applied": True})
