"""The same raw greedy request gets the same answer every time, drafts and all
(speculator/generators/reproducible.py): cold or cached, with other requests in
between that teach the engine's controllers, and with `cache_prompt: false`.
llama.cpp's test_consistent_result_same_seed and test_completion_with_tokens_input
ask this of llama-server's /completion."""

from __future__ import annotations

from speculator.engine import SpeculativeEngine
from speculator.types import CompletionRequest

PROMPTS = [
    "I believe the meaning of life is",  # llama.cpp's test prompt
    "def add(a, b):\n    return a + b\n\n\ndef sub(a, b):\n    return a - b\n\n\ndef mul(a, b):\n",
    "<|fim_prefix|>def area(r):\n    return <|fim_suffix|>\n<|fim_middle|>",
]
# A document completion between repeats: it drafts, and its rounds teach the
# engine's completion controller (acceptance, measured costs) between them.
DOCUMENT = "import math\n\n\ndef circle_area(r):\n    return math.pi * r * r\n\n\ndef sq"


def raw(text: str, cache_prompt: bool = True) -> CompletionRequest:
    return CompletionRequest(
        text=text,
        cursor=len(text),
        prompt_format="raw",
        ends_at="limit",
        max_tokens=40,
        slot="reproducible",
        cache_prompt=cache_prompt,
    )


def test_a_raw_request_repeats_its_answer_and_its_drafts(engine: SpeculativeEngine) -> None:
    for prompt in PROMPTS:
        answers = set()
        for cache_prompt in (True, True, False, True, False):
            result = engine.complete(raw(prompt, cache_prompt))
            stats = result.stats
            answers.add((result.text, stats.drafted_tokens, stats.accepted_tokens))
            if not cache_prompt:
                assert stats.reused_prompt_tokens == 0  # evaluated cold
            engine.complete(CompletionRequest(text=DOCUMENT, cursor=len(DOCUMENT), path="d.py"))
        assert len(answers) == 1, f"{prompt!r}: {answers}"
