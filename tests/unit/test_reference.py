"""docs/configuration.md is generated from the options and flags themselves: each one
has help text and a row there, and the file is current."""

from __future__ import annotations

import argparse
import re
from pathlib import Path
from typing import Any

import msgspec

from lsp_server import reference
from lsp_server.cli import build_parser
from lsp_server.options import ServerOptions

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "configuration.md"


def option_keys(cls: type[msgspec.Struct] = ServerOptions, prefix: str = "") -> list[str]:
    """Every option's dotted key, sections expanded: engine.nCtx, debounceMs, ..."""
    keys: list[str] = []
    for field in msgspec.structs.fields(cls):
        inner: Any = field.type
        while hasattr(inner, "__metadata__"):  # Annotated[T, Meta]
            inner = inner.__origin__
        if isinstance(inner, type) and issubclass(inner, msgspec.Struct):
            keys += option_keys(inner, f"{prefix}{field.encode_name}.")
        else:
            keys.append(f"{prefix}{field.encode_name}")
    return keys


def rows_by_first_cell(text: str) -> dict[str, str]:
    rows = {}
    for line in text.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if line.startswith("| `") and len(cells) >= 3:
            rows[cells[0].strip("`")] = cells[-1]
    return rows


def test_the_reference_is_current() -> None:
    assert DOC.read_text(encoding="utf-8") == reference.render(), (
        "docs/configuration.md is not current: run `python -m lsp_server.reference`"
    )


def test_every_option_has_a_row_with_help() -> None:
    rows = rows_by_first_cell(reference.render())
    keys = option_keys()
    assert "engine.nCtx" in keys and "refactorMaxTokens" in keys and "cacheEntries" in keys
    missing = [key for key in keys if not rows.get(key)]
    assert missing == [], "options with no help in the reference (lsp_server/options.py)"


def test_every_flag_has_a_row_with_help() -> None:
    text = reference.render()
    rows = {
        name.split(" ")[0].split(",")[0]: help for name, help in rows_by_first_cell(text).items()
    }
    for command, parser in reference.parsers(build_parser()).items():
        for action in parser._actions:
            if isinstance(action, (argparse._HelpAction, argparse._SubParsersAction)):
                continue
            if action.help == argparse.SUPPRESS:
                continue
            name = action.option_strings[0] if action.option_strings else action.metavar
            if name in ("-v", "--version"):  # said in the section's opening lines
                continue
            assert name in rows and rows[name] not in ("", "None"), f"{command} {name}"


def test_a_flag_without_help_is_caught() -> None:
    parser = argparse.ArgumentParser(prog="groundspec")
    parser.add_argument("--secret-knob")
    assert "| `--secret-knob SECRET_KNOB` |  | None |" in reference.command_line_tables(parser)


def test_every_environment_variable_the_product_reads_is_listed() -> None:
    text = reference.render()
    read = set()
    for package in ("speculator", "lsp_server"):
        for path in (ROOT / package).rglob("*.py"):
            read |= set(re.findall(r"GROUNDSPEC_[A-Z0-9_]+", path.read_text(encoding="utf-8")))
    unlisted = sorted(
        name
        for name in read
        if f"{name}" not in text and name not in reference.TEST_ONLY_ENVIRONMENT
    )
    assert unlisted == []
