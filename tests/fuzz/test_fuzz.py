"""Fuzz `groundspec serve --fake` over stdio, as a hostile editor would.

Random valid sequences (open, edit with emoji, CRLF and lone surrogates,
complete, cancel, next edits, close), mutated messages and broken framing, sent in
pipelined bursts. Asserts: the server never crashes or hangs, every request
with a usable id gets exactly one answer, and the server's copy of each
document equals the client's (read back with the fake engine's
`groundspec/debug/document`).

Bounded in CI (fixed seed, GROUNDSPEC_FUZZ_MESSAGES, default 3,000); a long
run: `GROUNDSPEC_FUZZ_MESSAGES=20000 GROUNDSPEC_FUZZ_SEED=7 pytest tests/fuzz -s`.
"""

from __future__ import annotations

import json
import os
import queue
import random
import re
import time
from collections import Counter
from typing import Any

from e2e.raw import RawServer, frame

MESSAGES = int(os.environ.get("GROUNDSPEC_FUZZ_MESSAGES", "3000"))
SEED = int(os.environ.get("GROUNDSPEC_FUZZ_SEED", "11"))
DUMP = os.environ.get("GROUNDSPEC_FUZZ_DUMP")  # a file for the bytes sent, to replay a failure
PIECES = [
    "a",
    "x = 1",
    "😀",
    "\r\n",
    "\n",
    "\r",
    "\ud800",
    "\udfff",
    "é",
    "𝒳",
    "    ",
    "def f():",
    "\t",
    "",
    # code a next edit can follow: names to rename, calls to add an argument to
    "name",
    " = f(name, 1)\n",
    "import os\n",
    "os.path",
]
COPILOT_INLINE_EDIT = "textDocument/copilotInlineEdit"
_EOL = re.compile(r"\r\n|\r|\n")


def joined(text: str) -> str:
    """`text` as an editor holds it: a high and a low surrogate next to each other
    are one character (JSON decoding joins them too)."""
    return text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "surrogatepass")


