"""The benchmark's report logic, on hand-made runs (no model)."""

import numpy as np

from bench.report import Report, Run, explain_divergences, markdown, summarize
from speculator.config import EngineConfig
from speculator.types import Stats


class _Session:
    """Logits where token 5 leads token 6 by 0.004: a near-tie."""

    def __init__(self) -> None:
        self.evaluated: list[list[int]] = []

    def sync(self, segments: list[list[int]]) -> tuple[object, np.ndarray]:
        self.evaluated.append([t for s in segments for t in s])
        logits = np.zeros(10, dtype=np.float32)
        logits[5], logits[6] = 12.004, 12.0
        return None, logits


class _Engine:
    def __init__(self) -> None:
        self.session = _Session()


def _run(mode: str, text: str, tokens: list[int], ms: float) -> Run:
    stats = Stats(generated_tokens=len(tokens), decode_ms=ms, speculation=mode)
    return Run("a.py:f", "refactor", mode, text, stats, prompt=[1, 2], tokens=tokens)


def test_a_divergence_is_explained_by_the_logits_at_the_first_differing_token() -> None:
    report = Report(
        runs=[
            _run("off", "x = 1", [3, 4, 5, 7], 400.0),
            _run("auto", "x = 2", [3, 4, 6, 7], 200.0),
            _run("lookup", "x = 1", [3, 4, 5, 7], 100.0),
        ]
    )
    engine = _Engine()
    explain_divergences(engine, report)  # type: ignore[arg-type]
    assert engine.session.evaluated == [[1, 2, 3, 4]]  # prompt + the agreed tokens
    note = report.margins[("a.py:f", "auto")]
    assert "token 2" in note and "12.004" in note and "a gap of 0.004" in note
    assert ("a.py:f", "lookup") not in report.margins  # identical text: nothing to explain
    summary = summarize(report)
    assert summary["refactor"]["auto"]["median_speedup"] == 2.0
    assert summary["refactor"]["auto"]["identical"] == "0/1"
    text = markdown(report, summary, EngineConfig())
    assert "a gap of 0.004" in text
