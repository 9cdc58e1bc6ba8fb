"""The benchmark's report logic, on hand-made runs (no model)."""

import llama_cpp
import numpy as np

from bench.report import (
    PeerRow,
    Report,
    Run,
    explain_divergences,
    gpu_layers_note,
    markdown,
    summarize,
)
from speculator.config import EngineConfig
from speculator.models import ALL_LAYERS
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


def _run(
    mode: str, text: str, tokens: list[int], ms: float, task: str = "a.py:f", split: str = "dev"
) -> Run:
    stats = Stats(generated_tokens=len(tokens), decode_ms=ms, speculation=mode)
    return Run(task, "refactor", mode, text, stats, prompt=[1, 2], tokens=tokens, split=split)


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
    assert summary["refactor"]["dev"]["auto"]["median_speedup"] == 2.0
    assert summary["refactor"]["dev"]["auto"]["identical"] == "0/1"
    text = markdown(report, summary, EngineConfig())
    assert "a gap of 0.004" in text


def test_splits_are_summarized_apart_each_with_its_median_and_worst_task() -> None:
    report = Report(
        runs=[
            _run("off", "a", [1] * 10, 1000.0, "d1"),
            _run("auto", "a", [1] * 10, 500.0, "d1"),
            _run("off", "b", [1] * 10, 1000.0, "t1", "test"),
            _run("auto", "b", [1] * 10, 400.0, "t1", "test"),
            _run("off", "c", [1] * 10, 1000.0, "t2", "test"),
            _run("auto", "c", [1] * 10, 1250.0, "t2", "test"),
        ],
        load=True,
    )
    summary = summarize(report)
    dev, test = summary["refactor"]["dev"]["auto"], summary["refactor"]["test"]["auto"]
    assert (dev["tasks"], dev["median_speedup"], dev["worst_task"]) == (1, 2.0, "d1")
    assert (test["tasks"], test["min_speedup"], test["worst_task"]) == (2, 0.8, "t2")
    assert test["median_speedup"] == round((2.5 + 0.8) / 2, 2)
    text = markdown(report, summary, EngineConfig())
    assert "## refactor tasks, dev split" in text and "## refactor tasks, test split" in text
    assert "Under load" in text
    assert "| t2 | refactor | test | 0.80 |" in text  # the per-task table names the loser


def test_the_peer_row_sits_beside_off_and_a_missing_binary_leaves_a_note() -> None:
    runs = [_run("off", "a", [1] * 26, 1000.0), _run("auto", "a", [1] * 26, 500.0)]
    peer = PeerRow("a.py:f", "refactor", "dev")
    peer.tokens_per_s = {"plain": 27.0, "ngram-simple": 40.5, "ngram-mod": 27.0}
    peer.same_as_plain = {"ngram-simple": True, "ngram-mod": False}
    report = Report(runs=runs, peer=[peer])
    text = markdown(report, summarize(report), EngineConfig())
    row = "| refactor | dev | 1 | 27.0 | 26.0 | 0.96 | 1.5 | 1.5 | 1/1 | 1.0 | 1.0 | 0/1 | 2.0 |"
    assert row in text  # llama-server plain beside off, each variant, and our auto median
    skipped = Report(runs=runs, peer_note="Skipped: no llama-server binary")
    assert "Skipped: no llama-server binary" in markdown(
        skipped, summarize(skipped), EngineConfig()
    )


def test_the_report_names_the_offload_the_run_had() -> None:
    assert gpu_layers_note(EngineConfig(n_gpu_layers=0)) == "0"
    assert gpu_layers_note(EngineConfig(n_gpu_layers=12)) == "12"
    assert gpu_layers_note(EngineConfig(n_gpu_layers=ALL_LAYERS)) == "all"
    assert gpu_layers_note(EngineConfig(backend="llama-server")) == "the server's"
    # The default is every layer where this build can offload, none where it cannot.
    default = "all" if llama_cpp.llama_supports_gpu_offload() else "0"
    assert gpu_layers_note(EngineConfig()) == default
