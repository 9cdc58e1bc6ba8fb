"""The script client (the installed groundspec_client package) against in-memory streams:
framing, positions, requests and the server's own requests. Typed results, callbacks and
document sync: test_python_client_typed.py."""

from __future__ import annotations

import io
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from groundspec_client import (
    Client,
    GroundspecError,
    apply_edit,
    encode_message,
    language_id,
    offset,
    read_message,
    utf16_len,
    write_or_show_diff,
)
from python_client_peer import FakeServer, Send, StopServing, standard


def test_encode_then_read_round_trip_with_non_ascii() -> None:
    message = {"jsonrpc": "2.0", "id": 1, "result": {"text": "naïve → 🎉"}}
    data = encode_message(message)
    header, body = data.split(b"\r\n\r\n", 1)
    assert header == b"Content-Length: %d" % len(body)
    assert read_message(io.BytesIO(data)) == message


def test_a_lone_surrogate_is_sent_as_a_json_escape() -> None:
    message = {"jsonrpc": "2.0", "id": 1, "params": {"text": "a\ud83db"}}
    data = encode_message(message)
    assert b"\\ud83d" in data
    assert read_message(io.BytesIO(data)) == message
    assert utf16_len("a\ud83db") == 3


def test_offset_and_apply_edit_know_every_line_break_lsp_does() -> None:
    """LSP (and the server) end lines at \\r\\n, \\r or \\n; a file with bare \\r
    had its edit appended at the end, its old lines kept."""
    text = "def f():\r    return 1\r\rdef g():\r    return 2\r"
    assert offset(text, 3, 0) == text.index("def g")
    edited = apply_edit(
        text, {"start": {"line": 3, "character": 0}, "end": {"line": 4, "character": 12}}, "G"
    )
    assert edited == "def f():\r    return 1\r\rG\r"
    assert offset("a\r\nb", 1, 0) == 3


def test_read_several_messages_and_extra_headers() -> None:
    first = encode_message({"id": 1})
    second = b"Content-Type: application/vscode-jsonrpc; charset=utf-8\r\n" + encode_message(
        {"id": 2}
    )
    stream = io.BytesIO(first + second)
    assert read_message(stream) == {"id": 1}
    assert read_message(stream) == {"id": 2}
    assert read_message(stream) is None


def test_truncated_body_is_end_of_stream() -> None:
    data = encode_message({"id": 1, "result": "long enough"})
    assert read_message(io.BytesIO(data[:-3])) is None


def test_missing_content_length_is_an_error() -> None:
    with pytest.raises(GroundspecError):
        read_message(io.BytesIO(b"X-Other: 1\r\n\r\n{}"))


def test_utf16_len_counts_surrogate_pairs() -> None:
    assert utf16_len("abc") == 3
    assert utf16_len("é") == 1
    assert utf16_len("🎉") == 2


def test_offset_counts_utf16_units_and_clamps() -> None:
    text = "a🎉b\nxyz"
    assert offset(text, 0, 0) == 0
    assert offset(text, 0, 3) == 2  # after the emoji (2 units)
    assert offset(text, 0, 99) == 3  # end of the line
    assert offset(text, 1, 2) == 6
    assert offset(text, 5, 0) == len(text)


def test_apply_edit_replaces_the_range() -> None:
    text = "def f():\n    pass\nx = 1\n"
    whole_function = {"start": {"line": 0, "character": 0}, "end": {"line": 2, "character": 0}}
    assert apply_edit(text, whole_function, "def g():\n    return 1\n") == (
        "def g():\n    return 1\nx = 1\n"
    )


