"""A refactor of code that holds Markdown fences keeps all of it (the real model)."""

from __future__ import annotations

import pytest

from speculator.engine import SpeculativeEngine
from speculator.types import RefactorRequest

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
