"""`python -m bench.results FILE`: one command writes a machine's current results."""

from __future__ import annotations

from pathlib import Path

from bench import results

ROOT = Path(__file__).resolve().parents[2]
ARCHIVE = ROOT / "bench" / "archive" / "bench-results"
ZEN3 = [
    "zen3-test-refactor-quiet-repeat3.md",
    "zen3-test-refactor-load-repeat3.md",
    "zen3-test-completion-quiet-repeat3.md",
    "zen3-test-completion-load-repeat3.md",
    "zen3-replay-load-deadline.md",
]


def test_the_summary_reads_each_reports_headline() -> None:
    reports = [(ARCHIVE / name).read_text() for name in ZEN3]
    text = results.compose("a test machine", reports, "python -m bench.results out.md")
    assert "| refactors, quiet | median >= 2.0x, no task < 0.90x | **2.25x**, worst 1.04x" in text
    assert "| typing, one core busy | p95 <= 1,500 ms | p95 **1,490 ms**, p50 1,403" in text
    assert text.count("\n## ") == len(results.RUNS)
    assert "\n# Benchmarks" not in text  # each report's title gives way to the run's heading


def test_the_committed_zen3_file_is_what_the_command_composes() -> None:
    committed = (ROOT / "docs" / "results" / "epyc-zen3.md").read_text()
    machine = committed.split("Machine: ", 1)[1].split(".\n", 1)[0]
    reports = [(ARCHIVE / name).read_text() for name in ZEN3]
    command = "python -m bench.results docs/results/epyc-zen3.md"
    assert results.compose(machine, reports, command) == committed


def test_one_command_runs_the_set_and_writes_the_file(tmp_path: Path) -> None:
    output = tmp_path / "results" / "fake.md"
    assert results.main([str(output), "--fake", "--machine", "a fake machine"]) == 0
    text = output.read_text()
    assert text.startswith("# Results") and "Machine: a fake machine." in text
    assert text.count("\n## ") == len(results.RUNS)


def test_the_machine_line_names_cores_and_memory() -> None:
    line = results.machine()
    assert " cores" in line and "GiB memory" in line