def test_write_or_show_diff(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "a.py"
    path.write_text("x = 1\ny = 2\n", encoding="utf-8")
    write_or_show_diff(path, "x = 1\ny = 2\n", "x = 1\ny = 3\n", write=False)
    shown = capsys.readouterr().out
    assert "-y = 2\n+y = 3\n" in shown and f"--- {path}" in shown
    assert path.read_text(encoding="utf-8") == "x = 1\ny = 2\n"  # only shown
    write_or_show_diff(path, "x = 1\ny = 2\n", "x = 1\ny = 3\n", write=True)
    assert path.read_text(encoding="utf-8") == "x = 1\ny = 3\n"
    assert capsys.readouterr().out == ""


def test_language_id_from_extension() -> None:
    assert language_id("a/b.py") == "python"
    assert language_id("x.RS") == "rust"
    assert language_id("notes.txt") == "plaintext"


@pytest.fixture
def connected() -> Iterator[tuple[Client, FakeServer]]:
    server = FakeServer(standard)
    client = Client(server.client_reader, server.client_writer, timeout=5)
    client.initialize("/tmp")
    yield client, server
    client.close(timeout=2)


def test_initialize_sends_initialized_and_keeps_capabilities(
    connected: tuple[Client, FakeServer],
) -> None:
    client, server = connected
    assert client.capabilities == {"inlineCompletionProvider": True}
    client.close(timeout=2)  # the server has read everything once it has seen exit
    methods = [m.get("method") for m in server.received]
    assert methods == ["initialize", "initialized", "shutdown", "exit"]
    assert server.received[0]["params"]["rootUri"] == "file:///tmp"


def test_complete_with_text_sends_contract_params(connected: tuple[Client, FakeServer]) -> None:
    client, server = connected
    result = client.complete(text="def f(a, b):\n    ", line=1, character=4, max_tokens=16)
    assert result.text == "return a + b"
    sent = server.received[-1]
    assert sent["method"] == "groundspec/complete"
    assert sent["params"] == {
        "text": "def f(a, b):\n    ",
        "languageId": "python",
        "position": {"line": 1, "character": 4},
        "maxTokens": 16,
    }


def test_complete_with_path_opens_the_document_once(
    connected: tuple[Client, FakeServer], tmp_path: Path
) -> None:
    client, server = connected
    source = tmp_path / "m.py"
    source.write_text("x = 1\n", encoding="utf-8")
    client.complete(path=source, line=1, character=0)
    client.complete(path=source, line=1, character=0)
    opens = [m for m in server.received if m.get("method") == "textDocument/didOpen"]
    assert len(opens) == 1
    assert opens[0]["params"]["textDocument"]["languageId"] == "python"
    assert server.received[-1]["params"]["textDocument"] == {"uri": source.resolve().as_uri()}


def test_complete_needs_exactly_one_source(connected: tuple[Client, FakeServer]) -> None:
    client, _ = connected
    with pytest.raises(ValueError):
        client.complete(line=0, character=0)


def test_error_response_raises_with_code(connected: tuple[Client, FakeServer]) -> None:
    client, _ = connected
    with pytest.raises(GroundspecError) as info:
        client.request("groundspec/unknown", {})
    assert info.value.code == -32601


def test_stats(connected: tuple[Client, FakeServer]) -> None:
    client, _ = connected
    assert client.stats().tokens_per_second == 12.5


def test_server_requests_are_answered_while_waiting() -> None:
    """Progress creation and applyEdit arrive in the middle of a request."""

    def handler(message: dict[str, Any], send: Send) -> None:
        if message.get("method") == "groundspec/stats":
            send({"jsonrpc": "2.0", "id": "p1", "method": "window/workDoneProgress/create"})
            send({"jsonrpc": "2.0", "method": "$/progress", "params": {"token": 1}})
            edit: dict[str, Any] = {"edit": {"changes": {}}}
            send({"jsonrpc": "2.0", "id": "e1", "method": "workspace/applyEdit", "params": edit})
            send({"jsonrpc": "2.0", "id": "u1", "method": "unknown/method"})
            send({"jsonrpc": "2.0", "id": message["id"], "result": {"ok": True}})
        else:
            standard(message, send)

    server = FakeServer(handler)
    edits: list[dict[str, Any]] = []

    def apply(edit: dict[str, Any]) -> bool:
        edits.append(edit)
        return True

    client = Client(server.client_reader, server.client_writer, timeout=5, on_apply_edit=apply)
    assert client.request("groundspec/stats", {}) == {"ok": True}
    client.close(timeout=2)
    replies = {m["id"]: m for m in server.received if "method" not in m}
    assert replies["p1"]["result"] is None
    assert replies["e1"]["result"] == {"applied": True}
    assert replies["u1"]["error"]["code"] == -32601
    assert edits == [{"changes": {}}]
    assert client.received_edits == [{"edit": {"changes": {}}}]


def test_timeout_cancels_the_request() -> None:
    server = FakeServer(lambda message, send: None)  # never answers
    client = Client(server.client_reader, server.client_writer)
    with pytest.raises(GroundspecError, match="no answer"):
        client.request("groundspec/stats", {}, timeout=0.2)
    client.notify("exit", None)
    client._thread.join(2)
    cancel = [m for m in server.received if m.get("method") == "$/cancelRequest"]
    assert cancel == [{"jsonrpc": "2.0", "method": "$/cancelRequest", "params": {"id": 1}}]


def test_server_going_away_fails_pending_requests() -> None:
    def handler(message: dict[str, Any], send: Send) -> None:
        raise StopServing

    server = FakeServer(handler)
    client = Client(server.client_reader, server.client_writer, timeout=5)
    with pytest.raises(GroundspecError, match="closed"):
        client.stats()


def test_a_failed_initialize_leaves_no_process_behind(tmp_path: Path) -> None:
    pid_file = tmp_path / "pid"
    silent = (
        f"import os, time; open({str(pid_file)!r}, 'w').write(str(os.getpid())); time.sleep(60)"
    )
    with pytest.raises(GroundspecError):
        Client.spawn([sys.executable, "-c", silent], timeout=1.0)
    with pytest.raises(ProcessLookupError):
        os.kill(int(pid_file.read_text()), 0)
