"""The learned policy file: kept across restarts, never an error."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from speculator.learned import SAVE_EVERY_S, LearnedFile
from speculator.slots import DiskSlots

LEARNED = {"refactor": {"lookup:4": [3.5, 4.0, 40.0, 41.0]}, "completion": {}}


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_what_one_process_saves_the_next_loads(tmp_path: Path) -> None:
    path = tmp_path / "kv-slots" / LearnedFile.name_for("a" * 32, "b" * 32)
    LearnedFile(path).save(LEARNED)
    assert LearnedFile(path).load() == LEARNED
    assert [p.name for p in path.parent.iterdir()] == [path.name]  # no part file left


def test_a_missing_file_is_a_fresh_start(tmp_path: Path) -> None:
    assert LearnedFile(tmp_path / "policy.json").load() == {}


@pytest.mark.parametrize(
    "content",
    [b"", b"\x00\xff garbage", b"[1, 2]", b'{"version": 1, "controllers": {"refactor": 3}}'],
)
def test_a_corrupt_file_is_a_fresh_start_with_a_warning(
    tmp_path: Path, content: bytes, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "policy.json"
    path.write_bytes(content)
    with caplog.at_level(logging.WARNING):
        assert LearnedFile(path).load() == {}
    assert "ignoring the learned policy" in caplog.text


def test_a_file_of_another_version_is_not_read(tmp_path: Path) -> None:
    path = tmp_path / "policy.json"
    path.write_text('{"version": 99, "controllers": {"refactor": {}}}')
    assert LearnedFile(path).load() == {}


def test_a_folder_that_cannot_be_written_is_a_warning(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    with caplog.at_level(logging.WARNING):
        LearnedFile(blocker / "policy.json").save(LEARNED)
    assert "not kept across restarts" in caplog.text


def test_an_editor_writes_at_most_every_few_seconds_and_at_shutdown(tmp_path: Path) -> None:
    path = tmp_path / "policy.json"
    clock = Clock()
    learned_file = LearnedFile(path, clock)
    learned_file.save(LEARNED)  # a process's first save: a CLI call ends after it
    second = {"refactor": {"lookup:4": [4.0, 5.0, 50.0, 51.0]}}
    clock.now += SAVE_EVERY_S / 2
    learned_file.save(second)
    assert LearnedFile(path).load() == LEARNED
    learned_file.save(second, now=True)  # shutdown
    assert LearnedFile(path).load() == second
    third = {"refactor": {"lookup:4": [5.0, 6.0, 60.0, 61.0]}}
    clock.now += SAVE_EVERY_S
    learned_file.save(third)
    assert LearnedFile(path).load() == third


def test_the_kv_slots_trim_leaves_the_policy_alone(tmp_path: Path) -> None:
    path = tmp_path / LearnedFile.name_for("a" * 32, None)
    LearnedFile(path).save(LEARNED)
    slots = DiskSlots(tmp_path, "a" * 32, None, limit_bytes=1)
    slots._trim()
    assert LearnedFile(path).load() == LEARNED
