"""`groundspec bench`'s wiring, end to end on the fake engine (no model)."""

import argparse
import json
from pathlib import Path

import pytest

from bench import run
from speculator.config import EngineConfig


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
