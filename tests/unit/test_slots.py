"""Per-document KV slots without a model: the LRU bounds and the slot files."""

import errno
import hashlib
import json
import logging
import os
import stat
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from speculator.slots import (
    _HEADER_LEN,
    MAGIC,
    DiskSlots,
    RamSlots,
    SessionState,
    Slot,
    model_fingerprint,
)
from speculator.types import Snippet


def _slot(kind: str, path: str, nbytes: int, fill: int = 1, window: int | None = 7) -> Slot:
    cells = list(range(10))
    target = SessionState(bytes([fill]) * nbytes, cells, [(0, tuple(cells[:4])), (4, (4, 5))])
    draft = SessionState(bytes([fill + 1]) * (nbytes // 2), cells[:6], [(0, (0, 1, 2))])
    return Slot((kind, path), target, draft, window)


def test_ram_slots_stay_within_their_byte_bound_least_recent_first() -> None:
    ram = RamSlots(limit_bytes=400)
    for name in "abc":
        ram.put(_slot("completion", name, 100))  # 150 bytes each with the draft
    assert ram.get(("completion", "a")) is None
    assert ram.get(("completion", "b")) is not None and ram.get(("completion", "c")) is not None
    assert ram.nbytes <= 400
    ram.put(_slot("completion", "huge", 1000))  # larger than the bound: not kept
    assert ram.get(("completion", "huge")) is None and ram.nbytes == 300


def test_a_refactor_never_pushes_out_a_documents_completion_state() -> None:
    ram = RamSlots(limit_bytes=400)
    ram.put(_slot("completion", "a.py", 100))
    ram.put(_slot("refactor", "a.py", 100))
    ram.put(_slot("completion", "b.py", 100))  # over the bound: the refactor goes
    assert ram.get(("refactor", "a.py")) is None
    assert ram.get(("completion", "a.py")) is not None


def _with_header(data: bytes, **changes: object) -> bytes:
    """A slot file with fields of its JSON header changed (a damaged header)."""
    start = len(MAGIC) + _HEADER_LEN.size
    (length,) = _HEADER_LEN.unpack(data[len(MAGIC) : start])
    header = json.loads(data[start : start + length]) | changes
    head = json.dumps(header).encode()
    return MAGIC + _HEADER_LEN.pack(len(head)) + head + data[start + length :]


@pytest.fixture
def disk(tmp_path: Path) -> DiskSlots:
    return DiskSlots(tmp_path / "kv", "target-fp", "draft-fp", limit_bytes=10_000)


def test_a_saved_slot_loads_back_exactly_and_privately(disk: DiskSlots) -> None:
    slot = _slot("completion", "/src/a.py", 500)
    assert disk.save(slot)
    loaded = disk.load(("completion", "/src/a.py"))
    assert loaded is not None
    assert loaded.target == slot.target and loaded.draft == slot.draft
    saved = disk.saved_prompt(("completion", "/src/a.py"))
    assert loaded.window_start == 7 and saved is not None and saved.window_start == 7
    mode = stat.S_IMODE(os.stat(disk.file_for(slot.key)).st_mode)
    assert mode == 0o600
    assert disk.load(("refactor", "/src/a.py")) is None  # another kind: another file


def test_the_prompt_header_is_saved_with_the_slot(disk: DiskSlots) -> None:
    """A restart rebuilds the prompt the saved KV holds: its snippets come back."""
    slot = _slot("completion", "/src/a.py", 100)
    slot.header = [Snippet("b.py", "def b():\n    return 1\n"), Snippet("c.py", "C = 2\n")]
    slot.header_line = 41
    assert disk.save(slot)
    saved = disk.saved_prompt(("completion", "/src/a.py"))
    assert saved is not None
    assert saved.header == slot.header and saved.header_line == 41
    loaded = disk.load(("completion", "/src/a.py"))
    assert loaded is not None and loaded.header == slot.header
    assert disk.saved_prompt(("completion", "/src/other.py")) is None


def test_another_models_file_is_refused(
    disk: DiskSlots, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    key = ("completion", "/src/a.py")
    other = DiskSlots(disk.folder, "other-target-fp", "draft-fp", limit_bytes=10_000)
    assert other.save(_slot(*key, 500))
    # Even under this model's file name, the header's fingerprint refuses it.
    other.file_for(key).rename(disk.file_for(key))
    with caplog.at_level(logging.WARNING):
        assert disk.load(key) is None
    assert "another target model" in caplog.text


@pytest.mark.parametrize(
    ("damage", "message"),
    [
        (lambda b: b[:-10], "truncated"),
        (lambda b: b[:-5] + b"XXXXX", "checksum"),
        (lambda b: b[:20] + b"\xff" * 8 + b[28:], "ignoring"),
        (lambda b: b"NOTASLOT" + b[8:], "not a KV slot"),
        (lambda b: b"", "not a KV slot"),
        (lambda b: _with_header(b, target_bytes=2**40), "truncated or too long"),
        (lambda b: _with_header(b, target_bytes=2**63 - 1), "truncated or too long"),
        (lambda b: _with_header(b, target_bytes=-5), "negative payload sizes"),
    ],
)
def test_a_damaged_file_is_refused_with_a_log_line(
    disk: DiskSlots, damage, message: str, caplog: pytest.LogCaptureFixture
) -> None:
    key = ("completion", "/src/a.py")
    assert disk.save(_slot(*key, 500))
    path = disk.file_for(key)
    path.write_bytes(damage(path.read_bytes()))
    with caplog.at_level(logging.WARNING):
        assert disk.load(key) is None
    assert message in caplog.text


def test_the_slot_folder_stays_within_its_byte_bound(disk: DiskSlots) -> None:
    for i in range(12):
        assert disk.save(_slot("completion", f"/src/{i}.py", 1000, fill=i))
        assert disk.nbytes <= disk.limit_bytes
    assert disk.load(("completion", "/src/11.py")) is not None
    assert disk.load(("completion", "/src/0.py")) is None  # the oldest went first


def test_the_slot_folder_stays_within_its_bound_while_a_file_is_written(
    disk: DiskSlots, monkeypatch: pytest.MonkeyPatch
) -> None:
    """bench.slots_memory saw the folder one file over its bound: the new file was
    written before the least recently used ones were deleted."""
    import speculator.slots as slots_module

    sizes: list[int] = []
    real_replace = os.replace

    def replace(src: str | Path, dst: str | Path) -> None:
        sizes.append(sum(p.stat().st_size for p in disk.folder.iterdir()))  # tmp file included
        real_replace(src, dst)

    monkeypatch.setattr(slots_module.os, "replace", replace)
    for i in range(12):
        assert disk.save(_slot("completion", f"/src/{i % 5}.py", 1000, fill=i))
    assert len(sizes) == 12 and max(sizes) <= disk.limit_bytes


def test_an_unwritable_folder_is_a_log_line_not_a_crash(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("")
    disk = DiskSlots(blocker / "kv", "t", None, limit_bytes=10_000)
    with caplog.at_level(logging.WARNING):
        assert not disk.save(_slot("completion", "a.py", 10))
    assert "could not save" in caplog.text


def test_the_model_fingerprint_changes_with_the_file(tmp_path: Path) -> None:
    model = tmp_path / "m.gguf"
    model.write_bytes(b"GGUF" + b"\0" * 3_000_000)
    first = model_fingerprint(model)
    assert model_fingerprint(model) == first
    with model.open("r+b") as f:
        f.seek(2_999_000)
        f.write(b"changed")
    os.utime(model, ns=(os.stat(model).st_atime_ns, os.stat(model).st_mtime_ns))
    assert model_fingerprint(model) != first


def test_the_kv_settings_come_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    from speculator.config import EngineConfig

    monkeypatch.setenv("GROUNDSPEC_KV_RAM_MB", "64")
    monkeypatch.setenv("GROUNDSPEC_KV_DISK_MB", "0")
    monkeypatch.setenv("GROUNDSPEC_KV_DIR", "/tmp/slots")
    monkeypatch.setenv("GROUNDSPEC_QUICK_WINDOW_TOKENS", "400")
    config = EngineConfig().with_env()
    assert (config.kv_ram_mb, config.kv_disk_mb, config.kv_dir) == (64, 0, "/tmp/slots")
    assert config.quick_window_tokens == 400


def test_a_temporary_file_left_by_a_killed_writer_is_removed(disk: DiskSlots) -> None:
    disk.folder.mkdir(parents=True)
    left = disk.folder / ("0" * 40 + ".tmp123")
    left.write_bytes(b"half a slot")
    os.utime(left, (0, 0))
    assert disk.save(_slot("completion", "a.py", 10))
    assert not left.exists()


def test_only_slot_files_are_ever_deleted(disk: DiskSlots) -> None:
    """kvDir may be a folder the user chose: a Kivy `main.kv`, a `report.tmpl` or
    a folder named `old.kv` is not ours to delete, however full the folder is."""
    disk.folder.mkdir(parents=True)
    theirs = [disk.folder / "main.kv", disk.folder / "report.tmpl", disk.folder / "n.tmp.txt"]
    for path in theirs:
        path.write_bytes(b"x" * 3000)
        os.utime(path, (0, 0))
    (disk.folder / "old.kv").mkdir()
    for i in range(12):
        assert disk.save(_slot("completion", f"/src/{i}.py", 1000, fill=i))
    assert all(path.exists() for path in theirs) and (disk.folder / "old.kv").is_dir()


def test_a_failed_save_keeps_the_slot_saved_before(
    disk: DiskSlots, monkeypatch: pytest.MonkeyPatch
) -> None:
    key = ("completion", "/src/a.py")
    assert disk.save(_slot(*key, 500, fill=1))
    import speculator.slots as slots_module

    def full(*_args: object) -> int:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(slots_module.os, "open", full)
    assert not disk.save(_slot(*key, 900, fill=2))
    monkeypatch.undo()
    loaded = disk.load(key)
    assert loaded is not None and loaded.target.data == bytes([1]) * 500


def test_a_slot_loads_when_its_time_cannot_be_touched(
    disk: DiskSlots, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A read-only folder, or another server's trim between the read and utime."""
    key = ("completion", "/src/a.py")
    assert disk.save(_slot(*key, 500))
    import speculator.slots as slots_module

    def gone(*_args: object) -> None:
        raise FileNotFoundError(errno.ENOENT, "No such file or directory")

    monkeypatch.setattr(slots_module.os, "utime", gone)
    assert disk.load(key) is not None


def test_a_path_that_is_not_utf8_has_a_slot_file(disk: DiskSlots) -> None:
    key = ("completion", "/src/caf\udce9.py")  # os.fsdecode of a Latin-1 name
    assert disk.save(_slot(*key, 100))
    assert disk.load(key) is not None


def _buffer_slot(path: str, nbytes: int, fill: int) -> Slot:
    """A slot whose states are views of uninitialized buffers, as Session.save_state
    hands them out (no bytes copy on a file switch)."""
    cells = list(range(10))
    states = []
    for n in (nbytes, nbytes // 2):
        buf = np.empty(n, dtype=np.uint8)
        buf[:] = fill
        states.append(SessionState(buf.data[:n], cells, [(0, tuple(cells[:4]))]))
    return Slot(("completion", path), states[0], states[1], 3)


def test_a_slot_of_buffer_views_saves_and_loads_in_the_same_format(disk: DiskSlots) -> None:
    slot = _buffer_slot("/src/a.py", 500, fill=5)
    assert disk.save(slot)
    loaded = disk.load(slot.key)
    assert loaded is not None and loaded.draft is not None and slot.draft is not None
    assert bytes(loaded.target.data) == bytes([5]) * 500
    assert bytes(loaded.draft.data) == bytes([5]) * 250
    # The checksum is still of the target's bytes then the draft's: files written
    # before (one joined payload) load, and these load in an older server.
    data = disk.file_for(slot.key).read_bytes()
    start = len(MAGIC) + _HEADER_LEN.size
    (length,) = _HEADER_LEN.unpack(data[len(MAGIC) : start])
    header = json.loads(data[start : start + length])
    assert header["sha256"] == hashlib.sha256(bytes([5]) * 750).hexdigest()


def test_a_save_that_fails_between_its_parts_keeps_the_slot_saved_before(
    disk: DiskSlots, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The target's part written, the draft's not (a full disk): the slot file
    saved before stays, and no partial file is ever read."""
    assert disk.save(_buffer_slot("/src/a.py", 500, fill=1))
    import speculator.slots as slots_module

    real_fdopen = os.fdopen

    class FailsOnThirdWrite:
        def __init__(self, f: Any) -> None:
            self.f, self.writes = f, 0

        def __enter__(self) -> "FailsOnThirdWrite":
            return self

        def __exit__(self, *exc: object) -> None:
            self.f.close()

        def write(self, data: Any) -> int:
            self.writes += 1
            if self.writes == 3:  # the header, the target, then the draft
                raise OSError(errno.ENOSPC, "No space left on device")
            return int(self.f.write(data))

    monkeypatch.setattr(
        slots_module.os, "fdopen", lambda fd, mode: FailsOnThirdWrite(real_fdopen(fd, mode))
    )
    assert not disk.save(_buffer_slot("/src/a.py", 800, fill=2))
    monkeypatch.undo()
    loaded = disk.load(("completion", "/src/a.py"))
    assert loaded is not None and bytes(loaded.target.data) == bytes([1]) * 500
    assert not list(disk.folder.glob("*.tmp*"))
