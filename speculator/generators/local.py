"""The local generator: the target (and draft) model's KV sessions, slots and decoder.

The pipeline (speculator/pipeline.py) hands it prepared jobs; it builds the
prompt its KV cache reuses best, evaluates it (restoring a document's saved KV
first, speculator/kv_slots.py), picks the drafters and runs the speculative
decode loop (speculator/decode.py). No llama_cpp import here: the sessions and
models are given (speculator/engine.py loads them).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

import numpy as np

from ..config import EngineConfig
from ..controller import DRAFT_TOKEN_RATIO, Controller, controllers_by_kind
from ..decode import Decoder, refactor_budget, unfinished_refactor
from ..doc_prompts import DocumentPrompts
from ..drafters import Drafter, DraftModelDrafter
from ..grounding import Grounding, similar_siblings
from ..headers import Header
from ..jobs import CompletionJob, Counts, Generated, RewriteJob, StopRule
from ..kv_slots import KvSlots
from ..limits import Limits
from ..lookup import PromptLookupDrafter
from ..loss_guard import allowance_for
from ..next_edit.core import DraftScore
from ..outcome import DecodeOutcome
from ..prompt import FimPrompt, QuickWindow, build_quick_fim
from ..sampling import SamplingParams
from ..threads import ThreadPolicy
from ..token_probs import Shaping
from ..totals import Totals
from ..types import (
    Cancelled,
    CancelToken,
    CompletionRequest,
    RefactorRequest,
    Speculation,
)
from ..validate import check_rewrite_fits
from .progress import reporting, token_ends
from .reproducible import FixedController, reproducible, sync_raw
from .scoring import AnswerScorer

if TYPE_CHECKING:
    from ..models import Model
    from ..session import Logits, Session, SyncResult

log = logging.getLogger(__name__)

# `auto` never lets the draft model catch up on more prompt tokens than this
# inside a request: its KV is kept in step by warm-ups and keystroke syncs.
MAX_DRAFT_CATCH_UP = 16

# Added to an alternative's first token's logit so greedy (or sampling, for any
# temperature the options allow) picks it: logits are tens apart at most.
FORCE_MARGIN = 1000.0


@dataclass
class LocalPrompt:
    """A completion's FIM prompt and its tokens, one list per cacheable segment."""

    fim: FimPrompt
    segments: list[list[int]]
    # A document's saved KV, restored as it was (its first warm-up after a restart).
    resumed: bool = False

    @property
    def text(self) -> str:
        return "".join(special + text for special, text in self.fim.segments)


