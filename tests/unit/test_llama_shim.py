"""The llama-server stand-in writes its option file where the suite says, so a
run of llama.cpp's server tests leaves nothing behind in the temporary folder."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

SHIM = Path(__file__).resolve().parents[1] / "e2e" / "llama_shim" / "shim.py"


def load_shim() -> ModuleType:
    spec = importlib.util.spec_from_file_location("llama_shim_under_test", SHIM)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_config_goes_to_the_folder_the_suite_names(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    shim = load_shim()
    ran: list[list[str]] = []
    monkeypatch.setattr(shim.os, "execv", lambda path, argv: ran.append(list(argv)))
    monkeypatch.setenv("GROUNDSPEC_SHIM_CONFIG_DIR", str(tmp_path))
    monkeypatch.setenv("GROUNDSPEC_SHIM_SERVER", "groundspec")
    argv = ["shim", "--host", "127.0.0.1", "--port", "8123", "--temp", "0.5", "--no-slots"]
    monkeypatch.setattr(sys, "argv", argv)
    shim.main()
    config = tmp_path / "groundspec-shim-8123.toml"
    assert config.read_text(encoding="utf-8") == "temperature = 0.5\n"
    (command,) = ran
    assert command[command.index("--config") + 1] == str(config)
    assert command[command.index("--http") + 1] == "127.0.0.1:8123"
    assert "--no-slots" in command
