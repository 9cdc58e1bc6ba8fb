"""A raw request's verify batches are the same every time (speculator/generators/
reproducible.py): a FixedController and an unguarded Decoder size its drafts from
the tokens alone, never from the clock, the thread count or earlier requests."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from modelled_decode import LearnsNothing

from lsp_server import http_asks as asks
from lsp_server import http_wire as wire
from lsp_server.options import ServerOptions
from speculator.controller import Controller, controllers_by_kind
from speculator.decode import Decoder
from speculator.drafters import Draft
from speculator.generators.reproducible import FixedController
from speculator.sampling import SamplingParams

VOCAB = 32
TRUTH = [(7 * i) % 29 + 2 for i in range(80)]  # the model's greedy answer


class Target:
    """A session whose next token after the prompt and output[:i] is TRUTH[i]; each
    batch costs the clock `load` times its rows' tabled time."""

    def __init__(self, load: float, threads: int) -> None:
        self.now, self.load, self.threads = 0.0, load, threads
        self.cells = [1, 1, 1]
        self.batches: list[int] = []

    def clock(self) -> float:
        return self.now

    def row(self, i: int) -> np.ndarray:
        row = np.zeros(VOCAB, dtype=np.float32)
        row[TRUTH[i] if i < len(TRUTH) else 0] = 1.0
        return row

    def room(self) -> int:
        return 4000 - len(self.cells)

    def append(self, tokens: Sequence[int]) -> np.ndarray:
        self.batches.append(len(tokens))
        self.now += (20 + 25 * len(tokens)) * self.load / 1000
        self.threads = 3 - self.threads  # adaptive threads: a change every step
        start = len(self.cells) - 3
        self.cells.extend(tokens)
        return np.stack([self.row(start + i + 1) for i in range(len(tokens))])

    def trim(self, n: int) -> None:
        del self.cells[n:]


class HalfRight(LearnsNothing):
    """Lookup-style drafts: right for a while, then wrong, by position alone."""

    def propose(self, history: Sequence[int], k: int) -> Draft | None:
        done = len(history) - 3
        right = 6 if done % 3 else 1
        tokens = TRUTH[done : done + min(k, right)] + [31] * max(0, k - right)
        return Draft(tokens[:k], self.name, "lookup:aligned") if tokens else None


def _shapes(load: float, controller: Controller, guarded: bool) -> tuple[list[int], list[int]]:
    target = Target(load, threads=2)
    decoder = Decoder(
        target,  # type: ignore[arg-type]
        token_bytes=lambda t: b" t%d" % t,
        is_end=lambda t: t == 0,
        controller=controller,
        drafters=[HalfRight()],  # type: ignore[list-item]
        params=SamplingParams(),
        clock=target.clock,
        guarded=guarded,
    )
    out = decoder.run(target.row(0), 60)
    return out.tokens, target.batches


def test_a_fixed_unguarded_decode_has_the_same_batches_under_any_load() -> None:
    learned = controllers_by_kind(cpu_only=True)["completion"]
    _shapes(3.0, learned, guarded=True)  # a request before, under load, teaches it
    runs = [_shapes(load, FixedController(), guarded=False) for load in (1.0, 5.0, 0.3)]
    tokens, batches = runs[0]
    assert tokens == TRUTH[:60]  # exact, as any decode
    assert max(batches) > 1  # it drafted
    assert all(run == runs[0] for run in runs)
    # The engine's own sizing follows the load and what it learned: other batches.
    guarded = [_shapes(load, learned, guarded=True)[1] for load in (1.0, 5.0)]
    assert guarded[0] != guarded[1]


def test_a_fixed_controller_ignores_the_clock_and_the_threads() -> None:
    fixed = FixedController()
    before = [fixed.draft_length("lookup:2", 30), fixed.cost(8)]
    fixed.use_threads(1)
    fixed.observe_cost(8, 900.0)
    fixed.observe_cost(1, 1.0)
    assert [fixed.draft_length("lookup:2", 30), fixed.cost(8)] == before


def test_cache_prompt_reaches_the_engine() -> None:
    for cache in (True, False):
        body = wire.CompletionBody(prompt="x = ", cache_prompt=cache)
        (ask,) = asks.completion_asks(body, ["x = "], ServerOptions())
        assert ask.completion is not None and ask.completion.cache_prompt is cache
