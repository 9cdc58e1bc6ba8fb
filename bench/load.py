"""`groundspec bench --load`: one CPU-bound process busy on one core.

Users' machines are never quiet: an editor, a browser and a compiler share the
cores. The spinner starts before the first mode and stops after the last (the
peer included), so `off` and every other mode are measured under the same load.
"""

from __future__ import annotations

import logging
import os
import subprocess
import sys
from types import TracebackType

log = logging.getLogger(__name__)

# Spins until its parent (pid in argv[1]) goes away: a benchmark killed without its
# __exit__ must not leave a core busy behind it (one did, for an hour, under every
# later run). The pid is passed in: a starved child may start after its parent died.
SPIN = (
    "import os, sys\n"
    "parent = int(sys.argv[1])\n"
    "while os.getppid() == parent:\n"
    "    for _ in range(100_000): pass\n"
)


class CpuLoad:
    """A context manager that keeps one core busy (or does nothing when off)."""

    def __init__(self, enabled: bool = True) -> None:
        self.enabled = enabled
        self.process: subprocess.Popen[bytes] | None = None

    def __enter__(self) -> CpuLoad:
        if self.enabled:
            self.process = subprocess.Popen([sys.executable, "-c", SPIN, str(os.getpid())])
            log.warning("load: pid %d spins on one core for the whole run", self.process.pid)
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if self.process is not None:
            stop_process(self.process, timeout_s=5)
            self.process = None

    @property
    def running(self) -> bool:
        return self.process is not None and self.process.poll() is None


def stop_process(process: subprocess.Popen[bytes], timeout_s: float) -> None:
    """SIGTERM, and SIGKILL if it has not ended within `timeout_s`."""
    process.terminate()
    try:
        process.wait(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()
