"""What one generation produced and why it stopped, read by the pipeline and the bench.

`StopReason` replaces the five flags a decode once set: a generation stops for
exactly one reason, so the flags were never independent. `finished`,
`timed_out` and `cut_short` are the groupings the callers ask about.
"""

from __future__ import annotations

import enum
from collections.abc import Callable
from dataclasses import dataclass, field

from .types import TokenChoice


class PureStop:
    """A stop rule (text so far -> where to cut it, or None) that has no side effects:
    no streaming, no clock. The decoder may therefore ask it about text it has not
    accepted yet, and cuts a draft where the rule would end the output if the draft
    were taken: the rows past that point would be verified for nothing, and their
    misses would teach the controller that such drafts fail (a next edit's rewrite
    ends a few lines after its change, long before the window it drafts from)."""

    def __init__(self, rule: Callable[[str], int | None]) -> None:
        self.rule = rule

    def __call__(self, text: str) -> int | None:
        return self.rule(text)


class StopReason(enum.Enum):
    TOKEN_LIMIT = "token limit"  # max_tokens generated (or the server's n_predict)
    END = "end"  # the model ended: an end token, or the stop rule fired
    LOOPED = "looped"  # the output repeated one block over and over
    CONTEXT_FULL = "context full"  # no room left in the context for another round
    TIME_LIMIT = "time limit"  # max_predict_ms passed, stopped at a new line (kept)
    DEADLINE = "deadline"  # the next round would end past the deadline: maybe mid-line


@dataclass
class DecodeOutcome:
    """One local decode: the tokens, the text, the drafting counts and the stop.

    `prompt` and `draft_catch_up` are for the bench: the prompt tokens the
    generation continued (to re-evaluate a divergence), and the prompt tokens
    the draft model caught up on inside the decode (bounded by the engine)."""

    tokens: list[int] = field(default_factory=list)
    text: str = ""
    drafted: int = 0
    accepted: int = 0
    rounds: int = 0
    per_drafter: dict[str, tuple[int, int]] = field(default_factory=dict)
    decode_ms: float = 0.0
    stop: StopReason = StopReason.TOKEN_LIMIT
    prompt: list[int] = field(default_factory=list)
    draft_catch_up: int = 0
    # The target's probability of each emitted token, where the caller asked for
    # them (Decoder's record_probs: a next edit's confidence).
    token_probs: list[float] = field(default_factory=list)
    # Each emitted token's probabilities, where the request asked for n_probs
    # (speculator/token_probs.py).
    token_choices: list[TokenChoice] = field(default_factory=list)

    @property
    def finished(self) -> bool:
        """Ended by the model (a rewrite is applied only then)."""
        return self.stop is StopReason.END

    @property
    def timed_out(self) -> bool:
        """Stopped by a time limit: at a new line, or at the deadline."""
        return self.stop in (StopReason.TIME_LIMIT, StopReason.DEADLINE)

    @property
    def cut_short(self) -> bool:
        """Stopped by the deadline, maybe mid-line (the caller drops a cut word)."""
        return self.stop is StopReason.DEADLINE

    def count(self, drafter: str, drafted: int, accepted: int) -> None:
        d, a = self.per_drafter.get(drafter, (0, 0))
        self.per_drafter[drafter] = (d + drafted, a + accepted)
        self.drafted += drafted
        self.accepted += accepted
