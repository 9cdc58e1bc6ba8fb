"""Memory over a 50-file replay (issue 12): the KV slots' RAM and disk bounds hold.

    python -m bench.slots_memory [--files 50] [--ram-mb N] [--disk-mb N] [--small]
                                 [--around CHARS] [--output FILE]

Opens the corpus files and then Python standard library files (up to `--files`),
one after another, as an editor does: a warm-up (didOpen), then two completions
(8 tokens, no speculation) at a line in the middle of the file, the second after
one typed character. After each step: the bytes of the RAM slots (what the LRU
counts), the process's RSS, and the bytes of the slot folder (slot files and any
temporary file a write has in flight, sampled every 0.1 s by a thread). The slots
are written by the warm-ups (at most every 30 s) and at the end.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import threading
import time
from pathlib import Path

import msgspec

from speculator import provision
from speculator.config import EngineConfig
from speculator.engine import SpeculativeEngine
from speculator.languages import language_id_for_path
from speculator.types import CompletionRequest

from .tasks import corpus_files

STDLIB = Path(sys.base_prefix) / "lib" / f"python{sys.version_info[0]}.{sys.version_info[1]}"
MIN_CHARS = 12_000  # files long enough for a full prompt window
MIB = 1 << 20  # the bounds (kvRamMb, kvDiskMb) are in MiB


def replay_files(n: int) -> list[Path]:
    """The corpus, then standard library modules of at least MIN_CHARS, by name."""
    extra = [p for p in sorted(STDLIB.glob("*.py")) if p.stat().st_size >= MIN_CHARS]
    if len(extra) < n:  # a venv's base prefix without sources: the system's
        system = sorted(Path("/usr/lib").glob("python3.*/*.py"))
        extra += [p for p in system if p.stat().st_size >= MIN_CHARS]
    return (corpus_files() + extra)[:n]


def folder_bytes(folder: Path) -> int:
    total = 0
    for path in folder.glob("*"):
        try:
            total += path.stat().st_size
        except OSError:
            pass  # renamed or removed meanwhile
    return total


def rss_mb() -> tuple[float, float]:
    """(current, peak) resident set size of this process, in MB."""
    values = {}
    with open("/proc/self/status", encoding="ascii") as status:
        for line in status:
            if line.startswith(("VmRSS:", "VmHWM:")):
                values[line.split(":")[0]] = int(line.split()[1]) / 1024
    return values["VmRSS"], values["VmHWM"]


class DiskSampler:
    """The slot folder's peak size, sampled on a thread (writes run on the engine's
    writer thread, so a transient overshoot would fall between two steps)."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.peak = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.wait(0.1):
            self.peak = max(self.peak, folder_bytes(self.folder))

    def stop(self) -> int:
        self._stop.set()
        self._thread.join()
        return max(self.peak, folder_bytes(self.folder))


def middle_cursor(text: str) -> int:
    """The start of an indented line's code near the middle of the file."""
    lines = text.split("\n")
    middle = len(lines) // 2
    for i in [*range(middle, len(lines)), *range(middle)]:
        if lines[i].startswith(("    ", "\t")) and lines[i].strip():
            indent = len(lines[i]) - len(lines[i].lstrip())
            return sum(len(s) + 1 for s in lines[:i]) + indent
    return len(text) // 2


def run(config: EngineConfig, files: list[Path], around: int | None = None) -> list[str]:
    """`around`: keep this many characters each side of the cursor (shorter prompts)."""
    engine = SpeculativeEngine.load(config)
    assert config.kv_dir is not None
    sampler = DiskSampler(Path(config.kv_dir))
    ram_peak = rss_peak = 0.0
    prompts: list[int] = []
    started = time.perf_counter()
    try:
        for path in files:
            text = path.read_text(errors="replace")
            cursor = middle_cursor(text)
            if around:
                text, cursor = text[max(0, cursor - around) : cursor + around], min(cursor, around)
            request = CompletionRequest(
                text=text,
                cursor=cursor,
                language_id=language_id_for_path(str(path)),
                path=str(path),
                max_tokens=8,
                speculation="off",
            )
            engine.warm(request)  # didOpen
            prompts.append(engine.complete(request).stats.prompt_tokens)
            typed = text[:cursor] + text[cursor] + text[cursor:]  # one character typed
            engine.complete(msgspec.structs.replace(request, text=typed))
            ram_peak = max(ram_peak, engine.ram_slots.nbytes / MIB)
            rss_peak = max(rss_peak, rss_mb()[0])
        written = engine.persist()
    finally:
        engine.close()
    disk_peak = sampler.stop() / MIB
    disk_end = folder_bytes(Path(config.kv_dir)) / MIB
    files_end = len(list(Path(config.kv_dir).glob("*.kv")))
    prompts.sort()
    return [
        f"{len(files)} files, prompts {prompts[0]}-{prompts[-1]} tokens (median "
        f"{prompts[len(prompts) // 2]}), {time.perf_counter() - started:.0f} s",
        f"RAM slots peak {ram_peak:.1f} MiB (bound {config.kv_ram_mb} MiB); process RSS peak "
        f"{rss_peak:.0f} MiB (VmHWM {rss_mb()[1]:.0f} MiB)",
        f"disk peak {disk_peak:.1f} MiB, at the end {disk_end:.1f} MiB in {files_end} files "
        f"({written} written at shutdown) (bound {config.kv_disk_mb} MiB)",
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--files", type=int, default=50)
    parser.add_argument("--ram-mb", type=int, default=EngineConfig().kv_ram_mb)
    parser.add_argument("--disk-mb", type=int, default=EngineConfig().kv_disk_mb)
    parser.add_argument("--small", action="store_true", help="the draft model alone as target")
    parser.add_argument("--around", type=int, help="characters kept each side of the cursor")
    parser.add_argument("--output", type=Path)
    args = parser.parse_args()
    kv_dir = tempfile.mkdtemp(prefix="groundspec-memory-kv-")
    small = str(provision.model_path(provision.DRAFT)) if args.small else None
    config = EngineConfig(
        target_model=small,
        use_draft=small is None,
        kv_ram_mb=args.ram_mb,
        kv_disk_mb=args.disk_mb,
        kv_dir=kv_dir,
    )
    model = "0.5B target alone" if small else "default pair"
    try:
        out = [
            f"bench.slots_memory, {model}, {time.ctime()}",
            *run(config, replay_files(args.files), args.around),
        ]
    finally:
        shutil.rmtree(kv_dir, ignore_errors=True)
    print("\n".join(out))
    if args.output:
        args.output.write_text("\n".join(out) + "\n")


if __name__ == "__main__":
    main()
