"""Per-document KV slots: saved session states in a RAM LRU and on disk.

The engine keeps one live llama.cpp sequence per model (more live sequences
slow every token: docs/kv-reuse.md). When a request for another document (or
another kind of request) comes, the live state is saved here, and the saved
state of that document is restored if it shares a longer prefix with the new
prompt than the live cells do. Saved slots survive restarts as files in the
user's cache folder, keyed by the model files' fingerprints; a file that does
not match or does not check out is ignored with a log line, never trusted.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import os
import re
import struct
import time
from collections import OrderedDict
from pathlib import Path
from typing import NamedTuple

import msgspec

from . import provision
from .types import Snippet

log = logging.getLogger(__name__)

SlotKey = tuple[str, str]  # (kind: "completion", "refactor", "quick", "header"...; path)
Segments = list[tuple[int, tuple[int, ...]]]  # Session.segments: (position, tokens)

MAGIC = b"GSKVSLT1"
FORMAT_VERSION = 1
_HEADER_LEN = struct.Struct("<I")
_MAX_HEADER_BYTES = 4 << 20
_FINGERPRINT_SAMPLE = 1 << 20
STALE_TMP_S = 600.0  # a temporary file this old is from a process that died writing it
# The folder may be one the user chose (kvDir): only files named as ours are ever deleted.
_SLOT_FILE = re.compile(r"[0-9a-f]{40}\.kv")
_TEMP_FILE = re.compile(r"[0-9a-f]{40}\.tmp\d+")


class SessionState(msgspec.Struct):
    data: bytes | memoryview  # llama.cpp's sequence state (Session.save_state's buffer)
    cells: list[int]
    segments: Segments

    @property
    def held_bytes(self) -> int:
        """The memory it keeps: its whole buffer (Session.save_state leaves room
        in it), or its bytes."""
        base = self.data.obj if isinstance(self.data, memoryview) else self.data
        return int(getattr(base, "nbytes", len(self.data)))


class Slot(msgspec.Struct):
    key: SlotKey
    target: SessionState
    draft: SessionState | None = None
    window_start: int | None = None  # the prompt window's start (engine hysteresis)
    on_disk: bool = False
    # The other files' snippets the prompt starts with, and the cursor line they
    # were chosen for (speculator/headers.py): a restart rebuilds the same prompt.
    header: list[Snippet] | None = None
    header_line: int = 0

    @property
    def nbytes(self) -> int:
        """The memory it holds (the RAM bound counts this)."""
        return self.target.held_bytes + (self.draft.held_bytes if self.draft else 0)

    @property
    def payload_bytes(self) -> int:
        """The states' bytes (what a slot file holds)."""
        return len(self.target.data) + (len(self.draft.data) if self.draft else 0)


class RamSlots:
    """An LRU of slots bounded in bytes. Refactor (and quick-window) slots go
    first: they must never push out a document's completion state."""

    def __init__(self, limit_bytes: int) -> None:
        self.limit_bytes = limit_bytes
        self._slots: OrderedDict[SlotKey, Slot] = OrderedDict()

    @property
    def nbytes(self) -> int:
        return sum(slot.nbytes for slot in self._slots.values())

    def put(self, slot: Slot) -> None:
        self._slots.pop(slot.key, None)
        if slot.nbytes > self.limit_bytes:
            return
        self._slots[slot.key] = slot
        total = self.nbytes
        while total > self.limit_bytes:
            victim = next((k for k in self._slots if k[0] != "completion"), None)
            victim = victim or next(iter(self._slots))
            total -= self._slots.pop(victim).nbytes

    def get(self, key: SlotKey) -> Slot | None:
        return self._slots.get(key)

    def pop(self, key: SlotKey) -> Slot | None:
        return self._slots.pop(key, None)

    def values(self) -> list[Slot]:
        return list(self._slots.values())


class _Header(msgspec.Struct):
    version: int
    kind: str
    path: str
    target_model: str
    draft_model: str | None
    target_cells: list[int]
    target_segments: list[tuple[int, int]]  # (position, length) into the cells
    target_bytes: int
    draft_cells: list[int]
    draft_segments: list[tuple[int, int]]
    draft_bytes: int
    window_start: int | None
    sha256: str  # of the payload (target state, then draft state)
    header: list[Snippet] | None = None
    header_line: int = 0


class SavedPrompt(NamedTuple):
    """What a saved completion slot's prompt was built with (read back at a restart)."""

    window_start: int | None
    header: list[Snippet] | None
    header_line: int