def position(text: str, offset: int) -> dict[str, int]:
    """LSP position of a code-point offset (the client's own arithmetic, not the server's)."""
    starts = [0] + [m.end() for m in _EOL.finditer(text)]
    line = max(i for i, start in enumerate(starts) if start <= offset)
    column = text[starts[line] : offset]
    return {"line": line, "character": len(column.encode("utf-16-le", "surrogatepass")) // 2}


def safe_offset(text: str, rng: random.Random) -> int:
    """A random offset that is not between "\\r" and "\\n" (editors never put one there)."""
    offset = rng.randrange(len(text) + 1)
    if 0 < offset < len(text) and text[offset - 1] == "\r" and text[offset] == "\n":
        offset -= 1
    return offset


class Client:
    """The client's model of the documents, and the bookkeeping of answers."""

    def __init__(self, server: RawServer, rng: random.Random) -> None:
        self.server = server
        self.rng = rng
        self.docs: dict[str, tuple[int, str]] = {}
        self.expected: dict[Any, tuple[str, int, str] | None] = {}  # id -> document snapshot
        self.optional: set[Any] = set()  # ids of broken messages: zero or one answer
        self.answers: Counter[Any] = Counter()
        self.sent = 0
        self.next_id = 0
        self.mismatches: list[str] = []
        self.next_edits: dict[Any, int] = {}  # id of a valid next-edit ask -> its answers' edits
        self.requests: dict[Any, bytes] = {}  # what was sent, for the failure message
        self.stream: list[bytes] = []  # everything sent, when GROUNDSPEC_FUZZ_DUMP is set

    # -- sending ------------------------------------------------------------------

    def new_id(self) -> Any:
        self.next_id += 1
        return self.next_id if self.rng.random() < 0.8 else f"s{self.next_id}"

    def send(self, message: Any, raw: bytes | None = None) -> None:
        data = raw if raw is not None else frame(message)
        self.server.send_bytes(data)
        self.sent += 1
        if DUMP:
            self.stream.append(data)

    def request(self, method: str, params: Any, snapshot: str | None = None) -> Any:
        msg_id = self.new_id()
        self.send({"jsonrpc": "2.0", "id": msg_id, "method": method, "params": params})
        self.requests[msg_id] = frame({"method": method, "params": params})
        doc = self.docs.get(snapshot) if snapshot else None
        self.expected[msg_id] = (snapshot, *doc) if snapshot and doc else None
        return msg_id

    def notify(self, method: str, params: Any) -> None:
        self.send({"jsonrpc": "2.0", "method": method, "params": params})

    # -- valid traffic --------------------------------------------------------------

    def open_doc(self) -> None:
        uri = f"file:///fuzz/{self.next_id}.py"
        text = joined("".join(self.rng.choice(PIECES) for _ in range(self.rng.randrange(30))))
        self.docs[uri] = (1, text)
        item = {"uri": uri, "languageId": "python", "version": 1, "text": text}
        self.notify("textDocument/didOpen", {"textDocument": item})

    def change_doc(self, uri: str) -> None:
        version, text = self.docs[uri]
        changes = []
        for _ in range(self.rng.randrange(1, 4)):
            start = safe_offset(text, self.rng)
            end = min(len(text), start + self.rng.randrange(4))
            if 0 < end < len(text) and text[end - 1] == "\r" and text[end] == "\n":
                end -= 1
            if self.rng.random() < 0.05:  # a whole-document change
                new = joined("".join(self.rng.choice(PIECES) for _ in range(5)))
                changes.append({"text": new})
                text = new
                continue
            new = "".join(self.rng.choice(PIECES) for _ in range(self.rng.randrange(3)))
            rng = {"start": position(text, start), "end": position(text, end)}
            changes.append({"range": rng, "text": new})
            text = joined(text[:start] + new + text[end:])
        self.docs[uri] = (version + 1, text)
        params = {"textDocument": {"uri": uri, "version": version + 1}, "contentChanges": changes}
        self.notify("textDocument/didChange", params)

    def close_doc(self, uri: str) -> None:
        del self.docs[uri]
        self.notify("textDocument/didClose", {"textDocument": {"uri": uri}})

    def ask(self, uri: str) -> None:
        _, text = self.docs[uri]
        at = position(text, safe_offset(text, self.rng))
        kind = self.rng.randrange(8)
        doc = {"uri": uri}
        if kind == 0:
            self.request("groundspec/complete", {"textDocument": doc, "position": at})
        elif kind == 1:
            params = {"textDocument": doc, "position": at, "context": {"triggerKind": 2}}
            self.request("textDocument/inlineCompletion", params)
        elif kind == 2:
            self.request("textDocument/completion", {"textDocument": doc, "position": at})
        elif kind == 3:
            context = {"diagnostics": []}
            params = {"textDocument": doc, "range": {"start": at, "end": at}, "context": context}
            self.request("textDocument/codeAction", params)
        elif kind == 4:
            msg_id = self.request("groundspec/complete", {"textDocument": doc, "position": at})
            self.notify("$/cancelRequest", {"id": msg_id})
        elif kind == 5:
            msg_id = self.request("groundspec/nextEdit", {"textDocument": doc, "position": at})
            self.next_edits[msg_id] = 0
        elif kind == 6:
            version, _ = self.docs[uri]
            edit_doc = {"uri": uri, "version": version}
            msg_id = self.request(COPILOT_INLINE_EDIT, {"textDocument": edit_doc, "position": at})
            self.next_edits[msg_id] = 0
        else:
            self.request("groundspec/debug/document", {"uri": uri}, snapshot=uri)

    # -- hostile traffic ---------------------------------------------------------------

    def mutated(self) -> None:
        """A request with a broken shape: it must still get exactly one answer."""
        msg_id = self.new_id()
        base = {"text": "ab", "position": {"line": 0, "character": 1}}
        variants: list[Any] = [
            {"textDocument": 5, "position": "x"},
            {**base, "extra": {"jsonrpc": "2.0", "id": msg_id, "method": "shutdown"}},
            {**base, "position": {"line": -1, "character": 2**40}},
            {**base, "maxTokens": "many"},
            None,
            [1, 2, 3],
            {"text": "\ud800" * 3, "position": {"line": 0, "character": 2}},
        ]
        method = self.rng.choice(
            [
                "groundspec/complete",
                "groundspec/refactor",
                "textDocument/completion",
                "groundspec/nextEdit",
                COPILOT_INLINE_EDIT,
                "no/such",
            ]
        )
        params = self.rng.choice(variants)
        if self.rng.random() < 0.2:  # a notification method with an id
            method, params = "textDocument/didSave", {"textDocument": {"uri": "file:///x"}}
        self.send({"jsonrpc": "2.0", "id": msg_id, "method": method, "params": params})
        self.requests[msg_id] = frame({"method": method, "params": params})
        self.expected[msg_id] = None

    def hostile_notification(self) -> None:
        """Broken notifications: logged and dropped, never answered or applied."""
        scratch = "file:///fuzz/scratch.py"
        bad = [
            {"textDocument": {"uri": scratch, "version": "v"}, "contentChanges": [{"range": 1}]},
            {"textDocument": 7},
            None,
            {"textDocument": {"uri": scratch}, "contentChanges": [{"text": 3}]},
        ]
        if self.rng.random() < 0.2:  # an answer to a request the server never sent
            bogus_id = self.rng.choice([[1], {"a": 1}, None, 2.5, "nope", 10**30])
            self.send({"jsonrpc": "2.0", "id": bogus_id, "result": self.rng.choice(bad)})
            return
        method = self.rng.choice(["textDocument/didChange", "textDocument/didOpen", "unknown/n"])
        self.notify(method, self.rng.choice(bad))

    def broken_frame(self) -> None:
        """Bad framing around a request that may or may not be answered."""
        msg_id = f"broken{self.next_id}"
        self.next_id += 1
        body = json.dumps({"jsonrpc": "2.0", "id": msg_id, "method": "groundspec/stats"}).encode()
        headers = [
            b"Content-Length: abc\r\n\r\n",
            b"Content-Length: -3\r\n\r\n",
            b"Content-Length: %d\r\n\r\n" % (len(body) // 2),
            b"Content-Length: %d\r\nContent-Length: 1\r\n\r\n" % len(body),
            b"\x00\xff\xfe garbage Content-Len",
            b"Content-Length: %d\n\n" % len(body),
            b"",
        ]
        self.optional.add(msg_id)
        self.send(None, raw=self.rng.choice(headers) + (body if self.rng.random() < 0.8 else b""))
        if self.rng.random() < 0.3:
            self.send(None, raw=b"{not json at all}\r\n\r\n")

    # -- receiving -----------------------------------------------------------------------

    def drain(self, timeout: float = 20.0) -> None:
        """Read until every expected request has its answer (or fail: a hang)."""
        deadline = time.monotonic() + timeout
        while any(msg_id not in self.answers for msg_id in self.expected):
            left = deadline - time.monotonic()
            missing = [m for m in self.expected if m not in self.answers][:3]
            assert left > 0, (
                f"no answer for {[self.requests.get(m) for m in missing]} (alive: {self.alive()})"
                f"\n{b''.join(self.server.stderr)[-3000:].decode(errors='replace')}"
            )
            try:
                message = self.server.messages.get(timeout=min(left, 1.0))
            except queue.Empty:
                continue
            self.receive(message)

    def receive(self, message: dict[str, Any]) -> None:
        if "method" in message:
            if "id" in message:  # workspace/applyEdit, configuration, progress: say yes
                self.server.send({"jsonrpc": "2.0", "id": message["id"], "result": None})
            return
        msg_id = message.get("id")
        if msg_id is None:
            return  # a parse error for a broken frame
        self.answers[msg_id] += 1
        if msg_id in self.next_edits:
            self.check_next_edit(msg_id, message)
        snapshot = self.expected.get(msg_id)
        if snapshot is not None and "result" in message:
            uri, version, text = snapshot
            got = message["result"]
            if got["text"] != text or got["version"] != version:
                self.mismatches.append(f"{uri} v{version}: {got['text']!r} != {text!r}")

    def check_next_edit(self, msg_id: Any, message: dict[str, Any]) -> None:
        """A valid ask gets a result (never an error) holding a list of edits, each
        with a range that does not run backwards."""
        if "result" not in message:
            self.mismatches.append(f"next edit {msg_id}: {message.get('error')}")
            return
        edits = message["result"]["edits"]
        for edit in edits:
            start, end = edit["range"]["start"], edit["range"]["end"]
            if (start["line"], start["character"]) > (end["line"], end["character"]):
                self.mismatches.append(f"next edit {msg_id}: backwards range {edit}")
        self.next_edits[msg_id] = len(edits)

    def alive(self) -> bool:
        return self.server.proc.poll() is None


def step(client: Client) -> None:
    rng = client.rng
    roll = rng.random()
    uris = list(client.docs)
    if not uris or (roll < 0.05 and len(uris) < 4):
        client.open_doc()
    elif roll < 0.45:
        client.change_doc(rng.choice(uris))
    elif roll < 0.75:
        client.ask(rng.choice(uris))
    elif roll < 0.85:
        client.mutated()
    elif roll < 0.92:
        client.hostile_notification()
    elif roll < 0.97:
        client.broken_frame()
    elif len(uris) > 1:
        client.close_doc(rng.choice(uris))


def test_fuzz_the_server_over_stdio() -> None:
    rng = random.Random(SEED)
    server = RawServer(env={"GROUNDSPEC_FAKE_DELAY_MS": "0"})
    client = Client(server, rng)
    started = time.monotonic()
    try:
        server.initialize()
        client.notify("workspace/didChangeConfiguration", {"settings": {"debounceMs": 0}})
        client.open_doc()
        while client.sent < MESSAGES:
            for _ in range(rng.randrange(1, 30)):  # a pipelined burst
                step(client)
            client.drain()
        for uri in list(client.docs):  # final check of every document
            client.request("groundspec/debug/document", {"uri": uri}, snapshot=uri)
        client.drain()
        time.sleep(0.5)  # late duplicates, if any
        while not server.messages.empty():
            client.receive(server.messages.get())
        assert client.alive(), b"".join(server.stderr)[-2000:]
        assert server.close() == 0
    finally:
        if DUMP:
            with open(DUMP, "wb") as out:
                out.write(b"".join(client.stream))
        if server.proc.poll() is None:
            server.proc.kill()
    duplicates = {k: n for k, n in client.answers.items() if n > 1}
    unexpected = set(client.answers) - set(client.expected) - client.optional
    assert client.mismatches == [], b"".join(server.stderr)[-4000:].decode(errors="replace")
    assert duplicates == {}
    assert unexpected == set()
    asks = len(client.next_edits)
    assert asks > 50 and 0 < sum(n > 0 for n in client.next_edits.values()) < asks
    elapsed = time.monotonic() - started
    print(f"fuzz: {client.sent} messages, {len(client.expected)} requests, {elapsed:.1f} s")
