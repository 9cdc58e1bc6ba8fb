"""`groundspec demo`: one completion and one refactor on a bundled example, each
written plainly (`off`) and with grounded speculation (`auto`), then a summary a
person reads: how long each took, the speedup, and whether the text is the same.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass

import msgspec

from speculator.config import EngineConfig
from speculator.types import CompletionRequest, Engine, RefactorRequest, Speculation, Stats

DEMO_SOURCE = """def area_of_square(side: float) -> float:
    return side * side


def area_of_rectangle(width: float, height: float) -> float:
    return width * height


def perimeter_of_square(side: float) -> float:
    return 4 * side


def perimeter_of_rectangle(width: float, height: float) -> float:
"""
INSTRUCTION = "Rename `side` to `length` everywhere."
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


def summary(outcomes: list[Outcome]) -> str:
    """What it did and what it measured, in a few lines."""
    lines = [
        f"groundspec demo: a completion and a refactor of a {DEMO_SOURCE.count(chr(10))}-line "
        "Python file,",
        "each written plainly (off) and with grounded speculation (auto).",
        "",
    ]
    for outcome in outcomes:
        lines += _describe(outcome) + [""]
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


def _changed_lines(before: str, after: str) -> list[str]:
    """The lines a rewrite removed (-) and added (+)."""
    diff = difflib.ndiff(before.splitlines(), after.splitlines())
    return [f"    {line.rstrip()}" for line in diff if line.startswith(("- ", "+ "))]


def as_json(outcomes: list[Outcome]) -> str:
    """The raw results: per job and mode, the text and the JSON-RPC stats."""
    payload = {
        o.job: {
            "speedup": round(o.speedup, 3),
            "identical": o.identical,
            **{m: {"text": o.texts[m], "stats": msgspec.to_builtins(o.stats[m])} for m in MODES},
        }
        for o in outcomes
    }
    return msgspec.json.encode(payload).decode()


def load_and_run(config: EngineConfig) -> list[Outcome]:
    from speculator.factory import load_engine

    engine = load_engine(config)
    try:
        return run_demo(engine)
    finally:
        getattr(engine, "close", lambda: None)()
