"""A raw stdio client: exact bytes in, decoded frames out (for protocol abuse).

pytest-lsp cannot send a broken frame or a notification with an id, so the
protocol tests and the fuzz test talk to `groundspec serve --fake` here.
"""

from __future__ import annotations

import os
import queue
import subprocess
import sys
import threading
import time
from typing import Any

from bench.stdio import frame, read_messages

SERVER = [sys.executable, "-m", "lsp_server"]


class RawServer:
    """`groundspec serve --fake` as a subprocess, with a thread collecting its messages."""

    def __init__(self, env: dict[str, str] | None = None, *, fake: bool = True) -> None:
        base = dict(os.environ)
        base.update(
            GROUNDSPEC_FAKE_ENGINE="1" if fake else "0",
            GROUNDSPEC_FAKE_DELAY_MS="0",
            XDG_CONFIG_HOME="/nonexistent-groundspec-test",
            PYTHONPATH=os.getcwd(),
        )
        base.update(env or {})
        self.proc = subprocess.Popen(
            SERVER + (["--fake"] if fake else []),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=base,
        )
        self.messages: queue.Queue[dict[str, Any]] = queue.Queue()
        self.answered_at: dict[Any, float] = {}  # when each answer arrived (perf_counter)
        self.stderr: list[bytes] = []
        threading.Thread(target=self._read_stdout, daemon=True).start()
        threading.Thread(target=self._read_stderr, daemon=True).start()
        self._next_id = 0

    def _read_stdout(self) -> None:
        assert self.proc.stdout is not None
        for message in read_messages(self.proc.stdout):
            if "method" not in message:
                self.answered_at[message.get("id")] = time.perf_counter()
            self.messages.put(message)

    def _read_stderr(self) -> None:
        assert self.proc.stderr is not None
        for line in self.proc.stderr:
            self.stderr.append(line)

    def send_bytes(self, data: bytes) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(data)
        self.proc.stdin.flush()

    def send(self, message: Any) -> None:
        self.send_bytes(frame(message))

    def new_id(self) -> int:
        self._next_id += 1
        return self._next_id

    def request(self, method: str, params: Any = None, msg_id: Any = None) -> Any:
        msg_id = self.new_id() if msg_id is None else msg_id
        self.send({"jsonrpc": "2.0", "id": msg_id, "method": method, "params": params})
        return msg_id

    def notify(self, method: str, params: Any = None, **extra: Any) -> None:
        self.send({"jsonrpc": "2.0", "method": method, "params": params, **extra})

    def answer(self, msg_id: Any, timeout: float = 10.0) -> dict[str, Any]:
        """The response to `msg_id` (answers server requests met on the way)."""
        deadline = time.monotonic() + timeout
        while True:
            message = self.messages.get(timeout=max(0.01, deadline - time.monotonic()))
            if "method" in message and "id" in message:  # a request from the server
                self.send({"jsonrpc": "2.0", "id": message["id"], "result": None})
            elif "method" not in message and message.get("id") == msg_id:
                return message

    def call(self, method: str, params: Any = None, timeout: float = 10.0) -> dict[str, Any]:
        return self.answer(self.request(method, params), timeout)

    def initialize(self) -> None:
        reply = self.call("initialize", {"processId": None, "capabilities": {}, "rootUri": None})
        assert "result" in reply, reply
        self.notify("initialized", {})

    def rss_kb(self) -> int:
        with open(f"/proc/{self.proc.pid}/status", encoding="ascii") as status:
            for line in status:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
        raise RuntimeError("no VmRSS")

    def close(self, timeout: float = 10.0) -> int:
        """shutdown + exit if it still runs; the exit code."""
        if self.proc.poll() is None:
            try:
                self.call("shutdown", None, timeout)
                self.notify("exit")
                return self.proc.wait(timeout)
            except Exception:
                self.proc.kill()
                self.proc.wait()
        return self.proc.returncode
