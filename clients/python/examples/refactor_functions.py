"""Apply one instruction to every top-level function of a Python file, with groundspec.

    python refactor_functions.py src/app.py --instruction "add type hints"
    python refactor_functions.py src/app.py --instruction "add docstrings" --write

Functions are found with `ast` (decorators included); each one is sent as a
`groundspec/refactor` of its lines, from the last function to the first so the
line numbers of the others stay valid.
"""

from __future__ import annotations

import argparse
import ast
import shlex
import sys
from pathlib import Path

from groundspec_client import (
    Client,
    GroundspecError,
    Progress,
    apply_edit,
    start,
    utf16_len,
    write_or_show_diff,
)


def function_spans(source: str) -> list[tuple[str, int, int]]:
    """(name, first line, last line), 1-based, of each top-level function."""
    spans = []
    for node in ast.parse(source).body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            first = min([node.lineno] + [d.lineno for d in node.decorator_list])
            spans.append((node.name, first, node.end_lineno or node.lineno))
    return spans


def refactor_functions(client: Client, text: str, instruction: str) -> str:
    for name, first, last in reversed(function_spans(text)):
        start_pos = (first - 1, 0)
        end_pos = (last - 1, utf16_len(text.split("\n")[last - 1]))
        print(f"refactoring {name} (lines {first}-{last})", file=sys.stderr)
        result = client.refactor(
            text=text, language_id="python", start=start_pos, end=end_pos, instruction=instruction
        )
        text = apply_edit(text, result.range, result.new_text)
    return text


def show_progress(progress: Progress) -> None:
    """Model loading and long refactors, on stderr (stdout is the diff)."""
    print(progress.describe(), file=sys.stderr)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("file", type=Path)
    parser.add_argument("--instruction", required=True)
    parser.add_argument("--write", action="store_true", help="rewrite the file instead of a diff")
    parser.add_argument("--tcp", metavar="HOST:PORT", help="use a running `groundspec serve --tcp`")
    parser.add_argument(
        "--server", default="groundspec serve", help="command that starts the server"
    )
    args = parser.parse_args(argv)

    if args.file.suffix != ".py":
        print(
            "refactor_functions: only Python files (functions are found with ast)", file=sys.stderr
        )
        return 2
    text = args.file.read_text(encoding="utf-8")
    try:
        with start(args.tcp, shlex.split(args.server), on_progress=show_progress) as client:
            new_text = refactor_functions(client, text, args.instruction)
    except (GroundspecError, OSError, SyntaxError) as exc:
        print(f"refactor_functions: {exc}", file=sys.stderr)
        return 1
    write_or_show_diff(args.file, text, new_text, args.write)
    return 0


if __name__ == "__main__":
    sys.exit(main())