class DiskSlots:
    """Slot files in one folder, bounded in bytes (least recently used go first)."""

    def __init__(
        self, folder: Path, target_model: str, draft_model: str | None, limit_bytes: int
    ) -> None:
        self.folder = folder
        self.target_model = target_model
        self.draft_model = draft_model
        self.limit_bytes = limit_bytes

    def file_for(self, key: SlotKey) -> Path:
        name = "\0".join((key[0], key[1], self.target_model, self.draft_model or ""))
        # surrogatepass: a path from a file name that is not UTF-8 still has one name
        digest = hashlib.sha256(name.encode("utf-8", "surrogatepass")).hexdigest()
        return self.folder / (digest[:40] + ".kv")

    def save(self, slot: Slot) -> bool:
        """Write the slot (mode 0600, atomically); False with a log line on failure."""
        if slot.payload_bytes > self.limit_bytes:
            return False
        draft = slot.draft
        # Written (and hashed) part by part: joining 60 MB into one bytes is a copy.
        parts = [slot.target.data] + ([draft.data] if draft else [])
        digest = hashlib.sha256()
        for part in parts:
            digest.update(part)
        header = _Header(
            version=FORMAT_VERSION,
            kind=slot.key[0],
            path=_storable(slot.key[1]),
            target_model=self.target_model,
            draft_model=self.draft_model,
            target_cells=slot.target.cells,
            target_segments=[(p, len(t)) for p, t in slot.target.segments],
            target_bytes=len(slot.target.data),
            draft_cells=draft.cells if draft else [],
            draft_segments=[(p, len(t)) for p, t in draft.segments] if draft else [],
            draft_bytes=len(draft.data) if draft else 0,
            window_start=slot.window_start,
            sha256=digest.hexdigest(),
            header=slot.header,
            header_line=slot.header_line,
        )
        head = msgspec.json.encode(header)
        path = self.file_for(slot.key)
        tmp = path.with_suffix(f".tmp{os.getpid()}")
        size = len(MAGIC) + _HEADER_LEN.size + len(head) + slot.payload_bytes
        try:
            self.folder.mkdir(mode=0o700, parents=True, exist_ok=True)
            # Make room first, so the folder stays within its bound while the new
            # file is written too. The key's old file stays until the new one
            # replaces it (a failed write keeps it), unless only its place makes room.
            if not self._trim(room=size, keep=path):
                path.unlink(missing_ok=True)
                self._trim(room=size)
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            with os.fdopen(fd, "wb") as f:
                f.write(MAGIC + _HEADER_LEN.pack(len(head)) + head)
                for part in parts:
                    f.write(part)
            os.replace(tmp, path)
        except OSError as exc:
            log.warning("could not save a KV slot to %s: %s", path, exc)
            with contextlib.suppress(OSError):
                tmp.unlink(missing_ok=True)
            return False
        slot.on_disk = True
        return True

    def saved_prompt(self, key: SlotKey) -> SavedPrompt | None:
        found = self._read_header(self.file_for(key), key)
        if found is None:
            return None
        header = found[0]
        return SavedPrompt(header.window_start, header.header, header.header_line)

    def saved_cells(self, key: SlotKey) -> list[int] | None:
        """The target tokens saved for `key`, read from the file's header alone."""
        found = self._read_header(self.file_for(key), key)
        return found[0].target_cells if found is not None else None

    def load(self, key: SlotKey) -> Slot | None:
        """The slot saved for `key`, or None if there is none or it does not check out."""
        path = self.file_for(key)
        found = self._read_header(path, key)
        if found is None:
            return None
        header, offset = found
        expected = header.target_bytes + header.draft_bytes
        try:
            with path.open("rb") as f:
                # The header's sizes are checked against the file before reading:
                # a damaged header must not ask for terabytes.
                if os.fstat(f.fileno()).st_size - offset != expected:
                    log.warning("ignoring KV slot %s: truncated or too long", path.name)
                    return None
                f.seek(offset)
                payload = f.read(expected)
        except OSError as exc:
            log.warning("ignoring KV slot %s: %s", path.name, exc)
            return None
        if hashlib.sha256(payload).hexdigest() != header.sha256:
            log.warning("ignoring KV slot %s: checksum mismatch (corrupt)", path.name)
            return None
        with contextlib.suppress(OSError):  # a read-only folder, or another server's trim
            os.utime(path)  # least recently used goes first
        view = memoryview(payload)  # sliced without copies
        target = SessionState(
            view[: header.target_bytes],
            header.target_cells,
            _segments(header.target_cells, header.target_segments),
        )
        draft = None
        if header.draft_bytes:
            draft = SessionState(
                view[header.target_bytes :],
                header.draft_cells,
                _segments(header.draft_cells, header.draft_segments),
            )
        return Slot(
            key,
            target,
            draft,
            header.window_start,
            on_disk=True,
            header=header.header,
            header_line=header.header_line,
        )

    def _read_header(self, path: Path, key: SlotKey) -> tuple[_Header, int] | None:
        try:
            with path.open("rb") as f:
                start = f.read(len(MAGIC) + _HEADER_LEN.size)
                if len(start) < len(MAGIC) + _HEADER_LEN.size or not start.startswith(MAGIC):
                    raise ValueError("not a KV slot file")
                (length,) = _HEADER_LEN.unpack(start[len(MAGIC) :])
                if length > _MAX_HEADER_BYTES:
                    raise ValueError("header too large")
                header = msgspec.json.decode(f.read(length), type=_Header)
        except FileNotFoundError:
            return None
        except (OSError, ValueError, msgspec.DecodeError) as exc:
            log.warning("ignoring KV slot %s: %s", path.name, exc)
            return None
        problem = self._mismatch(header, key)
        if problem:
            log.warning("ignoring KV slot %s: %s", path.name, problem)
            return None
        return header, len(MAGIC) + _HEADER_LEN.size + length

    def _mismatch(self, header: _Header, key: SlotKey) -> str | None:
        if header.version != FORMAT_VERSION:
            return f"format version {header.version}"
        if header.target_model != self.target_model:
            return "saved for another target model"
        if header.draft_bytes and header.draft_model != self.draft_model:
            return "saved for another draft model"
        if (header.kind, header.path) != (key[0], _storable(key[1])):
            return "saved for another document"
        if header.target_bytes < 0 or header.draft_bytes < 0:
            return "negative payload sizes"
        for cells, segments in (
            (header.target_cells, header.target_segments),
            (header.draft_cells, header.draft_segments),
        ):
            if any(p < 0 or n < 0 or p + n > len(cells) for p, n in segments):
                return "segments outside the saved tokens"
        return None

    def _trim(self, room: int = 0, keep: Path | None = None) -> bool:
        """Delete the least recently used slot files (never `keep`) until the
        folder fits its bound with `room` bytes to spare, and temporary files
        that a killed process left behind. True if it fits."""
        now = time.time()
        for tmp in self._own_files(_TEMP_FILE):
            with contextlib.suppress(OSError):
                if now - tmp.stat().st_mtime > STALE_TMP_S:
                    tmp.unlink()
        files = []
        for path in self._own_files(_SLOT_FILE):
            with contextlib.suppress(OSError):  # gone meanwhile (another server's trim)
                info = path.stat()
                files.append((info.st_mtime, info.st_size, path))
        total = sum(size for _m, size, _p in files)
        for _mtime, size, path in sorted(files):
            if total + room <= self.limit_bytes:
                break
            if path != keep:
                with contextlib.suppress(OSError):
                    path.unlink()
                total -= size
        return total + room <= self.limit_bytes

    def _own_files(self, name: re.Pattern[str]) -> list[Path]:
        """The regular files in the folder named as this class names them."""
        try:
            entries = list(os.scandir(self.folder))
        except OSError:
            return []
        return [
            Path(e.path)
            for e in entries
            if name.fullmatch(e.name) and e.is_file(follow_symlinks=False)
        ]

    @property
    def nbytes(self) -> int:
        total = 0
        for path in self._own_files(_SLOT_FILE):
            with contextlib.suppress(OSError):
                total += path.stat().st_size
        return total


