"""The llama-server peer (against a stand-in server script) and the --load spinner."""

import json
import os
import socket
import stat
import subprocess
import sys
import time
from contextlib import ExitStack
from pathlib import Path

import pytest

from bench import run as bench_run
from bench.load import SPIN, CpuLoad
from bench.peer import Peer, find_binary
from bench.report import Report, Run
from bench.tasks import Task
from speculator.config import EngineConfig
from speculator.types import Stats

FAKE_SERVER = """#!{python}
# Stands in for llama-server: logs its arguments, serves /health and /completion.
import json, sys
from http.server import BaseHTTPRequestHandler, HTTPServer

args = sys.argv[1:]
with open({log!r}, "a") as log:
    log.write(json.dumps(args) + "\\n")
variant = args[args.index("--spec-type") + 1] if "--spec-type" in args else "plain"
rate = {{"plain": 20.0, "ngram-simple": 30.0, "ngram-mod": 25.0}}[variant]

class Handler(BaseHTTPRequestHandler):
    def log_message(self, *a):
        pass

    def _reply(self, body):
        data = json.dumps(body).encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self):
        self._reply({{"status": "ok"}})

    def do_POST(self):
        req = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        assert req["temperature"] == 0 and req["cache_prompt"] and req["return_tokens"]
        tokens = [t + (variant == "ngram-mod") for t in range(req["n_predict"])]
        self._reply({{"tokens": tokens, "timings": {{"predicted_per_second": rate}}}})

HTTPServer(("127.0.0.1", int(args[args.index("--port") + 1])), Handler).serve_forever()
"""


