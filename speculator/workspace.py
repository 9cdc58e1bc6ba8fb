"""Workspace index: the project's source files, chunked, for grounding completions.

`WorkspaceIndex` implements `ContextProvider`: `related(path, query, limit)`
returns the chunks of OTHER files most similar to the text around the cursor
(the test of the function being written, a sibling module with the same
pattern). The engine puts them ahead of the FIM window and into its
prompt-lookup corpus.

Threads: one worker thread owns every write (the initial scan, then the
debounced watchdog events, one file or one subtree at a time); the request
thread only reads, under a lock held for the few milliseconds of scoring.
See docs/workspace.md for the design and measured memory/latency.
"""

from __future__ import annotations

import heapq
import logging
import math
import os
import stat
import threading
import time
from array import array
from collections.abc import Iterator
from typing import NamedTuple

from cachetools import LRUCache
from watchdog.observers import Observer
from watchdog.observers.api import BaseObserver, ObservedWatch

from .chunks import Chunk, identifiers, split_lines
from .types import Snippet
from .workspace_files import (
    EventHandler,
    IgnoreRules,
    IndexLimits,
    is_source,
    name_affinity,
    printable,
    read_source,
    resolve,
    skip_dir,
    stat_of,
    under,
)

log = logging.getLogger(__name__)

MAX_TOP_WATCHES = 16  # inotify instances per index, beyond it one recursive watch
STICKY = 1.25  # score bonus for chunks returned last time: keeps the prompt prefix stable
MAX_LAST_ANSWERS = 64  # documents whose last related() answer is kept (STICKY)


# ---------------------------------------------------------------- the index


class _FileEntry(NamedTuple):
    mtime_ns: int
    size: int
    chunk_ids: tuple[int, ...]