def _storable(path: str) -> str:
    """`path` as JSON can hold it: the lone surrogates of a file name that is not
    UTF-8 (os.fsdecode) become backslash escapes."""
    return path.encode("utf-8", "surrogatepass").decode("utf-8", "backslashreplace")


def _segments(cells: list[int], spans: list[tuple[int, int]]) -> Segments:
    return [(p, tuple(cells[p : p + n])) for p, n in spans]


def default_folder() -> Path:
    """$GROUNDSPEC_CACHE/kv-slots, or kv-slots beside the default models folder."""
    return provision.beside_models("kv-slots")


def model_fingerprint(path: Path) -> str:
    """Cheap identity of a model file: size, mtime and the first and last MiB.

    A re-assembled or replaced file gets a new fingerprint, so its slots are
    never restored onto other weights."""
    stat = path.stat()
    digest = hashlib.sha256(f"{stat.st_size}:{stat.st_mtime_ns}".encode())
    with path.open("rb") as f:
        digest.update(f.read(_FINGERPRINT_SAMPLE))
        f.seek(max(0, stat.st_size - _FINGERPRINT_SAMPLE))
        digest.update(f.read(_FINGERPRINT_SAMPLE))
    return digest.hexdigest()[:32]


class SlotTimer:
    """At most one idle save every `interval_s` (a save hashes tens of MB)."""

    def __init__(self, interval_s: float) -> None:
        self.interval_s = interval_s
        self._last = 0.0

    def due(self) -> bool:
        now = time.monotonic()
        if now - self._last < self.interval_s:
            return False
        self._last = now
        return True
