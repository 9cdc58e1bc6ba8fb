"""Cold start through the real LSP server (issue 12): didOpen of an unseen file
and an inline completion right after it, as an editor sends them.

    python -m bench.cold [--files N] [--warm-timeout S] [--output FILE]

`groundspec serve` runs on stdio with the real models, the corpus as its
workspace (so full prompts carry snippets of other files: 1,500+ tokens) and an
empty KV slot folder (every file is unseen). For each file: didOpen, then at
once an inline completion where a corpus task removed a line; the time from
didOpen to the first non-empty item (a keystroke of the removed line is typed
and asked again while the answer is empty). Then one keystroke while the full
prompt warms, the warm-up's `$/progress`, and three keystrokes once it has ended:
their latency and the prompt tokens they evaluated (the server's `request done`
log lines). The typed-ahead cache is off, so every keystroke reaches the engine.
"""

from __future__ import annotations

import argparse
import json
import os
import queue
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .stdio import frame, read_messages
from .tasks import CORPUS, Task, completion_tasks

# Unseen files with long prompts: single-line tasks deep in the larger files.
TASKS = [
    "textwrap.py:114",
    "shlex.py:176",
    "getopt.py:131",
    "quopri.py:133",
    "socket.go:67",
    "proxy.go:106",
    "client.go:121",
    "tar.js:64",
]
ROOT = Path(tempfile.gettempdir()) / "groundspec-bench-cold"
WARM_TIMEOUT_S = 120.0


@dataclass
class Keystroke:
    ms: float
    prompt_tokens: int
    evaluated: int
    text: str
    prompt_ms: float = 0.0  # the engine's prompt evaluation
    decode_ms: float = 0.0
    total_ms: float = 0.0  # the engine's whole request; the rest of `ms` waited for it


@dataclass
class FileRun:
    name: str
    first_ms: float = 0.0
    first: Keystroke | None = None
    requests_to_first: int = 0
    during_warm: Keystroke | None = None
    warm_shown_ms: float | None = None  # after didOpen, the $/progress begin
    warm_end_ms: float | None = None
    warm_message: str = ""
    after: list[Keystroke] = field(default_factory=list)


class Server:
    """`groundspec serve` on stdio: JSON-RPC frames in, messages and log lines out."""

    def __init__(self, env: dict[str, str]) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "lsp_server"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=env,
        )
        self.messages: queue.Queue[dict[str, Any]] = queue.Queue()
        self.progress: list[tuple[float, str, dict[str, Any]]] = []  # (time, token, value)
        self.log: queue.Queue[str] = queue.Queue()
        self._id = 0
        threading.Thread(target=self._read_stdout, daemon=True).start()
        threading.Thread(target=self._read_stderr, daemon=True).start()

    def _read_stdout(self) -> None:
        assert self.proc.stdout is not None
        for message in read_messages(self.proc.stdout):
            if message.get("method") == "$/progress":
                params = message["params"]
                self.progress.append((time.perf_counter(), str(params["token"]), params["value"]))
            elif "method" in message and "id" in message:  # a request from the server
                self.send({"jsonrpc": "2.0", "id": message["id"], "result": None})
            elif "method" not in message:
                self.messages.put(message)

    def _read_stderr(self) -> None:
        assert self.proc.stderr is not None
        for line in self.proc.stderr:
            self.log.put(line.decode(errors="replace"))

    def send(self, message: Any) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(frame(message))
        self.proc.stdin.flush()

    def notify(self, method: str, params: Any) -> None:
        self.send({"jsonrpc": "2.0", "method": method, "params": params})

    def call(self, method: str, params: Any, timeout: float = 120.0) -> Any:
        self._id += 1
        self.send({"jsonrpc": "2.0", "id": self._id, "method": method, "params": params})
        deadline = time.monotonic() + timeout
        while True:
            message = self.messages.get(timeout=max(0.01, deadline - time.monotonic()))
            if message.get("id") == self._id:
                if "error" in message:
                    raise RuntimeError(f"{method}: {message['error']}")
                return message.get("result")

    def request_stats(self) -> list[dict[str, Any]]:
        """The engine's `request done` stats logged since the last call."""
        found: list[dict[str, Any]] = []
        while True:
            try:
                line = self.log.get_nowait()
            except queue.Empty:
                return found
            if (match := re.search(r"request done: (\{.*\})", line)) is not None:
                found.append(json.loads(match.group(1)))


