"""Keystroke flood: type into the daemon at a fixed rate and check it keeps up.

    python -m bench.flood [--seconds 60] [--rate 50] [--real]

Starts `python -m lsp_server` (fake engine unless --real), opens a document,
and for each keystroke sends a didChange plus an inline completion request
without waiting for answers. Prints answered/failed counts, answer latency
p50/p95, and the server's peak RSS as the server reports it. (This is a
script: its stdout is its own, not the protocol's.)
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import time
from typing import Any

from lsprotocol import types
from pygls.lsp.client import LanguageClient

from speculator.totals import percentile

TEXT = "def total(items):\n    result = 0\n    for item in items:\n        result += item\n"
TYPED = "    return result  # done 😀\n"


async def run_flood(seconds: float, rate: float, real: bool = False) -> dict[str, Any]:
    client = LanguageClient("groundspec-flood", "1")
    env = dict(os.environ, GROUNDSPEC_FAKE_ENGINE="0" if real else "1")
    await client.start_io(sys.executable, "-m", "lsp_server", env=env)
    await client.initialize_async(
        types.InitializeParams(
            capabilities=types.ClientCapabilities(), initialization_options={"debounceMs": 30}
        )
    )
    client.initialized(types.InitializedParams())
    uri = "file:///flood/flood.py"
    item = types.TextDocumentItem(uri=uri, language_id="python", version=1, text=TEXT)
    client.text_document_did_open(types.DidOpenTextDocumentParams(text_document=item))
    latencies, failures = await _type(client, uri, seconds, rate)
    stats = await client.protocol.send_request_async("groundspec/stats", {})
    await client.shutdown_async(None)
    client.exit(None)
    await client.stop()
    server = stats.server
    return {
        "keystrokes": len(latencies) + failures,
        "answered": len(latencies),
        "failed": failures,
        "latencyMs": {"p50": percentile(latencies, 50), "p95": percentile(latencies, 95)},
        "peakRssMb": server.peakRssMb,
        "superseded": server.superseded,
        "cacheHits": server.cacheHits,
    }


async def _type(
    client: LanguageClient, uri: str, seconds: float, rate: float
) -> tuple[list[float], int]:
    """Type TYPED over and over at the end of the document; time every answer."""
    pending: list[asyncio.Task[float]] = []
    line, col, version = TEXT.count("\n"), 0, 1
    deadline = time.perf_counter() + seconds
    i = 0
    while time.perf_counter() < deadline:
        char = TYPED[i % len(TYPED)]
        version += 1
        here = types.Position(line=line, character=col)
        client.text_document_did_change(
            types.DidChangeTextDocumentParams(
                text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=version),
                content_changes=[
                    types.TextDocumentContentChangePartial(
                        range=types.Range(start=here, end=here), text=char
                    )
                ],
            )
        )
        line, col = (
            (line + 1, 0) if char == "\n" else (line, col + len(char.encode("utf-16-le")) // 2)
        )
        pending.append(asyncio.create_task(_timed(client, uri, line, col)))
        i += 1
        await asyncio.sleep(1 / rate)
    results = await asyncio.gather(*pending, return_exceptions=True)
    latencies = [r for r in results if isinstance(r, float)]
    return latencies, len(results) - len(latencies)


async def _timed(client: LanguageClient, uri: str, line: int, col: int) -> float:
    started = time.perf_counter()
    await client.text_document_inline_completion_async(
        types.InlineCompletionParams(
            text_document=types.TextDocumentIdentifier(uri=uri),
            position=types.Position(line=line, character=col),
            context=types.InlineCompletionContext(
                trigger_kind=types.InlineCompletionTriggerKind.Automatic
            ),
        )
    )
    return (time.perf_counter() - started) * 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seconds", type=float, default=60)
    parser.add_argument("--rate", type=float, default=50, help="keystrokes per second")
    parser.add_argument("--real", action="store_true", help="real models, not the fake engine")
    args = parser.parse_args()
    report = asyncio.run(run_flood(args.seconds, args.rate, args.real))
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
