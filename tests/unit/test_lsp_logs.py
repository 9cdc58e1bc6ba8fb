"""Log lines carry the request id; the server never logs to stdout."""

import contextvars
import logging
from types import SimpleNamespace

import pytest

from lsp_server.logs import RequestIdFilter, request_id, setup_logging, traced


def test_traced_sets_the_request_id_for_requests_and_notifications() -> None:
    seen = []

    @traced
    def handler(ls: object, params: object) -> None:
        seen.append(request_id.get())

    # Like pygls, run each message in its own context.
    contextvars.copy_context().run(handler, SimpleNamespace(protocol=SimpleNamespace(msg_id=7)), 1)
    contextvars.copy_context().run(
        handler, SimpleNamespace(protocol=SimpleNamespace(msg_id=None)), 2
    )
    assert seen == ["#7", "handler"]


def test_log_lines_go_to_stderr_with_the_request_id(capsys: pytest.CaptureFixture[str]) -> None:
    root = logging.getLogger()
    saved = root.handlers[:], root.level
    try:
        setup_logging(None)
        token = request_id.set("#42")
        logging.getLogger("lsp_server.test").warning("hello")
        request_id.reset(token)
        out, err = capsys.readouterr()
        assert out == ""
        assert "[#42] lsp_server.test: hello" in err
    finally:
        root.handlers, root.level = saved[0], saved[1]


def test_filter_adds_the_id_to_every_record() -> None:
    record = logging.LogRecord("x", logging.INFO, __file__, 1, "m", None, None)
    assert RequestIdFilter().filter(record) and record.request_id == "-"  # type: ignore[attr-defined]
