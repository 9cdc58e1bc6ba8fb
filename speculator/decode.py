"""The speculative decode loop: draft, verify in one target batch, accept, trim.

Shapes: the target session holds prompt + output; `logits` is the target's
distribution for the next token (vocab,). Each round emits token x, drafts
d1..dk after it, and evaluates [x, d1..dk] in one batch, getting k + 1 rows:
row i is the target's distribution p_i for the token after d_i (row 0: after x).

Greedy: accept d_i while it equals argmax p_{i-1}; the first mismatch's
argmax is the next x. The output is exactly plain greedy decoding (k = 0).
Sampling: p is the target's distribution after temperature/top-k/top-p.
  - deterministic draft: sample y ~ p, accept if y == d, else y is the next x;
  - stochastic draft with probabilities q: accept with min(1, p(d)/q(d)),
    else the next x ~ norm(max(0, p - q)).
Both leave the output distributed exactly as the target's alone.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence

import numpy as np

from .controller import DRAFT_TOKEN_MS, Controller
from .drafters import Draft, Drafter
from .session import Session
from .types import Cancelled, CancelToken

log = logging.getLogger(__name__)

# Text generated so far -> index where it must be cut (stop), or None to go on.
StopRule = Callable[[str], int | None]


class SamplingParams:
    __slots__ = ("temperature", "top_p", "top_k", "rng")

    def __init__(self, temperature: float = 0.0, top_p: float = 1.0, top_k: int = 0, seed: int = 0):
        self.temperature = temperature
        self.top_p = top_p
        self.top_k = top_k
        self.rng = np.random.default_rng(seed)

    @property
    def greedy(self) -> bool:
        return self.temperature <= 0.0


class DecodeOutcome:
    def __init__(self) -> None:
        self.tokens: list[int] = []
        self.text = ""
        self.drafted = 0
        self.accepted = 0
        self.rounds = 0
        self.per_drafter: dict[str, tuple[int, int]] = {}
        self.decode_ms = 0.0

    def count(self, drafter: str, drafted: int, accepted: int) -> None:
        d, a = self.per_drafter.get(drafter, (0, 0))
        self.per_drafter[drafter] = (d + drafted, a + accepted)
        self.drafted += drafted
        self.accepted += accepted


def target_probs(logits: np.ndarray, params: SamplingParams) -> np.ndarray:
    """The target's sampling distribution p after temperature, top-k and top-p."""
    z = logits.astype(np.float64) / params.temperature
    if 0 < params.top_k < z.size:
        kth = np.partition(z, -params.top_k)[-params.top_k]
        z = np.where(z >= kth, z, -np.inf)
    z -= z.max()
    p = np.exp(z)
    p /= p.sum()
    if params.top_p < 1.0:
        order = np.argsort(-p)
        cumulative = np.cumsum(p[order])
        cut = int(np.searchsorted(cumulative, params.top_p)) + 1
        mask = np.zeros_like(p)
        mask[order[:cut]] = 1.0
        p *= mask
        p /= p.sum()
    return p


def sample(p: np.ndarray, rng: np.random.Generator) -> int:
    return int(rng.choice(p.size, p=p))


def verify_token(
    logits: np.ndarray,
    draft_token: int,
    q: np.ndarray | None,
    params: SamplingParams,
) -> tuple[bool, int]:
    """Accept or reject one drafted token; on rejection also return the replacement."""
    if params.greedy:
        best = int(np.argmax(logits))
        return best == draft_token, best
    p = target_probs(logits, params)
    if q is None:  # deterministic draft: sample from p, accept on equality
        y = sample(p, params.rng)
        return y == draft_token, y
    if params.rng.random() < min(1.0, p[draft_token] / max(q[draft_token], 1e-12)):
        return True, draft_token
    residual = np.maximum(p - q, 0.0)
    total = residual.sum()
    return False, sample(residual / total if total > 0 else p, params.rng)


def next_token(logits: np.ndarray, params: SamplingParams) -> int:
    if params.greedy:
        return int(np.argmax(logits))
    return sample(target_probs(logits, params), params.rng)


