"""The installed script client: typed results, progress and messages through callbacks,
and document changes sent as ranged didChange (what next-edit learns from)."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import msgspec
import pytest
from contract import STATS_KEYS
from groundspec_client import (
    Client,
    Completion,
    GroundspecError,
    Message,
    MessageType,
    NextEdit,
    Position,
    Progress,
    Range,
    Refactor,
    RequestStats,
    ServerStats,
    apply_edit,
    changed_span,
    offset,
    position,
)
from python_client_peer import COMPLETE_RESULT, FakeServer, Send, standard

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def connected() -> Iterator[tuple[Client, FakeServer]]:
    server = FakeServer(standard)
    client = Client(server.client_reader, server.client_writer, timeout=5)
    client.initialize("/tmp")
    yield client, server
    client.close(timeout=2)


def test_the_package_imports_from_anywhere_once_installed(tmp_path: Path) -> None:
    """`pip install -e .` installs it: no sys.path entry, no PYTHONPATH, another directory."""
    env = {key: value for key, value in os.environ.items() if key != "PYTHONPATH"}
    done = subprocess.run(
        [sys.executable, "-c", "import groundspec_client as g; print(g.__file__)"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert Path(done.stdout.strip()).parent == ROOT / "clients" / "python" / "groundspec_client"


def test_request_stats_use_exactly_the_contract_keys() -> None:
    assert set(msgspec.to_builtins(RequestStats())) == STATS_KEYS


def test_complete_returns_a_typed_completion(connected: tuple[Client, FakeServer]) -> None:
    client, _ = connected
    result = client.complete(text="def f(a, b):\n    ", line=1, character=4)
    assert isinstance(result, Completion)
    assert result.text == "return a + b"
    assert result.stats == RequestStats(
        generated_tokens=4,
        drafted_tokens=3,
        accepted_tokens=2,
        prompt_tokens=20,
        reused_prompt_tokens=10,
        prompt_ms=1.5,
        decode_ms=2.5,
        total_ms=4.0,
        speculation="lookup",
    )
    assert msgspec.to_builtins(result) == COMPLETE_RESULT  # the wire JSON back


def test_refactor_returns_new_text_and_a_typed_range(
    connected: tuple[Client, FakeServer],
) -> None:
    client, _ = connected
    text = "def f():\n    pass\n"
    result = client.refactor(text=text, start=(0, 0), end=(1, 8), instruction="rename f to g")
    assert isinstance(result, Refactor)
    assert result.range == Range(Position(0, 0), Position(1, 8))
    assert result.new_text == "def g():\n    pass"
    assert apply_edit(text, result.range, result.new_text) == "def g():\n    pass\n"


def test_next_edit_returns_typed_edits(
    connected: tuple[Client, FakeServer], tmp_path: Path
) -> None:
    client, server = connected
    source = tmp_path / "m.py"
    source.write_text("abc\ndef\n", encoding="utf-8")
    result = client.next_edit(source, line=1, character=0, speculation="off")
    assert isinstance(result, NextEdit)
    assert [(edit.range, edit.new_text) for edit in result.edits] == [
        (Range(Position(0, 0), Position(1, 8)), "x")
    ]
    assert server.received[-1]["params"] == {
        "textDocument": {"uri": source.resolve().as_uri()},
        "position": {"line": 1, "character": 0},
        "speculation": "off",
    }


def test_server_stats_are_typed_and_tolerate_new_keys(
    connected: tuple[Client, FakeServer],
) -> None:
    client, _ = connected
    stats = client.stats()
    assert isinstance(stats, ServerStats)
    assert (stats.requests, stats.tokens_per_second) == (3, 12.5)
    assert stats.acceptance["lookup"].rate == 0.7
    assert stats.latency_ms.p95 == 80.0
    assert stats.server.engine_state == "ready"
    assert stats.cancelled == 0  # absent: the default


def test_a_result_without_its_text_is_a_clear_error() -> None:
    def handler(message: dict[str, Any], send: Send) -> None:
        if message.get("method") == "groundspec/complete":
            send({"jsonrpc": "2.0", "id": message["id"], "result": {"stats": {}}})
        else:
            standard(message, send)

    server = FakeServer(handler)
    client = Client(server.client_reader, server.client_writer, timeout=5)
    with pytest.raises(GroundspecError, match="unexpected groundspec/complete result"):
        client.complete(text="x", line=0, character=1)
    client.close(timeout=2)


def notifying(*notifications: dict[str, Any]) -> FakeServer:
    """A server that sends `notifications` before it answers groundspec/stats."""

    def handler(message: dict[str, Any], send: Send) -> None:
        if message.get("method") == "groundspec/stats":
            for params in notifications:
                send({"jsonrpc": "2.0", **params})
        standard(message, send)

    return FakeServer(handler)


LOAD = "groundspec/load"


def progress_note(token: str | int, **value: Any) -> dict[str, Any]:
    return {"method": "$/progress", "params": {"token": token, "value": value}}


def test_progress_and_messages_reach_their_callbacks() -> None:
    server = notifying(
        {"id": "c1", "method": "window/workDoneProgress/create", "params": {"token": LOAD}},
        progress_note(
            LOAD, kind="begin", title="groundspec", message="Loading models", percentage=0
        ),
        progress_note(LOAD, kind="report", percentage=40),
        progress_note(LOAD, kind="end", message="Models ready"),
        {"method": "window/showMessage", "params": {"type": 1, "message": "could not load"}},
        {"method": "window/logMessage", "params": {"type": 4, "message": "a log line"}},
    )
    progress: list[Progress] = []
    shown: list[Message] = []
    logged: list[Message] = []
    client = Client(
        server.client_reader,
        server.client_writer,
        timeout=5,
        on_progress=progress.append,
        on_message=shown.append,
        on_log=logged.append,
    )
    client.stats()  # the notifications come before its answer, on the same stream
    client.close(timeout=2)
    assert [(p.token, p.kind, p.percentage) for p in progress] == [
        (LOAD, "begin", 0),
        (LOAD, "report", 40),
        (LOAD, "end", None),
    ]
    assert progress[0].describe() == "groundspec Loading models 0%"
    assert progress[2].describe() == "Models ready"
    assert shown == [Message(MessageType.ERROR, "could not load")]
    assert logged == [Message(MessageType.LOG, "a log line")]


def test_a_failing_callback_or_a_malformed_notification_keeps_the_connection() -> None:
    server = notifying(
        progress_note(1, kind="nonsense"),
        progress_note(1, kind="begin"),
        {"method": "window/showMessage", "params": {"type": 3, "message": "after"}},
    )
    calls: list[Progress] = []
    shown: list[Message] = []

    def failing(progress: Progress) -> None:
        calls.append(progress)
        raise RuntimeError("a bug in the caller's callback")

    client = Client(server.client_reader, server.client_writer, timeout=5, on_progress=failing)
    client.on_message = shown.append  # callbacks can be set after construction
    assert client.stats().requests == 3
    assert client.stats().requests == 3
    client.close(timeout=2)
    assert [p.kind for p in calls] == ["begin", "begin"]  # the malformed one is skipped
    assert [m.message for m in shown] == ["after", "after"]


def test_callbacks_run_while_a_request_waits() -> None:
    """A progress report arrives while complete() blocks: the callback sees it first."""
    reported = threading.Event()

    def handler(message: dict[str, Any], send: Send) -> None:
        if message.get("method") == "groundspec/complete":
            value = {"kind": "report", "message": "decoding"}
            send(
                {"jsonrpc": "2.0", "method": "$/progress", "params": {"token": "r", "value": value}}
            )
            assert reported.wait(5)
        standard(message, send)

    server = FakeServer(handler)
    client = Client(
        server.client_reader,
        server.client_writer,
        timeout=5,
        on_progress=lambda progress: reported.set(),
    )
    assert client.complete(text="x", line=0, character=1).text == "return a + b"
    client.close(timeout=2)


def test_update_document_sends_one_ranged_change(
    connected: tuple[Client, FakeServer], tmp_path: Path
) -> None:
    client, server = connected
    source = tmp_path / "m.py"
    source.write_text("def f(a):\n    return a\n", encoding="utf-8")
    uri = client.open_document(source)
    client.update_document(source, "def f(a, b):\n    return a\n")
    client.update_document(source, "def f(a, b):\n    return a\n")  # unchanged: nothing sent
    client.stats()  # answered once the notifications sent before it were read
    changes = [m for m in server.received if m.get("method") == "textDocument/didChange"]
    assert len(changes) == 1
    assert changes[0]["params"] == {
        "textDocument": {"uri": uri, "version": 2},
        "contentChanges": [
            {
                "range": {"start": {"line": 0, "character": 7}, "end": {"line": 0, "character": 7}},
                "text": ", b",
            }
        ],
    }
    client.close_document(source)
    client.stats()  # the didClose is read before this request
    assert [m.get("method") for m in server.received[-2:]] == [
        "textDocument/didClose",
        "groundspec/stats",
    ]


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ("abc", "abc"),
        ("", "x"),
        ("abc", ""),
        ("a🎉b\nc", "a🎉xb\nc"),
        ("one\r\ntwo", "one\ntwo"),
        ("one\r\ntwo", "one\r\r\ntwo"),
        ("x\r\n", "x\r\ny"),
        ("aaa", "aa"),
        ("l1\nl2\rl3", "l1\nL2\rl3\n"),
    ],
)
def test_changed_span_applied_at_its_lsp_range_gives_the_new_text(old: str, new: str) -> None:
    start, end, replacement = changed_span(old, new)
    assert old[:start] + replacement + old[end:] == new
    first, last = position(old, start), position(old, end)
    assert offset(old, first["line"], first["character"]) == start
    assert offset(old, last["line"], last["character"]) == end
    lsp_range = {"start": first, "end": last}
    assert apply_edit(old, lsp_range, replacement) == new
