"""Next-edit tasks from other projects' releases (bench/next_edit_releases.py),
built from wheels made here: the registry is not asked."""

from __future__ import annotations

import json
import subprocess
import zipfile
from pathlib import Path

import pytest

from bench import next_edit_releases
from bench.next_edit_releases import MINER, SPLITS, BuildError, build

OLD = "".join(f"def f{i}(value):\n    return value + {i}\n\n\n" for i in range(12))


def wheel(folder: Path, version: str, source: str) -> None:
    with zipfile.ZipFile(folder / f"demo-{version}-py3-none-any.whl", "w") as archive:
        archive.writestr("demo/core.py", source)
        archive.writestr("demo/__init__.py", f'__version__ = "{version}"\n')
        archive.writestr(f"demo-{version}.dist-info/METADATA", "Name: demo\n")


@pytest.fixture
def registry(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Three releases of `demo` in the wheel cache; the pip calls made, recorded."""
    monkeypatch.setenv("GROUNDSPEC_CACHE", str(tmp_path / "cache"))
    monkeypatch.setitem(SPLITS, "demo", {"demo": "1.2.0"})
    cached = tmp_path / "cache" / "bench-wheels" / "demo"
    cached.mkdir(parents=True)
    two_places = OLD.replace("value + 3", "amount + 3").replace("value + 4", "amount + 4")
    for version, source in (("1.0.0", OLD), ("1.1.0", two_places), ("1.2.0", two_places)):
        wheel(cached, version, source)
    calls: list[str] = []

    def pip(*args: str) -> str:
        calls.append(" ".join(args))
        if args[0] == "index":
            return "demo (1.3.0)\nAvailable versions: 1.3.0, 1.2.0, 1.2.0rc1, 1.1.0, 1.0.0\n"
        raise AssertionError("every wheel is cached")

    monkeypatch.setattr(next_edit_releases, "_pip", pip)
    return calls


def test_a_release_that_changed_a_file_in_two_nearby_places_is_an_edit_task(
    registry: list[str], tmp_path: Path
) -> None:
    if not MINER.exists():
        pytest.skip("shared/nes/mine.py is not beside this checkout")
    out = build("demo", tmp_path / "tasks.jsonl", releases=3)
    tasks = [json.loads(line) for line in out.read_text().splitlines()]
    edits = [t for t in tasks if t["kind"] == "edit"]
    assert [t["path"] for t in edits] == ["demo/core.py"]
    assert edits[0]["original"] == OLD and "amount + 3" in edits[0]["expected"]
    assert "amount + 4" in edits[0]["expected"]
    # The version bumps of 1.1.0 and 1.2.0 (core.py, unchanged in 1.2.0, is no commit).
    noops = [t for t in tasks if t["kind"] == "noop"]
    assert [t["path"] for t in noops] == ["demo/__init__.py"] * 2
    assert registry == ["index versions demo --python-version 3.11 --implementation py "
                        "--abi none --platform any"]  # fmt: skip


def test_releases_after_the_pinned_one_and_pre_releases_are_left_out(registry: list[str]) -> None:
    assert next_edit_releases._versions("demo", "1.2.0") == ["1.0.0", "1.1.0", "1.2.0"]
    assert next_edit_releases._versions("demo", "1.1.0") == ["1.0.0", "1.1.0"]


def test_a_registry_that_cannot_be_read_is_a_clear_error(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    def unreachable(*args: str) -> str:
        raise BuildError("pip index: ERROR: could not connect")

    monkeypatch.setattr(next_edit_releases, "_pip", unreachable)
    monkeypatch.setenv("GROUNDSPEC_CACHE", str(tmp_path / "cache"))
    miner = tmp_path / "mine.py"  # never run: the registry fails first
    miner.write_text("raise SystemExit(1)\n")
    monkeypatch.setattr(next_edit_releases, "MINER", miner)
    with pytest.raises(BuildError, match="could not connect"):
        build("test", tmp_path / "tasks.jsonl")


def test_without_the_miner_beside_the_checkout_the_error_says_so(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setattr(next_edit_releases, "MINER", tmp_path / "nowhere" / "mine.py")
    with pytest.raises(BuildError, match="no task miner"):
        build("test", tmp_path / "tasks.jsonl")


def test_the_history_has_a_commit_per_release_and_changed_file(
    registry: list[str], tmp_path: Path
) -> None:
    wheels = next_edit_releases._wheels(
        "demo", "1.2.0", 3, tmp_path / "cache" / "bench-wheels" / "demo"
    )
    repo = tmp_path / "history"
    next_edit_releases._history(wheels, repo)
    log = subprocess.run(
        ["git", "-C", str(repo), "log", "--reverse", "--format=%s", "--name-only"],
        capture_output=True, text=True, check=True,
    ).stdout.split()  # fmt: skip
    assert log == [
        "demo-1.0.0-py3-none-any.whl:", "demo/__init__.py", "demo/__init__.py",
        "demo-1.0.0-py3-none-any.whl:", "demo/core.py", "demo/core.py",
        "demo-1.1.0-py3-none-any.whl:", "demo/__init__.py", "demo/__init__.py",
        "demo-1.1.0-py3-none-any.whl:", "demo/core.py", "demo/core.py",
        "demo-1.2.0-py3-none-any.whl:", "demo/__init__.py", "demo/__init__.py",
    ]  # fmt: skip
    assert (repo / "demo" / "core.py").read_text().count("amount") == 2


def test_pip_failing_is_named_by_its_last_line(monkeypatch: pytest.MonkeyPatch) -> None:
    def failed(args: list[str], **_: object) -> subprocess.CompletedProcess[str]:
        return subprocess.CompletedProcess(args, 1, "", "WARNING: retrying\nERROR: no route\n")

    monkeypatch.setattr(next_edit_releases.subprocess, "run", failed)
    with pytest.raises(BuildError, match=r"^pip index: ERROR: no route$"):
        next_edit_releases._pip("index", "versions", "demo")


def test_two_builds_of_a_history_are_the_same_commits(
    registry: list[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The miner names tasks by commit and draws each task's direction from its
    hash: a build a year later, by someone else, must give the same tasks."""
    wheels = next_edit_releases._wheels(
        "demo", "1.2.0", 3, tmp_path / "cache" / "bench-wheels" / "demo"
    )
    heads = []
    for name, year in (("one", 2025), ("two", 2026)):
        monkeypatch.setenv("GIT_AUTHOR_DATE", f"{year}-12-05T12:00:00+0000")
        monkeypatch.setenv("GIT_COMMITTER_DATE", f"{year}-12-05T12:00:00+0000")
        monkeypatch.setenv("GIT_AUTHOR_NAME", name)
        next_edit_releases._history(wheels, tmp_path / name)
        head = ["git", "-C", str(tmp_path / name), "rev-parse", "HEAD"]
        heads.append(subprocess.run(head, capture_output=True, text=True, check=True).stdout)
    assert heads[0] == heads[1]


def test_the_splits_share_no_package() -> None:
    """The test split says how rules tuned on dev fare on code never read only if
    no package sits in both."""
    splits = [set(packages) for packages in SPLITS.values()]
    assert sum(map(len, splits)) == len(set().union(*splits))
    assert {"dev", "test"} <= set(SPLITS)
