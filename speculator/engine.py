"""The real engine: target + draft models, grounded drafting, exact output."""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import msgspec
import numpy as np

from . import provision
from .config import EngineConfig
from .controller import DRAFT_TOKEN_RATIO, Controller, controllers_by_kind
from .decode import (
    DecodeOutcome,
    Decoder,
    SamplingParams,
    StopRule,
    refactor_budget,
    unfinished_refactor,
)
from .drafters import Drafter, DraftModelDrafter, PromptLookupDrafter
from .grounding import Grounding, similar_siblings
from .instructions import rename_pairs
from .loss_guard import allowance_for
from .models import Model, check_same_vocab, resolve_path
from .postprocess import (
    CompletionStop,
    cut_at_deadline,
    dedented_selection,
    finish_completion,
    finish_refactor,
    is_multiline,
)
from .prompt import (
    PREFIX_BUDGET_CHARS,
    FimPrompt,
    QuickWindow,
    build_fim,
    build_quick_fim,
    build_refactor,
    fence_stop,
)
from .session import Logits, Session, SyncResult
from .slots import (
    DiskSlots,
    RamSlots,
    SessionState,
    Slot,
    SlotKey,
    SlotTimer,
    default_folder,
    model_fingerprint,
)
from .threads import ThreadPolicy
from .tokens import common_prefix
from .totals import Totals
from .types import (
    Cancelled,
    CancelToken,
    CompletionRequest,
    CompletionResult,
    ContextProvider,
    EngineError,
    Progress,
    ProgressCallback,
    RefactorRequest,
    RefactorResult,
    Speculation,
    Stats,
)
from .validate import check_completion, check_refactor, check_rewrite_fits, check_text
from .verify_curve import CurveStore, machine_shapes

log = logging.getLogger(__name__)

# `auto` never lets the draft model catch up on more prompt tokens than this
# inside a request: its KV is kept in step by warm-ups and keystroke syncs.
MAX_DRAFT_CATCH_UP = 16

# An idle warm-up writes the KV slots to disk at most this often.
PERSIST_INTERVAL_S = 30.0

# The decoder's time limit once a typing completion's limit was spent on its
# prompt: stop at the first new line (0 would mean no limit).
SPENT_LIMIT_MS = 0.001


