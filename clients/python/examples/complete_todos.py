"""Complete every TODO comment in a file: the code after each TODO line comes from groundspec.

    python complete_todos.py src/app.py            # print a unified diff
    python complete_todos.py src/app.py --write    # rewrite the file

The completion for a TODO goes on a new line below it, indented like it.
"""

from __future__ import annotations

import argparse
import re
import shlex
import sys
from pathlib import Path

from groundspec_client import (
    Client,
    GroundspecError,
    Progress,
    language_id,
    start,
    utf16_len,
    write_or_show_diff,
)

TODO = re.compile(r"^(?P<indent>[ \t]*)(#|//)\s*TODO\b")


def complete_todos(client: Client, text: str, language: str, max_tokens: int) -> str:
    """`text` with a completion inserted below each TODO comment line."""
    lines = text.split("\n")
    row = 0
    while row < len(lines):
        match = TODO.match(lines[row])
        row += 1
        if not match:
            continue
        indent = match.group("indent")
        lines.insert(row, indent)
        result = client.complete(
            text="\n".join(lines),
            language_id=language,
            line=row,
            character=utf16_len(indent),
            max_tokens=max_tokens,
        )
        completion = result.text.rstrip()
        if not completion.strip():
            del lines[row]  # nothing to add here
            continue
        new_lines = (indent + completion).split("\n")
        lines[row : row + 1] = new_lines
        row += len(new_lines)
    return "\n".join(lines)


def show_progress(progress: Progress) -> None:
    """Model loading and long refactors, on stderr (stdout is the diff)."""
    print(progress.describe(), file=sys.stderr)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("file", type=Path)
    parser.add_argument("--write", action="store_true", help="rewrite the file instead of a diff")
    parser.add_argument("--max-tokens", type=int, default=128)
    parser.add_argument("--tcp", metavar="HOST:PORT", help="use a running `groundspec serve --tcp`")
    parser.add_argument(
        "--server", default="groundspec serve", help="command that starts the server"
    )
    args = parser.parse_args(argv)

    text = args.file.read_text(encoding="utf-8")
    try:
        with start(args.tcp, shlex.split(args.server), on_progress=show_progress) as client:
            new_text = complete_todos(client, text, language_id(args.file), args.max_tokens)
    except (GroundspecError, OSError) as exc:
        print(f"complete_todos: {exc}", file=sys.stderr)
        return 1
    write_or_show_diff(args.file, text, new_text, args.write)
    return 0


if __name__ == "__main__":
    sys.exit(main())
