"""Progress of a long command on stderr (stdout is kept for results).

On a terminal tqdm draws its bar. Anywhere else (a log file, a pipe, an editor's
health check) tqdm's carriage returns would pile up on one line, so the same
count is written as plain lines: at the start and each quarter of the way.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable, Iterator
from typing import IO, TypeVar

from tqdm import tqdm

T = TypeVar("T")

PLAIN_STEPS = 4  # lines per job when stderr is not a terminal, besides the first


class Progress:
    """One job's progress: `update_to(done)` as it goes, `close()` at the end."""

    def __init__(
        self,
        label: str,
        total: int,
        *,
        unit: str = "it",
        stream: IO[str] | None = None,
        lines: int = PLAIN_STEPS,
    ) -> None:
        self.label, self.total, self.unit = label, max(total, 1), unit
        self.lines = max(1, min(lines, self.total))
        self.stream = stream or sys.stderr
        self.done = 0
        self._bar: tqdm[None] | None = None
        self._last_step: int | None = None
        if _is_terminal(self.stream):
            scale = unit == "B"  # bytes read as kB, MB, GB
            self._bar = tqdm(
                total=total,
                desc=label,
                unit=unit,
                unit_scale=scale,
                unit_divisor=1024 if scale else 1000,
                file=self.stream,
                leave=True,
            )

    def update_to(self, done: int) -> None:
        done = min(max(done, 0), self.total)
        if self._bar is not None:
            self._bar.update(done - self.done)
            self.done = done
            return
        self.done = done
        self._write_plain_line_if_due()

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()

    def _write_plain_line_if_due(self) -> None:
        step = self.done * self.lines // self.total
        if self._last_step is not None and step <= self._last_step:
            return
        self._last_step = step
        percent = self.done * 100 // self.total
        self.stream.write(f"{self.label}: {percent:3d}% {_count(self, self.done)}\n")
        self.stream.flush()

    def __enter__(self) -> Progress:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _count(progress: Progress, done: int) -> str:
    if progress.unit == "B":
        return f"({done / 1e6:,.0f} of {progress.total / 1e6:,.0f} MB)"
    return f"({done} of {progress.total})"


def _is_terminal(stream: IO[str]) -> bool:
    isatty = getattr(stream, "isatty", None)
    return bool(isatty and isatty())


def byte_progress(label: str, stream: IO[str] | None = None) -> ProgressCallback:
    """A (bytes done, bytes total) callback for speculator.provision; a pass that
    starts again from 0 (hashing, then assembling) gets a new meter."""
    return ProgressCallback(label, stream)


class ProgressCallback:
    def __init__(self, label: str, stream: IO[str] | None) -> None:
        self.label, self.stream = label, stream
        self.current: Progress | None = None

    def __call__(self, done: int, total: int) -> None:
        if self.current is None or done < self.current.done or total != self.current.total:
            if self.current is not None:
                self.current.close()
            self.current = Progress(self.label, total, unit="B", stream=self.stream)
        self.current.update_to(done)
        if done >= total:
            self.current.close()

    def close(self) -> None:
        if self.current is not None:
            self.current.close()


def tasks(items: Iterable[T], label: str, total: int, stream: IO[str] | None = None) -> Iterator[T]:
    """Each of `items`, with the count done so far shown as progress (in a log: a
    line per item, since each may take a minute)."""
    with Progress(label, total, unit="task", stream=stream, lines=total) as progress:
        for done, item in enumerate(items):
            progress.update_to(done)
            yield item
        progress.update_to(total)
