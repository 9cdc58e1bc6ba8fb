"""`groundspec demo`: a completion and a refactor on a bundled example."""

from __future__ import annotations

import msgspec

from speculator.config import EngineConfig
from speculator.factory import load_engine
from speculator.types import CompletionRequest, RefactorRequest, Speculation

DEMO_SOURCE = """def area_of_square(side: float) -> float:
    return side * side


def area_of_rectangle(width: float, height: float) -> float:
    return width * height


def perimeter_of_square(side: float) -> float:
    return 4 * side


def perimeter_of_rectangle(width: float, height: float) -> float:
"""


def demo(config: EngineConfig) -> int:
    """Complete a function, then refactor it, printing speeds."""

    engine = load_engine(config)
    modes: tuple[Speculation, ...] = ("off", "auto")
    for mode in modes:
        result = engine.complete(
            CompletionRequest(text=DEMO_SOURCE, cursor=len(DEMO_SOURCE), speculation=mode)
        )
        print(
            f"completion ({mode}): {result.text!r}\n  {msgspec.json.encode(result.stats).decode()}"
        )
    for mode in modes:
        refactor = engine.refactor(
            RefactorRequest(
                text=DEMO_SOURCE,
                start=0,
                end=len(DEMO_SOURCE),
                instruction="Rename `side` to `length` everywhere.",
                speculation=mode,
            )
        )
        print(
            f"refactor ({mode}):\n{refactor.new_text}\n  {msgspec.json.encode(refactor.stats).decode()}"
        )
    return 0