def position(text: str, offset: int) -> dict[str, int]:
    line = text.count("\n", 0, offset)
    return {"line": line, "character": offset - (text.rfind("\n", 0, offset) + 1)}


def inline(server: Server, uri: str, text: str, cursor: int) -> tuple[float, str, dict[str, Any]]:
    """(ms, first item's text, the engine's stats) of one inline completion."""
    server.request_stats()
    started = time.perf_counter()
    result = server.call(
        "textDocument/inlineCompletion",
        {
            "textDocument": {"uri": uri},
            "position": position(text, cursor),
            "context": {"triggerKind": 2},  # automatic, as while typing
        },
    )
    ms = (time.perf_counter() - started) * 1000
    items = result.get("items", []) if isinstance(result, dict) else result or []
    time.sleep(0.05)  # the log line is written just before the answer
    stats = server.request_stats()
    return ms, (items[0]["insertText"] if items else ""), (stats[-1] if stats else {})


def keystroke(ms: float, text: str, stats: dict[str, Any]) -> Keystroke:
    prompt = int(stats.get("promptTokens", 0))
    evaluated = prompt - int(stats.get("reusedPromptTokens", 0))
    times = (float(stats.get(k, 0.0)) for k in ("promptMs", "decodeMs", "totalMs"))
    return Keystroke(ms, prompt, evaluated, text, *times)


class Document:
    """An open document typed into one character at a time."""

    def __init__(self, server: Server, task: Task) -> None:
        self.server, self.task = server, task
        self.uri = (ROOT / task.path).as_uri()
        self.text, self.cursor, self.version = task.text, task.start, 1

    def open(self) -> None:
        item = {"uri": self.uri, "languageId": self.task.language, "version": 1, "text": self.text}
        self.server.notify("textDocument/didOpen", {"textDocument": item})

    def type_next(self) -> None:
        typed = self.cursor - self.task.start
        char = self.task.expected[typed] if typed < len(self.task.expected) else " "
        at = position(self.text, self.cursor)
        self.version += 1
        self.server.notify(
            "textDocument/didChange",
            {
                "textDocument": {"uri": self.uri, "version": self.version},
                "contentChanges": [{"range": {"start": at, "end": at}, "text": char}],
            },
        )
        self.text = self.text[: self.cursor] + char + self.text[self.cursor :]
        self.cursor += 1

    def complete(self) -> Keystroke:
        ms, text, stats = inline(self.server, self.uri, self.text, self.cursor)
        return keystroke(ms, text, stats)


def warm_events(server: Server, since: float) -> list[tuple[float, str, str]]:
    """(time, begin | end, message) of the warm-up progress after `since`."""
    return [
        (at, str(value.get("kind")), str(value.get("message", "")))
        for at, token, value in list(server.progress)
        if at >= since and token.startswith("groundspec/warm")
    ]


def run_file(server: Server, task: Task, warm_timeout_s: float = WARM_TIMEOUT_S) -> FileRun:
    doc = Document(server, task)
    run = FileRun(task.name)
    opened = time.perf_counter()
    doc.open()
    key, attempts = doc.complete(), 1
    while not key.text.strip() and attempts < 5:
        doc.type_next()  # an empty answer: the user types on
        key, attempts = doc.complete(), attempts + 1
    run.first_ms = (time.perf_counter() - opened) * 1000
    run.first, run.requests_to_first = key, attempts
    answered = time.perf_counter()
    time.sleep(3.0)  # the user reads the suggestion, then types while it warms
    doc.type_next()
    run.during_warm = doc.complete()
    typed = time.perf_counter()
    deadline = time.monotonic() + warm_timeout_s
    while time.monotonic() < deadline:
        if any(m == "Cache warm" for _, kind, m in warm_events(server, typed) if kind == "end"):
            break
        time.sleep(0.2)
    events = warm_events(server, answered)
    begins = [at for at, kind, _ in events if kind == "begin"]
    ends = [(at, m) for at, kind, m in events if kind == "end" and at >= typed]
    run.warm_shown_ms = (begins[0] - opened) * 1000 if begins else None
    if ends:
        run.warm_end_ms, run.warm_message = (ends[-1][0] - opened) * 1000, ends[-1][1]
    for _ in range(3):
        doc.type_next()
        run.after.append(doc.complete())
    server.notify("textDocument/didClose", {"textDocument": {"uri": doc.uri}})
    return run


