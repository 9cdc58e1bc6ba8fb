"""What reaches stderr at the default level: warnings and above, never INFO chatter."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from pathlib import Path

import pytest
from pygls.exceptions import JsonRpcException

from lsp_server.logs import setup_logging


@pytest.fixture
def restore_root_logger() -> Iterator[None]:
    root = logging.getLogger()
    saved = root.handlers[:], root.level
    yield
    root.handlers, root.level = saved[0], saved[1]


def test_stderr_gets_warnings_but_not_info_by_default(
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    restore_root_logger: None,
) -> None:
    monkeypatch.delenv("GROUNDSPEC_LOG_LEVEL", raising=False)
    setup_logging(None)
    log = logging.getLogger("lsp_server.test")
    log.info("models ready")
    log.warning("workspace index disabled")
    err = capsys.readouterr().err
    assert "models ready" not in err
    assert "workspace index disabled" in err


def test_a_log_file_gets_info(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, restore_root_logger: None
) -> None:
    monkeypatch.delenv("GROUNDSPEC_LOG_LEVEL", raising=False)
    log_file = tmp_path / "server.log"
    setup_logging(str(log_file))
    logging.getLogger("lsp_server.test").info("models ready")
    logging.getLogger().handlers[0].flush()
    assert "models ready" in log_file.read_text()


def test_debug_leaves_out_watchdogs_file_events(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, restore_root_logger: None
) -> None:
    # A log file in the watched workspace: each event logged would be an event.
    monkeypatch.setenv("GROUNDSPEC_LOG_LEVEL", "DEBUG")
    log_file = tmp_path / "groundspec.log"
    setup_logging(str(log_file))
    logging.getLogger("watchdog.observers.inotify_buffer").debug("in-event groundspec.log")
    logging.getLogger("speculator.workspace").debug("indexed app.py")
    logging.getLogger("watchdog.observers").warning("inotify watch limit reached")
    written = log_file.read_text(encoding="utf-8")
    assert "in-event" not in written
    assert "indexed app.py" in written and "inotify watch limit reached" in written


def test_a_bad_level_falls_back_and_says_so(
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    restore_root_logger: None,
) -> None:
    monkeypatch.setenv("GROUNDSPEC_LOG_LEVEL", "loud")
    setup_logging(None)
    assert logging.getLogger().level == logging.WARNING
    assert "GROUNDSPEC_LOG_LEVEL=LOUD is not a level" in capsys.readouterr().err


def _log_an_answered_error() -> None:
    try:
        raise JsonRpcException("groundspec: the models failed to load: model file not found")
    except JsonRpcException:
        # What pygls does for a handler that raised one.
        logging.getLogger("pygls.protocol.json_rpc").exception('Exception occurred for message "7"')


def test_an_answered_request_error_is_one_info_line_not_a_traceback(
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    restore_root_logger: None,
) -> None:
    monkeypatch.delenv("GROUNDSPEC_LOG_LEVEL", raising=False)
    setup_logging(None)
    _log_an_answered_error()
    assert capsys.readouterr().err == ""  # default level: nothing at all

    monkeypatch.setenv("GROUNDSPEC_LOG_LEVEL", "INFO")
    setup_logging(None)
    _log_an_answered_error()
    err = capsys.readouterr().err
    assert "Traceback" not in err
    assert err.count("\n") == 1
    assert 'INFO [-] pygls.protocol.json_rpc: Exception occurred for message "7": ' in err
    assert "model file not found" in err


def test_llama_cpp_warnings_and_errors_are_info_lines(
    caplog: pytest.LogCaptureFixture,
) -> None:
    models = pytest.importorskip("speculator.models")
    router = models._LlamaLogRouter()
    with caplog.at_level(logging.DEBUG, logger="llama_cpp"):
        router._on_log(
            3, b"load: control-looking token: 128247 '</s>' was not control-type\n", None
        )
        router._on_log(4, b"llama_model_load: error loading model: ", None)
        router._on_log(5, b"truncated\n", None)  # CONT: the previous line's level
        router._on_log(2, b"...", None)  # the dots of a progress bar
    records = [(r.levelno, r.getMessage()) for r in caplog.records]
    assert records == [
        (logging.INFO, "load: control-looking token: 128247 '</s>' was not control-type"),
        (logging.INFO, "llama_model_load: error loading model: truncated"),
    ]
