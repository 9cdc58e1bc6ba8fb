"""The code is ruff-formatted, ruff-clean and mypy-clean: CI checks them through
the README's test command, so a style or typing regression turns it red."""

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize(
    "command",
    [
        ["ruff", "format", "--check", "."],
        ["ruff", "check", "."],
        ["mypy"],  # the packages in pyproject.toml's [tool.mypy]
    ],
    ids=["ruff-format", "ruff-check", "mypy"],
)
def test_the_tree_is_clean(command: list[str]) -> None:
    done = subprocess.run(
        [sys.executable, "-m", *command], cwd=ROOT, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stdout + done.stderr
