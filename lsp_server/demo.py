"""`groundspec demo`: one completion and one refactor on a bundled example, each
written plainly (`off`) and with grounded speculation (`auto`), and the next edit
proposed after a rename, then a summary a person reads: how long each took, the
speedup, whether the text is the same, and what the next edit would change.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass

import msgspec

from speculator.config import EngineConfig
from speculator.edits import Edit
from speculator.next_edit.core import NextEditRequest, NextEditResult
from speculator.next_edit.proposal import MIN_CONFIDENCE, applied
from speculator.types import (
    CancelToken,
    CompletionRequest,
    Engine,
    EngineError,
    RefactorRequest,
    Speculation,
    Stats,
)

DEMO_SOURCE = """def area_of_square(side: float) -> float:
    return side * side


def area_of_rectangle(width: float, height: float) -> float:
    return width * height


def perimeter_of_square(side: float) -> float:
    return 4 * side


def perimeter_of_rectangle(width: float, height: float) -> float:
"""
INSTRUCTION = "Rename `side` to `length` everywhere."
# The next edit's scene: the user has renamed the first function's parameter.
RENAMED_AT = DEMO_SOURCE.index("side")
USER_EDIT = Edit(start=RENAMED_AT, old="side", new="length")
MODES: tuple[Speculation, Speculation] = ("off", "auto")
PREVIEW_LINES = 8


@dataclass
class Outcome:
    """One request written both ways."""

    job: str
    texts: dict[str, str]
    stats: dict[str, Stats]

    @property
    def identical(self) -> bool:
        return len(set(self.texts.values())) == 1

    @property
    def speedup(self) -> float:
        """Generation speed (tokens/s) of `auto` over `off`, as the benchmarks count it:
        the prompt is evaluated once and reused, so it is left out of both."""
        return tokens_per_second(self.stats["auto"]) / max(
            tokens_per_second(self.stats["off"]), 1e-9
        )


@dataclass
class NextEditShown:
    """The next edit proposed after USER_EDIT, or why there is none."""

    before: str  # the document with the user's edit
    after: str  # and with the proposal applied
    result: NextEditResult | None
    error: str = ""  # an engine without next edits says so here


def tokens_per_second(stats: Stats) -> float:
    return stats.generated_tokens / max(stats.decode_ms / 1000, 1e-9)


def run_demo(engine: Engine) -> list[Outcome]:
    """The completion, then the refactor, each plainly and then with speculation."""
    completion = Outcome("completion", {}, {})
    for mode in MODES:
        result = engine.complete(
            CompletionRequest(text=DEMO_SOURCE, cursor=len(DEMO_SOURCE), speculation=mode)
        )
        completion.texts[mode], completion.stats[mode] = result.text, result.stats
    refactor = Outcome("refactor", {}, {})
    for mode in MODES:
        rewritten = engine.refactor(
            RefactorRequest(
                text=DEMO_SOURCE,
                start=0,
                end=len(DEMO_SOURCE),
                instruction=INSTRUCTION,
                speculation=mode,
            )
        )
        refactor.texts[mode], refactor.stats[mode] = rewritten.new_text, rewritten.stats
    return [completion, refactor]


def run_next_edit(engine: Engine) -> NextEditShown:
    """The edit proposed after the user renamed the first function's parameter."""
    before = USER_EDIT.apply(DEMO_SOURCE)
    request = NextEditRequest(
        text=before, cursor=USER_EDIT.new_end, edits=[USER_EDIT], path="shapes.py"
    )
    from .next_edit import run_on_engine

    try:
        result = run_on_engine(engine, request, CancelToken())
    except EngineError as err:
        return NextEditShown(before, before, None, str(err))
    return NextEditShown(before, applied(before, result.edits), result)


def summary(outcomes: list[Outcome], next_edit: NextEditShown | None = None) -> str:
    """What it did and what it measured, in a few lines."""
    lines = [
        f"groundspec demo: a completion and a refactor of a {DEMO_SOURCE.count(chr(10))}-line "
        "Python file, each written",
        "plainly (off) and with grounded speculation (auto), and the next edit after a rename.",
        "",
    ]
    for outcome in outcomes:
        lines += _describe(outcome) + [""]
    if next_edit is not None:
        lines += _describe_next_edit(next_edit) + [""]
    lines += [
        "Speed is generated tokens per second (the prompt is evaluated once and reused).",
        "Same text: auto wrote exactly what off wrote, token for token.",
    ]
    return "\n".join(lines)