class LocalGenerator:
    def __init__(
        self,
        target: Model,
        draft: Model | None,
        config: EngineConfig,
        sessions: tuple[Session, Session | None],
        thread_policy: ThreadPolicy,
        totals: Totals,
        fingerprints: Callable[[], tuple[str, str | None]],
    ) -> None:
        self.target = target
        self.draft = draft
        self.config = config
        self.session, self.draft_session = sessions
        self.thread_policy = thread_policy  # one for both models: they share the cores
        self.totals = totals  # cancelled decodes are counted here
        self.controllers = controllers_by_kind(cpu_only=target.n_gpu_layers == 0)
        self.shift_reuse = True  # reuse the FIM suffix's KV after edits (approximate)
        self.prompts = DocumentPrompts()  # window starts and frozen headers, per document
        self._quick_windows: dict[str, QuickWindow] = {}
        self.slots = KvSlots(
            self.session,
            self.draft_session,
            config,
            fingerprints,
            self.prompts.window_starts.get,
            self.prompts.headers.get,
        )
        self.prompts.saved = self.slots.saved_prompt
        self.scorer = AnswerScorer(target, self.session, self.slots)
        self.last_outcome: DecodeOutcome | None = None  # the bench reads it

    def close(self) -> None:
        self.slots.close()
        for session in (self.session, self.draft_session):
            if session is not None:
                session.close()

    def persist(self) -> int:
        return self.slots.persist()

    # -- prompt ------------------------------------------------------------------------

    def prompt_for(self, job: CompletionJob) -> LocalPrompt:
        """The full FIM prompt, its document's slot entered; for a typing request on
        a cold document, a short window instead (the idle warm-up evaluates the full)."""
        request = job.request
        if job.warm and self.prompts.first_request(slot_name(request)):
            # Opened after a restart: the cursor is not known until the editor asks
            # (a didOpen warm-up is at offset 0), and the saved KV is the best guess.
            # With a cursor, the prompt for it is warmed on top of the saved KV.
            self.prompts.recall(slot_name(request))  # saved with the slot again
            saved = self.slots.restore_saved(("completion", slot_name(request)))
            if saved is not None and request.cursor == 0:
                return LocalPrompt(FimPrompt([], "", ""), saved, resumed=True)
        if request.prompt_format == "raw":  # as llama-server reads it: special tokens parsed
            fim = FimPrompt([("", request.text)], request.text, "")
            raw = [self.target.tokenize(request.text, special=True)]
            self.slots.enter(("completion", slot_name(request)), raw)
            return LocalPrompt(fim, raw)
        fim = self._fim_prompt(job)
        segments = self._tokenize_segments(fim)
        self.slots.enter(("completion", slot_name(request)), segments)
        quick = self.config.quick_window_tokens
        if job.quick and 0 < quick < self.session.pending(segments, self.shift_reuse):
            fim = self._quick_fim_prompt(request, job.grounding)
            segments = self._tokenize_segments(fim)
            log.info("quick window: %d prompt tokens", sum(map(len, segments)))
            self.slots.enter(("quick", slot_name(request)), segments)
        return LocalPrompt(fim, segments)

    def _fim_prompt(self, job: CompletionJob, header: Header | None = None) -> FimPrompt:
        """The full prompt: the window start and header kept for its document
        (after a restart, the ones saved with its slot), or `header`."""
        return self.prompts.full(job, slot_name(job.request), header)

    def _quick_fim_prompt(self, request: CompletionRequest, grounding: Grounding) -> FimPrompt:
        key = slot_name(request)  # the window belongs to the slot it is kept in
        fim, self._quick_windows[key] = build_quick_fim(
            request.text,
            request.cursor,
            grounding,
            self.config.quick_window_tokens,
            lambda text: len(self.target.tokenize(text)),
            self._quick_windows.get(key),
        )
        return fim

    def _tokenize_segments(self, fim: FimPrompt) -> list[list[int]]:
        return [
            (self.target.tokenize(special, special=True) if special else [])
            + (self.target.tokenize(text) if text else [])
            for special, text in fim.segments
        ]

    # -- completion --------------------------------------------------------------------

    def run_completion(
        self, job: CompletionJob, prompt: LocalPrompt, cancel: CancelToken | None
    ) -> Generated:
        sync, logits, stop, corpus = self._ready(job, prompt, cancel)
        return self._generate(job, logits, sync, stop, corpus, job.limits, cancel)

    def run_alternatives(
        self, job: CompletionJob, prompt: LocalPrompt, n: int, cancel: CancelToken | None
    ) -> Iterator[Generated]:
        """The greedy completion, then ones that start with the next most likely
        first tokens and continue greedily. They reuse the prompt's KV: between
        alternatives the cache is trimmed back to the prompt, so each costs only
        its own tokens; at most 2(n - 1) first tokens are tried."""
        sync, logits, stop, corpus = self._ready(job, prompt, cancel)
        yield self._generate(job, logits, sync, stop, corpus, job.limits, cancel)
        greedy = int(np.argmax(logits))
        ranked = np.argsort(-logits)[: 2 * n - 1]
        tries = [int(t) for t in ranked if t != greedy and not self.target.is_end_of_generation(t)]
        for token in tries[: 2 * (n - 1)]:
            self.session.trim(sync.prompt_tokens)
            forced = logits.copy()
            forced[token] = forced.max() + FORCE_MARGIN  # the decoder's first pick
            limits = replace(job.limits, started=time.perf_counter())
            yield self._generate(job, forced, sync, stop, corpus, limits, cancel, record=False)

    def _ready(
        self, job: CompletionJob, prompt: LocalPrompt, cancel: CancelToken | None
    ) -> tuple[SyncResult, Logits, StopRule, list[list[int]]]:
        """Sync the prompt into the KV cache; the stop rule and the lookup corpus."""
        request = job.request
        # A raw prompt's KV is exact (moved KV would make its answer the model's only
        # approximately) and its batches the same each time (reproducible.py).
        if reproducible(request):
            sync, logits = sync_raw(self.session, prompt.segments, request.cache_prompt, cancel)
        else:
            sync, logits = self.session.sync(prompt.segments, self.shift_reuse, cancel)
        self._keep_draft_in_step(prompt.segments, request.speculation, cancel)
        stop = job.stop
        if request.on_progress is not None:
            stop = reporting(stop, request.on_progress, job.shown, sync.prompt_tokens)
        return sync, logits, stop, self._completion_corpus(request, job.grounding, prompt.fim)

    def _generate(
        self,
        job: CompletionJob,
        logits: Logits,
        sync: SyncResult,
        stop: StopRule,
        corpus: list[list[int]],
        limits: Limits,
        cancel: CancelToken | None,
        record: bool = True,
    ) -> Generated:
        """Decode from `logits` (the session holds exactly the prompt)."""
        request = job.request
        outcome = self._decode(
            logits,
            request,
            "completion",
            corpus,
            stop,
            cancel,
            max_ms=limits.decode_max_ms(),
            deadline_ms=limits.deadline_left_ms(),
        )
        return self._generated(sync, outcome, request.speculation, limits.started, record)

    def _keep_draft_in_step(
        self, segments: list[list[int]], speculation: Speculation, cancel: CancelToken | None
    ) -> None:
        """Bring the draft model's KV to the new prompt when that costs a few tokens
        (a keystroke); a far-behind draft cache is left to the idle warm-up."""
        draft = self.draft_session
        if draft is None or speculation in ("off", "lookup"):
            return
        if speculation == "auto" and not self._draft_pays(self.controllers["completion"]):
            return  # not used now; the idle warm-up keeps it close enough
        if draft.pending(segments, self.shift_reuse) <= MAX_DRAFT_CATCH_UP:
            draft.sync(segments, shift_reuse=self.shift_reuse, cancel=cancel)

    def _completion_corpus(
        self, request: CompletionRequest, grounding: Grounding, fim: FimPrompt
    ) -> list[list[int]]:
        """Lookup sources beyond the prompt: the enclosing scope and similar siblings."""
        sources = similar_siblings(grounding, request.cursor)
        scope = grounding.enclosing_scope(request.cursor)
        if scope:
            sources.append(request.text[scope[0] : scope[1]])
        in_prompt = fim.prefix + fim.suffix
        return [self.target.tokenize(s) for s in sources if s not in in_prompt][:4]

    # -- warm-up -----------------------------------------------------------------------

    def run_warm(self, job: CompletionJob, prompt: LocalPrompt, cancel: CancelToken | None) -> int:
        """Evaluate the prompt into the KV cache exactly (no generation).

        Called when the editor is idle: besides warming a new document, it
        re-evaluates a suffix that keystrokes only moved, so its KV is exact
        again (moved KV grows staler with every character typed before it).
        A cancelled warm-up keeps what it evaluated so far.

        Where the user moved to other code (or the header is provisional), it
        evaluates the prompt with the index's snippets for here instead, then
        makes them the header: a keystroke never pays for a header change."""
        key = slot_name(job.request)
        header = None if prompt.resumed else self.prompts.header_candidate(job, key)
        if header is not None:
            evaluated = self._warm_header(job, header, cancel)
        else:
            evaluated = self._warm_segments(prompt.segments, cancel)
        if not (cancel and cancel.cancelled):
            self.slots.persist_if_due()
        return evaluated

    def _warm_header(self, job: CompletionJob, header: Header, cancel: CancelToken | None) -> int:
        """The prompt with a new header, evaluated in a slot of its own (the
        document's KV waits in RAM meanwhile; a cancelled warm-up resumes it)."""
        key = slot_name(job.request)
        segments = self._tokenize_segments(self._fim_prompt(job, header))
        self.slots.enter(("header", key), segments)
        evaluated = self._warm_segments(segments, cancel)
        self.prompts.headers.adopt(key, header)
        self.slots.rename_live(("completion", key))
        log.info("new prompt header for %s (%d snippets)", key or "?", len(header.snippets))
        return evaluated

    def _warm_segments(self, segments: list[list[int]], cancel: CancelToken | None) -> int:
        sync, _ = self.session.sync(segments, shift_reuse=False, cancel=cancel)
        if self.draft_session is not None:
            self.draft_session.sync(segments, shift_reuse=False, cancel=cancel)
        return sync.evaluated

    # -- rewrite (refactor) ------------------------------------------------------------

    def run_rewrite(self, job: RewriteJob, cancel: CancelToken | None) -> Generated:
        request = job.request
        tokens = self.target.tokenize(job.prompt, special=True)
        expected_tokens = len(self.target.tokenize(job.expected_text))
        check_rewrite_fits(len(tokens), expected_tokens, self.session.n_ctx)
        # Its own slot: a rewrite never evicts the document's completion KV.
        self.slots.enter(rewrite_slot(job), [tokens])
        sync, logits = self.session.sync([tokens], cancel=cancel)
        budget = refactor_budget(request.max_tokens, expected_tokens)
        # A text the output should resemble, other than the selection in the prompt
        # (a next edit's draft), is where lookup drafts come from.
        corpus = [self.target.tokenize(job.expected)] if job.expected else []
        outcome = self._decode(
            logits,
            request,
            "refactor",
            corpus,
            job.stop,
            cancel,
            max_tokens=budget,
            expected_tokens=expected_tokens,
            renames=job.renames,
            record_probs=job.trace,
        )
        generated = self._generated(sync, outcome, request.speculation, job.limits.started)
        if job.trace:
            generated.token_ends = token_ends(outcome.tokens, self.target.token_bytes)
            generated.token_probs = list(outcome.token_probs)
        if not outcome.finished:
            generated.why_unfinished = unfinished_refactor(outcome, budget, expected_tokens)
        return generated

    def score_answer(
        self,
        job: RewriteJob,
        answer: str,
        span: tuple[int, int],
        cancel: CancelToken | None = None,
    ) -> DraftScore:
        """The target's probability of the tokens of `answer` that write
        answer[span[0]:span[1]], after the prompt of `job` (in the job's KV slot):
        one verify batch. A next edit's draft scored, alone or beside the greedy
        rewrite."""
        slot, started = rewrite_slot(job), job.limits.started
        return self.scorer.score(slot, job.prompt, answer, span, started, cancel)

    def warm_shared_slot(self, kind: str, text: str, cancel: CancelToken | None = None) -> int:
        """Evaluate `text` into the KV slot that `kind`'s shared-slot jobs use."""
        return self.scorer.warm((kind, ""), text, cancel)

    # -- decoding ----------------------------------------------------------------------

    def _decode(
        self,
        logits: Logits,
        request: CompletionRequest | RefactorRequest,
        kind: str,
        corpus: list[list[int]],
        stop: StopRule,
        cancel: CancelToken | None,
        max_tokens: int | None = None,
        expected_tokens: int = 0,
        max_ms: float = 0.0,
        renames: dict[str, str] | None = None,
        deadline_ms: float = 0.0,
        record_probs: bool = False,
    ) -> DecodeOutcome:
        prompt = list(self.session.cells)
        speculation = request.speculation
        fixed = reproducible(request)  # the same shapes for the same request
        controller = FixedController() if fixed else self.controllers[kind]
        drafters = self._drafters(speculation, corpus, prompt, controller, kind, renames)
        if fixed and speculation == "auto":
            drafters = [d for d in drafters if not isinstance(d, DraftModelDrafter)]
        params = SamplingParams(
            request.temperature, request.top_p, request.top_k, request.seed, request.min_p
        )
        decoder = Decoder(
            self.session,
            self.target.token_bytes,
            self.target.is_end_of_generation,
            controller,
            drafters,
            params,
            min_draft=0 if speculation == "auto" else 1,
            max_ms=max_ms,
            allowance=allowance_for(kind),
            deadline_ms=deadline_ms,
            record_probs=record_probs,
            shaping=Shaping.of(request, self.target),
            # Ending at the limit, as llama-server's answers end, a loop runs on too.
            stop_loops=not (isinstance(request, CompletionRequest) and request.ends_at == "limit"),
            guarded=not fixed,
        )
        try:
            outcome = decoder.run(
                logits, max_tokens or request.max_tokens, stop, cancel, expected_tokens
            )
        except Cancelled:
            self.totals.record_cancelled()
            raise
        outcome.prompt = prompt
        outcome.draft_catch_up = sum(
            d.prompt_tokens_evaluated for d in drafters if isinstance(d, DraftModelDrafter)
        )
        self.last_outcome = outcome
        return outcome

    def _drafters(
        self,
        speculation: Speculation,
        corpus: list[list[int]],
        prompt: list[int],
        controller: Controller,
        kind: str,
        renames: dict[str, str] | None = None,
    ) -> list[Drafter]:
        """Cheapest first. `auto` uses the draft model only once it has paid off.
        `renames`: the renames a refactor's instruction asks for."""
        if speculation == "off":
            return []
        lookup = PromptLookupDrafter.for_request(
            kind, corpus, self.target.token_bytes, self.target.tokenize, renames
        )
        catch_up = MAX_DRAFT_CATCH_UP if speculation == "auto" else None
        model = (
            DraftModelDrafter(self.draft_session, prompt, max_catch_up=catch_up)
            if self.draft_session
            else None
        )
        if speculation == "lookup" or (speculation == "auto" and not self._draft_pays(controller)):
            return [lookup]
        if speculation == "draft":
            return [model] if model else []
        return [lookup, model] if model else [lookup]

    def _draft_pays(self, controller: Controller) -> bool:
        """The draft model is worth it when its expected gain beats plain decoding."""
        if self.draft_session is None:
            return False
        extra = DRAFT_TOKEN_RATIO * controller.cost(1)
        return controller.draft_length("draft", 16, extra_cost_ms=extra) > 0

    @staticmethod
    def _generated(
        sync: SyncResult,
        outcome: DecodeOutcome,
        speculation: str,
        started: float,
        record: bool = True,
    ) -> Generated:
        # An alternative after the first reuses the prompt the first paid for.
        counts = Counts(
            prompt_tokens=sync.prompt_tokens,
            reused_prompt_tokens=sync.reused if record else sync.prompt_tokens,
            prompt_ms=sync.ms if record else 0.0,
            decode_ms=outcome.decode_ms,
            generated_tokens=len(outcome.tokens),
            drafted_tokens=outcome.drafted,
            accepted_tokens=outcome.accepted,
        )
        return Generated(
            outcome.text, outcome.stop, counts, speculation, started, dict(outcome.per_drafter),
            record, token_choices=outcome.token_choices,
        )  # fmt: skip


def rewrite_slot(job: RewriteJob) -> tuple[str, str]:
    """The KV slot a rewrite (or a next edit's score) is kept in: its kind's, per
    document unless the kind shares one."""
    return job.slot_kind, "" if job.shared_slot else job.request.path or ""


def slot_name(request: CompletionRequest) -> str:
    """Whose KV slot a completion uses: the one it names, else its document's."""
    return request.slot or request.path or ""