class WorkspaceIndex:
    """A bounded, watched index of the source files under `root`."""

    def __init__(self, root: str, limits: IndexLimits | None = None, *, watch: bool = True):
        self.root = os.path.realpath(root)
        self.limits = limits or IndexLimits()
        self._watch = watch
        # Guarded by _lock (written by the worker, read by related()).
        self._lock = threading.Lock()
        self._files: dict[str, _FileEntry] = {}
        self._chunks: dict[int, Chunk] = {}
        # identifier -> ids of the chunks that contain it, ascending; an array
        # costs 4 bytes an id where a set costs ~40 (and most lists hold 1 id)
        self._postings: dict[str, array[int]] = {}
        self._total_chars = 0
        self._total_tokens = 0
        self._next_id = 0
        # The last answer per path, as (path, start_line): survives re-indexing.
        self._last: LRUCache[str | None, list[tuple[str, int]]] = LRUCache(MAX_LAST_ANSWERS)
        # Worker thread only.
        self.rules = IgnoreRules(self.root)
        self._observer: BaseObserver | None = None
        self._handler = EventHandler(self._enqueue)
        self._watches: dict[str, ObservedWatch] = {}  # top-level directory -> watch
        self._full_logged = False
        # Guarded by _wake: path -> (first event, time it may be synced).
        self._wake = threading.Condition()
        self._pending: dict[str, tuple[float, float]] = {}
        self._stopping = False
        self._ready = threading.Event()
        self._worker: threading.Thread | None = None

    # -- lifecycle

    def start(self) -> WorkspaceIndex:
        """Scan and watch in a background thread; returns at once."""
        self._worker = threading.Thread(target=self._run, name="workspace-index", daemon=True)
        self._worker.start()
        return self

    def wait_ready(self, timeout: float | None = None) -> bool:
        """True once the initial scan has finished."""
        return self._ready.wait(timeout)

    def is_ready(self) -> bool:
        """Whether the initial scan has finished (speculator/headers.py asks)."""
        return self._ready.is_set()

    def stop(self, timeout: float = 5.0) -> None:
        """Stop the worker, which stops the observer; the index stays readable.

        Safe at any moment and more than once. Waits at most `timeout` seconds:
        a worker still busy then (e.g. in a slow file system call) is a daemon
        thread that ends on its own and does not keep the process alive.
        """
        with self._wake:
            self._stopping = True
            self._wake.notify_all()
        worker = self._worker
        if worker is not None and worker is not threading.current_thread() and worker.is_alive():
            worker.join(timeout)

    def __enter__(self) -> WorkspaceIndex:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- queries (any thread)

    def related(self, path: str | None, query: str, limit: int) -> list[Snippet]:
        """Up to `limit` chunks of other files most similar to `query`.

        Chunks returned for `path` last time come first, in the same order, while
        they stay among the best (so the prompt prefix built from them is stable).
        Snippet paths are relative to the root, with `/` separators.
        """
        if limit <= 0:
            return []
        own = resolve(path) if path else None  # None also for a path the OS rejects
        words = identifiers(query)
        with self._lock:
            chosen = self._choose(own, self._score(words, own), limit)
            return [self._snippet(self._chunks[cid]) for cid in chosen]

    def stats(self) -> dict[str, int]:
        with self._lock:
            return {
                "files": len(self._files),
                "chunks": len(self._chunks),
                "chars": self._total_chars,
                "identifiers": len(self._postings),
                "postings": self._total_tokens,
            }

    def files(self) -> list[str]:
        """Indexed paths (absolute), sorted."""
        with self._lock:
            return sorted(self._files)

    def _score(self, words: tuple[str, ...], own: str | None) -> dict[int, float]:
        """Scores of the best candidate chunks outside `own`, higher is better."""
        raw = self._overlap(words)
        own_entry = self._files.get(own) if own else None
        for cid in own_entry.chunk_ids if own_entry else ():
            raw.pop(cid, None)
        best = heapq.nlargest(self.limits.candidates, raw, key=raw.__getitem__)
        mean = self._total_tokens / max(1, len(self._chunks))
        affinity: dict[str, float] = {}
        scores = {}
        for cid in best:
            chunk = self._chunks[cid]
            if chunk.path not in affinity:
                affinity[chunk.path] = name_affinity(own, chunk.path)
            # BM25-like length normalisation: big chunks match more by chance.
            norm = 0.5 + 0.5 * len(chunk.tokens) / mean
            scores[cid] = raw[cid] * affinity[chunk.path] / norm
        return scores

    def _overlap(self, words: tuple[str, ...]) -> dict[int, float]:
        """Sum of the IDF of the identifiers each chunk shares with `words`."""
        n = len(self._chunks)
        lists = sorted((self._postings[w] for w in words if w in self._postings), key=len)
        budget = self.limits.query_budget
        raw: dict[int, float] = {}
        for ids in lists:  # rarest identifiers first; common ones fall out of the budget
            if len(ids) > budget:
                break
            budget -= len(ids)
            weight = math.log(1 + n / len(ids))
            for cid in ids:
                raw[cid] = raw.get(cid, 0.0) + weight
        return raw

    def _choose(self, own: str | None, scores: dict[int, float], limit: int) -> list[int]:
        """The `limit` best chunks; last answer's survivors first, in their old order."""
        chunks = self._chunks

        def where(cid: int) -> tuple[str, int]:
            return chunks[cid].path, chunks[cid].start_line

        place = {key: i for i, key in enumerate(self._last.get(own, []))}
        for cid in scores:
            if where(cid) in place:
                scores[cid] *= STICKY
        best = heapq.nsmallest(limit, scores, key=lambda c: (-scores[c], where(c)))
        # sorted() is stable: survivors by their old place, then new ones by score.
        chosen = sorted(best, key=lambda c: place.get(where(c), len(place)))
        self._last[own] = [where(c) for c in chosen]
        return chosen

    def _snippet(self, chunk: Chunk) -> Snippet:
        rel = os.path.relpath(chunk.path, self.root).replace(os.sep, "/")
        return Snippet(path=printable(rel), text=chunk.text)

    # -- the worker thread

    def _run(self) -> None:
        try:
            self._index_and_follow()
        finally:
            self._stop_observer()

    def _index_and_follow(self) -> None:
        started = time.monotonic()
        if self._watch and not self._stopping:
            self._start_observer()  # before the scan, so no edit falls between
        self._scan_tree(self.root)
        self._ready.set()
        stats = self.stats()
        log.info(
            "workspace %s: %d files, %d chunks in %.2f s",
            self.root,
            stats["files"],
            stats["chunks"],
            time.monotonic() - started,
        )
        while (paths := self._next_due()) is not None:
            for path in paths:
                self._sync(path)

    def _next_due(self) -> list[str] | None:
        """Block until some pending paths are due; None when stopping."""
        with self._wake:
            while not self._stopping:
                now = time.monotonic()
                due = sorted(p for p, (_, at) in self._pending.items() if at <= now)
                if due:
                    for path in due:
                        del self._pending[path]
                    return due
                wait = min((at for _, at in self._pending.values()), default=now + 3600) - now
                self._wake.wait(wait)
            return None

    def schedule(self, path: str) -> None:
        """Re-read `path` (file or directory) soon, e.g. on didSave when not watching."""
        resolved = resolve(path)
        if resolved is not None:  # a path the OS rejects names no file
            self._enqueue(resolved)

    def _enqueue(self, path: str) -> None:
        """Queue an absolute, resolved path; bursts on one path coalesce."""
        now = time.monotonic()
        with self._wake:
            first, _ = self._pending.get(path, (now, now))
            # Trailing debounce, but a file written continuously is still synced.
            at = min(now + self.limits.debounce_s, first + 5 * self.limits.debounce_s)
            self._pending[path] = (first, at)
            self._wake.notify()

    def _sync(self, path: str) -> None:
        """Make the index agree with the disk for one path (file, directory or gone)."""
        directory = os.path.dirname(path)
        if os.path.basename(path) == ".gitignore" and not self.rules.ignored(directory, True):
            self._scan_tree(directory)  # reloads the rules and re-applies them below
            if directory == self.root:
                self._watch_top_dirs()  # a directory may have been un-ignored
            return
        try:
            st: os.stat_result | None = os.lstat(path)
        except OSError:
            st = None
        if st is not None and stat.S_ISDIR(st.st_mode) and not self.rules.ignored(path, True):
            self._unwatch_top_dir(path)  # it may be a new directory at an old path
            self._watch_top_dir(path)
            self._scan_tree(path)
        elif st is not None and stat.S_ISREG(st.st_mode) and is_source(path):
            if self.rules.ignored(path, False):
                self._remove_under(path)
            else:
                self._index_file(path, st)
        else:
            self._unwatch_top_dir(path)
            self._remove_under(path)

    def _scan_tree(self, top: str) -> None:
        """Index new and changed files under `top`, drop the ones no longer there."""
        found = dict(self._walk(top))
        with self._lock:
            stale = [p for p in self._files if under(p, top) and p not in found]
        for path in stale:
            self._remove(path)
        for path, st in found.items():
            if self._stopping:
                return
            self._index_file(path, st)

    def _walk(self, top: str) -> Iterator[tuple[str, os.stat_result]]:
        """Source files under `top` in sorted order, pruning ignored directories."""
        stack = [top]
        while stack and not self._stopping:
            directory = stack.pop()
            self.rules.load(directory)
            try:
                entries = sorted(os.scandir(directory), key=lambda e: e.name)
            except OSError:
                continue
            subdirs = []
            for entry in entries:
                if entry.is_dir(follow_symlinks=False):
                    if not skip_dir(entry.name) and not self.rules.matches(entry.path, True):
                        subdirs.append(entry.path)
                elif entry.is_file(follow_symlinks=False) and is_source(entry.name):
                    st = stat_of(entry)
                    if st is not None and not self.rules.matches(entry.path, False):
                        yield entry.path, st
            stack.extend(reversed(subdirs))

    def _index_file(self, path: str, st: os.stat_result) -> None:
        entry = self._files.get(path)  # only this thread writes _files
        if entry is not None and (entry.mtime_ns, entry.size) == (st.st_mtime_ns, st.st_size):
            return
        if st.st_size > self.limits.max_file_bytes or not self._has_room(entry, st.st_size):
            self._remove(path)  # not read: a full index must not read every file
            return
        text = read_source(path, self.limits.max_file_bytes) if st.st_size else ""
        if text is None:
            self._remove(path)
            return
        pieces = split_lines(text, self.limits.chunk_lines, self.limits.chunk_chars)
        chunks = [Chunk(path, start, piece) for start, piece in pieces]
        with self._lock:
            self._remove_locked(path)
            if self._fits(chunks):
                self._add_locked(path, st, chunks)

    def _has_room(self, entry: _FileEntry | None, size: int) -> bool:
        """Could a file of `size` bytes fit, replacing `entry`? (before reading it)

        A file has at most as many characters as bytes, and a non-empty one
        makes at least one chunk.
        """
        files, chunks, chars = len(self._files), len(self._chunks), self._total_chars
        if entry is not None:  # its old version makes way
            files -= 1
            chunks -= len(entry.chunk_ids)
            chars -= sum(len(self._chunks[cid].text) for cid in entry.chunk_ids)
        return self._within(files + 1, chunks + int(size > 0), chars + size)

    def _fits(self, chunks: list[Chunk]) -> bool:
        added = sum(len(c.text) for c in chunks)
        return self._within(
            len(self._files) + 1, len(self._chunks) + len(chunks), self._total_chars + added
        )

    def _within(self, files: int, chunks: int, chars: int) -> bool:
        """Are these totals within the limits? Warns once when they are not."""
        limits = self.limits
        if (
            files <= limits.max_files
            and chunks <= limits.max_chunks
            and chars <= limits.max_total_chars
        ):
            return True
        if not self._full_logged:
            log.warning(
                "workspace index full (%d files, %d chunks, %d chars); skipping more files",
                len(self._files),
                len(self._chunks),
                self._total_chars,
            )
            self._full_logged = True
        return False

    def _add_locked(self, path: str, st: os.stat_result, chunks: list[Chunk]) -> None:
        chunk_ids = []
        for chunk in chunks:
            cid = self._next_id
            self._next_id += 1
            chunk_ids.append(cid)
            self._chunks[cid] = chunk
            for word in chunk.tokens:
                ids = self._postings.get(word)
                if ids is None:
                    self._postings[word] = array("I", (cid,))
                else:
                    ids.append(cid)
            self._total_chars += len(chunk.text)
            self._total_tokens += len(chunk.tokens)
        self._files[path] = _FileEntry(st.st_mtime_ns, st.st_size, tuple(chunk_ids))

    def _remove(self, path: str) -> None:
        with self._lock:
            self._remove_locked(path)

    def _remove_locked(self, path: str) -> None:
        entry = self._files.pop(path, None)
        if entry is None:
            return
        for cid in entry.chunk_ids:
            chunk = self._chunks.pop(cid)
            for word in chunk.tokens:
                ids = self._postings[word]
                ids.remove(cid)
                if not ids:
                    del self._postings[word]
            self._total_chars -= len(chunk.text)
            self._total_tokens -= len(chunk.tokens)

    def _remove_under(self, path: str) -> None:
        with self._lock:
            for indexed in [p for p in self._files if under(p, path)]:
                self._remove_locked(indexed)

    # -- watching

    def _start_observer(self) -> None:
        """Watch the root flat and each top-level source directory recursively.

        A single recursive watch on the root would also put inotify watches on
        every directory of node_modules/ and .venv/; this prunes them. Each
        watch is one inotify instance (128 per user by default), so a root
        with many top-level directories is watched recursively instead.
        """
        self.rules.load(self.root)
        try:
            # watchdog adds the scheduled watches only in start(): both raise
            # OSError for the inotify limits or a root that is gone.
            self._observer = Observer()
            recursive = len(self._top_dirs()) > MAX_TOP_WATCHES
            self._schedule_watch(self.root, recursive=recursive)
            self._watch_top_dirs()
            self._observer.start()
        except OSError as e:
            log.warning("cannot watch %s: %s; edits will not be seen", self.root, e)
            self._stop_observer()

    def _stop_observer(self) -> None:
        """Stop the observer, started or not (stop() also frees its inotify instance)."""
        observer, self._observer = self._observer, None
        self._watches.clear()
        if observer is None:
            return
        observer.stop()
        if observer.is_alive():
            observer.join(5.0)

    def _top_dirs(self) -> list[str]:
        try:
            entries = sorted(os.scandir(self.root), key=lambda e: e.name)
        except OSError:
            return []
        return [
            e.path
            for e in entries
            if e.is_dir(follow_symlinks=False) and not self.rules.ignored(e.path, True)
        ]

    def _watch_top_dirs(self) -> None:
        for path in self._top_dirs():
            self._watch_top_dir(path)

    def _schedule_watch(self, path: str, recursive: bool) -> None:
        if self._observer is None:
            return
        try:
            self._watches[path] = self._observer.schedule(self._handler, path, recursive=recursive)
        except OSError as e:  # e.g. the inotify watch or instance limit
            log.warning("cannot watch %s: %s; edits there will not be seen", path, e)

    def _watch_top_dir(self, path: str) -> None:
        root_watch = self._watches.get(self.root)
        if root_watch is not None and root_watch.is_recursive:
            return  # covered already
        if os.path.dirname(path) == self.root and path not in self._watches:
            self._schedule_watch(path, recursive=True)

    def _unwatch_top_dir(self, path: str) -> None:
        if path == self.root or self._observer is None:
            return
        watch = self._watches.pop(path, None)
        if watch is not None:
            try:
                self._observer.unschedule(watch)
            except (KeyError, OSError):
                pass  # the emitter already stopped when its directory went away
