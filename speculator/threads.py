"""How many CPU threads llama.cpp should use now, given what else is running.

llama.cpp's CPU threads meet at a barrier after every operation of a step. When
another process takes one of the cores, the thread there is descheduled and the
others spin at the barrier until it runs again. On the 2-core machine, with one
CPU-bound process beside it, a one-token step took a median 226 ms (worst 2.8 s)
with 2 threads and 107 ms with 1; a 16-row batch 1,167 ms against 865 ms. On a
quiet machine 2 threads are 1.8x faster (bench/archive/benchmarks.md, "Threads under load").

So before each step the engine looks at how much CPU time other processes used
on the cores it may run on, over about the last second, and leaves those cores
to them: the thread count is the cores it may use minus the cores others keep
busy (rounded so that a share of 0.35 core or more counts as taken), at least 1
and at most the configured count. It is a measurement, not a guess, so it
follows a compiler or a browser as it starts and stops. Niced processes (a
`nice make`, an indexer) are not counted: they only get what we leave.
"""

from __future__ import annotations

import logging
import math
import os
import time
from collections import deque
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import NamedTuple

log = logging.getLogger(__name__)

# Sample the counters at most this often (each sample reads /proc/stat).
SAMPLE_EVERY_S = 0.2
# Judge the others' use over at least this long a span.
WINDOW_S = 1.0
# A core counts as taken by others from this share of it on.
TAKEN_SHARE = 0.35


class CpuSample(NamedTuple):
    wall_s: float  # monotonic clock
    busy_s: float  # CPU time spent on our cores by everyone
    own_s: float  # CPU time of this process (all its threads)


def usable_cores() -> list[int]:
    if hasattr(os, "sched_getaffinity"):
        return sorted(os.sched_getaffinity(0))
    return list(range(os.cpu_count() or 1))


def read_cpu_sample(cores: list[int]) -> CpuSample | None:
    """Busy time of the given cores (/proc/stat) and this process's own time;
    None where /proc/stat is not there (not Linux) or unreadable."""
    tick = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
    # Time of niced processes is counted apart ("nice"): the scheduler gives
    # them only what we leave, so they take no core from us and are not
    # counted, unless this process is niced itself (then its own time is there).
    niced = hasattr(os, "nice") and os.nice(0) > 0
    try:
        with open("/proc/stat", encoding="ascii") as stat:
            busy = busy_ticks(stat.read(), cores, niced)
    except (OSError, ValueError):
        return None
    own = os.times()
    return CpuSample(time.monotonic(), busy / tick, own.user + own.system)


def busy_ticks(proc_stat: str, cores: list[int], count_nice: bool) -> int:
    """Ticks the given cores spent busy, from /proc/stat's per-cpu lines."""
    wanted = {f"cpu{i}" for i in cores}
    busy = 0
    for line in proc_stat.splitlines():
        if not line.startswith("cpu"):
            break
        fields = line.split()
        if fields[0] in wanted:
            # user nice system idle iowait irq softirq steal: all but idle, iowait
            user, nice, system, _idle, _iowait, irq, softirq, steal = map(int, fields[1:9])
            busy += user + system + irq + softirq + steal + (nice if count_nice else 0)
    return busy


class ThreadPolicy:
    """The thread count for the next llama.cpp step (shared by all sessions)."""

    def __init__(
        self,
        max_threads: int,
        cores: list[int] | None = None,
        sampler: Callable[[], CpuSample | None] | None = None,
        adaptive: bool = True,
    ):
        self.cores = cores if cores is not None else usable_cores()
        self.max_threads = max(1, max_threads)
        self.threads = self.max_threads
        self.adaptive = adaptive
        self._sampler = sampler or (lambda: read_cpu_sample(self.cores))
        self._samples: deque[CpuSample] = deque()
        self._last_check = -math.inf
        self._pinned: int | None = None

    def current(self, now: float | None = None) -> int:
        if self._pinned is not None:
            return self._pinned
        if not self.adaptive:
            return self.threads
        now = time.monotonic() if now is None else now
        if now - self._last_check >= SAMPLE_EVERY_S:
            self._last_check = now
            self._update()
        return self.threads

    @contextmanager
    def pinned(self, threads: int) -> Iterator[None]:
        """Run the steps inside on exactly this many threads (at most the
        configured count), whatever the load: a measurement of one count."""
        self._pinned = max(1, min(self.max_threads, threads))
        try:
            yield
        finally:
            self._pinned = None

    def free_for(self, threads: int, settle_s: float = SAMPLE_EVERY_S) -> bool:
        """Whether other processes leave this many cores free now (sampled over
        `settle_s` when nothing recent is known)."""
        if not self.adaptive:
            return True
        if self.others_busy() is None:
            self._update()
            time.sleep(settle_s)
        self._last_check = -math.inf
        return self.current() >= min(threads, self.max_threads)

    def others_busy(self) -> float | None:
        """Cores' worth of CPU other processes used over the window, if known."""
        if len(self._samples) < 2:
            return None
        first, last = self._samples[0], self._samples[-1]
        span = last.wall_s - first.wall_s
        if span <= 0:
            return None
        return max(0.0, (last.busy_s - first.busy_s) - (last.own_s - first.own_s)) / span

    def _update(self) -> None:
        sample = self._sampler()
        if sample is None:
            return
        self._samples.append(sample)
        # Keep one sample at least WINDOW_S old as the baseline (after an idle
        # gap that is the whole gap's average, which is what is known).
        while len(self._samples) > 2 and sample.wall_s - self._samples[1].wall_s >= WINDOW_S:
            self._samples.popleft()
        others = self.others_busy()
        if others is None:
            return
        taken = max(0, math.ceil(others - TAKEN_SHARE))
        threads = max(1, min(self.max_threads, len(self.cores) - taken))
        if threads != self.threads:
            log.info("threads %d -> %d (others use %.2f cores)", self.threads, threads, others)
            self.threads = threads
