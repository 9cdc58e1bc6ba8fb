"""bench.next_edit_imports replays a history's hunks: one that began to use a name
its commit imported is an `imports` replay, judged right when the proposal is the
commit's own import line (on the fake engine, whose proposal is the draft)."""

from __future__ import annotations

import subprocess
import zipfile
from pathlib import Path

import pytest

from bench import next_edit_imports as bench
from bench import next_edit_releases
from speculator.fake import FakeEngine

BEFORE = '"""Settings."""\nimport json\n\n\ndef load(name):\n    return json.load(open(name))\n'
AFTER = BEFORE.replace("import json\n", "import json\nfrom pathlib import Path\n").replace(
    "    return", "    name = Path(name)\n    return"
)


def commit(repo: Path, files: dict[str, str], message: str) -> str:
    for name, text in files.items():
        (repo / name).write_text(text)
    git = ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run([*git, "add", "."], check=True)
    subprocess.run([*git, "commit", "-q", "-m", message], check=True)
    head = subprocess.run([*git, "rev-parse", "HEAD"], check=True, capture_output=True)
    return head.stdout.decode().strip()


def test_a_hunk_using_a_name_its_commit_imported_is_replayed_and_judged(tmp_path: Path) -> None:
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    commit(tmp_path, {"paths.py": "from pathlib import Path\n", "settings.py": BEFORE}, "one")
    head = commit(tmp_path, {"settings.py": AFTER}, "two")
    found = list(bench.replays(tmp_path / ".git", head))
    uses = [r for r in found if r.kind == "imports"]
    assert [(r.commit, r.path) for r in uses] == [(head, "settings.py")]
    assert "Path" in uses[0].imported
    verdict = bench.verdict(uses[0], FakeEngine())  # type: ignore[arg-type]
    assert verdict.proposed and verdict.right and verdict.exact


def test_another_projects_releases_are_replayed_as_its_history(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`--releases SPLIT`: each package's wheels as a history, replayed to its head."""
    monkeypatch.setenv("GROUNDSPEC_CACHE", str(tmp_path / "cache"))
    monkeypatch.setitem(next_edit_releases.SPLITS, "demo", {"demo": "1.1.0"})
    cached = tmp_path / "cache" / "bench-wheels" / "demo"
    cached.mkdir(parents=True)
    for version, settings in (("1.0.0", BEFORE), ("1.1.0", AFTER)):
        with zipfile.ZipFile(cached / f"demo-{version}-py3-none-any.whl", "w") as archive:
            archive.writestr("demo/paths.py", "from pathlib import Path\n")
            archive.writestr("demo/settings.py", settings)
    listed = "demo (1.1.0)\nAvailable versions: 1.1.0, 1.0.0\n"
    monkeypatch.setattr(next_edit_releases, "_pip", lambda *args: listed)
    [(package, tree)] = next_edit_releases.histories("demo", tmp_path / "trees")
    uses = [r for r in bench.replays(tree / ".git", "HEAD") if r.kind == "imports"]
    assert package == "demo" and [r.path for r in uses] == ["demo/settings.py"]
    verdict = bench.verdict(uses[0], FakeEngine())  # type: ignore[arg-type]
    assert verdict.proposed and verdict.right and verdict.exact