def _describe(outcome: Outcome) -> list[str]:
    off, auto = outcome.stats["off"], outcome.stats["auto"]
    if outcome.job == "completion":
        head = "Completion at the end of the file:"
    else:
        head = f"Refactor of the whole file: {INSTRUCTION}"
    if outcome.job == "completion":
        shown = [f"    | {line}" for line in outcome.texts["auto"].rstrip("\n").splitlines()]
    else:
        shown = _changed_lines(DEMO_SOURCE, outcome.texts["auto"])
    preview = shown[:PREVIEW_LINES]
    if len(shown) > PREVIEW_LINES:
        preview.append(f"    ... ({len(shown) - PREVIEW_LINES} more lines)")
    same = "same text" if outcome.identical else "the text differs (a near-tie: docs/exactness.md)"
    return [
        head,
        *preview,
        f"  off   {off.decode_ms / 1000:6.2f} s  {off.generated_tokens:4d} tokens  "
        f"{tokens_per_second(off):6.1f} tokens/s",
        f"  auto  {auto.decode_ms / 1000:6.2f} s  {auto.generated_tokens:4d} tokens  "
        f"{tokens_per_second(auto):6.1f} tokens/s  "
        f"({auto.accepted_tokens} of {auto.drafted_tokens} drafted tokens accepted)",
        f"  {outcome.speedup:.2f}x faster, {same}",
    ]


def _describe_next_edit(shown: NextEditShown) -> list[str]:
    head = "Next edit, after you rename `side` to `length` in area_of_square's parameters:"
    result = shown.result
    if result is None:
        return [head, f"  none: {shown.error}"]
    if not result.edits:
        return [head, f"  nothing proposed ({result.reason})"]
    seconds = result.stats.total_ms / 1000
    confidence = result.confidence if result.confidence is not None else 1.0
    return [
        head,
        *_changed_lines(shown.before, shown.after),
        f"  proposed in {seconds:.2f} s, the model's confidence {confidence:.2f} "
        f"(it proposes at {MIN_CONFIDENCE} or more)",
    ]


def _changed_lines(before: str, after: str) -> list[str]:
    """The lines a rewrite removed (-) and added (+)."""
    diff = difflib.ndiff(before.splitlines(), after.splitlines())
    return [f"    {line.rstrip()}" for line in diff if line.startswith(("- ", "+ "))]


def as_json(outcomes: list[Outcome], next_edit: NextEditShown | None = None) -> str:
    """The raw results: per job and mode, the text and the JSON-RPC stats; the next
    edit as groundspec/nextEdit answers it, with its confidence."""
    payload: dict[str, object] = {o.job: _outcome_json(o) for o in outcomes}
    if next_edit is not None:
        payload["nextEdit"] = _next_edit_json(next_edit)
    return msgspec.json.encode(payload).decode()


def _outcome_json(outcome: Outcome) -> dict[str, object]:
    payload: dict[str, object] = {
        "speedup": round(outcome.speedup, 3),
        "identical": outcome.identical,
    }
    for mode in MODES:
        stats = msgspec.to_builtins(outcome.stats[mode])
        payload[mode] = {"text": outcome.texts[mode], "stats": stats}
    return payload


def _next_edit_json(shown: NextEditShown) -> dict[str, object]:
    from .convert import LineIndex
    from .next_edit import result_dict

    if shown.result is None:
        return {"error": shown.error}
    return {
        **result_dict(LineIndex(shown.before), shown.result),
        "confidence": shown.result.confidence,
        "text": shown.after,
    }


def load_and_run(config: EngineConfig) -> tuple[list[Outcome], NextEditShown]:
    from speculator.factory import load_engine

    engine = load_engine(config)
    try:
        return run_demo(engine), run_next_edit(engine)
    finally:
        getattr(engine, "close", lambda: None)()
