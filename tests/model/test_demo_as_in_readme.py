"""`groundspec demo`, the README's main job, prints what the README shows: the same
lines and texts, with this run's own times and speedups."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

README = (Path(__file__).resolve().parents[2] / "README.md").read_text(encoding="utf-8")


def shown_output() -> str:
    after = README.split("The demo prints", 1)[1].split("```text\n", 1)[1]
    return after.split("\n```", 1)[0]


def without_figures(text: str) -> str:
    """Times, counts and ratios change from run to run; the words and texts do not."""
    return re.sub(r"\d[\d,]*(\.\d+)?", "N", re.sub(r" +", " ", text)).strip()


def test_the_demo_prints_what_the_readme_shows() -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "lsp_server.cli", "demo"],
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert proc.returncode == 0, proc.stderr
    assert "x faster" in proc.stdout
    assert without_figures(proc.stdout) == without_figures(shown_output())