def start_server(kv_dir: Path) -> Server:
    ROOT.mkdir(exist_ok=True)
    for path in CORPUS.iterdir():
        if path.suffix in (".py", ".js", ".ts", ".go"):
            shutil.copy(path, ROOT / path.name)
    env = dict(os.environ, GROUNDSPEC_KV_DIR=str(kv_dir), GROUNDSPEC_LOG_LEVEL="INFO")
    server = Server(env)
    server.call(
        "initialize",
        {
            "processId": os.getpid(),
            "rootUri": ROOT.as_uri(),
            "capabilities": {"window": {"workDoneProgress": True}},
            "initializationOptions": {"cacheEntries": 0},  # every keystroke to the engine
        },
    )
    server.notify("initialized", {})
    deadline = time.monotonic() + 300
    while server.call("groundspec/stats", {})["server"]["engineState"] != "ready":
        if time.monotonic() > deadline:
            raise RuntimeError("the models did not load")
        time.sleep(0.5)
    time.sleep(3.0)  # the workspace index
    return server


def report(runs: list[FileRun]) -> list[str]:
    out = []
    for r in runs:
        first, during = r.first, r.during_warm
        assert first is not None and during is not None
        after = ", ".join(f"{k.ms:.0f} ms / {k.evaluated} of {k.prompt_tokens}" for k in r.after)
        warm_shown = f"{r.warm_shown_ms:.0f}" if r.warm_shown_ms is not None else "never"
        warm_end = f"{r.warm_end_ms:.0f}" if r.warm_end_ms is not None else "not seen"
        out.append(
            f"{r.name}: first item {r.first_ms:.0f} ms after didOpen ({r.requests_to_first} "
            f"request(s); engine {first.evaluated} of {first.prompt_tokens} prompt tokens, "
            f"prompt {first.prompt_ms:.0f} ms, decode {first.decode_ms:.0f} ms, "
            f"before the engine {first.ms - first.total_ms:.0f} ms) "
            f"{first.text.splitlines()[0] if first.text else ''!r}; keystroke while warming "
            f"{during.ms:.0f} ms / {during.evaluated} of {during.prompt_tokens}; warm progress "
            f"begin {warm_shown} ms, end {warm_end} ms ({r.warm_message!r}); after it: {after}"
        )
    firsts = [r.first_ms for r in runs]
    after_ms = [k.ms for r in runs for k in r.after]
    after_eval = [k.evaluated for r in runs for k in r.after]
    out.append(
        f"{len(runs)} files: didOpen -> first item median {statistics.median(firsts):.0f} ms, "
        f"worst {max(firsts):.0f} ms; keystrokes after the warm-up ({len(after_ms)}): "
        f"median {statistics.median(after_ms):.0f} ms, worst {max(after_ms):.0f} ms, evaluated "
        f"median {statistics.median(after_eval):.0f}, max {max(after_eval)}"
    )
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--files", type=int, default=6)
    parser.add_argument("--warm-timeout", type=float, default=WARM_TIMEOUT_S, help="seconds")
    parser.add_argument("--output", type=Path)
    args = parser.parse_args()
    by_name = {t.name: t for t in completion_tasks()}
    tasks = [by_name[name] for name in TASKS[: args.files]]
    kv_dir = Path(tempfile.mkdtemp(prefix="groundspec-cold-kv-"))
    server = start_server(kv_dir)
    runs: list[FileRun] = []
    try:
        for task in tasks:
            runs.append(run_file(server, task, args.warm_timeout))
            print(report(runs[-1:])[0], flush=True)
    finally:
        server.call("shutdown", None)
        server.notify("exit", None)
        server.proc.wait(30)
        shutil.rmtree(kv_dir, ignore_errors=True)
    out = [f"bench.cold, {time.ctime()}, load average {os.getloadavg()[0]:.1f}", *report(runs)]
    print(out[-1])
    if args.output:
        args.output.write_text("\n".join(out) + "\n")


if __name__ == "__main__":
    main()
