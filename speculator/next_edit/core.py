"""A next-edit request from start to end: prepare (window, prompt, draft) ->
generate (the engine rewrites the window, drafting from the draft) -> finish
(the rewrite diffed into at most one edit, quiet unless confident).

Engines answer `next_edit(request, cancel)` by calling `next_edit` here with their
own way to generate a rewrite (a RewriteFn): the fake engine's is its draft.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import NamedTuple

from ..edits import Edit
from ..outcome import PureStop
from ..syntax import line_end
from ..types import CancelToken, EngineError, Speculation, Stats
from .across import carried_across
from .call_edits import carried_lines
from .draft import BUILTINS, draft_window, is_imported, renames
from .exports import export_lines
from .imports import IMPORTED_EDITS, ImportSources, import_lines, imported_by, uses_shown
from .lint_fixes import LineRewrites, lint_fix_lines
from .members import as_attributes, renamed_members
from .occurrences import occurrence_lines, removed_names, target_window
from .parses import breaks_syntax
from .prompts import (
    DRAFT_ONLY_FORMATS,
    PROMPT_FORMATS,
    Prompt,
    PromptInput,
    build_prompt,
)
from .proposal import (
    IMPORT_BAR_POWER,
    MIN_CONFIDENCE,
    RENAME_BAR_POWER,
    Candidate,
    TextEdit,
    TokenTrace,
    candidates,
    choose,
    fits,
    rewrites_like,
    scored,
    why_none,
    without_marker,
)
from .reimports import reimport_lines
from .rejoin import RejoinStop, first_stop
from .scope import carried_within
from .undefined import Source, words, writes_undefined
from .window import (
    Hunk,
    Window,
    clipped_to_window,
    edited_lines,
    hunk_of,
    lines_in_window,
    original_window,
    recent_hunks,
    recent_lines,
    scoring_window,
)

log = logging.getLogger(__name__)

# A rewrite may be this many tokens longer than its window's, then it is a runaway.
REWRITE_MARGIN_TOKENS = 64
# Why nothing is proposed when no rule carries the last edit anywhere (the model is
# not asked).
NOTHING_TO_CARRY = "the last edit is carried nowhere nearby"


@dataclass(frozen=True)
class NextEditRequest:
    text: str  # the document now
    cursor: int  # offset into text
    edits: list[Edit]  # this document's recent edits, oldest first (speculator.edits)
    path: str = "untitled"
    language_id: str = "python"
    # Recent edits in other documents, newest first: (path, text before the edit, edit).
    elsewhere: list[tuple[str, str, Edit]] = field(default_factory=list)
    speculation: Speculation = "auto"
    prompt_format: str = "qwen"
    min_confidence: float = MIN_CONFIDENCE
    # The model only scores the draft's change (it writes no rewrite, and is not asked
    # where the draft changes nothing); None: as the format says (DRAFT_ONLY_FORMATS).
    draft_only: bool | None = None
    # Snippets of other files that may import a name (imports.py); None: not looked up.
    import_sources: ImportSources | None = None


@dataclass(frozen=True)
class RewriteJob:
    """What an engine generates: the answer to `prompt`, drafting from `draft`."""

    prompt: str
    draft: str
    stop: Callable[[str], int | None]  # where the answer ends (a StopRule)
    max_tokens: int
    speculation: Speculation


@dataclass(frozen=True)
class Rewrite:
    text: str  # the answer, cut by the stop rule
    trace: TokenTrace | None  # per-token probabilities (None: the engine has none)
    finished: bool  # ended by the model, not by a limit
    stats: Stats


# How an engine generates a rewrite: (job, cancel) -> Rewrite.
RewriteFn = Callable[[RewriteJob, CancelToken | None], Rewrite]


@dataclass(frozen=True)
class NextEditResult:
    edits: list[TextEdit]
    stats: Stats
    confidence: float | None = None  # of the proposed edit
    reason: str = ""  # why nothing was proposed (logs, bench)


@dataclass(frozen=True)
class Plan:
    window: Window
    prompt: Prompt
    job: RewriteJob
    user_lines: tuple[int, int] | None  # window lines of the user's last edit
    rejoin: RejoinStop  # ends the rewrite after its first change that fits (rejoin.py)
    # The draft's first change that could be proposed (unscored), None: it carries the
    # last edit nowhere. Only the first is scored: a later one's tokens come after it
    # (a rename carried on looks surer each time).
    draft_change: Candidate | None
    draft_only: bool  # the model scores the draft's change and writes nothing itself
    source: Source  # the document now, and the names its user wrote lately

    @property
    def text(self) -> str:
        return self.source.text

    @property
    def language_id(self) -> str:
        return self.source.language_id

    @property
    def asks_model(self) -> bool:
        """False: a draft-only model would cost seconds to say nothing."""
        return not self.draft_only or self.draft_change is not None


class DraftScore(NamedTuple):
    """The model's probabilities of the draft's tokens, and what the prompt cost."""

    trace: TokenTrace
    prompt_tokens: int
    reused_prompt_tokens: int
    prompt_ms: float


def prepare(request: NextEditRequest, count_tokens: int | None = None) -> Plan | None:
    """The plan for a request; None when there is no recent edit to follow.
    `count_tokens`: the window's length in tokens, if the caller can count them
    (else a characters/3 estimate): the rewrite's limit follows from it."""
    if request.prompt_format not in PROMPT_FORMATS:
        raise EngineError(
            f"unknown next-edit prompt format {request.prompt_format!r} "
            f"(one of {', '.join(PROMPT_FORMATS)})"
        )
    if not 0 <= request.cursor <= len(request.text):
        raise EngineError(f"cursor {request.cursor} is outside the document")
    newest_elsewhere = _newest_elsewhere(request)
    if not request.edits and not newest_elsewhere:
        return None
    hunks = _elsewhere_hunks(request) + recent_hunks(request.text, request.edits, request.path)
    carried = _carried(request, hunks, newest_elsewhere)
    source = _source(request)
    drafted = _located(request, carried, source)
    cursor = request.cursor
    draft_only = request.draft_only
    if draft_only is None:
        draft_only = request.prompt_format in DRAFT_ONLY_FORMATS
    if draft_only and (found := drafted.change) is not None:
        drafted = _narrowed(source, carried, drafted, found, cursor)
        # A scored import is shown the uses it answers, not all the edit's new code.
        hunks = uses_shown(hunks, imported_by(source.text, found.edit, carried.imports))
    window, user_lines, draft, change = drafted
    given = PromptInput(
        path=request.path,
        language_id=request.language_id,
        text=request.text,
        window=window,
        hunks=hunks,
        original_window=original_window(request.text, request.edits, window),
    )
    prompt = build_prompt(request.prompt_format, given)
    rejoin = RejoinStop(window, user_lines)
    job = RewriteJob(
        prompt=prompt.text,
        draft=draft,
        stop=PureStop(first_stop(prompt.stop, rejoin)),
        max_tokens=(count_tokens or len(window.text) // 3 + 1) + REWRITE_MARGIN_TOKENS,
        speculation=request.speculation,
    )
    return Plan(
        window,
        prompt,
        job,
        user_lines,
        rejoin,
        change,
        draft_only,
        source,
    )


def _newest_elsewhere(request: NextEditRequest) -> bool:
    """Was the user's newest edit made in another document (after any here)?"""
    if not request.elsewhere:
        return False
    return not request.edits or request.elsewhere[0][2].at > request.edits[-1].at


class Carried(NamedTuple):
    """What the draft carries: the last edit's lines here (None: it was elsewhere),
    its hunk, the other places it applies (lines) and the lines written anew."""

    focus: tuple[int, int] | None
    hunk: Hunk | None
    places: list[int]
    rewrites: LineRewrites  # a line's new text, None: deleted
    scope: tuple[int, int] | None = None  # lines of the function a renamed local lives in
    members: frozenset[str] = frozenset()  # members renamed: carried to attributes only
    imports: frozenset[str] = frozenset()  # the lines the import rule wrote


class Drafted(NamedTuple):
    window: Window
    user_lines: tuple[int, int] | None  # the last edit's lines in the window
    draft: str
    change: Candidate | None  # the draft's first change that could be proposed


def _carried(request: NextEditRequest, hunks: list[Hunk], newest_elsewhere: bool) -> Carried:
    """A rename made in another file since the last edit here is followed first;
    else (it renamed nothing used here) this file's own last edit, if there is one."""
    newest = request.elsewhere[0] if newest_elsewhere else None
    across = carried_across(request.text, request.path, request.language_id, newest)
    if across or not request.edits:
        return Carried(None, None, [], across)
    return _carried_here(request, hunks)


def _located(request: NextEditRequest, carried: Carried, source: Source) -> Drafted:
    """The draft of the window around the cursor, or around the places the edit is
    carried to (occurrences.target_window)."""
    text, cursor, focus = request.text, request.cursor, carried.focus
    places = sorted({*carried.places, *carried.rewrites})
    drafted = _drafted(source, carried, target_window(text, cursor, focus, places))
    # The places in the window changed nothing (`_click` also used otherwise there):
    # go on to those past it, then to a line rewritten further off (an import).
    for lines in (places, sorted(carried.rewrites)):
        window = drafted.window
        rest = [i for i in lines if not window.first_line <= i < window.end_line]
        if drafted.change is None and rest:
            drafted = _drafted(source, carried, target_window(text, cursor, focus, rest))
    return drafted


def _carried_here(request: NextEditRequest, hunks: list[Hunk]) -> Carried:
    """The last edit here, carried on: renames and substitutions, the call rules,
    (when they draft nothing) the import of a name a recent edit used, the export
    of a name it imported and the next fix of a lint rule it applied."""
    last = request.edits[-1]
    focus = edited_lines(request.text, last)
    own = [h for h in hunks if h.path == request.path]
    hunk = own[-1] if own else None
    before = last.undo(request.text)
    names = removed_names(before, request.text, last, request.language_id)
    renamed = renames(hunk)
    members = renamed_members(request.text, request.language_id, last, renamed)
    names = as_attributes(names, members)
    scope = carried_within(request.text, request.language_id, last, renamed, focus, members)
    places = occurrence_lines(request.text, request.language_id, names, hunk, focus, scope)
    rewrites = carried_lines(request.text, hunk, focus, request.language_id, before)
    imported: dict[int, str] = {}
    if not rewrites:  # an import waits: it is drafted while any recent edit needs it
        recent = recent_lines(request.text, request.edits, IMPORTED_EDITS)
        language, sources = request.language_id, request.import_sources
        imported = import_lines(request.text, request.path, recent, language, sources)
        rewrites.update(imported)
    rewrites.update(export_lines(before, request.text, request.path, request.language_id))
    rewrites.update(reimport_lines(before, request.text, last, request.path, request.language_id))
    # The user's own change carried on comes first; a lint rule they applied, after.
    # An import renamed with its name, unless that name is a builtin (`List` ->
    # `list`) or imported already: then the old import is removed.
    kept = [a for a, b in renamed if b not in BUILTINS and not is_imported(request.text, b)]
    fixes = lint_fix_lines(before, request.text, last, request.path, request.language_id, kept)
    imports = frozenset(line for lines in imported.values() for line in lines.split("\n"))
    return Carried(focus, hunk, places, {**fixes, **rewrites}, scope, members, imports)


def _drafted(source: Source, carried: Carried, window: Window) -> Drafted:
    """The draft of `window` and its first change."""
    user_lines = lines_in_window(window, carried.focus)
    rewrites = _in_window(carried.rewrites, window)
    scope = clipped_to_window(window, carried.scope)
    draft = draft_window(window.text, carried.hunk, user_lines, rewrites, scope, carried.members)
    draft = _without_breaks(source, window, draft)
    found = [c for c in candidates(window, draft, None) if fits(window, c, user_lines)]
    before = carried.hunk.before if carried.hunk is not None else []
    twins = [c for c in found if rewrites_like(window, before, c)]
    change = next(iter(twins or found), None)
    if change is not None and writes_undefined(source, change.edit):
        # The draft misread the edit: its later changes are as unsure, so none
        # is proposed in this one's stead.
        return Drafted(window, user_lines, draft, None)
    if change is not None and _renamed_only(window, carried, user_lines, scope, change):
        change = replace(change, bar_power=RENAME_BAR_POWER)
    elif change is not None and imported_by(source.text, change.edit, carried.imports):
        change = replace(change, bar_power=IMPORT_BAR_POWER)
    return Drafted(window, user_lines, draft, change)


def _renamed_only(
    window: Window,
    carried: Carried,
    user_lines: tuple[int, int] | None,
    scope: tuple[int, int] | None,
    change: Candidate,
) -> bool:
    """Is `change` a rename carried on, which no other rule of the draft makes?"""
    rewrites = _in_window(carried.rewrites, window)
    plain = draft_window(
        window.text, carried.hunk, user_lines, rewrites, scope, carried.members, renames=False
    )
    return change.edit not in {c.edit for c in candidates(window, plain, None)}


def _without_breaks(source: Source, window: Window, draft: str) -> str:
    """The draft with its changes that break the syntax undone (parses.py): they are
    never proposed, and the model must not read them before the one it scores."""
    text = source.text
    for cand in reversed(candidates(window, draft, None)):
        if not _parses(text, source.language_id, cand):
            start, end = cand.span
            draft = draft[:start] + text[cand.edit.start : cand.edit.end] + draft[end:]
    return draft


def _parses(text: str, language_id: str, cand: Candidate) -> bool:
    """Does the code parse after the change where it parsed before (parses.py)?"""
    if breaks_syntax(language_id, text, cand.edit):
        log.info("next edit: a change that breaks the syntax is not proposed")
        return False
    return True


def _sound(plan: Plan, cand: Candidate) -> bool:
    """Does the code still parse, and define the names the change writes
    (undefined.py), after the change?"""
    return _parses(plan.text, plan.language_id, cand) and not writes_undefined(
        plan.source, cand.edit
    )


def _source(request: NextEditRequest) -> Source:
    """The document, and the names its user wrote lately (undefined.py)."""
    new = [e.new for e in request.edits] + [e.new for _, _, e in request.elsewhere]
    return Source(request.text, request.path, request.language_id, words(new))


def skipped(request: NextEditRequest) -> NextEditResult:
    """The answer when the model is not asked (Plan.asks_model)."""
    log.info("next edit: nothing proposed (%s)", NOTHING_TO_CARRY)
    return NextEditResult([], Stats(speculation=request.speculation), reason=NOTHING_TO_CARRY)


def finish(
    plan: Plan, rewrite: Rewrite, min_confidence: float, draft: TokenTrace | None = None
) -> NextEditResult:
    """The rewrite's changes (and the draft's, where the model scored it: `draft`)
    as candidates; the most confident one that passes proposal.choose."""
    if not rewrite.finished:
        return NextEditResult([], rewrite.stats, reason="the rewrite did not finish")
    # An answer the rejoin rule cut: the window's unwritten rest is unchanged.
    rest = plan.rejoin.rest(rewrite.text)
    answer, trace = without_marker(rewrite.text, rewrite.trace)
    rewritten = plan.prompt.rewritten(answer, plan.window) if rest is None else answer + rest
    # The model's changes must be sound; the draft's were checked as it was drafted.
    written = [_as_drafted(plan, c) for c in candidates(plan.window, rewritten, trace)]
    found = [c for c in written if _sound(plan, c)]
    if draft is not None:
        found += _draft_candidate(plan, draft)
    return _chosen(plan, found, rewrite.stats, min_confidence)


def _as_drafted(plan: Plan, cand: Candidate) -> Candidate:
    """A change of the model's that is the draft's own takes the draft's bar (a
    rename carried on is one whether the model scored it or wrote it)."""
    change = plan.draft_change
    if change is None or cand.edit != change.edit:
        return cand
    return replace(cand, bar_power=change.bar_power)


def finish_scored(plan: Plan, score: DraftScore, request: NextEditRequest) -> NextEditResult:
    """A draft-only plan's answer: the draft's change, if the model's probability
    of it clears the bar."""
    ms = score.prompt_ms
    stats = Stats(
        prompt_tokens=score.prompt_tokens,
        reused_prompt_tokens=score.reused_prompt_tokens,
        prompt_ms=ms,
        total_ms=ms,
        speculation=request.speculation,
    )
    return _chosen(plan, _draft_candidate(plan, score.trace), stats, request.min_confidence)


def _draft_candidate(plan: Plan, draft: TokenTrace) -> list[Candidate]:
    """The draft's change (Plan.draft_change) scored by `draft`, if all its tokens were."""
    change = plan.draft_change
    if change is None or not draft.ends or draft.ends[-1] < change.span[1]:
        return []
    return [scored(change, draft)]


def _chosen(
    plan: Plan, found: list[Candidate], stats: Stats, min_confidence: float
) -> NextEditResult:
    chosen: Candidate | None = choose(plan.window, found, plan.user_lines, min_confidence)
    if chosen is None:
        reason = why_none(plan.window, found, plan.user_lines, min_confidence)
        log.info("next edit: nothing proposed (%s)", reason)
        return NextEditResult([], stats, reason=reason)
    # bench/next_edit.py --sweep reads this line: the confidence, and its bar's power.
    log.info(
        "next edit proposed, confidence %.5f, bar power %g", chosen.confidence, chosen.bar_power
    )
    return NextEditResult([chosen.edit], stats, confidence=chosen.confidence)


def next_edit(
    rewrite: RewriteFn,
    request: NextEditRequest,
    cancel: CancelToken | None = None,
    count_tokens: int | None = None,
) -> NextEditResult:
    """The whole request, generated by `rewrite` (prepare's `count_tokens`)."""
    plan = prepare(request, count_tokens)
    if plan is None:
        return NextEditResult([], Stats(speculation=request.speculation), reason="no recent edit")
    if not plan.asks_model:
        return skipped(request)
    return finish(plan, rewrite(plan.job, cancel), request.min_confidence)


def draft_change_end(plan: Plan) -> int | None:
    """Where the lines of the draft's first change that could be proposed end (characters
    into the draft), or None when it changes nothing: how much must be scored."""
    if plan.draft_change is None:
        return None
    draft, end = plan.job.draft, plan.draft_change.span[1]
    return min(line_end(draft, max(end - 1, 0)) + 1, len(draft))


def _narrowed(
    source: Source, carried: Carried, drafted: Drafted, change: Candidate, cursor: int
) -> Drafted:
    """The draft of the lines a draft-only model scores (scoring_window), when its
    first change is the one the whole window found. Cut out of its window, a draft
    can read otherwise: lines moved up (`import os` pasted below `import hashlib`,
    the old one deleted) cut above the pasted copy read as lines to insert, a
    duplicate import. Then the whole window is scored."""
    first = drafted.window.first_line + change.first_line
    end = drafted.window.first_line + max(change.end_line, change.first_line + 1)
    scoring = scoring_window(source.text, (first, end), cursor)
    narrowed = _drafted(source, carried, scoring)
    same = narrowed.change is not None and narrowed.change.edit == change.edit
    return narrowed if same else drafted


def _in_window(rewrites: LineRewrites, window: Window) -> LineRewrites:
    """Document lines rewritten, as the window's lines."""
    first, end = window.first_line, window.end_line
    return {i - first: line for i, line in rewrites.items() if first <= i < end}


def _elsewhere_hunks(request: NextEditRequest) -> list[Hunk]:
    """The newest edits in other files, oldest of them first."""
    hunks = [hunk_of(before, edit, path) for path, before, edit in request.elsewhere[:2]]
    return [h for h in reversed(hunks) if h.before != h.after]
