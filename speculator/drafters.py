"""Drafters: tokens in, draft tokens out.

A Drafter proposes a Draft; the decode loop (speculator/decode.py) verifies it.
The lookup drafter, pure on plain int lists, is in speculator/lookup.py;
DraftModelDrafter wraps a small model with its own KV-cached session.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Protocol

import numpy as np

from .token_probs import softmax
from .tokens import common_prefix

if TYPE_CHECKING:
    from .session import Session


class Draft:
    """Proposed tokens plus what the controller needs to size and score them."""

    __slots__ = ("tokens", "drafter", "bucket", "q", "padding")

    def __init__(self, tokens: list[int], drafter: str, bucket: str, q: np.ndarray | None = None):
        self.tokens = tokens
        self.drafter = drafter
        self.bucket = bucket  # confidence class, e.g. "lookup:4" for a 4-gram match
        self.q = q  # draft probabilities per token (rows x vocab) when stochastic
        # Rows evaluated after the draft and never verified: they round the batch up to
        # a size the CPU kernels run more cheaply (Controller.verify_rows).
        self.padding = 0


class Drafter(Protocol):
    name: str

    def propose(self, history: Sequence[int], k: int) -> Draft | None: ...

    def feedback(self, draft: Draft, accepted: int, correction: int | None) -> None:
        """`accepted` drafts were taken; `correction` is the target's token in
        place of the first rejected one (None if none was rejected)."""
        ...

    def declined(self, draft: Draft) -> None:
        """The draft was not worth verifying: the next token is decoded plainly."""
        ...

    def copy_ahead(self, history: Sequence[int]) -> Sequence[int] | None:
        """The tokens still to come of a source the output is following (None if none)."""
        ...


class DraftModelDrafter:
    """Greedy drafts from a small model; stops when its confidence drops.

    The draft session must already hold (nearly) the target's prompt: the
    engine keeps it in step (warm-up, keystroke syncs). Catching up on a
    whole prompt inside the decode loop would cost seconds that no draft
    wins back, so with `max_catch_up` set, a session lagging by more prompt
    tokens than that drafts nothing in this request.
    """

    name = "draft"

    def __init__(
        self,
        session: Session,
        prompt: Sequence[int],
        min_confidence: float = 0.5,
        max_catch_up: int | None = None,
        clock: Callable[[], float] = time.perf_counter,
    ):
        self.session = session
        self.min_confidence = min_confidence
        self.clock = clock
        self.prompt_len = len(prompt)
        lag = len(prompt) - common_prefix(session.cells, prompt)
        self.usable = max_catch_up is None or lag <= max_catch_up
        self.token_ms: float | None = None  # measured cost of one draft token, this request
        self.prompt_tokens_evaluated = 0  # prompt catch-up done inside decode (benchmarks)

    def propose(self, history: Sequence[int], k: int) -> Draft | None:
        if k <= 0 or not self.usable:
            return None
        # Bring the draft cache to the history: usually a trim plus a token or two.
        keep = common_prefix(self.session.cells, history)
        self.session.trim(keep)
        self.prompt_tokens_evaluated += max(0, self.prompt_len - keep)
        pending = list(history[keep:])
        if not pending:  # need logits for the last token: re-evaluate it
            self.session.trim(len(history) - 1)
            pending = [history[-1]]
        if len(pending) > self.session.n_batch:  # a whole prompt (the user chose `draft`)
            _, logits = self.session.sync([list(history)])
        else:
            logits = self.session.append(pending)[-1]
        tokens: list[int] = []
        started = self.clock()
        for _ in range(k):
            probs = softmax(logits)
            tok = int(np.argmax(probs))
            if probs[tok] < self.min_confidence and tokens:
                break
            tokens.append(tok)
            if len(tokens) == k:
                break
            logits = self.session.append([tok])[-1]
        if len(tokens) > 1:
            ms = (self.clock() - started) * 1000 / (len(tokens) - 1)
            self.token_ms = ms if self.token_ms is None else 0.5 * (self.token_ms + ms)
        return Draft(tokens, self.name, "draft") if tokens else None

    def feedback(self, draft: Draft, accepted: int, correction: int | None) -> None:
        pass

    def declined(self, draft: Draft) -> None:
        pass

    def copy_ahead(self, history: Sequence[int]) -> Sequence[int] | None:
        return None  # a model's drafts follow no source
