"""The benchmark corpus: enough tasks, several languages, a fixed dev/test split."""

import hashlib
from collections import Counter

from bench.run import bench_tasks
from bench.tasks import (
    REFACTORS,
    TUNED_FILES,
    TUNED_REFACTORS,
    completion_tasks,
    refactor_tasks,
    split_of,
)


def test_the_corpus_has_enough_tasks_in_three_languages_and_both_splits() -> None:
    for tasks, least in ((refactor_tasks(), 30), (completion_tasks(), 40)):
        assert len(tasks) >= least
        assert len({t.name for t in tasks}) == len(tasks)
        languages = Counter(t.language for t in tasks)
        assert len(languages) >= 3, languages
        splits = Counter(t.split for t in tasks)
        assert splits["dev"] >= 10 and splits["test"] >= 10, splits


def test_the_split_is_the_low_bit_of_the_name_hash_and_tuned_tasks_stay_in_dev() -> None:
    assert split_of("graphlib.py:done") == split_of("graphlib.py:done")
    for name in ("a", "b", "textwrap.py:dedent", "client.go:readAddr"):
        low_bit = hashlib.sha256(name.encode()).digest()[-1] & 1
        assert split_of(name) == ("dev", "test")[low_bit]
    tuned = {f"{f}:{n}" for f, n, _ in REFACTORS[:TUNED_REFACTORS]}
    for task in refactor_tasks():
        assert task.split == ("dev" if task.name in tuned else split_of(task.name))
    for task in completion_tasks():
        assert task.split == ("dev" if task.path in TUNED_FILES else split_of(task.name))


def test_each_refactor_selects_whole_lines_of_its_definition() -> None:
    for task in refactor_tasks():
        selection = task.text[task.start : task.end]
        name = task.name.split(":", 1)[1]
        assert task.start == 0 or task.text[task.start - 1] == "\n", task.name
        assert selection.endswith("\n"), task.name
        assert f"{name}(" in selection.split("\n")[0] or f"{name} = " in selection, task.name
        # The definition ends where the selection does: the next line is not indented.
        after = task.text[task.end :].split("\n", 1)[0]
        assert not after.startswith(("\t", "  ")) or after.startswith("  public"), task.name


def test_completion_tasks_remove_real_code_and_can_be_put_back() -> None:
    for task in completion_tasks():
        assert len(task.expected.strip()) >= 16
        original = task.text[: task.start] + task.expected + task.text[task.start :]
        assert task.expected in original
        assert (task.expected.count("\n") == 3) == task.multiline


def test_bench_tasks_filter_by_split_and_limit() -> None:
    test_only = bench_tasks("all", "test", 0)
    assert test_only and all(t.split == "test" for t in test_only)
    limited = bench_tasks("refactor", "dev", 2)
    assert [t.kind for t in limited] == ["refactor", "refactor"]
    assert len(bench_tasks("all", "all", 0)) == len(refactor_tasks()) + len(completion_tasks())
