"""One request's path, written once for every request kind and both generators.

    request ─► prepare ──────────────────────► generate ───────────────► finish ──────► stats
               validate · grounding · context   the Generator: the prompt  post-           Stats, totals,
               · stop rule · limits → a Job     its cache wants, then text processing      the log line
                                                (local or remote)

- prepare (`prepare_completion`, `prepare_refactor`): checks the request and
  turns it into a Job, plain data: the request, its tree-sitter grounding,
  the workspace context (asked for only when a prompt needs it), where the
  output must stop, and its time limits (speculator/limits.py).
- generate: the only part that differs. A Generator builds the prompt its
  cache wants (the local KV cache keeps a window's start while the user types;
  a server's prompt cache wants the prompt split where the typing run began),
  generates, and returns a Generated: the text, one StopReason
  (speculator/outcome.py) and the counts. The local generator
  (speculator/generators/local.py: KV session, slots, decoder) and the remote
  one (speculator/backends/remote.py: llama-server, OpenAI-compatible) are the
  two.
- finish: post-processing (speculator/postprocess.py): a completion ends where
  its line or block ends and loses a word the deadline cut; a rewrite is put
  back at the selection's indentation, or refused when the model did not end it.
- stats: the per-request Stats (their JSON keys are the public contract), the
  running totals and one log line.

`Pipeline` is the Engine protocol (speculator/types.py) over any generator:
SpeculativeEngine and RemoteEngine are Pipelines.

Adding a request kind is one more prepare function, not another copy of the
path. A next edit (speculator/pipeline_next_edit.py) rewrites a window as a refactor rewrites
a selection, the draft (the window with the last edit carried on) as `expected`
for the lookup drafter; or the local generator only scores the draft's change
in one batch (`score_answer`), which is all the shipped model is asked.
"""

from __future__ import annotations

import logging
import re
import time
from collections.abc import Callable, Iterator
from typing import Generic, Protocol, TypeVar

import msgspec

from .grounding import Grounding
from .instructions import rename_pairs
from .jobs import CompletionJob, Generated, RewriteJob, StopRule
from .limits import Limits
from .next_edit.core import NextEditRequest, NextEditResult
from .outcome import StopReason
from .pipeline_next_edit import run_next_edit, warm_next_edit
from .postprocess import (
    CompletionStop,
    StopStrings,
    cut_at_deadline,
    dedented_selection,
    finish_refactor,
    is_multiline,
)
from .prompt import build_refactor, fence_stop
from .token_probs import kept_choices
from .totals import Totals
from .types import (
    CancelToken,
    CompletionRequest,
    CompletionResult,
    ContextProvider,
    EngineError,
    RefactorRequest,
    RefactorResult,
    Snippet,
    Stats,
)
from .validate import check_completion, check_refactor

log = logging.getLogger(__name__)

CONTEXT_SNIPPETS = 3  # workspace snippets asked for per prompt
CONTEXT_QUERY_CHARS = 1500  # the text before the cursor they are matched against


def no_stop(_text: str) -> int | None:
    return None


P = TypeVar("P")


class Generator(Protocol[P]):
    """The part of the path that differs: a prompt for the generator's cache, and text.

    `P` is the generator's own prompt: built once per request by `prompt_for`
    and handed back to the run; its `text` is the prompt as the model sees it."""

    def prompt_for(self, job: CompletionJob) -> P: ...

    def run_completion(
        self, job: CompletionJob, prompt: P, cancel: CancelToken | None
    ) -> Generated: ...

    def run_alternatives(
        self, job: CompletionJob, prompt: P, n: int, cancel: CancelToken | None
    ) -> Iterator[Generated]:
        """The greedy completion first, then other candidates, produced only as
        the caller asks for them."""
        ...

    def run_rewrite(self, job: RewriteJob, cancel: CancelToken | None) -> Generated: ...

    def run_warm(self, job: CompletionJob, prompt: P, cancel: CancelToken | None) -> int:
        """Evaluate (and cache) the prompt; how many tokens were evaluated."""
        ...

    def persist(self) -> int: ...

    def close(self) -> None: ...


# -- prepare ---------------------------------------------------------------------------


