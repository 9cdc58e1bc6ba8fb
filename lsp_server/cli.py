"""The `groundspec` command line (positions are 1-based, like compilers print them).

Results go to stdout; progress and errors go to stderr. Bad input exits with
one clear line on stderr, never a traceback. Exit codes: 0 done, 1 could not do
it (a model, the engine, a remote server, a file), 2 usage error.

Each subcommand is registered by a small function (`COMMANDS` below); a new one
goes in its own lsp_server/cli_*.py module with a `register(sub)` of its own.
"""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Callable, Sequence
from importlib import metadata
from pathlib import Path

import msgspec

from speculator.languages import language_id_for_path
from speculator.types import CompletionRequest, Engine, EngineError, RefactorRequest
from speculator.validate import instruction_problem

from . import cli_lab, cli_models, cli_next_edit, cli_serve
from .cli_common import (
    EXIT_CODES,
    EXIT_FAILED,
    EXIT_OK,
    EXIT_USAGE,
    CannotError,
    UsageError,
    add_command,
    engine_config,
    keep_kv_slots,
    request_flags,
)
from .cli_input import (
    check_request_flags,
    cursor_offset,
    line_range,
    parse_location,
    read_source,
)
from .convert import LineIndex

__all__ = ["UsageError", "cursor_offset", "line_range", "main", "parse_location", "read_source"]

log = logging.getLogger(__name__)

Register = Callable[["argparse._SubParsersAction[argparse.ArgumentParser]"], None]


def main(argv: Sequence[str] | None = None) -> None:
    parser = build_parser()
    args, extra = parser.parse_known_args(argv)
    if extra and not getattr(args, "accepts_extra_args", False):
        parser.error(f"unrecognized arguments: {' '.join(extra)}")
    logging.basicConfig(
        level=logging.DEBUG if args.verbose else logging.WARNING,
        stream=sys.stderr,
        format="%(levelname)s %(name)s: %(message)s",
    )
    if args.command in ("complete", "refactor") and not args.verbose:
        # A remote backend logs "cannot reach ..." once for a server's log; here the
        # same words are the command's one-line error, printed below.
        logging.getLogger("speculator.backends.http").setLevel(logging.ERROR)
    sys.exit(run_command(args))


def run_command(args: argparse.Namespace) -> int:
    """Run the chosen subcommand; its errors become one line and an exit code."""
    try:
        code: int = args.run(args)
    except UsageError as exc:
        return fail(exc, EXIT_USAGE)
    except (CannotError, EngineError) as exc:
        return fail(exc, EXIT_FAILED)
    except KeyboardInterrupt:
        return 130
    return code


def fail(error: Exception, code: int) -> int:
    print(f"groundspec: error: {error}", file=sys.stderr)
    return code


def version() -> str:
    try:
        return metadata.version("groundspec")
    except metadata.PackageNotFoundError:  # run from a checkout that was never installed
        return "unknown (not installed)"


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="groundspec",
        description="Local code completion and refactoring with grounded speculation: "
        "the model's exact output, faster. Run `groundspec COMMAND --help` for each command.",
        epilog=EXIT_CODES,
    )
    parser.add_argument("-v", "--verbose", action="store_true", help="debug logs on stderr")
    parser.add_argument(
        "--version", action="version", version=f"groundspec {version()}", help="print the version"
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for register in COMMANDS:
        register(sub)
    return parser


# -- complete / refactor ------------------------------------------------------------


def register_complete(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    complete = add_command(
        sub,
        "complete",
        help="complete the code at PATH:LINE:COL (1-based)",
        description="Complete the code at a position of a file and print the completion "
        "(or, with --json, the JSON-RPC result: text and stats).",
        examples=[
            "groundspec complete src/app.py:42:9",
            "groundspec complete src/app.py:42:9 --max-tokens 32 --speculation off --json",
        ],
    )
    complete.add_argument(
        "location", metavar="PATH:LINE:COL", help="the file and the cursor, 1-based"
    )
    request_flags(complete, max_tokens=64)
    complete.set_defaults(run=run_complete)


def register_refactor(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    refactor = add_command(
        sub,
        "refactor",
        help="rewrite lines A-B of PATH by an instruction",
        description="Rewrite whole lines of a file as an instruction says and print the new "
        "text (or, with --json, the JSON-RPC result: newText, range and stats). The file is "
        "not changed. A rewrite the model did not finish is an error, never half applied.",
        examples=[
            'groundspec refactor src/app.py --lines 10-30 --instruction "Add type hints"',
            'groundspec refactor src/app.py --lines 5 --instruction "Rename x to total" --json',
        ],
    )
    refactor.add_argument("path", metavar="PATH", help="the file to rewrite part of")
    refactor.add_argument(
        "--lines", required=True, metavar="A-B", help="the lines to rewrite, 1-based, inclusive"
    )
    refactor.add_argument(
        "--instruction", required=True, metavar="TEXT", help="what to do, in plain words"
    )
    request_flags(refactor, max_tokens=1024)
    refactor.set_defaults(run=run_refactor)


def load(args: argparse.Namespace, *, needs_draft: bool = True) -> Engine:
    from speculator.factory import load_engine

    return load_engine(engine_config(args, needs_draft=needs_draft), env=False)


def run_complete(args: argparse.Namespace) -> int:
    path, line, col = parse_location(args.location)
    text = read_source(path)
    cursor = cursor_offset(text, line, col)
    check_request_flags(args)
    engine = load(args, needs_draft=args.speculation in ("draft", "both", "auto"))
    request = CompletionRequest(
        text=text,
        cursor=cursor,
        language_id=language_id_for_path(path),
        path=str(Path(path).resolve()),
        max_tokens=args.max_tokens,
        speculation=args.speculation,
        temperature=args.temperature,
    )
    result = engine.complete(request)
    keep_kv_slots(engine)
    if args.json:
        print(msgspec.json.encode(result).decode())
    else:
        print(result.text)
    return EXIT_OK


def run_refactor(args: argparse.Namespace) -> int:
    text = read_source(args.path)
    start, end = line_range(text, args.lines)
    if (problem := instruction_problem(args.instruction)) is not None:
        raise UsageError(f"--instruction: {problem}")
    check_request_flags(args)
    engine = load(args, needs_draft=args.speculation in ("draft", "both", "auto"))
    request = RefactorRequest(
        text=text,
        start=start,
        end=end,
        instruction=args.instruction,
        language_id=language_id_for_path(args.path),
        path=str(Path(args.path).resolve()),
        max_tokens=args.max_tokens,
        speculation=args.speculation,
        temperature=args.temperature,
    )
    result = engine.refactor(request)
    keep_kv_slots(engine)
    if args.json:
        index = LineIndex(text)
        payload = {
            "newText": result.new_text,
            "range": _range_dict(index, result.start, result.end),
            "stats": msgspec.to_builtins(result.stats),
        }
        print(msgspec.json.encode(payload).decode())
    else:
        sys.stdout.write(result.new_text)
    return EXIT_OK


def _range_dict(index: LineIndex, start: int, end: int) -> dict[str, dict[str, int]]:
    s, e = index.position(start), index.position(end)
    return {
        "start": {"line": s.line, "character": s.character},
        "end": {"line": e.line, "character": e.character},
    }


# The subcommands, in the order `groundspec --help` lists them.
COMMANDS: list[Register] = [
    cli_serve.register,
    register_complete,
    register_refactor,
    cli_next_edit.register,
    cli_models.register,
    cli_lab.register_demo,
    cli_lab.register_bench,
]


if __name__ == "__main__":
    main()
