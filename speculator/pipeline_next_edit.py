"""A next edit's way through the pipeline (speculator/pipeline.py).

prepare: the window, prompt and draft (speculator/next_edit/) as a RewriteJob of
the window that drafts from the draft. generate: a generator that can score
(the local one) scores the draft's change in one verify batch, which is all a
draft-only format asks; otherwise the window is rewritten and both are scored.
finish: the change kept if it clears the confidence bar.

Every document's asks share one KV slot (`NEXT_EDIT_SLOT`): their prompts start
with the same instructions, which `warm_next_edit` evaluates ahead of the first.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import Any

from .jobs import Generated, RewriteJob
from .limits import Limits
from .next_edit import core
from .next_edit.core import NextEditRequest, NextEditResult
from .next_edit.prompts import instructions
from .next_edit.proposal import TokenTrace
from .outcome import StopReason
from .types import CancelToken, RefactorRequest, Stats

log = logging.getLogger(__name__)

NEXT_EDIT_SLOT = "next-edit"


def prepare_next_edit(
    request: NextEditRequest, started: float
) -> tuple[core.Plan, RewriteJob] | None:
    """The window, prompt and draft of a next edit, as a rewrite of the window
    that drafts from the draft; None: no recent edit."""
    plan = core.prepare(request)
    if plan is None:
        return None
    window, prompt = plan.window, plan.prompt
    rewrite = RefactorRequest(
        text=request.text,
        start=window.start,
        end=window.end,
        instruction="next edit",
        language_id=request.language_id,
        path=request.path,
        max_tokens=plan.job.max_tokens,
        speculation=request.speculation,
    )
    job = RewriteJob(
        rewrite,
        window.text,
        window.text,
        "",
        prompt.text,
        prompt.stop_text,
        plan.job.stop,  # the prompt's end, or the rejoin rule's (next_edit/rejoin.py)
        Limits.none(started),
        expected=plan.job.draft,
        slot_kind=NEXT_EDIT_SLOT,
        shared_slot=True,  # the instructions, reused by the first ask in a file
        trace=True,
    )
    return plan, job


def run_next_edit(
    generator: Any,
    record_stats: Callable[[Generated], Stats],
    request: NextEditRequest,
    cancel: CancelToken | None,
) -> NextEditResult:
    """The edit that most likely follows the recent ones, or none."""
    prepared = prepare_next_edit(request, time.perf_counter())
    if prepared is None:
        return NextEditResult([], Stats(speculation=request.speculation), reason="no edit")
    plan, job = prepared
    if not plan.asks_model:
        return core.skipped(request)
    if plan.draft_only and hasattr(generator, "score_answer"):
        # One verify batch of the draft after the prompt; nothing decoded.
        score = _score_draft(generator, plan, job, cancel)
        if score is not None:
            return core.finish_scored(plan, score, request)
    generated = generator.run_rewrite(job, cancel)
    stats = record_stats(generated)
    trace = (
        TokenTrace(generated.token_ends, generated.token_probs) if generated.token_probs else None
    )
    finished = generated.stop is StopReason.END
    rewrite = core.Rewrite(generated.text, trace, finished, stats)
    scored = _score_draft(generator, plan, job, cancel) if finished else None
    draft = scored.trace if scored is not None else None
    return core.finish(plan, rewrite, request.min_confidence, draft)


def _score_draft(
    generator: Any, plan: core.Plan, job: RewriteJob, cancel: CancelToken | None
) -> core.DraftScore | None:
    """The model's probabilities of the draft's tokens through its first change
    that could be proposed, if the generator can score (the local one)."""
    score = getattr(generator, "score_answer", None)
    upto = core.draft_change_end(plan)
    if score is None or upto is None or plan.draft_change is None:
        return None
    since = plan.draft_change.span[0]
    scored: core.DraftScore = score(job, plan.job.draft, (since, upto), cancel)
    return scored if scored.trace.probs else None


def warm_next_edit(generator: Any, prompt_format: str, cancel: CancelToken | None) -> int:
    """Evaluate the instructions every `prompt_format` prompt starts with into the
    next-edit slot, if the generator keeps one (the local one); tokens evaluated."""
    warm = getattr(generator, "warm_shared_slot", None)
    if warm is None:
        return 0
    evaluated: int = warm(NEXT_EDIT_SLOT, instructions(prompt_format), cancel)
    return evaluated
