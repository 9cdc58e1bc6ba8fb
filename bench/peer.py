"""The peer row: llama.cpp's own llama-server on the same prompts and model.

One server per variant (plain, `--spec-type ngram-simple`, `--spec-type ngram-mod`)
starts on a loopback port before groundspec's own runs, and each task's exact prompt
tokens (those groundspec's `off` run evaluated) go to every variant through
`/completion` right after groundspec has run that task, with greedy sampling and
`n_predict` set to the number of tokens `off` generated. Interleaved so, a host whose
speed drifts over minutes moves both sides of a ratio alike: in separate passes
minutes apart, llama-server's plain speed on one task moved by 26% between two runs
(bench/archive/benchmarks.md, "`off` against llama-server plain in one window"). Its decode
speed is `timings.predicted_per_second`: prompt evaluation is excluded, as it is from
groundspec's decode tokens/s. The idle servers wait on their sockets and use no CPU.

The binary is built from the llama.cpp vendored in the pinned llama-cpp-python
(see the remote-engine issue); without it the row is skipped with a note.
"""

from __future__ import annotations

import json
import logging
import os
import socket
import subprocess
import time
import urllib.error
import urllib.request
from contextlib import ExitStack
from pathlib import Path
from types import TracebackType

from .load import stop_process
from .report import PEER_VARIANTS, PeerRow, Run

log = logging.getLogger(__name__)

DEFAULT_BINARY = Path.home() / ".cache/groundspec/llama-server/0.3.36/llama-server"
VARIANT_FLAGS: dict[str, list[str]] = {
    "plain": [],
    "ngram-simple": ["--spec-type", "ngram-simple"],
    "ngram-mod": ["--spec-type", "ngram-mod"],
}
START_TIMEOUT_S = 180.0
REQUEST_TIMEOUT_S = 600.0


def find_binary() -> Path | None:
    """GROUNDSPEC_LLAMA_SERVER, else the default build location; None when absent."""
    path = Path(os.environ.get("GROUNDSPEC_LLAMA_SERVER") or DEFAULT_BINARY)
    return path if path.is_file() and os.access(path, os.X_OK) else None


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class LlamaServer:
    """One llama-server process on a loopback port, stopped on exit."""

    def __init__(self, binary: Path, model: Path, threads: int, flags: list[str]) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.command = [
            str(binary),
            "-m",
            str(model),
            "--host",
            "127.0.0.1",
            "--port",
            str(self.port),
            "--no-webui",
            "-t",
            str(threads),
            "-c",
            "4096",
            "-np",
            "1",
            *flags,
        ]
        self.process: subprocess.Popen[bytes] | None = None

    def __enter__(self) -> LlamaServer:
        log.warning("peer: %s", " ".join(self.command))
        self.process = subprocess.Popen(
            self.command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        )
        deadline = time.monotonic() + START_TIMEOUT_S
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"llama-server exited with code {self.process.returncode}")
            try:
                with urllib.request.urlopen(self.url + "/health", timeout=2) as response:
                    if response.status == 200:
                        return self
            except (urllib.error.URLError, OSError):
                pass
            time.sleep(0.5)
        raise RuntimeError(f"llama-server did not become ready in {START_TIMEOUT_S:.0f} s")

    def __exit__(
        self,
        kind: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if self.process is not None:
            stop_process(self.process, timeout_s=10)

    def complete(self, prompt: list[int], n_predict: int) -> tuple[list[int], float]:
        """(generated tokens, decode tokens/s) for the exact prompt tokens, greedy."""
        body = {
            "prompt": prompt,
            "n_predict": n_predict,
            "temperature": 0.0,
            "cache_prompt": True,
            "return_tokens": True,
        }
        request = urllib.request.Request(
            self.url + "/completion",
            data=json.dumps(body).encode(),
            headers={"Content-Type": "application/json"},
        )
        with urllib.request.urlopen(request, timeout=REQUEST_TIMEOUT_S) as response:
            reply = json.loads(response.read())
        return list(reply.get("tokens") or []), float(reply["timings"]["predicted_per_second"])


class Peer:
    """Every variant's server; `run` sends one task to each."""

    def __init__(self, servers: dict[str, LlamaServer]) -> None:
        self.servers = servers
        self._rows: dict[str, PeerRow] = {}

    @classmethod
    def start(cls, binary: Path, model: Path, threads: int, stack: ExitStack) -> Peer:
        """All variants' servers, started together and stopped when `stack` closes."""
        servers = {v: LlamaServer(binary, model, threads, VARIANT_FLAGS[v]) for v in PEER_VARIANTS}
        with ExitStack() as started:  # a server that fails to start stops the ones before it
            for server in servers.values():
                started.enter_context(server)
            stack.push(started.pop_all())
        return cls(servers)

    def run(self, off: Run) -> None:
        """Every variant on `off`'s prompt and length (a run with neither is skipped)."""
        if not (off.prompt and off.tokens):
            return
        row = PeerRow(off.task, off.kind, off.split)
        outputs: dict[str, list[int]] = {}
        for variant, server in self.servers.items():
            outputs[variant], rate = server.complete(off.prompt, len(off.tokens))
            row.tokens_per_s[variant] = round(rate, 2)
            log.warning("peer %s %-12s %.2f tok/s", off.task, variant, rate)
        row.plain_same_as_off = outputs["plain"] == off.tokens
        for variant in PEER_VARIANTS[1:]:
            row.same_as_plain[variant] = outputs[variant] == outputs["plain"]
        self._rows[off.task] = row

    def rows(self) -> list[PeerRow]:
        return list(self._rows.values())
