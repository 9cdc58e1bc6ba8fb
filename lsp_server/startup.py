"""What can stop a server before it serves, said in one line on stderr.

A taken port or an unwritable log file is the user's to fix, so it gets the
same one-line `groundspec: error: ...` as any other bad input, never a traceback
(and stderr even with --log-file: the user is watching the terminal, not the log).
"""

from __future__ import annotations

import sys
from pathlib import Path


class ListenError(Exception):
    """A port could not be bound (taken, or not permitted)."""


def cannot_listen(host: str, port: int, error: OSError) -> ListenError:
    return ListenError(f"cannot listen on {host}:{port}: {error.strerror or error}")


def check_log_file(path: str | None) -> None:
    """Raise ValueError if `path` cannot be opened for appending."""
    if not path:
        return
    try:
        with Path(path).open("a", encoding="utf-8"):
            pass
    except OSError as exc:
        raise ValueError(f"cannot write the log file {path}: {exc.strerror or exc}") from None


def say_error(error: Exception) -> None:
    sys.stderr.write(f"groundspec: error: {error}\n")
    sys.stderr.flush()
