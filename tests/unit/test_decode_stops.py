"""How the decode loop ends a generation, on the modelled target of
tests/unit/modelled_decode.py: a full context, a loop, the time limit and the
deadline, and whether the model finished it (an end token or the stop rule).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import numpy as np
import pytest
from modelled_decode import (
    END,
    Clock,
    ModelledTarget,
    TruthDrafter,
    WrongDrafter,
    _copying_truth,
    _curve,
    _decode,
    _decoder,
)

from speculator.controller import REFACTOR_PRIORS, Controller
from speculator.decode import Decoder, StopRule, repeating_tail, unfinished_refactor
from speculator.lookup import PromptLookupDrafter
from speculator.loss_guard import LossGuard
from speculator.outcome import DecodeOutcome, PureStop, StopReason
from speculator.sampling import SamplingParams


def test_a_full_context_keeps_what_was_generated() -> None:
    clock = Clock()
    truth = list(range(1, 60))
    target = ModelledTarget([5, 6, 7, 8], truth, clock, n_ctx=20)
    decoder = Decoder(
        target,  # type: ignore[arg-type]
        token_bytes=lambda t: b" t%d" % t,
        is_end=lambda t: t == END,
        controller=Controller(),
        drafters=[PromptLookupDrafter([truth])],
        params=SamplingParams(),
        clock=clock,
    )
    out = decoder.run(target.first_logits(), max_tokens=100)
    assert out.stop is StopReason.CONTEXT_FULL
    assert out.tokens == truth[: len(out.tokens)]
    assert len(out.tokens) == 20 - 1 - 4 + 1  # every cell used, plus the last emitted token


def test_a_repeating_tail_is_a_loop() -> None:
    assert repeating_tail([1, 2, 3] * 40)
    assert repeating_tail(list(range(10)) + [7] * 100)
    assert not repeating_tail([1, 2, 3] * 10)  # too short to call it a loop
    rng = np.random.default_rng(3)
    assert not repeating_tail([int(t) for t in rng.integers(0, 50, size=400)])


def test_repeating_what_the_prompt_repeats_is_not_a_loop() -> None:
    table = [1, 2, 3, 4, 5, 6] * 40  # e.g. a table of similar lines being rewritten
    assert repeating_tail(table)
    assert not repeating_tail(table, prompt=[0, 0] + table[:60])


def test_a_looping_generation_stops_the_same_with_and_without_drafts() -> None:
    truth = [9, 10, 11, 12] * 100
    plain, _, _ = _decode(truth, [])
    spec, _, _ = _decode(truth, [PromptLookupDrafter([truth[:40]])])
    assert spec == plain
    assert len(plain) < 200


def _timed_decoder(
    truth: list[int], max_ms: float = 0.0, deadline_ms: float = 0.0
) -> tuple[Decoder, ModelledTarget]:
    clock = Clock()
    target = ModelledTarget([5, 6, 7, 8], truth, clock)
    decoder = Decoder(
        target,  # type: ignore[arg-type]
        # token 9 is a new line; every token costs one modelled step (~20-30 ms)
        token_bytes=lambda t: b"\n" if t == 9 else b" t%d" % t,
        is_end=lambda t: t == END,
        controller=Controller(),
        drafters=[],
        params=SamplingParams(),
        clock=clock,
        max_ms=max_ms,
        deadline_ms=deadline_ms,
    )
    return decoder, target


def test_the_time_limit_stops_at_the_first_new_line_after_it() -> None:
    # t_max_predict_ms as llama-server applies it: past the limit, the next new
    # line (kept) ends the generation; before the limit a new line does not.
    truth = [1, 9, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 9, 12, END]
    decoder, target = _timed_decoder(truth, max_ms=3 * _curve(1))
    out = decoder.run(target.first_logits(), max_tokens=64)
    assert out.timed_out
    assert out.tokens == truth[:10]  # through the second new line, the first after the limit
    assert target.cells[4:] == out.tokens[:-1]  # as at any stop: the last one is not in the KV


def test_without_a_new_line_the_time_limit_never_stops() -> None:
    truth = [1, 2, 3, 4, 5, 6, 7, 8, END]
    decoder, target = _timed_decoder(truth, max_ms=1.0)
    out = decoder.run(target.first_logits(), max_tokens=64)
    assert not out.timed_out and out.tokens == truth[:-1]


def test_the_deadline_stops_mid_line_before_a_round_that_would_end_past_it() -> None:
    truth = [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, END]
    deadline = 3.5 * _curve(1)
    decoder, target = _timed_decoder(truth, deadline_ms=deadline)
    started = target.clock()
    out = decoder.run(target.first_logits(), max_tokens=64)
    assert out.timed_out and out.cut_short
    # the first token is free (the prompt's logits); each next one costs a step
    assert out.tokens == truth[:4]
    assert (target.clock() - started) * 1000 <= deadline


def test_a_drafted_round_that_would_end_past_the_deadline_is_not_started() -> None:
    """A plain round prices the next one at a step; a right draft makes it a batch
    of many steps (16 rows, 5.7 steps past a deadline, before the fix). Within the
    deadline a draft is verified shorter, or not at all."""
    truth = list(range(10, 60)) * 3 + [END]
    drafted = 0
    for tenths in range(20, 600, 5):  # deadlines of 2 to 60 steps
        controller = Controller(priors=REFACTOR_PRIORS, max_draft=64)
        clock = Clock()
        deadline = tenths / 10 * controller.cost(1)
        right = TruthDrafter(truth, prompt_len=4, longest=48, bucket="lookup:aligned")
        decoder, target = _decoder(
            truth, [right], controller, clock, curve=controller.cost, deadline_ms=deadline
        )
        out = decoder.run(target.first_logits(), max_tokens=160, expected_tokens=150)
        assert out.cut_short and out.tokens == truth[: len(out.tokens)]
        assert clock.now * 1000 <= deadline + 1e-6, (tenths, target.batches)
        drafted += max(target.batches) > 1
    assert drafted > 100  # drafts still run where they fit


def test_a_deadline_shorter_than_one_round_leaves_the_first_line_to_the_time_limit() -> None:
    # A cold prompt spent the deadline: a token alone is not worth showing.
    truth = [1, 2, 9, 3, 4, END]
    decoder, target = _timed_decoder(truth, max_ms=0.001, deadline_ms=0.001)
    out = decoder.run(target.first_logits(), max_tokens=64)
    assert out.timed_out and not out.cut_short
    assert out.tokens == truth[:3]  # the first line, through its new line


def test_without_a_deadline_a_long_line_runs_to_its_end() -> None:
    truth = [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, END]
    decoder, target = _timed_decoder(truth)
    out = decoder.run(target.first_logits(), max_tokens=64)
    assert not out.cut_short and out.tokens == truth[:-1]


def _generate(
    truth: list[int], drafters: list, max_tokens: int, stop: StopRule | None = None
) -> DecodeOutcome:
    decoder, target = _decoder(truth, drafters)
    return decoder.run(target.first_logits(), max_tokens, stop)


@pytest.mark.parametrize("drafting", [False, True])
def test_only_an_end_token_or_the_stop_rule_finishes_a_generation(drafting: bool) -> None:
    """A refactor applies its output only when the model finished it
    (drafted, the end token arrives inside an accepted draft)."""
    _, truth = _copying_truth(80)

    def drafters() -> list:
        return [PromptLookupDrafter([truth])] if drafting else []

    def tenth_token(text: str) -> int | None:
        return len(text) if text.count(" t") >= 10 else None

    ended = _generate(truth, drafters(), 200)
    assert ended.finished and ended.tokens == truth[:-1]
    assert _generate(truth, drafters(), 200, tenth_token).finished
    assert not _generate(truth, drafters(), 40).finished  # the token limit
    looping = _generate([1, 2, 3] * 80 + [END], drafters(), 400)
    assert looping.stop is StopReason.LOOPED and not looping.finished


def test_an_unfinished_refactor_says_why() -> None:
    outcome = DecodeOutcome()
    assert "limit of 300 tokens: raise maxTokens" in unfinished_refactor(outcome, 300, 200)
    assert "ran past 512 tokens for a 256-token selection" in unfinished_refactor(outcome, 512, 256)
    outcome.stop = StopReason.LOOPED
    message = unfinished_refactor(outcome, 512, 256)
    assert "repeating itself" in message and message.endswith("the selection is unchanged")


def _before_token_30(text: str) -> int | None:
    """Cut the output after its 30th token (each token's text starts with " t")."""
    starts = [m.start() for m in re.finditer(" t", text)]
    if len(starts) > 30:
        return starts[30]
    return len(text) if len(starts) == 30 else None


def _copy_30_of_200(
    drafter_type: type[TruthDrafter], pure: bool
) -> tuple[DecodeOutcome, ModelledTarget, Clock]:
    """Decode a 200-token copy that the stop rule ends after 30 tokens, drafting
    with `drafter_type` over the copy; the caller expected all 200."""
    _, truth = _copying_truth(200)
    clock = Clock()
    drafter = drafter_type(truth, prompt_len=4, longest=64, bucket="lookup:aligned")
    decoder, target = _decoder(truth, [drafter], clock=clock)
    stop = PureStop(_before_token_30) if pure else _before_token_30
    out = decoder.run(target.first_logits(), 200, stop, expected_tokens=200)
    assert out.tokens == truth[:30] and out.finished
    return out, target, clock


@pytest.mark.parametrize("pure", [False, True])
def test_a_draft_ends_where_a_pure_stop_rule_would_end_the_output(pure: bool) -> None:
    """A next edit's rewrite ends lines before the window it drafts from: a draft
    past that point is verified for nothing, and reads as missed drafts. Asked
    about the drafted text (a PureStop), the rule cuts the draft there instead."""
    out, target, _ = _copy_30_of_200(TruthDrafter, pure)
    assert out.drafted > 0
    if pure:
        assert out.accepted == out.drafted  # every drafted row counted
        assert sum(target.batches) <= 30 + len(target.batches)
    else:
        assert out.accepted < out.drafted  # the rows past the stop were wasted


class WrongDrafterFollowingTruth(WrongDrafter, TruthDrafter):
    """Drafts wrong tokens, while it says the output follows its source (the truth):
    only the loss guard's loan on that copy's length pays for its drafts."""

    def copy_ahead(self, history: Sequence[int]) -> Sequence[int] | None:
        return self.truth[len(history) - self.prompt_len :]


@pytest.mark.parametrize("pure", [False, True])
def test_the_guard_lends_on_a_copy_only_up_to_where_a_pure_stop_rule_ends_it(pure: bool) -> None:
    """A next edit's rewrite follows the whole window but ends a few lines after
    its change: lent on the window's length, its wrong drafts may cost it far more
    than the guard's share of its own time."""
    _, _, clock = _copy_30_of_200(WrongDrafterFollowingTruth, pure)
    spent_ms = clock.now * 1000
    plain_ms = 30 * _curve(1)
    if pure:  # lent on 30 tokens: a share of 30 plain steps, and at most one step more
        assert spent_ms <= plain_ms * (1 + LossGuard.ALLOWANCE) + _curve(1)
    else:  # lent on 200 tokens: far more than the share of 30
        assert spent_ms > plain_ms * 1.2
