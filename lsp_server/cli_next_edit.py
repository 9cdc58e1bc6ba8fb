"""`groundspec next-edit PATH[:LINE:COL] [--since FILE] [--json] [--write]`.

The recent edits are the file's uncommitted changes against git (the version
in HEAD), or its changes since FILE; the one nearest the cursor is taken as
the latest. Without LINE:COL the cursor is at the end of the last changed run
of lines. Prints the proposed edit as a diff (nothing, and a note on stderr,
when there is none); --json prints exactly the groundspec/nextEdit result;
--write applies the edit to the file.
"""

from __future__ import annotations

import argparse
import difflib
import os
import shutil
import subprocess
import sys
from pathlib import Path

import msgspec

from speculator.edits import edits_between
from speculator.languages import language_id_for_path
from speculator.next_edit.core import NextEditRequest
from speculator.next_edit.imports import ImportSources
from speculator.next_edit.prompts import PROMPT_FORMATS
from speculator.next_edit.proposal import MIN_CONFIDENCE, applied
from speculator.types import SPECULATION_MODES, CancelToken, Snippet

from .cli_common import (
    EXIT_OK,
    CannotError,
    UsageError,
    add_command,
    engine_config,
    engine_flags,
    keep_kv_slots,
)
from .cli_input import cursor_offset, read_source
from .convert import LineIndex
from .next_edit import result_dict, run_on_engine

GIT_TIMEOUT_S = 10


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = add_command(
        sub,
        "next-edit",
        help="propose the edit that follows a file's uncommitted changes",
        description="Propose the edit that most likely follows the recent edits of a file: "
        "its uncommitted changes against git, or its changes since --since FILE. Prints the "
        "proposal as a diff, or with --json the groundspec/nextEdit result (edits and stats; "
        "edits is empty when nothing is worth proposing). --write applies it to the file.",
        examples=[
            "groundspec next-edit src/app.py",
            "groundspec next-edit src/app.py:42:9 --json",
            "groundspec next-edit src/app.py --since /tmp/app.py.orig --write",
        ],
    )
    parser.add_argument(
        "location", metavar="PATH[:LINE:COL]", help="the file, and the cursor (1-based)"
    )
    parser.add_argument(
        "--since", metavar="FILE", help="the file's earlier text (default: its version in git)"
    )
    parser.add_argument("--json", action="store_true", help="print the groundspec/nextEdit result")
    parser.add_argument("--write", action="store_true", help="apply the proposed edit to PATH")
    parser.add_argument(
        "--speculation",
        choices=SPECULATION_MODES,
        default="auto",
        help="how to draft (the proposal is the same in every mode): auto (the default), off, "
        "lookup, draft, both",
    )
    parser.add_argument(
        "--format",
        choices=PROMPT_FORMATS,
        default="qwen",
        help="the prompt layout: qwen (the shipped model, the default), zeta2, sweep",
    )
    parser.add_argument(
        "--rewrite",
        action="store_true",
        help="with the qwen format: the model also writes the window anew rather than only "
        "scoring the draft (slower; zeta2 and sweep always rewrite)",
    )
    parser.add_argument(
        "--min-confidence",
        type=float,
        default=MIN_CONFIDENCE,
        metavar="P",
        help=f"the least probability of a proposed token (default {MIN_CONFIDENCE}); "
        "a rename carried on needs P to the power 0.8, an import copied from another "
        "file P to the power 1.5",
    )
    engine_flags(parser)
    parser.set_defaults(run=run_next_edit)


def run_next_edit(args: argparse.Namespace) -> int:
    path, line, col = split_location(args.location)
    text = read_source(path)
    before = earlier_text(args.since) if args.since else committed_text(path)
    cursor = cursor_offset(text, line, col) if line else None
    if not 0.0 <= args.min_confidence <= 1.0:
        raise UsageError(f"--min-confidence must be between 0 and 1, got {args.min_confidence}")
    index = LineIndex(text)
    near = index.position(cursor).line if cursor is not None else None
    edits = edits_between(before, text, near)
    if not edits:
        raise CannotError(f"{path} has no changes to follow (against {args.since or 'git HEAD'})")
    if cursor is None:
        cursor = edits[-1].new_end
    request = NextEditRequest(
        text=text,
        cursor=cursor,
        edits=edits,
        path=str(Path(path)),
        language_id=language_id_for_path(path),
        speculation=args.speculation,
        prompt_format=args.format,
        min_confidence=args.min_confidence,
        draft_only=False if args.rewrite else None,
        import_sources=git_import_sources(path),
    )
    from speculator.factory import load_engine

    engine = load_engine(
        engine_config(args, needs_draft=args.speculation in ("draft", "both")), env=False
    )
    result = run_on_engine(engine, request, CancelToken())
    keep_kv_slots(engine)  # the next call reuses the instructions (112 tokens)
    if args.json:
        print(msgspec.json.encode(result_dict(index, result)).decode())
    new_text = applied(text, result.edits)
    if not result.edits:
        why = f" ({result.reason})" if result.reason else ""
        print(f"groundspec: no next edit worth proposing{why}", file=sys.stderr)
    elif not args.json:
        sys.stdout.writelines(
            difflib.unified_diff(
                text.splitlines(keepends=True),
                new_text.splitlines(keepends=True),
                f"a/{path.lstrip('/')}",  # as git names an absolute path: a/tmp/x.py
                f"b/{path.lstrip('/')}",
            )
        )
    if args.write and result.edits:
        write_text(path, new_text)
    return EXIT_OK