def prepare_completion(
    request: CompletionRequest,
    started: float,
    provider: ContextProvider | None,
    *,
    warm: bool = False,
) -> CompletionJob:
    """Check the request; its grounding, context, stop rule and limits. A warm-up
    generates nothing: no stop rule, no limits, never the quick window."""
    check_completion(request)
    tree = request.tree() if request.tree is not None else None
    grounding = Grounding(request.text, request.language_id, tree)
    context = _context(request, provider)
    ready = _context_ready(provider)
    if warm:
        limits = Limits.none(started)
        return CompletionJob(
            request, grounding, False, no_stop, limits, context, False, ready, warm=True
        )
    stop: StopRule
    if request.ends_at == "limit":  # llama-server's end: the limits and stop strings
        multiline, stop = True, StopStrings(request.stop)
    else:
        multiline = (
            request.multiline
            if request.multiline is not None
            else is_multiline(request.text, request.cursor, grounding)
        )
        stop = CompletionStop(request.text, request.cursor, multiline)
    limits = Limits.of(request, started)
    quick = request.quick_window
    return CompletionJob(request, grounding, multiline, stop, limits, context, quick, ready)


def prepare_refactor(request: RefactorRequest, started: float) -> RewriteJob:
    """Check the request; the selection dedented, the chat prompt, the fence stop."""
    selection = check_refactor(request)
    code, lead = dedented_selection(request.text, request.start, request.end)
    prompt, fence = build_refactor(code, request.instruction, request.language_id)
    return RewriteJob(
        request,
        selection,
        code,
        lead,
        prompt,
        fence,
        fence_stop(fence),
        Limits.none(started),
        renames=rename_pairs(request.instruction, selection),
    )


def _context(
    request: CompletionRequest, provider: ContextProvider | None
) -> Callable[[], list[Snippet]]:
    """The workspace snippets related to the text before the cursor, asked of the
    provider at most once, and only if a prompt wants them."""
    found: list[list[Snippet]] = []

    def snippets() -> list[Snippet]:
        if not found:
            query = request.text[max(0, request.cursor - CONTEXT_QUERY_CHARS) : request.cursor]
            picked = ranked_extra(request.extra_context or [], query, CONTEXT_SNIPPETS)
            workspace = provider if request.workspace_context else None
            if len(picked) < CONTEXT_SNIPPETS and workspace is not None:
                picked += workspace.related(request.path, query, CONTEXT_SNIPPETS - len(picked))
            found.append(picked)
        return found[0]

    return snippets


def _context_ready(provider: ContextProvider | None) -> Callable[[], bool]:
    """The provider's own `is_ready` (the workspace index has one), else always ready."""
    is_ready = getattr(provider, "is_ready", None)
    return is_ready if callable(is_ready) else lambda: True


def ranked_extra(snippets: list[Snippet], query: str, limit: int) -> list[Snippet]:
    """The `limit` snippets sharing most words (3+ characters) with `query`, ties
    to the later one, in rising order of shared words."""
    words = set(re.findall(r"\w{3,}", query))
    ranked = sorted(
        enumerate(snippets),
        key=lambda item: (len(words & set(re.findall(r"\w{3,}", item[1].text))), item[0]),
    )
    return [snippet for _, snippet in ranked[-limit:]] if limit > 0 else []


# -- finish ----------------------------------------------------------------------------


def finish_completion_text(job: CompletionJob, generated: Generated) -> str:
    """The text the editor shows: up to the line's or block's end, less a word
    the deadline cut short (ends_at "limit": the text as generated)."""
    text = job.shown(generated.text)
    if generated.stop is StopReason.DEADLINE:
        text = cut_at_deadline(text)
    return text


def finish_rewrite(job: RewriteJob, generated: Generated) -> str:
    """The rewrite at the selection's indentation; refused unless the model ended
    it (half a rewrite in place of the selection would lose the rest)."""
    if generated.stop is not StopReason.END:
        raise EngineError(generated.why_unfinished or f"the rewrite stopped ({generated.stop})")
    return finish_refactor(generated.text, job.selection, job.lead)


# -- stats -----------------------------------------------------------------------------


def stats_of(generated: Generated, now: float | None = None) -> Stats:
    c = generated.counts
    end = time.perf_counter() if now is None else now
    return Stats(
        generated_tokens=c.generated_tokens,
        drafted_tokens=c.drafted_tokens,
        accepted_tokens=c.accepted_tokens,
        prompt_tokens=c.prompt_tokens,
        reused_prompt_tokens=c.reused_prompt_tokens,
        prompt_ms=round(c.prompt_ms, 1),
        decode_ms=round(c.decode_ms, 1),
        total_ms=round((end - generated.started) * 1000, 1),
        speculation=generated.speculation,
    )


