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


def parse_tcp(address: str) -> tuple[str, int]:
    """`--tcp`: "PORT", ":PORT" or "HOST:PORT"; loopback unless a host is given."""
    return _parse_address(address, "--tcp", lowest_port=1, want="HOST:PORT or PORT")


def parse_http(address: str) -> tuple[str, int]:
    """`--http`: the same, and port 0 picks a free one."""
    return _parse_address(address, "--http", lowest_port=0, want="[HOST:]PORT")


def _parse_address(address: str, flag: str, *, lowest_port: int, want: str) -> tuple[str, int]:
    host, _, port = address.rpartition(":")
    host = host.strip("[]") or "127.0.0.1"
    if not port.isdigit() or not lowest_port <= int(port) < 65536:
        raise ValueError(f"invalid {flag} address {address!r} (want {want})")
    return host, int(port)


def check_serve_flags(tcp: str | None, http: str | None, log_file: str | None) -> None:
    """Addresses and the log file, checked before anything loads: ValueError if bad."""
    if http:
        parse_http(http)
    if tcp:
        parse_tcp(tcp)
    check_log_file(log_file)


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