class Decoder:
    """Runs one generation on a synced target session."""

    def __init__(
        self,
        session: Session,
        token_bytes: Callable[[int], bytes],
        is_end: Callable[[int], bool],
        controller: Controller,
        drafters: Sequence[Drafter],
        params: SamplingParams,
        min_draft: int = 0,
    ):
        self.min_draft = min_draft  # > 0: the user chose the drafters, always try them
        self.session = session
        self.token_bytes = token_bytes
        self.is_end = is_end
        self.controller = controller
        self.drafters = list(drafters)
        self.params = params

    def run(
        self,
        logits: np.ndarray,
        max_tokens: int,
        stop: StopRule | None = None,
        cancel: CancelToken | None = None,
    ) -> DecodeOutcome:
        started = time.perf_counter()
        out = DecodeOutcome()
        prompt = list(self.session.cells)
        prompt_len = len(prompt)
        pieces: list[bytes] = []
        forced: int | None = None  # replacement token from a rejected draft
        while len(out.tokens) < max_tokens:
            if cancel is not None and cancel.cancelled:
                raise Cancelled()
            x = forced if forced is not None else next_token(logits, self.params)
            forced = None
            if self.is_end(x) or self._emit(x, out, pieces, stop):
                break
            if len(out.tokens) >= max_tokens:
                break
            draft = self._draft(prompt + out.tokens, max_tokens - len(out.tokens))
            k = len(draft.tokens) if draft else 0
            t0 = time.perf_counter()
            rows = self.session.append([x] + (draft.tokens if draft else []))
            self.controller.observe_cost(k + 1, (time.perf_counter() - t0) * 1000)
            out.rounds += 1
            accepted, forced, done = self._verify(rows, draft, out, pieces, stop)
            self.session.trim(prompt_len + len(out.tokens))
            if draft is not None:
                out.count(draft.drafter, k, accepted)
                self.controller.observe_acceptance(draft.bucket, k, accepted)
                for drafter in self.drafters:
                    if drafter.name == draft.drafter:
                        drafter.feedback(draft, accepted, forced)
            if done:
                break
            logits = rows[accepted].copy()  # rows is a view the next decode reuses
        out.text = _decode_text(pieces)
        if stop is not None:
            cut = stop(out.text)
            if cut is not None:
                out.text = out.text[:cut]
        out.decode_ms = (time.perf_counter() - started) * 1000
        return out

    def _emit(
        self, token: int, out: DecodeOutcome, pieces: list[bytes], stop: StopRule | None
    ) -> bool:
        """Append a token; True when a stop rule fires."""
        out.tokens.append(token)
        pieces.append(self.token_bytes(token))
        return stop is not None and stop(_decode_text(pieces)) is not None

    def _draft(self, history: list[int], remaining: int) -> Draft | None:
        """Ask drafters in order (cheapest first); size the draft by expected gain."""
        for drafter in self.drafters:
            extra = DRAFT_TOKEN_MS if drafter.name == "draft" else 0.0
            # Ask for as much as the most confident bucket would verify.
            best = "draft" if drafter.name == "draft" else "lookup:aligned"
            budget = self.controller.draft_length(best, remaining - 1, extra)
            # Lookup drafts are free to propose, so ask for plenty; draft-model
            # tokens cost time each, so never generate more than will be verified.
            floor = self.min_draft * (1 if drafter.name == "draft" else 8)
            budget = min(remaining - 1, max(budget, floor))
            if budget <= 0:
                continue
            draft = drafter.propose(history, budget)
            if draft is None:
                continue
            k = self.controller.draft_length(draft.bucket, len(draft.tokens), extra)
            k = min(len(draft.tokens), max(k, self.min_draft))
            if k > 0:
                draft.tokens = draft.tokens[:k]
                return draft
            self.controller.declined(draft.bucket)
        return None

    def _verify(
        self,
        rows: np.ndarray,
        draft: Draft | None,
        out: DecodeOutcome,
        pieces: list[bytes],
        stop: StopRule | None,
    ) -> tuple[int, int | None, bool]:
        """(accepted drafts, forced next token or None, generation finished)."""
        if draft is None:
            return 0, None, False
        for i, d in enumerate(draft.tokens):
            q = draft.q[i] if draft.q is not None else None
            ok, replacement = verify_token(rows[i], d, q, self.params)
            if not ok:
                return i, replacement, False
            if self.is_end(d):
                return i, None, True
            if self._emit(d, out, pieces, stop):
                return i + 1, None, True
        return len(draft.tokens), None, False


def _decode_text(pieces: list[bytes]) -> str:
    return b"".join(pieces).decode("utf-8", errors="ignore")
