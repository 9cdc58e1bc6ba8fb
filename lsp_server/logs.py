"""Logging for the daemon: stderr or a file, never stdout (stdout is the protocol).

Every line carries the id of the request it belongs to, taken from a
contextvar that handlers set and that engine jobs inherit.
"""

from __future__ import annotations

import contextvars
import functools
import inspect
import logging
import os
import sys
from collections.abc import Callable
from typing import Any, TypeVar

from pygls.exceptions import JsonRpcException

request_id: contextvars.ContextVar[str] = contextvars.ContextVar("request_id", default="-")

F = TypeVar("F", bound=Callable[..., Any])


class RequestIdFilter(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        record.request_id = request_id.get()
        return True


class AnsweredErrorFilter(logging.Filter):
    """One line, not a traceback, for a request answered with a JSON-RPC error.

    pygls logs a traceback for each handler that raises a JsonRpcException, but
    those are answers the client gets (models not loaded, request cancelled,
    invalid params), not bugs: an editor typing into a server whose models
    failed would fill its log with one traceback per keystroke. INFO instead.
    """

    def filter(self, record: logging.LogRecord) -> bool:
        error = record.exc_info[1] if record.exc_info else None
        if not isinstance(error, JsonRpcException):
            return True
        if not logging.getLogger().isEnabledFor(logging.INFO):
            return False
        text = record.getMessage()
        record.msg, record.args = "%s: %s", (text, error)
        record.exc_info, record.exc_text = None, None
        record.levelno, record.levelname = logging.INFO, "INFO"
        return True


def setup_logging(log_file: str | None = None) -> None:
    """Route all logging to `log_file` or stderr; level from GROUNDSPEC_LOG_LEVEL.

    The default is WARNING on stderr: editors log a server's stderr as errors
    (Neovim's lsp.log says [ERROR] for every line), so only what needs a look
    goes there. A log file, asked for explicitly, gets INFO by default.
    """
    handler: logging.Handler
    if log_file:
        handler = logging.FileHandler(log_file, encoding="utf-8")
    else:
        handler = logging.StreamHandler(sys.stderr)
    handler.addFilter(RequestIdFilter())
    handler.addFilter(AnsweredErrorFilter())
    handler.setFormatter(
        logging.Formatter("%(asctime)s %(levelname)s [%(request_id)s] %(name)s: %(message)s")
    )
    root = logging.getLogger()
    root.handlers = [handler]
    default = "INFO" if log_file else "WARNING"
    wanted = os.environ.get("GROUNDSPEC_LOG_LEVEL", default).upper()
    level = logging.getLevelNamesMapping().get(wanted)
    root.setLevel(default if level is None else level)
    if level is None:
        logging.getLogger(__name__).warning(
            "GROUNDSPEC_LOG_LEVEL=%s is not a level (DEBUG, INFO, WARNING, ERROR); using %s",
            wanted,
            default,
        )
    # pygls logs every message body at INFO: megabytes per keystroke on big files.
    logging.getLogger("pygls").setLevel(logging.WARNING)
    # watchdog logs each file event at DEBUG; a log file inside the watched
    # workspace would make every line it writes an event that writes a line.
    logging.getLogger("watchdog").setLevel(logging.INFO)


def traced(fn: F) -> F:
    """Set the request id (the JSON-RPC id, or the handler name for notifications)."""

    def _set(ls: Any) -> None:
        msg_id = ls.protocol.msg_id
        request_id.set(f"#{msg_id}" if msg_id is not None else fn.__name__)

    if inspect.iscoroutinefunction(fn):

        @functools.wraps(fn)
        async def async_wrapper(ls: Any, *args: Any) -> Any:
            _set(ls)
            return await fn(ls, *args)

        return async_wrapper  # type: ignore[return-value]

    @functools.wraps(fn)
    def wrapper(ls: Any, *args: Any) -> Any:
        _set(ls)
        return fn(ls, *args)

    return wrapper  # type: ignore[return-value]
