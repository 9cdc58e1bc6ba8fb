"""Choosing a remote backend (settings, initializationOptions) and the CLI through
one: `groundspec complete` and `groundspec bench --backend` against the fake
llama-server of remote_fake.py.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from typing import Any

import pytest
from contract import STATS_KEYS

from speculator.config import EngineConfig
from speculator.factory import load_engine
from speculator.types import EngineError

from .remote_fake import CURSOR, SOURCE, Fake, fake

__all__ = ["fake"]  # the fixture: a fake server per test


def run_cli(
    args: list[str], env: dict[str, str], timeout: float
) -> subprocess.CompletedProcess[str]:
    """`groundspec ARGS` with this checkout's code."""
    cli = [sys.executable, "-c", "from lsp_server.cli import main; main()"]
    return subprocess.run([*cli, *args], capture_output=True, text=True, env=env, timeout=timeout)


def test_bad_backend_settings_are_clear_errors(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GROUNDSPEC_BACKEND", "vllm")
    with pytest.raises(EngineError, match="unknown engine backend 'vllm'"):
        load_engine(EngineConfig())
    monkeypatch.setenv("GROUNDSPEC_BACKEND", "llama-server")
    monkeypatch.setenv("GROUNDSPEC_BACKEND_URL", "localhost:8080")
    with pytest.raises(EngineError, match="must look like http://HOST:PORT"):
        load_engine(EngineConfig())


def test_initialization_options_select_the_backend() -> None:
    from lsp_server.options import ServerOptions, apply_overrides

    data = {"engine": {"backend": "llama-server", "backendUrl": "http://gpu-box:8080"}}
    options, problems = apply_overrides(ServerOptions(), data)
    assert problems == []
    assert (options.engine.backend, options.engine.backend_url) == (
        "llama-server",
        "http://gpu-box:8080",
    )
    options, problems = apply_overrides(ServerOptions(), {"engine": {"backend": "vllm"}})
    assert options.engine.backend == "local" and "engine.backend" in problems[0]


def test_cli_complete_through_the_backend(fake: tuple[Fake, str], tmp_path: Any) -> None:
    state, url = fake
    source = tmp_path / "shapes.py"
    source.write_text(SOURCE)
    env = {**os.environ, "PYTHONPATH": os.getcwd(), "GROUNDSPEC_BACKEND": "openai"}
    line = SOURCE[:CURSOR].count("\n") + 1
    col = CURSOR - SOURCE.rfind("\n", 0, CURSOR)
    args = ["complete", f"{source}:{line}:{col}", "--json", "--backend", "llama-server"]
    out = run_cli([*args, "--backend-url", url], env, timeout=60)
    assert out.returncode == 0, out.stderr
    result = json.loads(out.stdout)
    assert result["text"] == "area(w, h) * d" and set(result["stats"]) == STATS_KEYS
    assert [r[0] for r in state.requests if r[1]] == ["/completion"]  # the flag beat the env


def test_cli_bench_through_the_backend(fake: tuple[Fake, str]) -> None:
    """`groundspec bench --backend`: the tasks go to the server, one mode (the server
    chooses its speculation), no local peer; the in-process-only benches say why not."""
    state, url = fake
    state.pieces = ["def f():\n", "    return 1\n", "```"]
    env = {**os.environ, "PYTHONPATH": os.getcwd()}
    common = ["bench", "--backend", "llama-server", "--backend-url", url]
    out = run_cli([*common, "--kind", "refactor", "--limit", "1", "--json"], env, timeout=120)
    assert out.returncode == 0, out.stderr
    report = json.loads(out.stdout)
    assert [run["mode"] for run in report["runs"]] == ["auto"] and report["peer"] == []
    assert report["runs"][0]["stats"]["speculation"] == "ngram-mod"
    assert "`llama-server` backend" in report["peer_note"]
    assert [r[0] for r in state.requests if r[1]] == ["/completion"]
    replay = run_cli([*common, "--replay"], env, timeout=60)
    assert replay.returncode != 0 and "python -m bench.remote" in replay.stderr
