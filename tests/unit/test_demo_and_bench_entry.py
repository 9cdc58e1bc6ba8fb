"""`groundspec demo` says what it measured in words; `groundspec bench` runs the lab
from a checkout and, without one, says in one line where to get it."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from lsp_server import cli, cli_lab
from lsp_server.demo import Outcome, run_demo, run_next_edit, summary
from speculator.fake import FakeEngine
from speculator.types import Stats


def groundspec(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "lsp_server.cli", *args], capture_output=True, text=True, timeout=120
    )


def stats(tokens: int, decode_ms: float) -> Stats:
    return Stats(generated_tokens=tokens, decode_ms=decode_ms, speculation="auto")


def test_the_summary_gives_both_times_the_speedup_and_sameness() -> None:
    same = Outcome("refactor", {"off": "x\n", "auto": "x\n"}, {})
    same.stats = {"off": stats(100, 4000.0), "auto": stats(100, 2000.0)}
    text = summary([same])
    assert "off     4.00 s   100 tokens    25.0 tokens/s" in text
    assert "auto    2.00 s   100 tokens    50.0 tokens/s" in text
    assert "2.00x faster, same text" in text
    differs = Outcome("completion", {"off": "a", "auto": "b"}, {})
    differs.stats = {"off": stats(10, 1000.0), "auto": stats(10, 1000.0)}
    assert "1.00x faster, the text differs" in summary([differs])


def test_the_demo_runs_a_completion_and_a_refactor_each_both_ways() -> None:
    engine = FakeEngine()
    outcomes = run_demo(engine)
    assert [o.job for o in outcomes] == ["completion", "refactor"]
    assert all(set(o.texts) == {"off", "auto"} for o in outcomes)


def test_the_demo_proposes_the_rename_carried_inside_its_function_only() -> None:
    shown = run_next_edit(FakeEngine())
    assert "def area_of_square(length: float)" in shown.before
    changed = [
        (a, b)
        for a, b in zip(shown.before.splitlines(), shown.after.splitlines(), strict=True)
        if a != b
    ]
    # perimeter_of_square's own `side` is another variable: left as it is.
    assert changed == [("    return side * side", "    return length * length")]
    assert "\n".join(summary([], shown).splitlines()[3:7]).endswith(
        "    -     return side * side\n    +     return length * length\n"
        "  proposed in 0.00 s, the model's confidence 1.00 (it proposes at 0.003 or more)"
    )


def test_the_demo_says_why_no_next_edit_is_proposed() -> None:
    unsure = FakeEngine()
    unsure.rewrite_confidence = 0.001  # under the bar
    shown = run_next_edit(unsure)
    assert shown.after == shown.before
    said = "  nothing proposed (the likeliest change, a rename carried on, scored 0.00100, "
    assert said + "under the bar of 0.0096)" in summary([], shown)


def test_the_demo_says_when_the_engine_has_no_next_edits() -> None:
    class CompletionsOnly:
        pass

    shown = run_next_edit(CompletionsOnly())  # type: ignore[arg-type]
    assert shown.result is None and shown.after == shown.before
    assert "  none: next edits need the local engine" in summary([], shown)


def test_demo_prints_the_summary_and_json_on_request() -> None:
    proc = groundspec("demo", "--fake")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("groundspec demo: a completion and a refactor")
    assert proc.stdout.count("x faster") == 2
    assert "+     return length * length" in proc.stdout
    raw = json.loads(groundspec("demo", "--fake", "--json").stdout)
    assert set(raw) == {"completion", "refactor", "nextEdit"}
    assert set(raw["refactor"]) == {"speedup", "identical", "off", "auto"}
    assert set(raw["refactor"]["auto"]) == {"text", "stats"}
    proposal = raw["nextEdit"]
    assert set(proposal) == {"edits", "stats", "confidence", "text"}
    assert proposal["edits"] == [
        {
            "range": {"start": {"line": 1, "character": 11}, "end": {"line": 1, "character": 22}},
            "newText": "length * length",
        }
    ]


def test_bench_in_a_checkout_runs_the_lab(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as done:
        cli.main(["bench", "--fake", "--split", "dev", "--limit", "1", "--modes", "off,auto"])
    assert done.value.code == 0
    assert "## completion tasks, dev split" in capsys.readouterr().out


def test_bench_without_a_checkout_says_where_to_get_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(cli_lab, "CHECKOUT", tmp_path)  # an install with no bench/ beside it
    with pytest.raises(SystemExit) as done:
        cli.main(["bench", "--split", "dev", "--load"])
    assert done.value.code == 1
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1 and "in a checkout" in lines[0]