class SpeculativeEngine:
    def __init__(self, target: Model, draft: Model | None, config: EngineConfig):
        threads = config.threads or os.cpu_count() or 2
        self.target = target
        self.draft = draft
        self.config = config
        # One policy for both models: they take turns on the same cores.
        self.thread_policy = ThreadPolicy(threads, adaptive=config.adaptive_threads)
        self.session = Session(
            target.model, config.n_ctx, threads, thread_policy=self.thread_policy
        )
        self.draft_session = (
            Session(draft.model, config.n_ctx, threads, thread_policy=self.thread_policy)
            if draft
            else None
        )
        self.controllers = controllers_by_kind(cpu_only=target.n_gpu_layers == 0)
        self.shift_reuse = True  # reuse the FIM suffix's KV after edits (approximate)
        self._totals = Totals()
        self._provider: ContextProvider | None = None
        self._window_starts: dict[str, int] = {}
        self._quick_windows: dict[str, QuickWindow] = {}
        # The last generation's outcome: the bench reads its trace, its stop
        # reason and the draft model's catch-up from it.
        self.last_outcome: DecodeOutcome | None = None
        self._fingerprint: str | None = None  # the target file's, read once
        self._init_slots(config)

    def _init_slots(self, config: EngineConfig) -> None:
        """Per-document KV slots: RAM LRU, plus files that survive a restart."""
        self.ram_slots = RamSlots(max(0, config.kv_ram_mb) << 20)
        self.disk_slots: DiskSlots | None = None
        if config.kv_disk_mb > 0:
            folder = Path(os.path.expanduser(config.kv_dir)) if config.kv_dir else default_folder()
            try:
                draft = model_fingerprint(self.draft.path) if self.draft else None
                target = self.target_fingerprint()
                self.disk_slots = DiskSlots(folder, target, draft, config.kv_disk_mb << 20)
            except OSError as exc:
                log.warning("KV slots are not kept across restarts: %s", exc)
        self._live_key: SlotKey | None = None  # whose KV the sessions hold now
        self._live_written: tuple[SlotKey, int, int] | None = None
        self._persist_timer = SlotTimer(PERSIST_INTERVAL_S)
        self._writer = ThreadPoolExecutor(1, thread_name_prefix="groundspec-kv-writer")

    @classmethod
    def load(
        cls, config: EngineConfig, progress: ProgressCallback | None = None
    ) -> SpeculativeEngine:
        if progress:
            progress("loading the target model", 10)
        target = Model(resolve_path(config.target_model, provision.TARGET), config.n_gpu_layers)
        draft = None
        if config.use_draft:
            if progress:
                progress("loading the draft model", 60)
            draft = Model(resolve_path(config.draft_model, provision.DRAFT), config.n_gpu_layers)
            check_same_vocab(target, draft)
        engine = cls(target, draft, config)
        if target.n_gpu_layers == 0:
            if progress:
                progress("verify costs of this CPU (timed once per machine)", 80)
            engine.price_by_this_machine()
        if progress:
            progress("models ready", 100)
        return engine

    def target_fingerprint(self) -> str:
        """The target file's fingerprint (slots.model_fingerprint), read once: the
        KV slots and the verify curves both key by it."""
        if self._fingerprint is None:
            self._fingerprint = model_fingerprint(self.target.path)
        return self._fingerprint

    def price_by_this_machine(self) -> None:
        """Price drafts by this CPU's own verify curves (speculator/verify_curve.py),
        measured once and kept beside the models."""
        store = CurveStore(provision.beside_models("verify-curves"))
        try:
            fingerprint = self.target_fingerprint()
        except OSError as exc:
            log.warning("the verify curve is not measured (the tabled one is used): %s", exc)
            return
        shapes = machine_shapes(
            self.session, self.thread_policy, self.target.tokenize, fingerprint, store
        )
        for controller in self.controllers.values():
            controller.price_by_measured(shapes, self.thread_policy.max_threads)

    def close(self) -> None:
        self._writer.shutdown(wait=True)  # a slot being written is finished first
        for session in (self.session, self.draft_session):
            if session is not None:
                session.close()
        self.target.close()
        if self.draft is not None:
            self.draft.close()

    def set_context_provider(self, provider: ContextProvider | None) -> None:
        self._provider = provider

    def totals(self) -> dict[str, object]:
        return self._totals.snapshot()

    # -- completion -------------------------------------------------------------

    def complete(
        self, request: CompletionRequest, cancel: CancelToken | None = None
    ) -> CompletionResult:
        started = time.perf_counter()
        prepared = self._prepare_completion(request, cancel)
        return self._generate_completion(prepared, prepared.logits, started, cancel)

    def alternatives(
        self, request: CompletionRequest, n: int, cancel: CancelToken | None = None
    ) -> list[CompletionResult]:
        """Up to n distinct completions, the greedy one (what `complete` returns) first.

        The others start with the next most likely first tokens and continue
        greedily, with the same stop rules and post-processing. They reuse the
        prompt's KV: between alternatives the cache is trimmed back to the prompt,
        so each costs only its own tokens. Empty texts and texts that differ from an
        earlier one only in whitespace (" x" after "return " is "x" again) are
        dropped; at most 2(n - 1) first tokens are tried."""
        started = time.perf_counter()
        prepared = self._prepare_completion(request, cancel)
        first = self._generate_completion(prepared, prepared.logits, started, cancel)
        results, seen = [first], {_shape(first.text)}
        greedy = int(np.argmax(prepared.logits))
        ranked = np.argsort(-prepared.logits)[: 2 * n - 1]
        tries = [int(t) for t in ranked if t != greedy and not self.target.is_end_of_generation(t)]
        for token in tries[: 2 * (n - 1)]:
            if len(results) >= n:
                break
            self.session.trim(prepared.sync.prompt_tokens)
            forced = prepared.logits.copy()
            forced[token] = forced.max() + FORCE_MARGIN  # the decoder's first pick
            result = self._generate_completion(
                prepared, forced, time.perf_counter(), cancel, record=False
            )
            if result.text.strip() and _shape(result.text) not in seen:
                seen.add(_shape(result.text))
                results.append(result)
        return results

    def _prepare_completion(
        self, request: CompletionRequest, cancel: CancelToken | None
    ) -> _PreparedCompletion:
        """Check the request, sync the prompt into the KV cache, build the stop rule."""
        check_completion(request)
        grounding = _grounding(request)
        fim = self._fim_prompt(request, grounding)
        segments = self._tokenize_segments(fim)
        self._enter_slot(("completion", _slot_name(request)), segments)
        quick = self.config.quick_window_tokens
        if request.quick_window and 0 < quick < self.session.pending(segments, self.shift_reuse):
            # The full prompt is far from ready (an unseen file): answer from a
            # short window now; the idle warm-up evaluates the full one.
            fim = self._quick_fim_prompt(request, grounding)
            segments = self._tokenize_segments(fim)
            log.info("quick window: %d prompt tokens", sum(map(len, segments)))
            self._enter_slot(("quick", _slot_name(request)), segments)
        sync, logits = self.session.sync(segments, shift_reuse=self.shift_reuse, cancel=cancel)
        self._keep_draft_in_step(segments, request.speculation, cancel)
        multiline = (
            request.multiline
            if request.multiline is not None
            else is_multiline(request.text, request.cursor, grounding)
        )
        stop: StopRule = CompletionStop(request.text, request.cursor, multiline)
        if request.on_progress is not None:
            stop = _reporting(stop, request.on_progress, multiline, sync.prompt_tokens)
        corpus = self._completion_corpus(request, grounding, fim)
        return _PreparedCompletion(request, sync, logits, stop, corpus, multiline)

    def _generate_completion(
        self,
        prepared: _PreparedCompletion,
        logits: Logits,
        started: float,
        cancel: CancelToken | None,
        record: bool = True,
    ) -> CompletionResult:
        """Decode from `logits` (the session holds exactly the prompt) and finish the text."""
        request = prepared.request
        outcome = self._decode(
            logits,
            request.speculation,
            request,
            prepared.corpus,
            prepared.stop,
            cancel,
            max_ms=_decode_time_limit(request, started),
            deadline_ms=_remaining_ms(request.deadline_ms, started),
        )
        text = finish_completion(outcome.text, prepared.multiline)
        if outcome.cut_short:
            text = cut_at_deadline(text)
        sync = prepared.sync
        if not record:  # an alternative: the prompt was paid for by the first one
            sync = SyncResult(sync.prompt_tokens, sync.prompt_tokens, 0, 0, 0.0)
        stats = self._stats(sync, outcome, started, request.speculation, record)
        return CompletionResult(text=text, stats=stats, timed_out=outcome.timed_out)

    def warm(self, request: CompletionRequest, cancel: CancelToken | None = None) -> int:
        """Evaluate the request's prompt into the KV cache exactly (no generation).

        Called when the editor is idle: besides warming a new document, it
        re-evaluates a suffix that keystrokes only moved, so its KV is exact
        again (moved KV grows staler with every character typed before it).
        A cancelled warm-up keeps what it evaluated so far."""
        check_text(request.text)
        fim = self._fim_prompt(request, _grounding(request))
        segments = self._tokenize_segments(fim)
        self._enter_slot(("completion", _slot_name(request)), segments)
        sync, _ = self.session.sync(segments, shift_reuse=False, cancel=cancel)
        if self.draft_session is not None:
            self.draft_session.sync(segments, shift_reuse=False, cancel=cancel)
        if not (cancel and cancel.cancelled) and self._persist_timer.due():
            self._persist_soon()
        return sync.evaluated

    # -- per-document KV slots (speculator/slots.py) -------------------------------

    def _enter_slot(self, key: SlotKey, segments: list[list[int]]) -> None:
        """Make the sessions hold `key`'s KV: save the live state under its key,
        and restore `key`'s saved state when it beats what the cache holds."""
        if key == self._live_key:
            return
        self._stash_live()
        self._live_key = key
        slot = self.ram_slots.pop(key)
        if slot is None and self.disk_slots is not None:
            slot = self.disk_slots.load(key)
        prompt = [t for seg in segments for t in seg]
        if slot is None or common_prefix(slot.target.cells, prompt) <= common_prefix(
            self.session.cells, prompt
        ):
            return
        if not self.session.restore_state(
            slot.target.data, slot.target.cells, slot.target.segments
        ):
            log.warning("the saved KV of %s did not restore: evaluating afresh", key[1] or "?")
            return
        if self.draft_session is not None and slot.draft is not None:
            draft = slot.draft
            self.draft_session.restore_state(draft.data, draft.cells, draft.segments)
        log.info(
            "restored the %s KV of %s (%d tokens)", key[0], key[1] or "?", len(slot.target.cells)
        )

    def _live_slot(self) -> Slot | None:
        key = self._live_key
        if key is None or not self.session.cells:
            return None
        draft = self.draft_session
        window = self._window_starts.get(key[1]) if key[0] == "completion" else None
        return Slot(
            key,
            _state(self.session),
            _state(draft) if draft is not None and draft.cells else None,
            window,
        )

    def _stash_live(self) -> None:
        if self.ram_slots.limit_bytes and (slot := self._live_slot()) is not None:
            self.ram_slots.put(slot)

    def persist(self) -> int:
        """Write the KV slots (the live one too) to disk; how many files were written.

        Called at shutdown; a slot already on disk is not rewritten."""
        return self._persist_soon().result()

    def _persist_soon(self) -> Future[int]:
        """Hand the slots to the writer thread: hashing and writing tens of MB
        must not hold the engine thread (the states are copies already)."""
        disk = self.disk_slots
        if disk is None:
            done: Future[int] = Future()
            done.set_result(0)
            return done
        slots = [slot for slot in self.ram_slots.values() if not slot.on_disk]
        live = self._live_slot()
        if live is not None:
            mark = (live.key, len(live.target.cells), hash(tuple(live.target.cells)))
            if mark != self._live_written:
                self._live_written = mark
                slots.append(live)
        return self._writer.submit(lambda: sum(disk.save(slot) for slot in slots))

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

    def _fim_prompt(self, request: CompletionRequest, grounding: Grounding) -> FimPrompt:
        snippets = []
        if self._provider is not None:
            query = request.text[max(0, request.cursor - 1500) : request.cursor]
            snippets = self._provider.related(request.path, query, 3)
        key = _slot_name(request)
        if key not in self._window_starts and self.disk_slots is not None:
            # After a restart: the saved slot's window, so its KV prefix matches.
            start = self.disk_slots.window_start(("completion", key))
            if start is not None:
                self._window_starts[key] = start
        fim = build_fim(
            request.text,
            request.cursor,
            grounding,
            snippets,
            request.path,
            self._reusable_window_start(key, request),
        )
        self._window_starts[key] = request.cursor - len(fim.prefix)
        return fim

    def _reusable_window_start(self, key: str, request: CompletionRequest) -> int | None:
        """Keep last request's window start while it still fits (hysteresis)."""
        start = self._window_starts.get(key)
        if start is None or not 0 <= start <= request.cursor:
            return None
        if request.cursor - start > PREFIX_BUDGET_CHARS * 5 // 4 or (
            start > 0 and request.text[start - 1] != "\n"
        ):
            return None
        return start

    def _quick_fim_prompt(self, request: CompletionRequest, grounding: Grounding) -> FimPrompt:
        key = _slot_name(request)  # the window belongs to the slot it is kept in
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

    # -- refactor ---------------------------------------------------------------

    def refactor(
        self, request: RefactorRequest, cancel: CancelToken | None = None
    ) -> RefactorResult:
        started = time.perf_counter()
        selection = check_refactor(request)
        code, lead = dedented_selection(request.text, request.start, request.end)
        prompt, fence = build_refactor(code, request.instruction, request.language_id)
        tokens = self.target.tokenize(prompt, special=True)
        selection_tokens = len(self.target.tokenize(code))
        check_rewrite_fits(len(tokens), selection_tokens, self.session.n_ctx)
        # Its own slot: a refactor never evicts the document's completion KV.
        self._enter_slot(("refactor", request.path or ""), [tokens])
        sync, logits = self.session.sync([tokens], cancel=cancel)
        stop = fence_stop(fence)
        budget = refactor_budget(request.max_tokens, selection_tokens)
        outcome = self._decode(
            logits,
            request.speculation,
            request,
            [],
            stop,
            cancel,
            max_tokens=budget,
            expected_tokens=selection_tokens,
            renames=rename_pairs(request.instruction, selection),
        )
        if not outcome.finished:
            raise EngineError(unfinished_refactor(outcome, budget, selection_tokens))
        new_text = finish_refactor(outcome.text, selection, lead)
        stats = self._stats(sync, outcome, started, request.speculation)
        return RefactorResult(new_text=new_text, start=request.start, end=request.end, stats=stats)

    # -- shared -----------------------------------------------------------------

    def _decode(
        self,
        logits: Logits,
        speculation: Speculation,
        request: CompletionRequest | RefactorRequest,
        corpus: list[list[int]],
        stop: StopRule,
        cancel: CancelToken | None,
        max_tokens: int | None = None,
        expected_tokens: int = 0,
        max_ms: float = 0.0,
        renames: dict[str, str] | None = None,
        deadline_ms: float = 0.0,
    ) -> DecodeOutcome:
        prompt = list(self.session.cells)
        kind = "refactor" if isinstance(request, RefactorRequest) else "completion"
        controller = self.controllers[kind]
        drafters = self._drafters(speculation, corpus, prompt, controller, kind, renames)
        params = SamplingParams(request.temperature, request.top_p, request.top_k, request.seed)
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
        )
        try:
            outcome = decoder.run(
                logits, max_tokens or request.max_tokens, stop, cancel, expected_tokens
            )
        except Cancelled:
            self._totals.record_cancelled()
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

    def _stats(
        self,
        sync: SyncResult,
        outcome: DecodeOutcome,
        started: float,
        speculation: str,
        record: bool = True,
    ) -> Stats:
        stats = Stats(
            generated_tokens=len(outcome.tokens),
            drafted_tokens=outcome.drafted,
            accepted_tokens=outcome.accepted,
            prompt_tokens=sync.prompt_tokens,
            reused_prompt_tokens=sync.reused,
            prompt_ms=round(sync.ms, 1),
            decode_ms=round(outcome.decode_ms, 1),
            total_ms=round((time.perf_counter() - started) * 1000, 1),
            speculation=speculation,
        )
        if record:
            self._totals.record(stats, outcome.per_drafter)
        log.info("request done: %s", msgspec.json.encode(stats).decode())
        return stats


