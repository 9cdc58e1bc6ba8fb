"""Alternatives on the real models: distinct, the greedy one first and unchanged."""

from __future__ import annotations

from speculator.engine import SpeculativeEngine
from speculator.types import CompletionRequest

SOURCE = "def area(radius):\n    return \n"


def test_alternatives_are_distinct_and_start_with_the_greedy_completion(
    engine: SpeculativeEngine,
) -> None:
    cursor = SOURCE.index("\n", 18)
    # Plain decoding from a cached prompt each time: the comparisons below are then
    # free of batch-shape near-ties (speculative exactness is tested elsewhere).
    request = CompletionRequest(
        text=SOURCE, cursor=cursor, max_tokens=12, multiline=False, speculation="off"
    )
    engine.complete(request)
    greedy = engine.complete(request)
    requests_before = int(str(engine.totals()["requests"]))
    results = engine.alternatives(request, 3)
    texts = [r.text for r in results]
    timings = [(r.stats.generated_tokens, r.stats.total_ms) for r in results]
    print(f"alternatives: {texts}; (tokens, ms) each: {timings}")
    assert texts[0] == greedy.text
    shapes = {" ".join(t.split()) for t in texts}
    assert len(texts) >= 2 and len(shapes) == len(texts)  # distinct beyond whitespace
    assert all(t.strip() and "\n" not in t for t in texts)  # same single-line stop rule
    # The alternatives reused the prompt; only the request itself is counted.
    assert all(r.stats.reused_prompt_tokens == r.stats.prompt_tokens for r in results[1:])
    assert engine.totals()["requests"] == requests_before + 1
    # The KV left behind does not change the next answer.
    assert engine.complete(request).text == greedy.text
