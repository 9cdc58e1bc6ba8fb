"""`groundspec bench`'s wiring, end to end on the fake engine (no model)."""

import argparse
import json
from pathlib import Path

import pytest

from bench import run
from speculator.config import EngineConfig
from speculator.types import Stats


def _args(**overrides: object) -> argparse.Namespace:
    args = dict(
        replay=False,
        workspace=False,
        simulate=False,
        kind="all",
        split="all",
        modes="off,auto",
        limit=1,
        load=False,
        record_traces=None,
        traces=None,
        cost_scale=1.0,
        output=None,
        json=False,
        repeat=1,
    )
    args.update(overrides)
    return argparse.Namespace(**args)


def test_a_run_reports_each_split_and_writes_the_report(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    output = tmp_path / "report.md"
    assert run.main(_args(output=str(output), load=True), EngineConfig(fake=True)) == 0
    text = output.read_text()
    assert "Under load" in text
    splits = {line for line in text.splitlines() if line.startswith("## ") and "split" in line}
    assert splits == {
        f"## {k} tasks, {s} split" for k in ("completion", "refactor") for s in ("dev",)
    }
    assert "Not run (add `peer` to `--modes`)" in text


def test_json_names_every_run_with_its_split(capsys: pytest.CaptureFixture[str]) -> None:
    assert run.main(_args(json=True, split="test", limit=2), EngineConfig(fake=True)) == 0
    out = json.loads(capsys.readouterr().out)
    assert {r["split"] for r in out["runs"]} == {"test"}
    assert {(r["kind"], r["mode"]) for r in out["runs"]} == {
        (k, m) for k in ("completion", "refactor") for m in ("off", "auto")
    }
    assert set(out["summary"]["refactor"]) == {"test"}
    assert out["load"] is False


def test_an_unknown_mode_is_a_clear_error() -> None:
    with pytest.raises(SystemExit, match="unknown --modes fast"):
        run.main(_args(modes="off,fast"), EngineConfig(fake=True))


def test_repeat_keeps_one_run_per_task_and_mode(capsys: pytest.CaptureFixture[str]) -> None:
    assert run.main(_args(json=True, split="test", limit=2, repeat=3), EngineConfig(fake=True)) == 0
    out = json.loads(capsys.readouterr().out)
    keys = [(r["task"], r["mode"]) for r in out["runs"]]
    assert len(keys) == len(set(keys)) == 2 * 2 * 2  # 2 kinds x 2 tasks x 2 modes


def test_the_median_run_is_the_middle_speed() -> None:
    def made(decode_ms: float) -> run.Run:
        stats = Stats(generated_tokens=10, decode_ms=decode_ms)
        return run.Run("t", "completion", "off", "x", stats, 0.0, [], [], "test")

    runs = [made(100.0), made(300.0), made(200.0)]
    assert run.median_run(runs).stats.decode_ms == 200.0
    assert run.median_run(runs[:2]).stats.decode_ms == 300.0  # even: the slower middle
