"""The import for a name just used (speculator/next_edit/imports.py), replayed from
this repository's history on the real model:

    python -m bench.next_edit_imports [--limit N] [--releases dev|test]

Each commit up to IMPORTS_COMMIT (55c708d) that changed a Python file is
replayed hunk by hunk: the file as it was, one hunk applied as the user's edit,
the other files as git had them before the commit (`git grep`, as `groundspec
next-edit` reads them). Two sets come out:
- *imports*: a hunk that began to use a name the commit also imported;
- *drafted*: any other hunk whose draft is an import.
The model is asked where the draft is an import (other rules' drafts are left
out), or where it becomes one once another rule's draft is taken as the user
would take it (a new parameter stored before the import its type needs). A
proposal is right when the commit imported every name it binds (counted apart:
its lines are the commit's own lines); one the commit did not make is a wrong
suggestion.
The rule's details were worked out on this same history: it is not held out.
`--releases test` replays other projects instead, held out: the release
histories of bench.next_edit_releases (a commit per release and changed file),
the newest *imports* replays of each package, as many from each as make
`--limit` in all.
"""

from __future__ import annotations

import argparse
import difflib
import logging
import re
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass, replace
from itertools import islice
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

from lsp_server.cli_next_edit import grep_import_lines
from speculator.edits import Edit, EditHistory
from speculator.next_edit.core import NextEditRequest, prepare
from speculator.next_edit.imports import (
    ANY_IMPORT,
    IMPORTED_EDITS,
    ImportSources,
    import_lines,
    imported_names,
)
from speculator.next_edit.proposal import TextEdit
from speculator.next_edit.window import recent_lines
from speculator.totals import percentile
from speculator.types import Snippet

from . import next_edit_releases

if TYPE_CHECKING:
    from speculator.engine import SpeculativeEngine

CHECKOUT = Path(__file__).resolve().parents[1]
IMPORTS_COMMIT = "55c708d"
MAX_FILE_CHARS = 200_000
# The sets of replays: `drafted` asks every hunk's draft, so it costs the most.
KINDS = ("imports", "drafted")


@dataclass(frozen=True)
class Replay:
    kind: str  # "imports" or "drafted"
    commit: str
    path: str
    request: NextEditRequest
    committed: frozenset[str]  # the lines of the file after the commit
    imported: frozenset[str]  # the names its imports bind after the commit


def bound(statement: str) -> list[str]:
    """The names one import statement binds."""
    return [item.bound for item in imported_names(statement)]


def replays(
    repo: Path, until: str = IMPORTS_COMMIT, kinds: tuple[str, ...] = KINDS
) -> Iterator[Replay]:
    """Every hunk of every Python file the history of git dir `repo` up to `until`
    changed, that uses a name the commit imported or (`drafted` among `kinds`) whose
    draft is an import."""
    git = ["git", "--git-dir", str(repo)]

    def out(*args: str) -> str:
        done = subprocess.run([*git, *args], capture_output=True, check=False)
        return done.stdout.decode("utf-8", "replace")

    for commit in out("rev-list", "--no-merges", until, "--", "*.py").split():
        changed = out("diff", "--name-only", "--diff-filter=M", f"{commit}^", commit, "--", "*.py")
        for path in changed.split():
            old, new = out("show", f"{commit}^:{path}"), out("show", f"{commit}:{path}")
            if max(len(old), len(new)) <= MAX_FILE_CHARS:
                sources = _sources(git, commit, path)
                yield from _file_replays(commit, path, old, new, sources, kinds)


def _file_replays(
    commit: str, path: str, old: str, new: str, sources: ImportSources, kinds: tuple[str, ...]
) -> Iterator[Replay]:
    old_lines, new_lines = old.split("\n"), new.split("\n")
    imported = frozenset(n for m in ANY_IMPORT.finditer(new) for n in bound(m[1]))
    added = {n for n in imported if not re.search(rf"(?<![\w.]){re.escape(n)}\b", old)}
    starts = [0]
    for line in old_lines:
        starts.append(starts[-1] + len(line) + 1)
    matcher = difflib.SequenceMatcher(None, old_lines, new_lines, autojunk=False)
    for tag, a1, a2, b1, b2 in matcher.get_opcodes():
        if tag == "equal" or a2 >= len(old_lines):
            continue
        uses = [n for n in added if any(_uses(line, n) for line in new_lines[b1:b2])]
        kind = "imports" if uses else "drafted"
        if kind not in kinds:
            continue
        written = "".join(line + "\n" for line in new_lines[b1:b2])
        request = _followed(_request(old, starts[a1], starts[a2], written, path, sources))
        if kind == "drafted" and not _drafts_an_import(request):
            continue
        yield Replay(kind, commit, path, request, frozenset(new_lines), imported)


def _uses(line: str, name: str) -> bool:
    return (
        not ANY_IMPORT.match(line)
        and re.search(rf"(?<![\w.]){re.escape(name)}\b", line) is not None
    )


def _request(
    old: str, start: int, end: int, written: str, path: str, sources: ImportSources
) -> NextEditRequest:
    history = EditHistory()
    history.record("u", start, old[start:end], written)
    return NextEditRequest(
        text=old[:start] + written + old[end:],
        cursor=start + len(written.rstrip("\n")),
        edits=history.edits("u"),
        path=path,
        import_sources=sources,
    )