@pytest.fixture()
def fake_server(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    log = tmp_path / "args.jsonl"
    binary = tmp_path / "llama-server"
    binary.write_text(FAKE_SERVER.format(python=sys.executable, log=str(log)))
    binary.chmod(binary.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setenv("GROUNDSPEC_LLAMA_SERVER", str(binary))
    return log


def test_each_variant_runs_on_off_s_prompt_and_length(fake_server: Path) -> None:
    binary = find_binary()
    assert binary is not None
    off = Run("a.py:f", "refactor", "off", "x", Stats(), prompt=[7, 8, 9], tokens=[0, 1, 2, 3])
    with ExitStack() as stack:
        peer = Peer.start(binary, Path("model.gguf"), 2, stack)
        peer.run(off)
        peer.run(Run("b.py:g", "refactor", "off", "x", Stats()))  # no prompt: skipped
        (row,) = peer.rows()
    assert row.tokens_per_s == {"plain": 20.0, "ngram-simple": 30.0, "ngram-mod": 25.0}
    assert row.plain_same_as_off
    assert row.same_as_plain == {"ngram-simple": True, "ngram-mod": False}
    started = [json.loads(line) for line in fake_server.read_text().splitlines()]
    assert len(started) == 3
    for args in started:
        for flag in (["--no-webui"], ["-t", "2"], ["-c", "4096"], ["-np", "1"]):
            assert " ".join(flag) in " ".join(args)
        assert args[args.index("--host") + 1] == "127.0.0.1"
        assert args[args.index("-m") + 1] == "model.gguf"
    assert [a[a.index("--spec-type") + 1] for a in started if "--spec-type" in a] == [
        "ngram-simple",
        "ngram-mod",
    ]


def test_a_server_that_fails_to_start_stops_the_ones_before_it(
    fake_server: Path, tmp_path: Path
) -> None:
    binary = tmp_path / "llama-server-no-ngram-mod"
    real = find_binary()
    binary.write_text(f'#!/bin/sh\ncase "$*" in *ngram-mod*) exit 3;; esac\nexec {real} "$@"\n')
    binary.chmod(binary.stat().st_mode | stat.S_IEXEC)
    with ExitStack() as stack:
        with pytest.raises(RuntimeError, match="exited with code 3"):
            Peer.start(binary, Path("model.gguf"), 2, stack)
        # the caller's stack is still open: the two that came up were stopped already
        started = [json.loads(line) for line in fake_server.read_text().splitlines()]
        assert len(started) == 2
        for args in started:
            with pytest.raises(OSError):
                socket.create_connection(("127.0.0.1", int(args[args.index("--port") + 1])), 2)


class RecordingPeer:
    """Stands in for Peer in run_modes: records when each task reaches it."""

    def __init__(self, events: list[str], fail_on: str = "") -> None:
        self.events = events
        self.fail_on = fail_on

    def run(self, off: Run) -> None:
        if off.task == self.fail_on:
            raise RuntimeError("llama-server went away")
        self.events.append(f"peer {off.task} {off.mode}")

    def rows(self) -> list[object]:
        return [event for event in self.events if event.startswith("peer")]


def _tasks() -> list[Task]:
    return bench_run.bench_tasks("refactor", "test", 2)


def _recording_run_task(events: list[str], monkeypatch: pytest.MonkeyPatch) -> None:
    real = bench_run.run_task

    def run_task(engine: object, task: Task, mode: str) -> Run:
        events.append(f"ours {task.name} {mode}")
        return real(engine, task, mode)  # type: ignore[arg-type]

    monkeypatch.setattr(bench_run, "run_task", run_task)


def _run_modes(peer: RecordingPeer, repeat: int) -> Report:
    config = EngineConfig(fake=True)
    return bench_run.run_modes(config, _tasks(), ["off", "auto"], None, False, repeat, peer)  # type: ignore[arg-type]


def test_the_peer_runs_each_task_right_after_ours(monkeypatch: pytest.MonkeyPatch) -> None:
    """Interleaved, so a host that drifts over minutes moves both sides of a ratio alike."""
    events: list[str] = []
    _recording_run_task(events, monkeypatch)
    peer = RecordingPeer(events)
    tasks = _tasks()
    report = _run_modes(peer, repeat=2)
    expected = []
    for task in tasks:
        expected += [f"ours {task.name} {m}" for m in ("off", "auto", "off", "auto")]
        expected.append(f"peer {task.name} off")
    assert events == expected
    assert report.peer_note == ""
    assert len(report.peer) == len(tasks)


def test_a_peer_failing_partway_keeps_our_runs_and_says_why(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    events: list[str] = []
    tasks = _tasks()
    peer = RecordingPeer(events, fail_on=tasks[1].name)
    report = _run_modes(peer, repeat=1)
    assert len(report.runs) == 2 * len(tasks)
    assert report.peer == []
    assert "llama-server went away" in report.peer_note


def test_a_missing_binary_is_none(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GROUNDSPEC_LLAMA_SERVER", str(tmp_path / "absent"))
    assert find_binary() is None


def test_the_load_spins_for_the_whole_block_and_stops_after() -> None:
    with CpuLoad() as load:
        assert load.running
        process = load.process
        assert process is not None
        stat_file = Path(f"/proc/{process.pid}/stat")
        if stat_file.exists():  # Linux: the spinner really burns CPU time
            deadline = time.monotonic() + 10
            while _cpu_ticks(stat_file) == 0 and time.monotonic() < deadline:
                time.sleep(0.05)
            assert _cpu_ticks(stat_file) > 0
    assert process.poll() is not None  # stopped
    with CpuLoad(enabled=False) as idle:
        assert not idle.running


def _cpu_ticks(stat_file: Path) -> int:
    fields = stat_file.read_text().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])  # utime + stime


def test_the_load_stops_when_the_benchmark_is_killed() -> None:
    """A benchmark killed before its __exit__ must not leave a core spinning."""
    parent = subprocess.Popen(
        ["bash", "-c", f'{sys.executable} -c "$0" $$ & echo $!; sleep 0.5', SPIN],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert parent.stdout is not None
    spinner = int(parent.stdout.readline())
    parent.wait()  # the parent is gone, as if killed
    deadline = time.monotonic() + 30  # a starved spinner checks its parent late
    while _running(spinner) and time.monotonic() < deadline:
        time.sleep(0.1)
    stopped = not _running(spinner)
    if not stopped:
        os.kill(spinner, 9)
    assert stopped


def _running(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    stat_file = Path(f"/proc/{pid}/stat")
    return not stat_file.exists() or stat_file.read_text().rsplit(")", 1)[1].split()[0] != "Z"
