"""Replay typing as llama.vim sends it to `/infill`, against one or more servers.

Re-types a region of a bench-corpus file one keystroke at a time; each keystroke
is one llama.vim-shaped `/infill` request (256 lines before the cursor, the
typed part of the line as `prompt`, 64 lines after), sent to each server in
turn, one server after the other (so they never share the CPU). Reports latency
p50/p95, prompt tokens evaluated per request (`timings.prompt_n`: not reused
from the KV cache), and whether each response has the fields llama.vim and
llama.vscode read.

    python bench/http_replay.py --server groundspec=http://127.0.0.1:8012 \\
        --server llama-server=http://127.0.0.1:8013 --output docs/http-replay.md
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
import urllib.request
from pathlib import Path
from typing import Any

CORPUS = Path(__file__).resolve().parent / "corpus"
# (file, first line of the region to re-type, number of lines), 1-based
REGION = ("graphlib.py", 163, 4)
CLIENT_FIELDS = ("content", "tokens_cached", "truncated", "stop_type", "timings")
TIMING_FIELDS = ("prompt_n", "prompt_ms", "predicted_n", "predicted_ms")


def keystroke_requests(limit: int, n_predict: int) -> list[dict[str, Any]]:
    name, first, count = REGION
    lines = (CORPUS / name).read_text().split("\n")
    region = "\n".join(lines[first - 1 : first - 1 + count])
    before, after = lines[: first - 1], lines[first - 1 + count :]
    requests = []
    for i in range(1, min(limit, len(region)) + 1):
        typed = region[:i].split("\n")
        above = before + typed[:-1]
        current = typed[-1]
        requests.append(
            {
                "input_prefix": "\n".join(above[-256:]) + "\n",
                "prompt": current,
                "input_suffix": "\n" + "\n".join(after[:64]) + "\n",
                "input_extra": [],
                "n_predict": n_predict,
                "n_indent": len(current) - len(current.lstrip()),
                "top_k": 40,
                "top_p": 0.90,
                "samplers": ["top_k", "top_p", "infill"],
                "stream": False,
                "cache_prompt": True,
                "t_max_prompt_ms": 500,
                "t_max_predict_ms": 1000,
            }
        )
    return requests


def post(url: str, body: dict[str, Any]) -> tuple[float, dict[str, Any]]:
    data = json.dumps(body).encode()
    request = urllib.request.Request(url + "/infill", data, {"Content-Type": "application/json"})
    started = time.perf_counter()
    with urllib.request.urlopen(request, timeout=900) as response:
        raw = response.read()
    return (time.perf_counter() - started) * 1000, json.loads(raw)


def missing_fields(body: dict[str, Any]) -> list[str]:
    missing = [key for key in CLIENT_FIELDS if key not in body]
    timings = body.get("timings", {})
    return missing + [f"timings.{key}" for key in TIMING_FIELDS if key not in timings]


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q / 100 * len(ordered) + 0.5) - 1))]


def run(name: str, url: str, requests: list[dict[str, Any]]) -> dict[str, Any]:
    post(url, requests[0])  # the first request loads the prompt: not a keystroke
    latencies, evaluated, missing, answers = [], [], set(), []
    for body in requests:
        ms, answer = post(url, body)
        latencies.append(ms)
        timings = answer.get("timings", {})
        evaluated.append(timings.get("prompt_n", 0))
        missing.update(missing_fields(answer))
        answers.append(
            {
                "ms": round(ms, 1),
                "prompt_n": timings.get("prompt_n"),
                "cache_n": timings.get("cache_n"),
                "tokens_evaluated": answer.get("tokens_evaluated"),
                "predicted_n": timings.get("predicted_n"),
                "stop_type": answer.get("stop_type"),
                "content": answer.get("content"),
            }
        )
    return {
        "server": name,
        "requests": len(requests),
        "p50_ms": percentile(latencies, 50),
        "p95_ms": percentile(latencies, 95),
        "evaluated_p50": percentile(evaluated, 50),
        "evaluated_mean": statistics.fmean(evaluated),
        "missing": sorted(missing),
        "answers": answers,
    }


def report(rows: list[dict[str, Any]], args: argparse.Namespace) -> str:
    name, first, count = REGION
    out = [
        "| server | requests | p50 ms | p95 ms | prompt tokens evaluated p50 | mean | fields missing |",
        "| --- | --- | --- | --- | --- | --- | --- |",
    ]
    for r in rows:
        missing = ", ".join(r["missing"]) or "none"
        out.append(
            f"| {r['server']} | {r['requests']} | {r['p50_ms']:.0f} | {r['p95_ms']:.0f} "
            f"| {r['evaluated_p50']:.0f} | {r['evaluated_mean']:.1f} | {missing} |"
        )
    head = (
        f"Typing replay over `/infill`: {name} lines {first}-{first + count - 1} re-typed, "
        f"{args.keystrokes} keystrokes, n_predict {args.n_predict}, llama.vim's request shape."
    )
    return head + "\n\n" + "\n".join(out) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--server", action="append", required=True, metavar="NAME=URL")
    parser.add_argument("--keystrokes", type=int, default=40)
    parser.add_argument("--n-predict", type=int, default=24)
    parser.add_argument("--output", help="write the markdown table here")
    parser.add_argument("--json", help="write every answer's figures here")
    args = parser.parse_args()
    requests = keystroke_requests(args.keystrokes, args.n_predict)
    rows = []
    for spec in args.server:
        name, _, url = spec.partition("=")
        rows.append(run(name, url.rstrip("/"), requests))
    text = report(rows, args)
    print(text)
    if args.output:
        Path(args.output).write_text(text)
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
