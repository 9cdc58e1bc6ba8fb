"""Traces for the replay simulator (bench/simulate.py): recording them from a
bench run's `off` tokens, loading them, and the verify cost curve they are priced
by (measured on the real session, or read from `python -m bench.verify_cost`'s report).
"""

from __future__ import annotations

import json
import logging
import time
from pathlib import Path

import msgspec

from speculator.controller import DEFAULT_COST_MS
from speculator.decode import refactor_budget
from speculator.types import CompletionRequest, Engine

from .report import Report
from .tasks import Task

log = logging.getLogger(__name__)

DEFAULT_TRACES = Path(__file__).parent / "traces" / "off.json"
TRACE_VERSION = 1


class TaskTrace(msgspec.Struct):
    name: str
    kind: str  # "completion" or "refactor"
    split: str
    language: str
    prompt: list[int]
    tokens: list[int]  # what `off` generated
    max_tokens: int
    corpus: list[list[int]] = []  # lookup sources beyond the prompt (completions)
    expected_tokens: int = 0  # what the engine told the decoder to expect (a refactor's selection)


class Traces(msgspec.Struct):
    version: int
    recorded_at: str
    load: bool  # recorded with a CPU-bound process on one core
    cost_ms: dict[int, float]  # verify cost by batch rows, measured in the same run
    tasks: list[TaskTrace]


# -- recording ------------------------------------------------------------------------


def record_traces(
    engine: Engine, tasks: list[Task], report: Report, path: Path, load: bool
) -> Traces:
    """Write the `off` runs of `report` as traces (with the engine's cost curve)."""
    by_name = {t.name: t for t in tasks}
    traced = []
    for run in report.runs:
        task = by_name.get(run.task)
        if run.mode != "off" or task is None or not run.prompt:
            continue
        selection = _selection_tokens(engine, task)
        traced.append(
            TaskTrace(
                name=task.name,
                kind=task.kind,
                split=task.split,
                language=task.language,
                prompt=run.prompt,
                tokens=run.tokens,
                max_tokens=_max_tokens(task, selection),
                corpus=_completion_corpus(engine, task) if task.kind == "completion" else [],
                expected_tokens=selection,
            )
        )
    session = getattr(engine, "session", None)
    # The last task's prompt is still in the cache: measuring after it costs no prompt eval.
    cost = measure_cost_curve(session, traced[-1].prompt) if session and traced else {}
    traces = Traces(TRACE_VERSION, time.strftime("%Y-%m-%d %H:%M"), load, cost, traced)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(msgspec.json.format(msgspec.json.encode(traces), indent=0))
    log.warning("wrote %d traces to %s", len(traced), path)
    return traces


def _selection_tokens(engine: Engine, task: Task) -> int:
    """A refactor's selection in tokens (0 for a completion), as engine.refactor counts it."""
    target = getattr(engine, "target", None)
    if task.kind != "refactor" or target is None:
        return 0
    return len(target.tokenize(task.text[task.start : task.end]))


def _max_tokens(task: Task, selection_tokens: int) -> int:
    """The decode budget the engine gave the request (bench.run and engine.refactor)."""
    if task.kind == "completion":
        return 64 if task.multiline else 32
    return refactor_budget(768, selection_tokens)


def _completion_corpus(engine: Engine, task: Task) -> list[list[int]]:
    """The lookup sources the engine built for this completion (scope, siblings)."""
    build = getattr(engine, "_completion_corpus", None)
    fim_prompt = getattr(engine, "_fim_prompt", None)
    if build is None or fim_prompt is None:
        return []
    from speculator.grounding import Grounding

    request = CompletionRequest(
        text=task.text, cursor=task.start, path=task.path, language_id=task.language
    )
    grounding = Grounding(task.text, task.language)
    return [list(s) for s in build(request, grounding, fim_prompt(request, grounding))]


def measure_cost_curve(session: object, prompt: list[int], passes: int = 3) -> dict[int, float]:
    """Verify ms by batch rows after `prompt`, on the real session: the best of
    `passes` passes over all sizes, so a burst of contention hits one sample of
    each size rather than every sample of one."""
    sync = getattr(session, "sync")  # noqa: B009 - a real speculator.session.Session
    append = getattr(session, "append")  # noqa: B009
    trim = getattr(session, "trim")  # noqa: B009
    sync([prompt])
    filler = prompt * (max(DEFAULT_COST_MS) // max(1, len(prompt)) + 1)
    curve = {rows: float("inf") for rows in sorted(DEFAULT_COST_MS)}
    for _ in range(passes):
        for rows in curve:
            started = time.perf_counter()
            append(filler[:rows])
            curve[rows] = min(curve[rows], (time.perf_counter() - started) * 1000)
            trim(len(prompt))
    return {rows: round(ms, 1) for rows, ms in curve.items()}


def curve_warnings(curve: dict[int, float]) -> list[str]:
    """Signs of a curve measured through contention: a bigger batch that costs
    clearly less than a smaller one (the real steps are a few percent)."""
    sizes = sorted(curve)
    return [
        f"{big} rows cost {curve[big]} ms, less than {small} rows ({curve[small]} ms)"
        for i, small in enumerate(sizes)
        for big in sizes[i + 1 :]
        if curve[big] < 0.8 * curve[small]
    ]


def load_curve(path: Path) -> dict[int, float]:
    """A verify curve, {rows: ms}, from the markdown report `python -m bench.verify_cost`
    prints (its `| rows | ms | ...` lines) or a JSON object of the same."""
    try:
        text = path.read_text()
    except OSError as exc:
        raise SystemExit(f"cannot read the verify curve {path}: {exc.strerror}") from None
    try:
        if text.lstrip().startswith("{"):
            curve = {int(rows): float(ms) for rows, ms in json.loads(text).items()}
        else:
            cells = (line.strip().strip("|").split("|") for line in text.splitlines())
            curve = {
                int(row[0]): float(row[1].replace(",", ""))
                for row in cells
                if len(row) >= 2 and row[0].strip().isdigit()
            }
    except (ValueError, AttributeError) as exc:
        raise SystemExit(f"{path} is not a verify curve ({exc})") from None
    if 1 not in curve or len(curve) < 2:
        raise SystemExit(
            f"{path} is not a verify curve: it needs a 1-row step and batch sizes "
            "(python -m bench.verify_cost --rows 1,2,...)"
        )
    return curve


def load_traces(path: Path) -> Traces:
    if not path.is_file():
        raise SystemExit(
            f"no traces at {path}: record them with `groundspec bench --record-traces`"
        )
    traces = msgspec.json.decode(path.read_bytes(), type=Traces)
    if traces.version != TRACE_VERSION:
        raise SystemExit(f"{path} is trace version {traces.version}, expected {TRACE_VERSION}")
    return traces
