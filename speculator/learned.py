"""What the speculation controllers learned, kept across restarts.

Every `groundspec refactor` or `complete` call is a new process, and so is every
editor session. Without this file each starts from the priors and ramps its drafts
up again: on the dev refactors, replayed with a fresh controller per task, the
median fell from 2.30x to 2.16x (docs/benchmarks.md, "What a new process learns").
Only acceptance is kept: it belongs to the models, the drafters and the user's
code. Verify costs belong to the machine's load of the moment and are measured
afresh in every process.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Callable
from pathlib import Path

import msgspec

log = logging.getLogger(__name__)

# Per request kind ("refactor", "completion"): per bucket, Controller.learned()'s counts.
Learned = dict[str, dict[str, list[float]]]

VERSION = 1
# An editor asks on every keystroke: write at most this often (and at shutdown).
SAVE_EVERY_S = 10.0


class _File(msgspec.Struct):
    version: int
    controllers: Learned


class LearnedFile:
    """One JSON file per model pair. A missing, unreadable or corrupt file is
    a fresh start (with a warning), never an error: it only holds a head start."""

    def __init__(self, path: Path, clock: Callable[[], float] = time.monotonic) -> None:
        self.path = path
        self.clock = clock
        self._saved: Learned | None = None  # what the file holds, as far as we know
        self._saved_at: float | None = None  # when this process last wrote it

    @staticmethod
    def name_for(target_fingerprint: str, draft_fingerprint: str | None) -> str:
        return f"policy-{target_fingerprint[:16]}-{(draft_fingerprint or 'none')[:16]}.json"

    def load(self) -> Learned:
        try:
            data = msgspec.json.decode(self.path.read_bytes(), type=_File)
        except FileNotFoundError:
            return {}
        except (OSError, msgspec.ValidationError, msgspec.DecodeError) as exc:
            log.warning("ignoring the learned policy in %s: %s", self.path, exc)
            return {}
        if data.version != VERSION:
            return {}
        self._saved = data.controllers
        return data.controllers

    def save(self, learned: Learned, now: bool = False) -> None:
        """Write atomically (another process may be reading it): this process's
        first save and then one every SAVE_EVERY_S, or `now`. An unchanged
        policy is not written."""
        if learned == self._saved:
            return
        last = self._saved_at
        if not now and last is not None and self.clock() - last < SAVE_EVERY_S:
            return
        part = self.path.with_name(f"{self.path.name}.part-{os.getpid()}")
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            part.write_bytes(msgspec.json.encode(_File(VERSION, learned)))
            os.replace(part, self.path)
        except OSError as exc:
            log.warning("the learned policy is not kept across restarts: %s", exc)
            try:
                part.unlink(missing_ok=True)
            except OSError:
                pass  # the folder itself is what failed; nothing was left in it
            return
        self._saved, self._saved_at = learned, self.clock()
