"""A file switch saves the live KV into the buffer of the state restored before
(speculator/kv_slots.py), without a model: no document ever gets another's KV,
and a slot the disk writer still holds is never written over."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from speculator.config import EngineConfig
from speculator.kv_slots import KvSlots
from speculator.session import state_buffer
from speculator.slots import DiskSlots, Slot

STATE_BYTES_PER_CELL = 1000


class Buffers:
    """A session whose KV is bytes derived from its cells, saved the way
    Session.save_state saves it (into the spare buffer when it fits)."""

    def __init__(self) -> None:
        self.cells: list[int] = []
        self.segments: list[Any] = []
        self.kv = b""
        self.into_spare: list[bool] = []

    def sync(self, cells: list[int]) -> None:
        self.cells, self.segments = list(cells), [(0, tuple(cells))]
        self.kv = kv_of(cells)

    def save_state(self, spare: Any = None) -> memoryview:
        buf = state_buffer(len(self.kv), spare)
        self.into_spare.append(buf is spare)
        buf[: len(self.kv)] = np.frombuffer(self.kv, dtype=np.uint8)
        return buf.data[: len(self.kv)]

    def restore_state(self, data: Any, cells: list[int], segments: Any) -> bool:
        self.kv, self.cells, self.segments = bytes(data), list(cells), list(segments)
        return True


def kv_of(cells: list[int]) -> bytes:
    return bytes(c % 251 for c in cells) * STATE_BYTES_PER_CELL


def slots_for(session: Buffers, kv_dir: Path | None = None) -> KvSlots:
    config = EngineConfig(
        kv_ram_mb=64, kv_disk_mb=64 if kv_dir else 0, kv_dir=str(kv_dir) if kv_dir else ""
    )
    return KvSlots(session, None, config, lambda: ("target", None), lambda _name: None)  # type: ignore[arg-type]


def visit(slots: KvSlots, session: Buffers, name: str, cells: list[int]) -> None:
    """Enter the document, then type: its prompt is `cells` now."""
    slots.enter(("completion", name), [cells])
    session.sync(cells)


def test_switches_reuse_the_restored_buffer_and_each_file_gets_its_own_kv() -> None:
    session = Buffers()
    slots = slots_for(session)
    docs = {name: [i * 7 + n for n in range(60 + 5 * i)] for i, name in enumerate("abc")}
    for name, cells in docs.items():  # first visits: nothing to restore
        visit(slots, session, name, cells)
    for round_ in range(3):
        for name in docs:
            docs[name] = docs[name] + [round_]  # a character typed
            slots.enter(("completion", name), [docs[name]])
            assert session.kv == kv_of(docs[name][:-1]), name  # its own KV, whole
            session.sync(docs[name])
    # After the first restore, every save went into the buffer restored before.
    assert session.into_spare[:3] == [False] * 3 and all(session.into_spare[3:])
    slots.close()


def test_a_slot_being_written_to_disk_is_not_recycled(tmp_path: Path) -> None:
    session = Buffers()
    slots = slots_for(session, tmp_path)
    visit(slots, session, "a", list(range(50)))
    visit(slots, session, "b", list(range(100, 160)))  # a waits in RAM
    release, started = threading.Event(), threading.Event()
    real_save = DiskSlots.save

    def slow_save(disk: DiskSlots, slot: Slot) -> bool:
        started.set()
        release.wait(10)
        return real_save(disk, slot)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(DiskSlots, "save", slow_save)
        written = slots.persist_soon()  # a (in RAM) and b (live) go to the writer
        started.wait(10)
        visit(slots, session, "a", list(range(50)) + [7])  # a restored while being written
        visit(slots, session, "b", list(range(100, 160)) + [8])  # a saved: not into a's buffer
        assert session.into_spare[-1] is False
        release.set()
        assert written.result(10) == 2
    loaded = slots.disk.load(("completion", "a")) if slots.disk else None
    assert loaded is not None and bytes(loaded.target.data) == kv_of(list(range(50)))
    slots.close()


def test_the_ram_bound_counts_the_room_left_in_a_buffer() -> None:
    buf = state_buffer(1000, None)
    assert buf.nbytes == 1250  # a quarter more room
    assert state_buffer(1100, buf) is buf and state_buffer(1251, buf) is not buf
    assert state_buffer(800, buf) is not buf  # would waste more than twice the room
    from speculator.slots import SessionState

    assert SessionState(buf.data[:1000], [], []).held_bytes == 1250
