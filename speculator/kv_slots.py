"""Which document's KV the sessions hold, and the slots the others wait in.

The local generator has one target session (and one draft session); each
document (and each refactor's file) has a slot: a saved copy of its KV kept in
RAM (RamSlots, an LRU within a byte bound) and on disk (DiskSlots, across
restarts), speculator/slots.py. Entering a slot saves the live KV under its
key and restores the entered one's, when that beats what the cache holds.
Writing to disk runs on its own thread: hashing tens of MB must not hold the
engine's.

The buffer of a state just restored is kept as a spare, and the next switch
saves the live state into it: a new 43 MB buffer costs 20-100 ms of page
faults on these machines, a reused one 6 ms (issue 63). A slot the writer
thread still holds is never recycled.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt

from .config import EngineConfig
from .slots import (
    DiskSlots,
    RamSlots,
    SavedPrompt,
    SessionState,
    Slot,
    SlotKey,
    SlotTimer,
    default_folder,
)
from .tokens import common_prefix

if TYPE_CHECKING:
    from .headers import Header
    from .session import Session

log = logging.getLogger(__name__)

# An idle warm-up writes the KV slots to disk at most this often.
PERSIST_INTERVAL_S = 30.0


class KvSlots:
    def __init__(
        self,
        session: Session,
        draft_session: Session | None,
        config: EngineConfig,
        fingerprints: Callable[[], tuple[str, str | None]],
        window_of: Callable[[str], int | None],
        header_of: Callable[[str], Header | None] = lambda _name: None,
    ) -> None:
        """`fingerprints`: the target's and the draft's model fingerprints (files
        on disk are keyed by them); `window_of(name)`: where a document's prompt
        window starts, and `header_of(name)`: the snippets its prompt starts with
        (speculator/headers.py), saved with its slot so a restart builds the
        same prompt."""
        self.session = session
        self.draft_session = draft_session
        self.window_of = window_of
        self.header_of = header_of
        self.ram = RamSlots(max(0, config.kv_ram_mb) << 20)
        self.disk: DiskSlots | None = None
        if config.kv_disk_mb > 0:
            folder = Path(os.path.expanduser(config.kv_dir)) if config.kv_dir else default_folder()
            try:
                target, draft = fingerprints()
                self.disk = DiskSlots(folder, target, draft, config.kv_disk_mb << 20)
            except OSError as exc:
                log.warning("KV slots are not kept across restarts: %s", exc)
        self.live_key: SlotKey | None = None  # whose KV the sessions hold now
        # What the sessions held when `live_key` was entered without a restore:
        # another key's cells (already saved under that key) until a sync replaces
        # them. Saved under `live_key` they would read as its KV: a later restore
        # would log a restored document and still evaluate it all (issue 63).
        self._foreign: dict[int, tuple[int, int]] = {}
        self._live_written: tuple[SlotKey, int, int] | None = None
        # Per session: the buffer of the state restored last, for the next save.
        self._spares: dict[int, npt.NDArray[np.uint8]] = {}
        self._writing: set[int] = set()  # id() of the slots handed to the writer
        self._persist_timer = SlotTimer(PERSIST_INTERVAL_S)
        self._writer = ThreadPoolExecutor(1, thread_name_prefix="groundspec-kv-writer")

    def enter(self, key: SlotKey, segments: list[list[int]]) -> None:
        """Make the sessions hold `key`'s KV: save the live state under its key,
        and restore `key`'s saved state when it beats what the cache holds."""
        if key == self.live_key:
            return
        started = time.perf_counter()
        self._stash_live()
        saved = time.perf_counter()
        self.live_key = key
        slot = self.ram.pop(key)
        if slot is None and self.disk is not None:
            slot = self.disk.load(key)
        prompt = [t for seg in segments for t in seg]
        if slot is None or common_prefix(slot.target.cells, prompt) <= common_prefix(
            self.session.cells, prompt
        ):
            self._mark_foreign()
        elif not self._restore(slot):
            self._mark_foreign()
        # bench/workspace_kv.py reads this line: a switch's two costs, apart.
        log.info(
            "entered %s: live KV saved in %.1f ms, restored in %.1f ms",
            _named(key),
            (saved - started) * 1e3,
            (time.perf_counter() - saved) * 1e3,
        )

    def _mark_foreign(self) -> None:
        """The cells the sessions hold now are not the live key's own."""
        self._foreign = {
            id(session): _mark(session.cells)
            for session in (self.session, self.draft_session)
            if session is not None
        }

    def _own(self, session: Session) -> bool:
        """Whether `session` holds cells synced (or restored) for the live key."""
        return bool(session.cells) and self._foreign.get(id(session)) != _mark(session.cells)

    def _restore(self, slot: Slot) -> bool:
        key = slot.key
        self._foreign = {}
        if not self.session.restore_state(
            slot.target.data, slot.target.cells, slot.target.segments
        ):
            log.warning("the saved %s did not restore: evaluating afresh", _named(key))
            return False
        draft_session = self.draft_session
        if draft_session is not None and slot.draft is not None:
            draft = slot.draft
            draft_session.restore_state(draft.data, draft.cells, draft.segments)
        elif draft_session is not None:  # it still holds the previous key's draft KV
            self._foreign = {id(draft_session): _mark(draft_session.cells)}
        if id(slot) not in self._writing:  # the sessions hold copies now
            for session, state in ((self.session, slot.target), (draft_session, slot.draft)):
                if session is not None and state is not None:
                    self._keep_spare(session, state)
        log.info("restored %s (%d tokens)", _named(key), len(slot.target.cells))
        return True

    def restore_saved(self, key: SlotKey) -> list[list[int]] | None:
        """Make the sessions hold `key`'s saved KV as it is; its prompt segments,
        or None (nothing saved, or it did not restore)."""
        if key == self.live_key:
            return None
        slot = self.ram.get(key) or (self.disk.load(key) if self.disk is not None else None)
        if slot is None:
            return None
        self._stash_live()
        self.live_key = key
        self.ram.pop(key)
        if not self._restore(slot):
            return None
        # The prompt's segments (the cells may go on with generated tokens).
        segments = [list(tokens) for _pos, tokens in slot.target.segments]
        return segments or [list(slot.target.cells)]

    def holds(self, key: SlotKey, tokens: list[int]) -> bool:
        """Whether `key`'s KV (live, in RAM or on disk) starts with `tokens`, found
        without restoring it: a slot file's header lists its cells."""
        if key == self.live_key:
            cells = self.session.cells if self._own(self.session) else []
        elif (slot := self.ram.get(key)) is not None:
            cells = slot.target.cells
        else:
            cells = (self.disk.saved_cells(key) if self.disk is not None else None) or []
        return common_prefix(cells, tokens) == len(tokens)

    def saved_prompt(self, name: str) -> SavedPrompt | None:
        """The window start and header saved with a document's completion slot on disk."""
        return self.disk.saved_prompt(("completion", name)) if self.disk is not None else None

    def rename_live(self, key: SlotKey) -> None:
        """The live KV is `key`'s now (a warm-up adopted a new header): the state
        saved under `key` is outdated and dropped."""
        self.ram.pop(key)
        self.live_key = key

    def persist(self) -> int:
        """Write the slots (the live one too) to disk; how many files were written.

        Called at shutdown; a slot already on disk is not rewritten."""
        return self.persist_soon().result()

    def persist_if_due(self) -> None:
        """After an idle warm-up: hand the slots to the writer at most every
        PERSIST_INTERVAL_S."""
        if self._persist_timer.due():
            self.persist_soon()

    def persist_soon(self) -> Future[int]:
        """Hand the slots to the writer thread (the states are copies already)."""
        disk = self.disk
        if disk is None:
            done: Future[int] = Future()
            done.set_result(0)
            return done
        slots = [slot for slot in self.ram.values() if not slot.on_disk]
        live = self._live_slot(reuse=False)  # the spare stays for the next switch
        if live is not None:
            mark = (live.key, len(live.target.cells), hash(tuple(live.target.cells)))
            if mark != self._live_written:
                self._live_written = mark
                slots.append(live)
        writing = self._writing
        writing.update(id(slot) for slot in slots)

        def write() -> int:
            try:
                return sum(disk.save(slot) for slot in slots)
            finally:
                writing.difference_update(id(slot) for slot in slots)

        return self._writer.submit(write)

    def close(self) -> None:
        self._writer.shutdown(wait=True)  # a slot being written is finished first

    def _keep_spare(self, session: Session, state: SessionState) -> None:
        """Keep a restored state's buffer for the session's next save (a buffer
        read from disk is not ours to write)."""
        base = state.data.obj if isinstance(state.data, memoryview) else None
        if isinstance(base, np.ndarray) and base.flags.writeable:
            self._spares[id(session)] = base

    def _state(self, session: Session, reuse: bool) -> SessionState:
        spare = self._spares.pop(id(session), None) if reuse else None
        return SessionState(session.save_state(spare), list(session.cells), list(session.segments))

    def _live_slot(self, reuse: bool = True) -> Slot | None:
        key = self.live_key
        if key is None or not self._own(self.session):
            return None
        draft = self.draft_session
        completion = key[0] == "completion"
        window = self.window_of(key[1]) if completion else None
        header = self.header_of(key[1]) if completion else None
        return Slot(
            key,
            self._state(self.session, reuse),
            self._state(draft, reuse) if draft is not None and self._own(draft) else None,
            window,
            header=list(header.snippets) if header is not None else None,
            header_line=header.line if header is not None else 0,
        )

    def _stash_live(self) -> None:
        if self.ram.limit_bytes and (slot := self._live_slot()) is not None:
            self.ram.put(slot)


def _mark(cells: list[int]) -> tuple[int, int]:
    return len(cells), hash(tuple(cells))


def _named(key: SlotKey) -> str:
    """A slot in the logs: `the completion KV of app.py`; a slot of no document
    (the next-edit instructions, kept for all of them) by its kind alone."""
    kind, path = key
    return f"the {kind} KV of {path}" if path else f"the {kind} KV (every document's)"
