"""lsp_server/run.py: which doors `serve` starts for each combination of flags."""

from __future__ import annotations

from typing import Any

import pytest

from lsp_server import run
from lsp_server.options import ServerOptions, StartupConfig


class Started(Exception):
    """Stands in for a door that would serve until the process ends."""


@pytest.fixture
def doors(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, dict[str, Any]]]:
    started: list[tuple[str, dict[str, Any]]] = []

    def door(name: str, ends_process: bool) -> Any:
        def start(config: StartupConfig, *args: Any, **kwargs: Any) -> int:
            started.append((name, {"args": args, **kwargs}))
            if ends_process:
                raise Started(name)
            return 0

        return start

    monkeypatch.setattr(run, "run_lsp", door("lsp", True))
    monkeypatch.setattr(run, "serve_with_lsp", door("http+lsp", True))
    monkeypatch.setattr(run, "run_http", door("http", False))
    return started


@pytest.mark.parametrize(
    "flags, door, args",
    [
        ({}, "lsp", {"args": (), "tcp": None, "log_file": None, "api_key": None}),
        (
            {"tcp": "127.0.0.1:7777"},
            "lsp",
            {"args": (), "tcp": "127.0.0.1:7777", "log_file": None, "api_key": None},
        ),
        (
            {"http": "8012", "stdio": True},
            "http+lsp",
            {"args": ("8012",), "tcp": None, "log_file": None, "api_key": None},
        ),
        (
            {"http": "8012", "tcp": ":7"},
            "http+lsp",
            {"args": ("8012",), "tcp": ":7", "log_file": None, "api_key": None},
        ),
    ],
)
def test_lsp_alone_or_beside_http_ends_the_process(
    doors: list[tuple[str, dict[str, Any]]], flags: dict[str, Any], door: str, args: dict[str, Any]
) -> None:
    with pytest.raises(Started):
        run.serve(StartupConfig(options=ServerOptions()), **flags)
    assert doors == [(door, args)]


def test_http_alone_returns_its_exit_code(doors: list[tuple[str, dict[str, Any]]]) -> None:
    config = StartupConfig(options=ServerOptions())
    assert run.serve(config, http="127.0.0.1:8012", log_file="x.log", api_key="k") == 0
    assert doors == [("http", {"args": ("127.0.0.1:8012",), "log_file": "x.log", "api_key": "k"})]