def _drafts_an_import(request: NextEditRequest) -> bool:
    """Is the draft's change an import the import rule wrote (not a substitution
    that happens to change an import line)?"""
    plan = prepare(request)
    if plan is None or plan.draft_change is None:
        return False
    new = _new_lines(request, plan.draft_change.edit)
    recent = recent_lines(request.text, request.edits, IMPORTED_EDITS)
    rewrites = import_lines(request.text, request.path, recent, "python", request.import_sources)
    written = {line for rewrite in rewrites.values() for line in rewrite.split("\n")}
    return bool(new) and all(line in written for line in new)


def _followed(request: NextEditRequest) -> NextEditRequest:
    """The request after the draft's change is taken, where it is another rule's
    (the import comes after it); else the request."""
    plan = prepare(request)
    change = plan.draft_change if plan is not None else None
    if change is None or _drafts_an_import(request):
        return request
    edit = change.edit
    taken = Edit(edit.start, request.text[edit.start : edit.end], edit.new_text)
    text = edit.apply(request.text)
    return replace(request, text=text, cursor=taken.new_end, edits=[*request.edits, taken])


def _new_lines(request: NextEditRequest, edit: TextEdit) -> list[str]:
    """The lines the edit writes that the text did not have."""
    after = edit.apply(request.text)
    before = set(request.text.split("\n"))
    return [line for line in after.split("\n") if line not in before]


def _sources(git: list[str], commit: str, own: str) -> ImportSources:
    """The import lines naming `name` in the other files before the commit."""

    def sources(name: str) -> list[Snippet]:
        found = grep_import_lines(git, name, f"{commit}^", ("*.py",))
        return [Snippet(path, "\n".join(lines)) for path, lines in found.items() if path != own]

    return sources


class Verdict(NamedTuple):
    proposed: bool
    right: bool  # every name its import lines bind, the commit imported
    exact: bool  # and its lines are lines of the commit's file
    seconds: float


def verdict(replay: Replay, engine: SpeculativeEngine) -> Verdict:
    """How the engine's proposal for one replay compares with the commit."""
    began = time.perf_counter()
    result = engine.next_edit(replay.request)
    seconds = time.perf_counter() - began
    if not result.edits:
        return Verdict(False, False, False, seconds)
    new = _new_lines(replay.request, result.edits[0])
    names = [n for line in new if ANY_IMPORT.match(line) for n in bound(line)]
    right = bool(new) and all(ANY_IMPORT.match(line) for line in new)
    right = right and bool(names) and all(n in replay.imported for n in names)
    exact = right and all(line in replay.committed for line in new)
    return Verdict(True, right, exact, seconds)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--limit", type=int, default=60, help="replays per set (spread evenly)")
    parser.add_argument(
        "--releases",
        choices=sorted(next_edit_releases.SPLITS),
        help="replay other projects' releases (bench.next_edit_releases) instead",
    )
    args = parser.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(message)s", stream=sys.stderr)
    for line in run(args.limit, args.releases):
        print(line)
    return 0


def run(limit: int, releases: str | None = None) -> list[str]:
    """The report's lines: each set's replays on the real model, from this
    repository's history or from the `releases` split's packages."""
    from speculator.config import EngineConfig
    from speculator.engine import SpeculativeEngine

    with tempfile.TemporaryDirectory() as scratch:
        if releases is None:
            repo = Path(scratch) / "groundspec.git"
            subprocess.run(["git", "clone", "-q", "--bare", str(CHECKOUT), str(repo)], check=True)
            found = list(replays(repo))
        else:
            found = _release_replays(releases, Path(scratch), limit)
        engine = SpeculativeEngine.load(EngineConfig(kv_disk_mb=0))
        try:
            kinds = sorted({r.kind for r in found}, key=KINDS.index)
            return [_set_line(kind, found, engine, limit) for kind in kinds]
        finally:
            engine.close()


def _release_replays(split: str, scratch: Path, limit: int) -> list[Replay]:
    """The newest `imports` replays of each package of the release split, as many
    from each as make `limit` in all (the `drafted` set would ask every hunk)."""
    each = -(-limit // len(next_edit_releases.SPLITS[split]))
    built = next_edit_releases.histories(split, scratch)
    return [
        replay
        for _, tree in built
        for replay in islice(replays(tree / ".git", "HEAD", ("imports",)), each)
    ]


def _set_line(kind: str, found: list[Replay], engine: SpeculativeEngine, limit: int) -> str:
    every = [r for r in found if r.kind == kind]
    chosen = every[:: max(1, len(every) // limit)][:limit]
    drafted = [r for r in chosen if _drafts_an_import(r.request)]
    runs = [verdict(r, engine) for r in drafted]
    proposed = sum(v.proposed for v in runs)
    right = sum(v.right for v in runs)
    asked = [v.seconds * 1000 for v in runs]
    return (
        f"{kind}: {len(chosen)} of {len(every)} replays, the draft an import on {len(drafted)}: "
        f"proposed {proposed}, right {right} ({sum(v.exact for v in runs)} as the commit wrote "
        f"it; precision {right / max(1, proposed):.0%}); "
        f"p50 {percentile(asked, 50) / 1000:.1f} s, p95 {percentile(asked, 95) / 1000:.1f} s"
    )


if __name__ == "__main__":
    sys.exit(main())
