"""Local against remote, side by side in one run (`python -m bench.remote`).

- keystroke replay: the regions of `groundspec bench --replay`, re-typed one
  character at a time, in-process against a llama-server on the same model;
- refactors: local grounded speculation, remote with the server's `ngram-mod`,
  remote without speculation;
- four simulated editors (four daemons) typing at once against one 4-slot
  llama-server: each one's p95, and whether any answer belongs to another file.

Loads the real model (twice: in-process and in llama-server): run it under
`flock /tmp/model.lock`.
"""

from __future__ import annotations

import argparse
import socket
import statistics
import subprocess
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx

from speculator import provision
from speculator.backends import load_remote
from speculator.backends.llama_server import LlamaServerEngine, find_llama_server
from speculator.config import EngineConfig
from speculator.totals import percentile
from speculator.types import CompletionRequest, Engine, EngineError

from .replay import REGIONS, keystrokes
from .run import run_task
from .tasks import CORPUS, refactor_tasks

EDITOR_REGIONS = [*REGIONS, ("bisect.py", 36, 4), ("colorsys.py", 80, 4)]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextmanager
def llama_server(slots: int, speculation: bool) -> Iterator[str]:
    port = _free_port()
    binary = find_llama_server()
    if binary is None:
        raise EngineError("no llama-server binary: run .ci/llama-server.sh")
    model = provision.model_path(provision.TARGET)
    command = [str(binary), "-m", str(model), "--host", "127.0.0.1", "--port", str(port)]
    command += ["--no-webui", "-t", "2", "-c", str(4096 * slots), "-np", str(slots)]
    command += ["--spec-type", "ngram-mod"] if speculation else []
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 180
        while time.monotonic() < deadline:
            try:
                if httpx.get(url + "/health", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                time.sleep(0.3)
        yield url
    finally:
        process.terminate()
        process.wait(timeout=30)


def remote(url: str) -> LlamaServerEngine:
    engine = load_remote(EngineConfig(backend="llama-server", backend_url=url))
    assert isinstance(engine, LlamaServerEngine)
    return engine


def replay(engine: Engine, limit: int, path_prefix: str = "replay") -> list[dict[str, Any]]:
    """Each region re-typed; one completion (24 tokens, `auto`) per keystroke."""
    rows = []
    for file, line, n in REGIONS:
        base, at, region = keystrokes(CORPUS / file, line, n)
        path = f"{path_prefix}/{file}"
        engine.warm(CompletionRequest(text=base, cursor=at, path=path))  # didOpen pre-warm
        for i in range(1, min(len(region), limit) + 1):
            text = base[:at] + region[:i] + base[at:]
            req = CompletionRequest(text=text, cursor=at + i, path=path, max_tokens=24)
            started = time.perf_counter()
            result = engine.complete(req)
            stats = result.stats
            rows.append(
                {
                    "ms": (time.perf_counter() - started) * 1000,
                    "prompt": stats.prompt_tokens,
                    "evaluated": stats.prompt_tokens - stats.reused_prompt_tokens,
                    "first_line": result.text.strip().split("\n")[0],
                }
            )
    return rows


def replay_row(name: str, rows: list[dict[str, Any]], local: list[dict[str, Any]]) -> str:
    """One table row; `same first line` compares each answer with the local engine's
    answer to the same keystroke (the local engine's own row says n/a)."""
    ms = [r["ms"] for r in rows]
    evaluated = [r["evaluated"] for r in rows]
    pairs = zip(rows, local, strict=True)
    agree = sum(mine["first_line"] == theirs["first_line"] for mine, theirs in pairs)
    same = "n/a" if rows is local else f"{agree}/{len(rows)}"
    return (
        f"| {name} | {len(rows)} | {statistics.median(r['prompt'] for r in rows):.0f} | "
        f"{statistics.median(evaluated):.0f} / {statistics.mean(evaluated):.1f} | "
        f"{percentile(ms, 50):.0f} | {percentile(ms, 95):.0f} | {same} |"
    )


def refactor_rows(engine: Engine, name: str, limit: int) -> list[str]:
    rows = []
    for task in refactor_tasks()[:limit]:
        run = run_task(engine, task, "auto")
        s = run.stats
        rows.append(
            f"| {task.name} | {name} | {s.generated_tokens} | {s.drafted_tokens} / "
            f"{s.accepted_tokens} | {run.tokens_per_s:.1f} | {run.seconds:.1f} |"
        )
    return rows


def editors(url: str, keystrokes_each: int) -> list[str]:
    """Four daemons typing at once (each sends its next keystroke when the last
    answer came); an answer is mixed up if a line of it is found in another
    editor's file but not in its own."""
    texts = {file: (CORPUS / file).read_text() for file, _, _ in EDITOR_REGIONS}
    results: dict[str, list[tuple[float, str]]] = {}

    def type_region(file: str, line: int, n: int) -> None:
        engine = remote(url)
        base, at, region = keystrokes(CORPUS / file, line, n)
        out = []
        for i in range(1, min(len(region), keystrokes_each) + 1):
            text = base[:at] + region[:i] + base[at:]
            req = CompletionRequest(text=text, cursor=at + i, path=file, max_tokens=24)
            started = time.perf_counter()
            answer = engine.complete(req).text
            out.append(((time.perf_counter() - started) * 1000, answer))
        results[file] = out

    threads = [threading.Thread(target=type_region, args=r) for r in EDITOR_REGIONS]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    rows = []
    for file, out in results.items():
        others = [t for f, t in texts.items() if f != file]
        mixed = sum(
            any(
                len(ln.strip()) >= 12
                and ln.strip() not in texts[file]
                and any(ln.strip() in o for o in others)
                for ln in answer.split("\n")
            )
            for _, answer in out
        )
        ms = [m for m, _ in out]
        rows.append(
            f"| {file} | {len(out)} | {percentile(ms, 50):.0f} | {percentile(ms, 95):.0f} | {mixed} |"
        )
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--keystrokes", type=int, default=40, help="per replay region")
    parser.add_argument("--editor-keystrokes", type=int, default=20, help="per simulated editor")
    parser.add_argument("--refactors", type=int, default=3)
    parser.add_argument("--output", help="write the markdown tables here (as they come)")
    args = parser.parse_args()
    lines: list[str] = []

    def emit(*new: str) -> None:  # a run cut short still leaves what it measured
        lines.extend(new)
        print("\n".join(new), flush=True)
        if args.output:
            Path(args.output).write_text("\n".join(lines) + "\n")

    from speculator.engine import SpeculativeEngine

    local = SpeculativeEngine.load(EngineConfig())
    local_rows = replay(local, args.keystrokes)
    emit(
        "## Keystroke replay, local against remote (same model, same keystrokes)",
        "",
        "| engine | requests | prompt tokens (median) | evaluated per keystroke (median / mean) | p50 ms | p95 ms | same first line as local |",
        "|---|---|---|---|---|---|---|",
        replay_row("local (in-process)", local_rows, local_rows),
    )
    with llama_server(slots=4, speculation=True) as url:
        remote_rows = replay(remote(url), args.keystrokes)
        emit(replay_row("llama-server, ngram-mod, 4 slots", remote_rows, local_rows))
        emit(
            "",
            "## Four editors against one 4-slot llama-server",
            "",
            "| editor (file typed) | keystrokes | p50 ms | p95 ms | answers mixed up |",
            "|---|---|---|---|---|",
            *editors(url, args.editor_keystrokes),
        )
        emit(
            "",
            "## Refactors",
            "",
            "| task | engine | generated | drafted / accepted | tokens/s | seconds |",
            "|---|---|---|---|---|---|",
            *refactor_rows(remote(url), "remote, server ngram-mod", args.refactors),
        )
    with llama_server(slots=1, speculation=False) as url:
        emit(*refactor_rows(remote(url), "remote, no speculation", args.refactors))
    emit(*refactor_rows(local, "local grounded (auto)", args.refactors), "")


if __name__ == "__main__":
    main()
