"""The workspace index: what it covers, how it follows edits, what related() picks."""

from __future__ import annotations

import errno
import logging
import os
import shutil
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from speculator import workspace, workspace_files
from speculator.chunks import identifiers, split_lines
from speculator.types import Snippet
from speculator.workspace import MAX_TOP_WATCHES, IndexLimits, WorkspaceIndex
from speculator.workspace_files import gitignore_spec, gitignore_verdict


def eventually(predicate: Callable[[], bool], timeout: float = 1.0) -> bool:
    """Poll `predicate` until it holds or `timeout` seconds pass."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.01)
    return predicate()


def finishes(work: Callable[[], object], timeout: float = 2.0) -> object:
    """`work()`'s result; fails the test when it runs past `timeout` (it may spin)."""
    result: list[object] = []
    thread = threading.Thread(target=lambda: result.append(work()), daemon=True)
    thread.start()
    thread.join(timeout)
    assert not thread.is_alive(), "still running"
    return result[0]


def write(root: Path, rel: str, text: str) -> Path:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def indexed(index: WorkspaceIndex) -> set[str]:
    return {os.path.relpath(p, index.root) for p in index.files()}


@pytest.fixture
def watched(tmp_path: Path) -> Iterator[WorkspaceIndex]:
    write(tmp_path, "src/app.py", "def main():\n    return 1\n")
    index = WorkspaceIndex(str(tmp_path)).start()
    assert index.wait_ready(5)
    yield index
    index.stop()


# ---------------------------------------------------------------- pure parts


def ignored(text: str, rel: str, is_dir: bool = False) -> bool:
    return bool(gitignore_verdict(gitignore_spec(text), rel, is_dir))


def test_gitignore_patterns() -> None:
    rules = "# comment\n*.log\nbuild/\n/top.py\ndocs/**/gen_*.py\n!keep.log\n"
    assert ignored(rules, "a.log") and ignored(rules, "deep/er/a.log")
    assert not ignored(rules, "keep.log")
    assert ignored(rules, "build", is_dir=True) and ignored(rules, "x/build", is_dir=True)
    assert not ignored(rules, "build")  # `build/` matches directories only
    assert ignored(rules, "top.py") and not ignored(rules, "sub/top.py")
    assert ignored(rules, "docs/gen_a.py") and ignored(rules, "docs/x/y/gen_b.py")
    assert not ignored(rules, "src/gen_a.py")


def test_chunks_start_at_definitions() -> None:
    body = "".join(f"def f{i}():\n" + "    x = 1\n" * 9 for i in range(10))  # 10-line defs
    pieces = split_lines(body, target_lines=32)
    assert [start for start, _ in pieces] == list(range(0, 100, 10))
    assert "".join(text for _, text in pieces) == body


def test_methods_start_chunks_but_nested_functions_and_decorators_stay() -> None:
    method = "    @cache\n    def m{i}(self):\n        def inner():\n" + "            y = 2\n" * 6
    body = 'class K:\n    """Doc."""\n\n' + "".join(method.format(i=i) for i in range(3))
    starts = [start for start, _ in split_lines(body)]
    assert starts == [0, 12, 21]  # the class line joins the first method; 9-line methods
    js = "const a = (\n  x,\n) => {\n" + "  x += 1\n" * 6 + "}\nconst b = async (y) => y\n"
    assert [start for start, _ in split_lines(js)] == [0, 10]


def test_loose_code_is_cut_at_top_level_lines_and_a_hard_limit() -> None:
    loose = "".join(f"x{i} = [\n" + "    1,\n" * 9 + "]\n" for i in range(6))  # 11-line runs
    assert [start for start, _ in split_lines(loose, target_lines=32)] == [0, 32, 65]
    assert all(len(text.splitlines()) <= 64 for _, text in split_lines("x\n" * 500))


def test_identifiers_are_distinct_and_skip_short_words() -> None:
    assert identifiers("a = parse_header(ab, parse_header) + x1y") == ("parse_header", "x1y")