def split_location(location: str) -> tuple[str, int, int]:
    """PATH or PATH:LINE:COL (1-based); (path, 0, 0) when no position is given."""
    parts = location.rsplit(":", 2)
    if len(parts) == 3 and all(p.isascii() and p.isdigit() for p in parts[1:]):
        line, col = int(parts[1]), int(parts[2])
        if line < 1 or col < 1:
            raise UsageError("LINE and COL are 1-based")
        return parts[0], line, col
    return location, 0, 0


def earlier_text(path: str) -> str:
    """--since FILE: may be empty (the file is new), unlike the file itself."""
    try:
        data = Path(path).read_bytes()
    except OSError as exc:
        raise CannotError(f"cannot read {path}: {exc.strerror or exc}") from None
    return read_source(path) if data.strip() else ""


def committed_text(path: str) -> str:
    """The file as git's HEAD has it; a clear error when there is none."""
    file = Path(path).resolve()
    try:
        done = subprocess.run(
            ["git", "-C", str(file.parent), "show", f"HEAD:./{file.name}"],
            capture_output=True,
            timeout=GIT_TIMEOUT_S,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise CannotError(f"cannot run git for {path}: {exc}; give --since FILE") from None
    if done.returncode != 0:
        why = done.stderr.decode(errors="replace").strip().splitlines()
        reason = why[-1] if why else "git failed"
        raise CannotError(f"no committed version of {path} ({reason}); give --since FILE")
    try:
        return done.stdout.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise CannotError(f"the committed {path} is not UTF-8 text") from None


def git_import_sources(path: str) -> ImportSources:
    """The import lines naming a name in the other files of the git work tree that
    `path` lies in (`git grep`), each file's as one snippet; none outside git."""
    file = Path(path).resolve()
    git = ["git", "-C", str(file.parent)]

    def sources(name: str) -> list[Snippet]:
        found = grep_import_lines(git, name)
        others = {os.path.relpath(file.parent / where): lines for where, lines in found.items()}
        return [
            Snippet(where, "\n".join(lines))
            for where, lines in others.items()
            if Path(where).resolve() != file
        ]

    return sources


def grep_import_lines(
    git: list[str], name: str, revision: str | None = None, pathspecs: tuple[str, ...] = ()
) -> dict[str, list[str]]:
    """The lines starting `from`/`import` and naming `name` in the files git tracks
    (`git`: the command and its options; at `revision`, else the work tree), by
    path as git prints it (without the revision); empty when git fails."""
    pattern = f"^(from|import)[[:space:]].*{name}"
    at = [revision] if revision else []
    grep = [*git, "grep", "-I", "-z", "-E", "-e", pattern, *at, "--", *pathspecs]
    try:
        done = subprocess.run(grep, capture_output=True, timeout=GIT_TIMEOUT_S, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return {}
    found: dict[str, list[str]] = {}
    for hit in done.stdout.decode("utf-8", "replace").splitlines():
        where, _, line = hit.partition("\0")
        if revision:
            where = where.split(":", 1)[1]
        found.setdefault(where, []).append(line)
    return found


def write_text(path: str, text: str) -> None:
    """Replace the file's text (through a temporary file: never half written)."""
    target = Path(path)
    temporary = target.with_name(f".{target.name}.groundspec-next-edit")
    try:
        temporary.write_text(text, encoding="utf-8")
        shutil.copymode(target, temporary)
        temporary.replace(target)
    except OSError as exc:
        raise CannotError(f"cannot write {path}: {exc.strerror or exc}") from None
