"""Does a 1-row step cost more right after a batch of another shape?

On a GPU build, ggml-cuda replays a step as a CUDA graph only once two calls
in a row had the same shape, so the plain steps after a verify batch run
without the graph. This times, on the default target through groundspec's
session: 8 plain steps, then for k in 2, 8, 32 a k-row batch and the 4 plain
steps after it, then 1-row steps alternating with 4-row batches as `auto`
alternates them; three passes. The loss guard's `steady_ratio` is why it matters
(speculator/decode.py: LossGuard). Results: docs/gpu.md.

    python -m bench.step_shapes
"""

from __future__ import annotations

import time

import llama_cpp  # noqa: F401 - before numpy: a CUDA build crashed otherwise (docs/gpu.md)

from speculator.config import EngineConfig
from speculator.engine import SpeculativeEngine

PROMPT_TOKENS = 600


def main() -> None:
    engine = SpeculativeEngine.load(EngineConfig(use_draft=False))
    session = engine.session
    text = open(__file__.replace("step_shapes.py", "simulate.py")).read()
    prompt = engine.target.tokenize(text)[:PROMPT_TOKENS]
    session.sync([prompt])
    filler = prompt * 4

    def step(rows: int) -> str:
        started = time.perf_counter()
        session.append(filler[:rows])
        return f"{(time.perf_counter() - started) * 1000:.1f}"

    for _ in range(3):
        session.trim(len(prompt))
        line = ["plain: " + " ".join(step(1) for _ in range(8))]
        for k in (2, 8, 32):
            batch = step(k)
            line.append(f"{k} rows {batch}, then " + " ".join(step(1) for _ in range(4)))
        line.append("4/1 alternating: " + " ".join(f"{step(4)}/{step(1)}" for _ in range(5)))
        print(" | ".join(line), flush=True)
    engine.close()


if __name__ == "__main__":
    main()
