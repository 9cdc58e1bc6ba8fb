"""The workspace index's file system side: which files are sources, which the
.gitignore files exclude, and reading them safely (regular files only, bounded).
"""

from __future__ import annotations

import os
import stat
from collections.abc import Callable

import msgspec
import pathspec
from watchdog.events import FileSystemEvent, FileSystemEventHandler

SOURCE_EXTENSIONS = frozenset(
    ".py .pyi .js .mjs .cjs .jsx .ts .tsx .go .rs .c .h .cc .cpp .hpp .java .kt .rb .php"
    " .cs .swift .scala .lua .sh .sql".split()
)
# Never indexed even without a .gitignore; hidden directories (.git, .venv) too.
SKIP_DIRS = frozenset({"node_modules", "__pycache__", "site-packages", "venv", "env"})
MAX_GITIGNORE_BYTES = 1 << 20  # read of a .gitignore: a huge one must not stall the scan


# ---------------------------------------------------------------- .gitignore


class IndexLimits(msgspec.Struct, frozen=True, kw_only=True):
    max_file_bytes: int = 256 * 1024  # larger files are skipped (generated, vendored)
    max_total_chars: int = 32 * 1024 * 1024  # text held in memory, all files
    max_files: int = 20_000
    max_chunks: int = 60_000
    chunk_lines: int = 32
    chunk_chars: int = 4096
    debounce_s: float = 0.1  # an event waits this long for the burst to end
    query_budget: int = 8_000  # postings visited per related() call (bounds latency)
    candidates: int = 64  # best raw scores that get the finer ranking


def gitignore_spec(text: str) -> pathspec.GitIgnoreSpec:
    """The rules of one .gitignore, as git reads them (pathspec): globs, `dir/`,
    `/anchored`, `**`, `!negation`, escapes."""
    return pathspec.GitIgnoreSpec.from_lines(text.splitlines())


def gitignore_verdict(spec: pathspec.GitIgnoreSpec, rel: str, is_dir: bool) -> bool | None:
    """True: `rel` (relative to the .gitignore's directory, "/"-separated) is
    excluded; False: re-included by a `!` rule; None: no rule names it."""
    result = spec.check_file(rel + "/" if is_dir else rel)
    return None if result.include is None else bool(result.include)


class IgnoreRules:
    """The .gitignore files under a root, one spec per directory that has one."""

    def __init__(self, root: str) -> None:
        self.root = root
        self._specs: dict[str, pathspec.GitIgnoreSpec] = {}  # directory -> its .gitignore

    def load(self, directory: str) -> None:
        text = read_gitignore(os.path.join(directory, ".gitignore"))
        if text is None:
            self._specs.pop(directory, None)
        else:
            self._specs[directory] = gitignore_spec(text)

    def matches(self, path: str, is_dir: bool) -> bool:
        """Do the .gitignore rules of `path`'s ancestors exclude it? (last match wins)"""
        bases = []
        directory = os.path.dirname(path)
        while under(directory, self.root):
            if directory in self._specs:
                bases.append(directory)
            if directory == self.root:
                break  # dirname("/") is "/": the root must end the walk
            directory = os.path.dirname(directory)
        excluded = False
        for base in reversed(bases):
            rel = relative(path, base).replace(os.sep, "/")
            verdict = gitignore_verdict(self._specs[base], rel, is_dir)
            if verdict is not None:
                excluded = verdict
        return excluded

    def ignored(self, path: str, is_dir: bool) -> bool:
        """Like matches, but also true when a parent directory is excluded."""
        if path == self.root:
            return False
        if not under(path, self.root):
            return True
        current = self.root
        parts = relative(path, self.root).split(os.sep)
        for i, name in enumerate(parts):
            current = os.path.join(current, name)
            as_dir = is_dir or i < len(parts) - 1
            if (as_dir and skip_dir(name)) or self.matches(current, as_dir):
                return True
        return False


# ---------------------------------------------------------------- helpers


def is_source(path: str) -> bool:
    return os.path.splitext(path)[1] in SOURCE_EXTENSIONS


def skip_dir(name: str) -> bool:
    return name.startswith(".") or name in SKIP_DIRS


def stat_of(entry: os.DirEntry[str]) -> os.stat_result | None:
    try:
        return entry.stat(follow_symlinks=False)
    except OSError:  # deleted since scandir
        return None


def under(path: str, top: str) -> bool:
    return path == top or path.startswith(top.rstrip(os.sep) + os.sep)


def relative(path: str, top: str) -> str:
    """`path` relative to `top`, a directory above it (the root "/" included)."""
    return path[len(top.rstrip(os.sep)) + 1 :]


def resolve(path: str) -> str | None:
    """The resolved absolute path; None for one the OS rejects (NUL, lone surrogate)."""
    try:
        return os.path.realpath(path)
    except (OSError, ValueError):  # UnicodeEncodeError is a ValueError
        return None


def printable(path: str) -> str:
    """`path` without the lone surrogates os.fsdecode makes of non-UTF-8 names
    (they cannot be encoded for the wire): each bad byte becomes U+FFFD."""
    return os.fsencode(path).decode("utf-8", errors="replace")


def read_regular(path: str, max_bytes: int) -> bytes | None:
    """Up to `max_bytes` of a regular file; None for anything else (a FIFO would
    block the reader) or when unreadable."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    except (OSError, ValueError):
        return None
    with open(fd, "rb") as f:
        try:
            return f.read(max_bytes) if stat.S_ISREG(os.fstat(fd).st_mode) else None
        except OSError:
            return None


def read_gitignore(path: str) -> str | None:
    """The text of a regular .gitignore, up to the last whole line of its first MiB."""
    data = read_regular(path, MAX_GITIGNORE_BYTES)
    if data is None:
        return None
    if len(data) == MAX_GITIGNORE_BYTES:
        data = data[: data.rfind(b"\n") + 1]  # no rule from a cut line
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return None


def read_source(path: str, max_bytes: int) -> str | None:
    """The file's text, or None when it is too big, binary or unreadable."""
    data = read_regular(path, max_bytes + 1)
    if data is None or len(data) > max_bytes or b"\0" in data[:8192]:
        return None
    return data.decode("utf-8", errors="replace")


def core_name(path: str) -> str:
    """`test_parser.py`, `parser_test.go`, `parser.spec.ts` -> `parser`."""
    name = os.path.basename(path).split(".")[0]
    for affix in ("test_", "_test", "tests_", "_tests", "_spec"):
        name = name.removeprefix(affix) if affix.endswith("_") else name.removesuffix(affix)
    return name


def name_affinity(own: str | None, other: str) -> float:
    """A file and its test (or a same-named module elsewhere) are likely related."""
    if own is None:
        return 1.0
    return 1.5 if core_name(own) == core_name(other) else 1.0


class EventHandler(FileSystemEventHandler):
    """Turns watchdog events into debounced paths for the worker."""

    def __init__(self, enqueue: Callable[[str], None]) -> None:
        self._enqueue = enqueue  # the index's: paths under its resolved root

    def on_any_event(self, event: FileSystemEvent) -> None:
        if event.event_type not in ("created", "deleted", "modified", "moved"):
            return  # opened/closed events duplicate "modified"
        if event.is_directory and event.event_type == "modified":
            return  # a child changed: its own event covers it
        for raw in (event.src_path, event.dest_path):
            path = os.fsdecode(raw)
            if path and (event.is_directory or is_source(path) or path.endswith(".gitignore")):
                self._enqueue(path)
