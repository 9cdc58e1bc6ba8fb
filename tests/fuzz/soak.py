"""Reliability figures for docs/reliability.md (a benchmark script, not a test).

    PYTHONPATH=$PWD:$PWD/tests python -m fuzz.soak memory [--changes 20000]
    PYTHONPATH=$PWD:$PWD/tests python -m fuzz.soak typing [--chars 1900000] [--seconds 30]

`memory`: RSS of `groundspec serve --fake` before and after N didChange
notifications that alternately insert "a" at 0:0 and delete it (issue 11's
reproduction), and N didSave as a control.
`typing`: a document of --chars characters open, one keystroke (didChange +
inlineCompletion) every 20 ms (50/s); latency from sending the keystroke to
the completion's answer, p50/p95/max.
"""

from __future__ import annotations

import argparse
import json
import time

from e2e.raw import RawServer

from speculator.totals import percentile

URI = "file:///soak/big.py"
HERE = {"start": {"line": 0, "character": 0}, "end": {"line": 0, "character": 0}}
ONE = {"start": {"line": 0, "character": 0}, "end": {"line": 0, "character": 1}}


def open_doc(server: RawServer, text: str) -> None:
    item = {"uri": URI, "languageId": "python", "version": 1, "text": text}
    server.notify("textDocument/didOpen", {"textDocument": item})


def settle(server: RawServer) -> None:
    server.call("groundspec/stats", {}, timeout=600)  # answered after all before it
    time.sleep(0.5)


def memory(changes: int, paced: bool) -> dict[str, float]:
    server = RawServer()
    try:
        server.initialize()
        open_doc(server, "def f():\n    return 1\n")
        settle(server)
        start = server.rss_kb()
        for i in range(changes):
            change = {"range": HERE if i % 2 == 0 else ONE, "text": "a" if i % 2 == 0 else ""}
            params = {"textDocument": {"uri": URI, "version": i + 2}, "contentChanges": [change]}
            server.notify("textDocument/didChange", params)
            if paced and i % 500 == 499:  # an editor's pace: not thousands queued
                server.call("groundspec/stats", {})
        settle(server)
        after_changes = server.rss_kb()
        for i in range(changes):
            server.notify("textDocument/didSave", {"textDocument": {"uri": URI}})
            if paced and i % 500 == 499:
                server.call("groundspec/stats", {})
        settle(server)
        after_saves = server.rss_kb()
    finally:
        server.close()
    return {
        "changes": changes,
        "paced": paced,
        "rssStartMb": round(start / 1024, 1),
        "didChangeGrowthMb": round((after_changes - start) / 1024, 2),
        "didSaveGrowthMb": round((after_saves - after_changes) / 1024, 2),
    }


def typing(chars: int, seconds: float, rate: float, debounce_ms: int) -> dict[str, float]:
    line = "def f(x):\n    return x + 1  # a comment\n\n"
    text = (line * (chars // len(line) + 1))[:chars]
    server = RawServer()
    try:
        server.initialize()
        options = {"debounceMs": debounce_ms, "idleWarmMs": 0}
        server.notify("workspace/didChangeConfiguration", {"settings": options})
        open_doc(server, text)
        settle(server)
        sent: dict[int, float] = {}
        keys = int(seconds * rate)
        started = time.perf_counter()
        for i in range(keys):
            at = started + i / rate
            time.sleep(max(0.0, at - time.perf_counter()))
            change = {"range": HERE, "text": "x"}
            params = {"textDocument": {"uri": URI, "version": i + 2}, "contentChanges": [change]}
            server.notify("textDocument/didChange", params)
            position = {"line": 0, "character": 1}
            request = {
                "textDocument": {"uri": URI},
                "position": position,
                "context": {"triggerKind": 2},
            }
            msg_id = server.request("textDocument/inlineCompletion", request)
            sent[msg_id] = time.perf_counter()
        latencies = []
        for msg_id, t0 in sent.items():
            reply = server.answer(msg_id, timeout=600)
            assert "result" in reply, reply
            latencies.append((server.answered_at[msg_id] - t0) * 1000)
        stats = server.call("groundspec/stats", {})["result"]["server"]
    finally:
        server.close()
    return {
        "documentChars": chars,
        "keystrokes": keys,
        "ratePerS": rate,
        "debounceMs": debounce_ms,
        "p50Ms": round(percentile(latencies, 50), 1),
        "p95Ms": round(percentile(latencies, 95), 1),
        "maxMs": round(max(latencies), 1),
        "superseded": stats["superseded"],
        "peakRssMb": stats["peakRssMb"],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("what", choices=["memory", "typing"])
    parser.add_argument("--changes", type=int, default=20_000)
    parser.add_argument("--chars", type=int, default=1_900_000)
    parser.add_argument("--seconds", type=float, default=30)
    parser.add_argument("--rate", type=float, default=50)
    parser.add_argument("--debounce-ms", type=int, default=0)
    parser.add_argument("--paced", action="store_true", help="sync every 500 messages")
    args = parser.parse_args()
    if args.what == "memory":
        report = memory(args.changes, args.paced)
    else:
        report = typing(args.chars, args.seconds, args.rate, args.debounce_ms)
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
