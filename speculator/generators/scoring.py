"""Scoring a next edit's draft in the target's KV, and warming its instructions.

A draft-only next edit (speculator/next_edit/core.py) is one verify batch: the
target's probability of each token of the draft after the prompt. The prompt
lives in its own KV slot, shared by every document's asks, so the instructions
it starts with are evaluated once; `warm` evaluates them before the first ask.
The last score is remembered: a client that asks again about the same text
(Copilot-style clients ask on every pause) gets it without a batch.
"""

from __future__ import annotations

import bisect
import logging
import time
from typing import TYPE_CHECKING, NamedTuple

from ..kv_slots import KvSlots
from ..next_edit.core import DraftScore
from ..next_edit.proposal import TokenTrace
from ..sampling import token_prob
from ..types import CancelToken
from .progress import token_ends

if TYPE_CHECKING:
    from ..models import Model
    from ..session import Session

log = logging.getLogger(__name__)

# The most tokens of an answer scored in one batch.
MAX_SCORED_TOKENS = 256


class _Asked(NamedTuple):
    prompt: str
    answer: str
    since: int
    upto: int


class AnswerScorer:
    def __init__(self, target: Model, session: Session, slots: KvSlots) -> None:
        self.target = target
        self.session = session
        self.slots = slots
        self._last: tuple[_Asked, DraftScore] | None = None
        self.repeats = 0  # scores answered from the last one (the tests read it)

    def score(
        self,
        slot: tuple[str, str],
        prompt_text: str,
        answer: str,
        span: tuple[int, int],
        started: float,
        cancel: CancelToken | None = None,
    ) -> DraftScore:
        """The target's probability of each token of `answer` to `prompt_text` (in
        KV slot `slot`) that writes any of answer[since:upto] (`span`), and of
        those between; the tokens before are 1 (not scored)."""
        asked = _Asked(prompt_text, answer, *span)
        if self._last is not None and self._last[0] == asked:
            self.repeats += 1
            trace, prompt_tokens = self._last[1].trace, self._last[1].prompt_tokens
            elapsed = (time.perf_counter() - started) * 1000
            return DraftScore(trace, prompt_tokens, prompt_tokens, elapsed)
        scored = self._score(slot, asked, started, cancel)
        self._last = (asked, scored)
        return scored

    def _score(
        self, slot: tuple[str, str], asked: _Asked, started: float, cancel: CancelToken | None
    ) -> DraftScore:
        prompt = self.target.tokenize(asked.prompt, special=True)
        tokens = self.target.tokenize(asked.answer)
        ends = token_ends(tokens, self.target.token_bytes)
        count = next((i + 1 for i, end in enumerate(ends) if end >= asked.upto), len(tokens))
        count = min(count, MAX_SCORED_TOKENS, self.session.room() - len(prompt))
        if count <= 0:
            return DraftScore(TokenTrace([], []), len(prompt), 0, 0.0)
        # The answer's tokens before the change (`since`) are context: read, not
        # scored (probability 1 in the trace), so they get no logits rows.
        skip = min(bisect.bisect_right(ends, asked.since), count - 1)
        self.slots.enter(slot, [prompt])
        sync, first = self.session.sync([prompt], cancel=cancel)
        probs = [1.0] * skip + ([token_prob(first, tokens[0])] if skip == 0 else [])
        if count > 1:
            lead = max(skip - 1, 0)
            rows = self.session.append(tokens[: count - 1], first_row=lead)
            probs += [token_prob(rows[i - lead], tokens[i + 1]) for i in range(lead, count - 1)]
        self.session.trim(len(prompt))
        elapsed = (time.perf_counter() - started) * 1000
        return DraftScore(TokenTrace(ends[:count], probs), len(prompt), sync.reused, elapsed)

    def warm(self, slot: tuple[str, str], text: str, cancel: CancelToken | None = None) -> int:
        """Evaluate `text` (a prompt's fixed start) into KV slot `slot`, unless the
        slot already starts with it (then it is left where it is: restoring it
        now would only cost the next switch a save); the tokens evaluated."""
        # Where the first ask's prompt tokenizes the text at their end otherwise,
        # its sync keeps the common prefix and evaluates the rest.
        tokens = self.target.tokenize(text, special=True)
        if not tokens or self.slots.holds(slot, tokens):
            return 0  # kept on disk from an earlier run, or an ask came first
        self.slots.enter(slot, [tokens])
        sync, _ = self.session.sync([tokens], cancel=cancel)
        log.info("warmed %d tokens of the %s instructions", sync.evaluated, slot[0])
        return sync.evaluated
