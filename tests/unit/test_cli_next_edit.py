"""`groundspec next-edit` on the fake engine (its proposal is the draft: the last
edit carried on): recent edits from git or --since, --json, --write, bad input."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from contract import STATS_KEYS
from next_edit_sample import PLUGINS as CODE
from next_edit_sample import RENAMED


def groundspec(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    root = Path(__file__).resolve().parents[2]
    return subprocess.run(
        [sys.executable, "-m", "lsp_server.cli", "next-edit", *args, "--fake"],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=cwd,
        env={**os.environ, "PYTHONPATH": str(root)},
    )


def git(repo: Path, *args: str) -> None:
    subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@t", *args],
        cwd=repo,
        check=True,
        capture_output=True,
    )


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    git(tmp_path, "init", "-q")
    (tmp_path / "plugins.py").write_text(CODE)
    git(tmp_path, "add", "plugins.py")
    git(tmp_path, "commit", "-q", "-m", "first")
    (tmp_path / "plugins.py").write_text(RENAMED)
    return tmp_path


def test_json_is_the_next_edit_result_from_uncommitted_changes(repo: Path) -> None:
    proc = groundspec(str(repo / "plugins.py"), "--json")
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout)
    assert set(result) == {"edits", "stats"} and set(result["stats"]) == STATS_KEYS
    (edit,) = result["edits"]
    assert edit["range"]["start"]["line"] == 1  # the `for name` line, 0-based
    assert "attr_name" in edit["newText"]


def test_rewrite_has_the_model_write_the_window(tmp_path: Path) -> None:
    earlier, path = tmp_path / "old.py", tmp_path / "new.py"
    earlier.write_text(CODE)
    path.write_text(CODE.replace("continue", "break"))  # carried nowhere: nothing to score
    scored = json.loads(groundspec(str(path), "--since", str(earlier), "--json").stdout)
    proc = groundspec(str(path), "--since", str(earlier), "--json", "--rewrite")
    assert proc.returncode == 0, proc.stderr
    rewritten = json.loads(proc.stdout)
    assert scored["edits"] == rewritten["edits"] == []
    assert scored["stats"]["generatedTokens"] == 0
    assert rewritten["stats"]["generatedTokens"] > 0


def test_write_applies_the_proposal_and_diff_is_printed(repo: Path) -> None:
    path = repo / "plugins.py"
    proc = groundspec(f"{path}:6:35", "--write")
    assert proc.returncode == 0, proc.stderr
    name = str(path).lstrip("/")
    assert proc.stdout.startswith(f"--- a/{name}\n+++ b/{name}\n")
    assert "+    for attr_name in dir(plugin):" in proc.stdout
    assert path.read_text() == CODE.replace("name", "attr_name")


def test_since_file_and_no_change_to_follow(tmp_path: Path) -> None:
    earlier, path = tmp_path / "old.py", tmp_path / "new.py"
    earlier.write_text(CODE)
    path.write_text(RENAMED)
    proc = groundspec(str(path), "--since", str(earlier), "--json")
    assert proc.returncode == 0 and json.loads(proc.stdout)["edits"]
    proc = groundspec(str(path), "--since", str(path))
    assert proc.returncode == 1 and "no changes to follow" in proc.stderr


def test_bad_input_is_one_clear_line(tmp_path: Path, repo: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "x.py").write_text("x = 1\n")
    cases = [
        (str(outside / "x.py"), "no committed version", 1),
        (str(repo / "nope.py"), "no such file", 1),
        (f"{repo / 'plugins.py'}:99:1", "past the end of the file", 2),
        (f"{repo / 'plugins.py'}:0:1", "1-based", 2),
    ]
    for location, words, code in cases:
        proc = groundspec(location)
        assert proc.returncode == code, (location, proc.stderr)
        lines = proc.stderr.strip().splitlines()
        assert len(lines) == 1 and words in lines[0] and "Traceback" not in proc.stderr


def test_a_name_another_tracked_file_imports_gets_its_import(tmp_path: Path) -> None:
    git(tmp_path, "init", "-q")
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "paths.py").write_text("from pathlib import Path\nimport numpy as np\n")
    settings = tmp_path / "pkg" / "settings.py"
    settings.write_text('"""S."""\nimport json\n\n\ndef load(n):\n    return json.load(open(n))\n')
    git(tmp_path, "add", ".")
    git(tmp_path, "commit", "-q", "-m", "first")
    settings.write_text(settings.read_text().replace("    return", "    n = Path(n)\n    return"))
    proc = groundspec("pkg/settings.py", "--write", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert settings.read_text().startswith('"""S."""\nimport json\nfrom pathlib import Path\n\n')


def test_nothing_proposed_says_why(tmp_path: Path) -> None:
    earlier, path = tmp_path / "old.py", tmp_path / "new.py"
    earlier.write_text(CODE)
    path.write_text(CODE.replace("continue", "break"))
    proc = groundspec(str(path), "--since", str(earlier))
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr.strip().splitlines()[-1] == (
        "groundspec: no next edit worth proposing (the last edit is carried nowhere nearby)"
    )
    assert proc.stdout == "" and path.read_text() == CODE.replace("continue", "break")
