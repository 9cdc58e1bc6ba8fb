"""A refactor replaces the selection only with a whole rewrite (the real model)."""

from __future__ import annotations

import pytest

from speculator.engine import SpeculativeEngine
from speculator.types import EngineError, RefactorRequest

# Backticks in strings and in a docstring's example: code, not the end of the answer.
SOURCE = '''def fenced(code, lang):
    """Wrap code in a Markdown block:

    ```
    fenced("x = 1", "python")
    ```
    """
    head = "```" + lang + "\\n"
    return head + code + "\\n```\\n"
'''


@pytest.mark.parametrize("speculation", ["off", "auto"])
def test_a_refactor_runs_past_the_backticks_in_its_code(
    engine: SpeculativeEngine, speculation: str
) -> None:
    request = RefactorRequest(
        text=SOURCE,
        start=0,
        end=len(SOURCE),
        instruction="Rename the parameter `code` to `body`.",
        speculation=speculation,  # type: ignore[arg-type]
    )
    new_text = engine.refactor(request).new_text
    assert new_text.rstrip().endswith('return head + body + "\\n```\\n"'), new_text
    assert "def fenced(body, lang):" in new_text


def test_a_rewrite_cut_at_its_token_limit_is_an_error(engine: SpeculativeEngine) -> None:
    source = "def twice(x):\n    return 2 * x\n"
    request = RefactorRequest(
        text=source,
        start=0,
        end=len(source),
        instruction="Add a docstring with twenty doctest examples, one for each integer from 1 to 20.",
        max_tokens=1,  # the limit: the selection's length plus 64 tokens
    )
    with pytest.raises(EngineError, match="reached its limit of .* the selection is unchanged"):
        engine.refactor(request)
