"""`groundspec --help` and each subcommand's: every flag explained, an example for
each command, the exit codes, a version, and no test-only flag on show."""

from __future__ import annotations

import argparse
import subprocess
import sys

import pytest

from lsp_server.cli import build_parser


def parsers(
    parser: argparse.ArgumentParser | None = None, name: str = "groundspec"
) -> dict[str, argparse.ArgumentParser]:
    """Every parser of the command line by its command, e.g. "groundspec models fetch"."""
    parser = parser or build_parser()
    found = {name: parser}
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub_name, sub in action.choices.items():
                found.update(parsers(sub, f"{name} {sub_name}"))
    return found


def run_cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "lsp_server.cli", *args],
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_every_flag_and_argument_has_help() -> None:
    missing = [
        f"{command}: {action.option_strings or action.dest}"
        for command, parser in parsers().items()
        for action in parser._actions
        if not action.help and not isinstance(action, argparse._SubParsersAction)
    ]
    assert missing == []


def test_the_test_only_flag_is_hidden() -> None:
    for command, parser in parsers().items():
        for action in parser._actions:
            if "--fake" in action.option_strings:
                assert action.help == argparse.SUPPRESS, command
        assert "--fake" not in parser.format_help(), command


COMMANDS = [name.split()[1] for name in parsers() if name.count(" ") == 1]


def test_the_commands_are_all_there() -> None:
    assert {"serve", "complete", "refactor", "models", "demo", "bench"} <= set(COMMANDS)


@pytest.mark.parametrize("command", COMMANDS)
def test_each_subcommand_shows_an_example_and_the_exit_codes(command: str) -> None:
    proc = run_cli(command, "--help")
    assert proc.returncode == 0, proc.stderr
    examples = proc.stdout.split("examples:\n", 1)[1].split("\n\n")[0].splitlines()
    assert examples and all(f"groundspec {command}" in e for e in examples)  # VAR=x allowed
    assert "exit codes: 0 done; 1 could not do it" in proc.stdout


def test_models_actions_are_subcommands_with_help() -> None:
    proc = run_cli("models", "--help")
    for action in ("fetch", "path", "verify"):
        assert f"    {action} " in proc.stdout
    assert run_cli("models", "verify", "--help").returncode == 0


def test_version_comes_from_the_package_metadata() -> None:
    from importlib import metadata

    proc = run_cli("--version")
    assert proc.returncode == 0
    assert proc.stdout.strip() == f"groundspec {metadata.version('groundspec')}"


def test_verbose_is_taken_after_the_subcommand_too() -> None:
    parser = build_parser()
    assert parser.parse_args(["-v", "models", "path"]).verbose is True
    assert parser.parse_args(["models", "-v", "path"]).verbose is True
    assert parser.parse_args(["models", "path"]).verbose is False
