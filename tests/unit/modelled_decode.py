"""The modelled target the decode tests run on (test_decode*.py): its greedy
choice after any history is fixed by `truth`, and each batch advances a fake
clock by a modelled cost; with the drafters and decode helpers those tests share.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from speculator.controller import DEFAULT_COST_MS, REFACTOR_PRIORS, Controller
from speculator.decode import Decoder
from speculator.drafters import Draft
from speculator.loss_guard import LossGuard
from speculator.sampling import SamplingParams

VOCAB = 64
END = 0


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


class ModelledTarget:
    """A target session whose next token after prompt + output[:i] is truth[i]."""

    def __init__(
        self,
        prompt: list[int],
        truth: list[int],
        clock: Clock,
        load: float = 1.0,
        n_ctx: int = 4096,
        curve: Callable[[int], float] | None = None,
        replay_discount: float = 1.0,
        threads: int = 2,
    ):
        self.prompt_len = len(prompt)
        self.threads = threads
        self.curve = curve or _curve
        # A GPU build replays a batch shaped like the two before it as a CUDA
        # graph: it costs this share of the curve (1.0: a CPU, no such thing).
        self.replay_discount = replay_discount
        self.cells = list(prompt)
        self.truth = truth
        self.clock = clock
        self.load = load
        self.n_ctx = n_ctx
        self.batches: list[int] = []

    def first_logits(self) -> np.ndarray:
        return self._row(0)

    def _row(self, generated: int) -> np.ndarray:
        row = np.zeros(VOCAB, dtype=np.float32)
        row[self.truth[generated] if generated < len(self.truth) else END] = 1.0
        return row

    def room(self) -> int:
        return self.n_ctx - 1 - len(self.cells)

    def append(self, tokens: Sequence[int]) -> np.ndarray:
        rows = len(tokens)
        replayed = self.batches[-2:] == [rows, rows]
        self.batches.append(rows)
        discount = self.replay_discount if replayed else 1.0
        self.clock.now += self.curve(rows) * self.load * discount / 1000
        start = len(self.cells) - self.prompt_len
        self.cells.extend(tokens)
        return np.stack([self._row(start + i + 1) for i in range(rows)])

    def trim(self, n: int) -> None:
        del self.cells[n:]


def _curve(rows: int) -> float:
    sizes = sorted(DEFAULT_COST_MS)
    nearest = min(sizes, key=lambda s: abs(s - rows))
    return DEFAULT_COST_MS[nearest] * rows / nearest if rows > 65 else DEFAULT_COST_MS[nearest]


class LearnsNothing:
    """A lookup drafter's hooks, for test drafters that learn nothing from them."""

    name = "lookup"

    def feedback(self, draft: Draft, accepted: int, correction: int | None) -> None:
        pass

    def declined(self, draft: Draft) -> None:
        pass

    def copy_ahead(self, history: Sequence[int]) -> Sequence[int] | None:
        return None


class WrongDrafter(LearnsNothing):
    """Proposes k confident-looking tokens that are always wrong."""

    def propose(self, history: Sequence[int], k: int) -> Draft | None:
        return Draft([63] * k, self.name, "lookup:aligned")


def _decode(
    truth: list[int],
    drafters: list,
    load: float = 1.0,
    controller: Controller | None = None,
    target: ModelledTarget | None = None,
    expected_tokens: int | None = None,
    token_bytes: Callable[[int], bytes] = lambda t: b" t%d" % t,
    allowance: float = LossGuard.ALLOWANCE,
) -> tuple[list[int], float, ModelledTarget]:
    """Decode `truth`; the caller expects `expected_tokens` (default: all of it)."""
    clock = Clock()
    prompt = [5, 6, 7, 8]
    if target is None:
        target = ModelledTarget(prompt, truth, clock, load)
    else:
        target.clock = clock
    decoder = Decoder(
        target,  # type: ignore[arg-type]
        token_bytes=token_bytes,
        is_end=lambda t: t == END,
        controller=controller or Controller(priors=REFACTOR_PRIORS, max_draft=64),
        drafters=drafters,
        params=SamplingParams(),
        clock=clock,
        allowance=allowance,
    )
    expected = len(truth) if expected_tokens is None else expected_tokens
    out = decoder.run(target.first_logits(), len(truth) + 8, expected_tokens=expected)
    return out.tokens, clock.now * 1000, target


class TruthDrafter(LearnsNothing):
    """Drafts the true next tokens, at most `longest`: always right."""

    def __init__(self, truth: list[int], prompt_len: int, longest: int, bucket: str):
        self.truth = truth
        self.prompt_len = prompt_len
        self.longest = longest
        self.bucket = bucket

    def propose(self, history: Sequence[int], k: int) -> Draft | None:
        done = len(history) - self.prompt_len
        coming = self.truth[done : done + min(k, self.longest)]
        return Draft(coming, self.name, self.bucket) if coming else None


def _copying_truth(n: int = 300) -> tuple[list[int], list[int]]:
    rng = np.random.default_rng(1)
    source = [int(t) for t in rng.integers(1, 60, size=n)]
    return source, source + [END]


def _decoder(
    truth: list[int],
    drafters: list,
    controller: Controller | None = None,
    clock: Clock | None = None,
    curve: Callable[[int], float] | None = None,
    deadline_ms: float = 0.0,
) -> tuple[Decoder, ModelledTarget]:
    """A decoder over a modelled target whose greedy output is `truth`."""
    clock = clock or Clock()
    target = ModelledTarget([5, 6, 7, 8], truth, clock, curve=curve)
    decoder = Decoder(
        target,  # type: ignore[arg-type]
        token_bytes=lambda t: b" t%d" % t,
        is_end=lambda t: t == END,
        controller=controller or Controller(priors=REFACTOR_PRIORS, max_draft=64),
        drafters=drafters,
        params=SamplingParams(),
        clock=clock,
        deadline_ms=deadline_ms,
    )
    return decoder, target
