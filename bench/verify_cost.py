"""What a verify batch of k rows costs against a 1-row step, on this machine.

The speculation gain is bounded by this curve: a draft of k tokens accepted
in full yields k + 1 tokens for the cost of a (k + 1)-row batch. Times
`Session.append` after a 1,000-token context (`--context`), best of 3 per row count, so run
it on a quiet machine. `--model` times another GGUF (a requantized target, for
example). Results and what they mean: bench/archive/benchmarks.md.

    python -m bench.verify_cost [--model PATH] [--threads N] [--rows 1,8,16,64]
                                [--context 1000]
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import llama_cpp  # noqa: F401 - before numpy: a CUDA build crashed otherwise (docs/gpu.md)

from speculator.config import EngineConfig
from speculator.engine import SpeculativeEngine

CONTEXT_TOKENS = 1000
DEFAULT_ROWS = "1,2,4,8,16,24,32,48,56,64,96,128"


def main() -> None:
    parser = argparse.ArgumentParser(description="Verify batch cost against a 1-row step.")
    parser.add_argument("--model", help="target GGUF (default: the assembled default model)")
    parser.add_argument("--threads", type=int, help="CPU threads (default: all cores)")
    parser.add_argument("--rows", default=DEFAULT_ROWS, help="comma-separated batch sizes")
    parser.add_argument(
        "--context", type=int, default=CONTEXT_TOKENS, help="tokens before the batch"
    )
    args = parser.parse_args()
    rows = [int(n) for n in args.rows.split(",")]
    engine = SpeculativeEngine.load(
        EngineConfig(use_draft=False, target_model=args.model, threads=args.threads)
    )
    session = engine.session
    here = Path(__file__).parent
    text = "".join(p.read_text() for p in sorted(here.glob("*.py")))
    tokens = engine.target.tokenize(text)
    context, filler = tokens[: args.context], tokens[args.context :]
    session.sync([context])
    best: dict[int, float] = {}
    for k in rows:
        for _ in range(3):
            session.trim(len(context))
            started = time.perf_counter()
            session.append(filler[:k])
            ms = (time.perf_counter() - started) * 1000
            best[k] = min(best.get(k, ms), ms)
    engine.close()
    one = best.get(1)
    print("| rows | ms | x one row | tokens per step, accepted in full |")
    print("|---|---|---|---|")
    for k, ms in best.items():
        ratio = f"{ms / one:.1f}" if one else "-"
        gain = f"{k * one / ms:.2f}" if one else "-"
        print(f"| {k} | {ms:.0f} | {ratio} | {gain} |")


if __name__ == "__main__":
    main()