# Added to an alternative's first token's logit so greedy (or sampling, for any
# temperature the options allow) picks it: logits are tens apart at most.
FORCE_MARGIN = 1000.0


@dataclass
class _PreparedCompletion:
    """A completion's prompt, synced into the KV cache, and how to finish it."""

    request: CompletionRequest
    sync: SyncResult
    logits: Logits  # the target's distribution for the first generated token
    stop: StopRule
    corpus: list[list[int]]
    multiline: bool


def _shape(text: str) -> str:
    """A completion's text up to whitespace: alternatives must differ in more."""
    return " ".join(text.split())


def _slot_name(request: CompletionRequest) -> str:
    """Whose KV slot a completion uses: the one it names, else its document's."""
    return request.slot or request.path or ""


def _reporting(
    stop: StopRule, report: Callable[[Progress], None], multiline: bool, prompt_tokens: int
) -> StopRule:
    """The stop rule, also reporting the text so far as it would be finished now:
    the decode loop calls it after every accepted token, so streaming costs no
    change to the loop."""
    generated = 0

    def rule(text: str) -> int | None:
        nonlocal generated
        generated += 1
        cut = stop(text)
        kept = text if cut is None else text[:cut]
        report(Progress(finish_completion(kept, multiline), generated, prompt_tokens))
        return cut

    return rule


def _state(session: Session) -> SessionState:
    return SessionState(session.save_state(), list(session.cells), list(session.segments))


def _decode_time_limit(request: CompletionRequest, started: float) -> float:
    """The decoder's max_ms: the request's limit, less the time already spent
    when it counts from the start; a spent limit still lets the first line end."""
    limit = request.max_predict_ms
    if limit <= 0 or not request.max_predict_from_start:
        return limit
    return _remaining_ms(limit, started)


def _remaining_ms(limit: float, started: float) -> float:
    """What is left of a limit counted from `started` (0: none; a spent limit
    leaves SPENT_LIMIT_MS, so it still applies)."""
    if limit <= 0:
        return limit
    spent_ms = (time.perf_counter() - started) * 1000
    return max(limit - spent_ms, SPENT_LIMIT_MS)


def _grounding(request: CompletionRequest) -> Grounding:
    tree = request.tree() if request.tree is not None else None
    return Grounding(request.text, request.language_id, tree)