# ---------------------------------------------------------------- coverage


def test_scan_respects_gitignore_size_and_binary(tmp_path: Path) -> None:
    write(tmp_path, ".gitignore", "build/\n*.gen.py\n!keep.gen.py\n/anchored.py\n")
    write(tmp_path, "pkg/.gitignore", "local.py\n")
    for rel in (
        "src/a.py",
        "keep.gen.py",
        "sub/anchored.py",
        "build/out.py",
        "x.gen.py",
        "anchored.py",
        "pkg/local.py",
        "pkg/ok.py",
        "node_modules/m/index.js",
        ".venv/lib.py",
        "notes.txt",
    ):
        write(tmp_path, rel, "value = 1\n")
    write(tmp_path, "big.py", "x = 1\n" * 50_000)  # 300 KB > 256 KB
    (tmp_path / "blob.py").write_bytes(b"abc\0def\n")
    with WorkspaceIndex(str(tmp_path), watch=False) as index:
        assert index.wait_ready(5)
        assert indexed(index) == {"src/a.py", "keep.gen.py", "sub/anchored.py", "pkg/ok.py"}


def test_caps_bound_files_chunks_and_text(tmp_path: Path) -> None:
    for i in range(20):
        write(tmp_path, f"m{i:02d}.py", ("def f():\n" + "    return 1\n" * 19) * 2)  # 2 chunks
    for limits, key, cap in (
        (IndexLimits(max_files=5), "files", 5),
        (IndexLimits(max_chunks=7), "chunks", 7),
        (IndexLimits(max_total_chars=4000), "chars", 4000),
    ):
        with WorkspaceIndex(str(tmp_path), limits, watch=False) as index:
            assert index.wait_ready(5)
            stats = index.stats()
        assert 0 < stats[key] <= cap, (key, stats)
        assert stats["files"] < 20


def test_filesystem_root_and_a_trailing_slash_end_the_ancestor_walk(tmp_path: Path) -> None:
    index = WorkspaceIndex("/", watch=False)
    index.rules._specs["/"] = gitignore_spec("etc/\n/top.py\n")
    assert finishes(lambda: index.rules.matches("/etc", True))
    assert finishes(lambda: index.rules.matches("/top.py", False))
    assert not finishes(lambda: index.rules.matches("/usr/top.py", False))
    assert finishes(lambda: index.rules.ignored("/etc/deep/x.py", False))
    assert not finishes(lambda: index.rules.ignored("/usr/x.py", False))

    write(tmp_path, ".gitignore", "gen/\n")
    write(tmp_path, "gen/a.py", "x = 1\n")
    write(tmp_path, "src/b.py", "x = 1\n")
    with WorkspaceIndex(str(tmp_path) + os.sep, watch=False) as index:
        assert index.root == str(tmp_path)
        assert index.wait_ready(5)
        assert indexed(index) == {"src/b.py"}


