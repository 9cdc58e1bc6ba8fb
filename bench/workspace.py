"""`groundspec bench --workspace`: completions that other files can ground.

Each task opens a new file that ports a definition from a module in the
workspace (with a local variable renamed, so it is not a verbatim copy) and
asks for the removed body. Without the index the engine sees only the open
file; with it, the most similar chunks of the workspace come first in the
prompt and join the lookup corpus. Reported: exact match of the first line
and of the whole expected block, decode speed against `off`, and acceptance.
"""

from __future__ import annotations

import argparse
import json
import logging
import shutil
import statistics
import tempfile
from dataclasses import dataclass
from pathlib import Path

import msgspec

from speculator.config import EngineConfig
from speculator.engine import SpeculativeEngine
from speculator.types import CompletionRequest, CompletionResult, Speculation
from speculator.workspace import WorkspaceIndex

from .tasks import CORPUS, peak_rss_mb

log = logging.getLogger(__name__)

# The workspace: the Python modules of the first corpus (results stay comparable).
WORKSPACE_MODULES = ("bisect.py", "colorsys.py", "fnmatch.py", "graphlib.py", "reprlib.py")
# (module, definition, local to rename, its new name, lines of body to remove)
TASKS = [
    ("graphlib.py", "def done(", "nodeinfo", "info", 6),
    ("graphlib.py", "def get_ready(", "result", "ready", 4),
    ("reprlib.py", "def repr_dict(", "pieces", "parts", 6),
    ("bisect.py", "def insort_left(", "lo", "low", 4),
    ("colorsys.py", "def rgb_to_hsv(", "maxc", "maximum", 5),
    ("fnmatch.py", "def filter(", "result", "matches", 5),
]


def make_task(module: str, anchor: str, old: str, new: str, n_lines: int) -> tuple[str, int, str]:
    """(the ported file's text without the body, cursor, the removed body)."""
    source = (CORPUS / module).read_text()
    start = source.rfind("\n", 0, source.index(anchor)) + 1
    indent = source.index(anchor) - start
    ends = [source.find("\n" + " " * indent + stop, start + 1) for stop in ("def ", "class ", "@")]
    end = min([e for e in ends if e > 0] + [len(source)])
    lines = source[start:end].replace(old, new).split("\n")
    body_at = 1
    if lines[1].strip().startswith(('"""', "'''")):  # skip the docstring
        body_at = (
            next(
                i
                for i in range(1, len(lines))
                if lines[i].rstrip().endswith(('"""', "'''"))
                and (i > 1 or lines[i].strip().count('"""') == 2)
            )
            + 1
        )
    while not lines[body_at].strip():
        body_at += 1
    head = "\n".join(lines[:body_at]) + "\n"
    body = "\n".join(lines[body_at : body_at + n_lines])
    body_indent = len(body) - len(body.lstrip())
    wrapper = "class Ported:\n" if indent else ""
    text = f"# Ported from {module}.\n\n{wrapper}" + head + " " * body_indent
    return text + "\n", len(text), body.strip()


@dataclass
class Row:
    task: str
    variant: str  # "without" or "with" the workspace index
    expected: str
    off: CompletionResult
    auto: CompletionResult


def run_one(
    engine: SpeculativeEngine, text: str, cursor: int, mode: Speculation
) -> CompletionResult:
    req = CompletionRequest(
        text=text,
        cursor=cursor,
        path="/port/ported.py",
        max_tokens=96,
        speculation=mode,
        multiline=True,
    )
    return engine.complete(req)


def run_workspace(args: argparse.Namespace, config: EngineConfig) -> int:
    engine = SpeculativeEngine.load(config)
    root = Path(tempfile.mkdtemp(prefix="groundspec-ws-"))
    for module in WORKSPACE_MODULES:
        shutil.copy(CORPUS / module, root / module)
    index = WorkspaceIndex(str(root)).start()
    index.wait_ready(30)
    rows = []
    try:
        for module, anchor, old, new, n in TASKS:
            text, cursor, expected = make_task(module, anchor, old, new, n)
            for variant, provider in (("without", None), ("with", index)):
                engine.set_context_provider(provider)
                off = run_one(engine, text, cursor, "off")
                auto = run_one(engine, text, cursor, "auto")
                rows.append(Row(f"{module}:{anchor}", variant, expected, off, auto))
    finally:
        index.stop()
        engine.set_context_provider(None)
        shutil.rmtree(root, ignore_errors=True)
    text = report(rows)
    if args.output:
        Path(args.output).write_text(text)
    print(
        json.dumps(
            [
                {
                    **r.__dict__,
                    "off": msgspec.to_builtins(r.off),
                    "auto": msgspec.to_builtins(r.auto),
                }
                for r in rows
            ]
        )
        if args.json
        else text
    )
    return 0


def _rate(result: CompletionResult) -> float:
    ms = result.stats.decode_ms
    return result.stats.generated_tokens / ms if ms > 0 else 0.0


def report(rows: list[Row]) -> str:
    lines = [
        "# Workspace grounding",
        "",
        "`groundspec bench --workspace`: each task ports a definition from a workspace module "
        "into a new file (a local variable renamed) and asks for its removed body (multi-line, "
        "up to 96 tokens). The same engine runs each task without and with the workspace index.",
        "",
        "| index | tasks | first line exact | whole block exact | auto decode speedup (median) | lookup acceptance |",
        "|---|---|---|---|---|---|",
    ]
    for variant in ("without", "with"):
        mine = [r for r in rows if r.variant == variant]
        first = sum(1 for r in mine if _first_line(r.off.text) == _first_line(r.expected))
        whole = sum(1 for r in mine if r.expected in r.off.text)
        speedups = [
            _rate(r.auto) / _rate(r.off) for r in mine if _rate(r.off) > 0 and _rate(r.auto) > 0
        ]
        drafted = sum(r.auto.stats.drafted_tokens for r in mine)
        accepted = sum(r.auto.stats.accepted_tokens for r in mine)
        acc = f"{accepted / drafted:.2f} ({accepted}/{drafted})" if drafted else "no drafts"
        lines.append(
            f"| {variant} | {len(mine)} | {first}/{len(mine)} | {whole}/{len(mine)} | "
            f"{statistics.median(speedups) if speedups else 0:.2f} | {acc} |"
        )
    lines += [
        "",
        "Per task (`off` first line, `auto` speedup over `off`, drafted / accepted tokens):",
        "",
        "| task | index | first line exact | auto speedup | drafted | accepted |",
        "|---|---|---|---|---|---|",
    ]
    for r in rows:
        exact = _first_line(r.off.text) == _first_line(r.expected)
        speedup = _rate(r.auto) / _rate(r.off) if _rate(r.off) > 0 else 0.0
        lines.append(
            f"| {r.task} | {r.variant} | {'yes' if exact else 'no'} | {speedup:.2f} | "
            f"{r.auto.stats.drafted_tokens} | {r.auto.stats.accepted_tokens} |"
        )
    lines += ["", f"Peak RSS: {peak_rss_mb():.0f} MB.", ""]
    return "\n".join(lines)


def _first_line(text: str) -> str:
    return text.strip().split("\n")[0].strip()