def shape(text: str) -> str:
    """A completion's text up to whitespace: alternatives must differ in more."""
    return " ".join(text.split())


class Pipeline(Generic[P]):
    """The Engine protocol over a generator: prepare, generate, finish, stats."""

    def __init__(self, generator: Generator[P], totals: Totals | None = None) -> None:
        self.generator = generator
        self._totals = totals if totals is not None else Totals()
        self._provider: ContextProvider | None = None

    def set_context_provider(self, provider: ContextProvider | None) -> None:
        self._provider = provider

    def totals(self) -> dict[str, object]:
        return self._totals.snapshot()

    def persist(self) -> int:
        return self.generator.persist()

    def close(self) -> None:
        self.generator.close()

    def complete(
        self, request: CompletionRequest, cancel: CancelToken | None = None
    ) -> CompletionResult:
        job = prepare_completion(request, time.perf_counter(), self._provider)
        prompt = self.generator.prompt_for(job)
        return self._completion_result(job, self.generator.run_completion(job, prompt, cancel))

    def alternatives(
        self, request: CompletionRequest, n: int, cancel: CancelToken | None = None
    ) -> list[CompletionResult]:
        """Up to n distinct completions, the greedy one (what `complete` returns)
        first. Empty texts and texts that differ from an earlier one only in
        whitespace are dropped; the generator says how many candidates it tries."""
        job = prepare_completion(request, time.perf_counter(), self._provider)
        prompt = self.generator.prompt_for(job)
        results: list[CompletionResult] = []
        seen: set[str] = set()
        for generated in self.generator.run_alternatives(job, prompt, n, cancel):
            result = self._completion_result(job, generated)
            if not results or (result.text.strip() and shape(result.text) not in seen):
                seen.add(shape(result.text))
                results.append(result)
            if len(results) >= n:
                break
        return results

    def refactor(
        self, request: RefactorRequest, cancel: CancelToken | None = None
    ) -> RefactorResult:
        job = prepare_refactor(request, time.perf_counter())
        new_text, stats = self.rewrite(job, cancel)
        return RefactorResult(new_text=new_text, start=request.start, end=request.end, stats=stats)

    def rewrite(self, job: RewriteJob, cancel: CancelToken | None = None) -> tuple[str, Stats]:
        """Generate, finish and count any RewriteJob (a refactor, a next edit)."""
        generated = self.generator.run_rewrite(job, cancel)
        new_text = finish_rewrite(job, generated)
        return new_text, self.record_stats(generated)

    def next_edit(
        self, request: NextEditRequest, cancel: CancelToken | None = None
    ) -> NextEditResult:
        """The edit that most likely follows the recent ones, or none
        (speculator/pipeline_next_edit.py)."""
        return run_next_edit(self.generator, self.record_stats, request, cancel)

    def warm_next_edit(self, prompt_format: str, cancel: CancelToken | None = None) -> int:
        """Evaluate the next-edit instructions ahead of the first ask."""
        return warm_next_edit(self.generator, prompt_format, cancel)

    def warm(self, request: CompletionRequest, cancel: CancelToken | None = None) -> int:
        """Evaluate the request's prompt into the generator's cache (no generation)."""
        job = prepare_completion(request, time.perf_counter(), self._provider, warm=True)
        return self.generator.run_warm(job, self.generator.prompt_for(job), cancel)

    def _completion_result(self, job: CompletionJob, generated: Generated) -> CompletionResult:
        text = finish_completion_text(job, generated)
        stats = self.record_stats(generated)
        probs = kept_choices(generated.token_choices, text) if job.request.n_probs > 0 else None
        return CompletionResult(
            text=text, stats=stats, timed_out=generated.timed_out, token_probs=probs
        )

    def record_stats(self, generated: Generated) -> Stats:
        """The stats stage: the Stats of one generation, counted in the totals."""
        stats = stats_of(generated)
        if generated.record:
            self._totals.record(stats, generated.per_drafter)
        log.info("request done: %s", msgspec.json.encode(stats).decode())
        return stats