def test_a_full_index_reads_no_more_files(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    reads: list[str] = []
    read_source = workspace.read_source

    def counting(path: str, max_bytes: int) -> str | None:
        reads.append(os.path.basename(path))
        return read_source(path, max_bytes)

    monkeypatch.setattr(workspace, "read_source", counting)
    for limits, cap in ((IndexLimits(max_files=3), 3), (IndexLimits(max_total_chars=120), 2)):
        for i in range(10):
            write(tmp_path, f"m{i}.py", f"value_{i} = {i:040d}\n")  # 51 bytes
        reads.clear()
        with WorkspaceIndex(str(tmp_path), limits, watch=False) as index:
            assert index.wait_ready(5)
            assert len(index.files()) == cap
            assert reads == [f"m{i}.py" for i in range(cap)]
            # A file already in a full index may still change.
            write(tmp_path, "m0.py", "changed_value = 1\n")
            index.schedule(str(tmp_path / "m0.py"))
            assert eventually(lambda: _texts(index, "changed_value") != [])


def test_a_gitignore_is_read_only_when_regular_and_only_its_first_mib(tmp_path: Path) -> None:
    write(tmp_path, "src/a.py", "x = 1\n")
    write(tmp_path, "src/skip.py", "x = 1\n")
    os.mkfifo(tmp_path / "src" / ".gitignore")  # open() would wait for a writer
    with WorkspaceIndex(str(tmp_path), watch=False) as index:
        assert index.wait_ready(2)
        assert indexed(index) == {"src/a.py", "src/skip.py"}
    # Rules past the first MiB are not read (a generated file must not stall the scan).
    padding = ("#" * 99 + "\n") * (workspace_files.MAX_GITIGNORE_BYTES // 100 + 1)
    write(tmp_path, ".gitignore", "skip.py\n" + padding + "*.py\n")
    with WorkspaceIndex(str(tmp_path), watch=False) as index:
        assert index.wait_ready(5)
        assert indexed(index) == {"src/a.py"}


# ---------------------------------------------------------------- watching


def test_create_modify_delete_rename_within_a_second(
    watched: WorkspaceIndex, tmp_path: Path
) -> None:
    path = write(tmp_path, "src/new_mod.py", "def alpha_beta():\n    pass\n")
    assert eventually(lambda: "src/new_mod.py" in indexed(watched))

    path.write_text("def gamma_delta():\n    pass\n")
    assert eventually(lambda: _texts(watched, "gamma_delta") == ["def gamma_delta():\n    pass\n"])
    assert _texts(watched, "alpha_beta") == []

    path.rename(tmp_path / "src" / "renamed.py")
    assert eventually(lambda: "src/renamed.py" in indexed(watched))
    assert eventually(lambda: "src/new_mod.py" not in indexed(watched))

    (tmp_path / "src" / "renamed.py").unlink()
    assert eventually(lambda: indexed(watched) == {"src/app.py"})


def test_new_and_moved_directories_are_followed(watched: WorkspaceIndex, tmp_path: Path) -> None:
    write(tmp_path, "lib/deep/util.py", "def util_fn():\n    pass\n")  # a new top-level dir
    assert eventually(lambda: "lib/deep/util.py" in indexed(watched))
    (tmp_path / "lib").rename(tmp_path / "lib2")
    assert eventually(lambda: indexed(watched) == {"src/app.py", "lib2/deep/util.py"})
    write(tmp_path, "lib2/deep/more.py", "x = 1\n")  # the moved directory is still watched
    assert eventually(lambda: "lib2/deep/more.py" in indexed(watched))


def test_top_level_directory_replaced_within_a_debounce(
    watched: WorkspaceIndex, tmp_path: Path
) -> None:
    shutil.rmtree(tmp_path / "src")
    write(tmp_path, "src/fresh.py", "x = 1\n")
    assert eventually(lambda: indexed(watched) == {"src/fresh.py"})
    write(tmp_path, "src/later.py", "x = 1\n")  # the new directory is watched, not the old
    assert eventually(lambda: "src/later.py" in indexed(watched))


def test_many_top_level_directories_share_one_watch(tmp_path: Path) -> None:
    for i in range(MAX_TOP_WATCHES + 1):
        write(tmp_path, f"d{i:02d}/m.py", "x = 1\n")
    with WorkspaceIndex(str(tmp_path)) as index:
        assert index.wait_ready(5)
        assert len(index._watches) == 1
        write(tmp_path, "d03/deeper/new.py", "x = 1\n")
        assert eventually(lambda: "d03/deeper/new.py" in indexed(index))


def test_gitignore_edit_applies(watched: WorkspaceIndex, tmp_path: Path) -> None:
    write(tmp_path, "src/gen.py", "x = 1\n")
    assert eventually(lambda: "src/gen.py" in indexed(watched))
    write(tmp_path, ".gitignore", "gen.py\n")
    assert eventually(lambda: "src/gen.py" not in indexed(watched))
    (tmp_path / ".gitignore").unlink()
    assert eventually(lambda: "src/gen.py" in indexed(watched))


def test_ignored_and_binary_files_stay_out_while_watching(
    watched: WorkspaceIndex, tmp_path: Path
) -> None:
    write(tmp_path, "node_modules/pkg/index.js", "module.exports = 1\n")
    (tmp_path / "src" / "blob.py").write_bytes(b"\0" * 10)
    write(tmp_path, "src/marker.py", "x = 1\n")  # events are handled in order of arrival
    assert eventually(lambda: "src/marker.py" in indexed(watched))
    time.sleep(0.2)  # one debounce period for the others to have been seen
    assert indexed(watched) == {"src/app.py", "src/marker.py"}


def test_stop_shuts_the_observer_down(tmp_path: Path) -> None:
    index = WorkspaceIndex(str(tmp_path)).start()
    assert index.wait_ready(5)
    observer, worker = index._observer, index._worker
    assert observer is not None and worker is not None and observer.is_alive()
    index.stop()
    assert not observer.is_alive() and not worker.is_alive()
    assert index.related(None, "anything", 3) == []  # still readable after stop


def test_stop_at_any_moment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    WorkspaceIndex(str(tmp_path)).stop()  # never started
    # Stopped while the worker holds an observer that has not started yet.
    release = threading.Event()
    top_dirs = WorkspaceIndex._top_dirs

    def slow_top_dirs(self: WorkspaceIndex) -> list[str]:
        release.wait(5)
        return top_dirs(self)

    monkeypatch.setattr(WorkspaceIndex, "_top_dirs", slow_top_dirs)
    index = WorkspaceIndex(str(tmp_path)).start()
    assert eventually(lambda: index._observer is not None)
    started = time.monotonic()
    index.stop(timeout=0.2)
    assert time.monotonic() - started < 1
    release.set()
    worker = index._worker
    assert worker is not None
    worker.join(5)
    assert not worker.is_alive() and index._observer is None
    index.stop()  # again


def refuse_to_watch() -> None:
    raise OSError(errno.ENOSPC, "inotify watch limit reached")


def no_inotify_instance(**kwargs: object) -> None:
    raise OSError(errno.EMFILE, "inotify instance limit reached")


@pytest.mark.parametrize("failure", ["Observer()", "observer.start()", "no root"])
def test_a_failed_watch_leaves_a_working_index(
    failure: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    write(tmp_path, "src/app.py", "def main():\n    return 1\n")
    root = tmp_path
    if failure == "Observer()":
        monkeypatch.setattr(workspace, "Observer", no_inotify_instance)
    elif failure == "observer.start()":
        observer = workspace.Observer()

        def failing_observer(**kwargs: object) -> object:
            monkeypatch.setattr(observer, "start", refuse_to_watch)
            return observer

        monkeypatch.setattr(workspace, "Observer", failing_observer)
    else:
        root = tmp_path / "gone"
    with caplog.at_level(logging.WARNING, logger="speculator.workspace"):
        with WorkspaceIndex(str(root)) as index:
            assert index.wait_ready(5)
            assert index._observer is None
            if root == tmp_path:
                assert indexed(index) == {"src/app.py"}
                write(tmp_path, "src/saved.py", "x = 1\n")  # seen on schedule (didSave)
                index.schedule(str(tmp_path / "src" / "saved.py"))
                assert eventually(lambda: "src/saved.py" in indexed(index))
    warnings = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
    assert len(warnings) == 1 and "cannot watch" in warnings[0], warnings


def test_related_is_safe_while_files_change(watched: WorkspaceIndex, tmp_path: Path) -> None:
    errors: list[BaseException] = []
    done = threading.Event()

    def reader() -> None:
        while not done.is_set():
            try:
                watched.related(None, "def churn_fn value", 4)
            except BaseException as e:  # reported below
                errors.append(e)

    thread = threading.Thread(target=reader)
    thread.start()
    for i in range(20):
        write(tmp_path, f"src/churn{i % 4}.py", f"def churn_fn():\n    value = {i}\n")
    assert eventually(lambda: len(_texts(watched, "churn_fn")) == 4)
    done.set()
    thread.join()
    assert errors == []


# ---------------------------------------------------------------- related()

PARSER = '''"""Parse HTTP-ish headers."""


def parse_header(line):
    name, _, value = line.partition(":")
    return name.strip().lower(), value.strip()


def format_header(name, value):
    return f"{name}: {value}"
'''

TEST_PARSER = """from parser import format_header, parse_header


def test_parse_header():
    assert parse_header("Content-Type: text") == ("content-type", "text")


def test_format_header():
    assert format_header("a", "b") == "a: b"
"""

OTHER = """def load_{n}(path):
    with open(path) as f:
        value = f.read()
    return value.strip()
"""


@pytest.fixture
def project(tmp_path: Path) -> Iterator[WorkspaceIndex]:
    write(tmp_path, "pkg/parser.py", PARSER)
    write(tmp_path, "tests/test_parser.py", TEST_PARSER)
    for n in range(10):
        write(tmp_path, f"pkg/loader{n}.py", OTHER.format(n=n))
    with WorkspaceIndex(str(tmp_path), watch=False) as index:
        assert index.wait_ready(5)
        yield index


def test_related_picks_the_sibling_test_and_never_the_file_itself(
    project: WorkspaceIndex,
) -> None:
    path = os.path.join(project.root, "pkg", "parser.py")
    query = PARSER + "\n\ndef parse_headers(lines):\n    return [parse_header(l"
    snippets = project.related(path, query, 2)
    assert snippets[0].path == "tests/test_parser.py"
    assert all(s.path != "pkg/parser.py" for s in snippets)
    assert project.related(path, query, 0) == []


def test_related_is_stable_across_keystrokes(project: WorkspaceIndex) -> None:
    path = os.path.join(project.root, "pkg", "loader0.py")
    query = "def read_all(path):\n    with open(path) as f:\n        value = f.read()\n"
    first = project.related(path, query, 3)
    assert len(first) == 3
    for typed in ("    r", "    re", "    ret", "    return value.st"):
        assert project.related(path, query + typed, 3) == first
    # An edit that makes a returned chunk score a little lower (one more
    # identifier) loses to its equals only without the stickiness bonus.
    touched = Path(project.root, first[1].path)
    touched.write_text(touched.read_text() + "# extra\n")
    project.schedule(str(touched))
    assert eventually(lambda: touched.stat().st_size == project._files[str(touched)].size)
    assert paths(project.related(path, query, 3)) == paths(first)
    # Another file's history does not change this one's answer.
    project.related(None, "parse_header format_header", 3)
    assert paths(project.related(path, query, 3)) == paths(first)


def test_related_treats_a_path_the_os_rejects_as_unknown(project: WorkspaceIndex) -> None:
    query = "parse_header(line)"
    expected = paths(project.related(None, query, 2))
    assert expected
    for bad in ("/src/a\0b.py", "/src/\ud800.py", "\0"):
        assert paths(project.related(bad, query, 2)) == expected
        project.schedule(bad)  # ignored, no error


def test_a_file_name_that_is_not_utf8_gives_a_printable_snippet_path(tmp_path: Path) -> None:
    name = os.path.join(os.fsencode(tmp_path), b"caf\xe9_helpers.py")
    with open(name, "wb") as f:
        f.write(b"def compute_widget_total(widget_items):\n    return 0\n")
    with WorkspaceIndex(str(tmp_path), watch=False) as index:
        assert index.wait_ready(5)
        snippets = index.related(str(tmp_path / "main.py"), "compute_widget_total", 2)
    assert paths(snippets) == ["caf\ufffd_helpers.py"]
    snippets[0].path.encode("utf-8")  # a lone surrogate would raise here


def paths(snippets: list[Snippet]) -> list[str]:
    return [s.path for s in snippets]


def _texts(index: WorkspaceIndex, word: str) -> list[str]:
    """Texts of indexed chunks containing `word` (via related from no file)."""
    return [s.text for s in index.related(None, word, 10) if word in s.text]
