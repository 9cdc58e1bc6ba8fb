"""The benchmark corpus and the tasks derived from it.

Completion tasks remove a line (or a block of 4 lines) of a corpus file and
ask for it back; refactor tasks name a definition and an instruction
(`REFACTORS`). Every task sits in a fixed dev or test split (`split_of`):
tune on dev, report test; the test split stands in for unseen code.
"""

from __future__ import annotations

import hashlib
import re
import resource
from dataclasses import dataclass
from pathlib import Path

from speculator.grounding import Grounding
from speculator.languages import language_id_for_path

CORPUS = Path(__file__).parent / "corpus"
SPLITS = ("dev", "test")

# The first corpus: the controller and drafters were tuned on these tasks
# before the split existed, so they stay in dev whatever their hash says.
TUNED_FILES = frozenset(
    {"bisect.py", "colorsys.py", "fnmatch.py", "graphlib.py", "reprlib.py"}
    | {"did-you-mean.js", "explain-dep.js", "format-bytes.js"}
)
TUNED_REFACTORS = 10  # the first entries of REFACTORS

REFACTORS: list[tuple[str, str, str]] = [  # (file, definition name, instruction)
    ("colorsys.py", "rgb_to_hls", "Rename the parameters r, g, b to red, green, blue."),
    ("bisect.py", "insort_right", "Add type hints to the parameters and the return value."),
    ("graphlib.py", "static_order", "Add a docstring that explains what the method yields."),
    ("fnmatch.py", "filter", "Rename the local variable `result` to `matches`."),
    ("reprlib.py", "repr_dict", "Rename the parameter `level` to `depth`."),
    (
        "colorsys.py",
        "hsv_to_rgb",
        "Add type hints: all parameters are floats and it returns a tuple of three floats.",
    ),
    ("graphlib.py", "done", "Rename the local variable `nodeinfo` to `info`."),
    ("explain-dep.js", "explainDependents", "Rename the parameter `depth` to `level`."),
    (
        "format-bytes.js",
        "formatBytes",
        "Add a JSDoc comment describing the parameters and the return value.",
    ),
    (
        "explain-dep.js",
        "explainEdge",
        "Convert the string concatenations to template literals where they exist, keep the rest unchanged.",
    ),
    # -- added with the dev/test split (split by the hash of the task name) --
    ("textwrap.py", "dedent", "Rename the local variable `margin` to `common`."),
    (
        "textwrap.py",
        "indent",
        "Add type hints: text and prefix are strings, predicate is an optional callable "
        "that takes a line and returns a truth value; it returns a string.",
    ),
    ("textwrap.py", "shorten", "Rename the parameter `width` to `max_width`."),
    ("shlex.py", "quote", "Rename the parameter `s` to `text`."),
    ("shlex.py", "split", "Add type hints to the parameters and the return value."),
    (
        "getopt.py",
        "do_longs",
        "Rename `opts` to `pairs`, `optarg` to `value` and `args` to `rest`.",
    ),
    ("getopt.py", "long_has_args", "Rename the local variable `possibilities` to `candidates`."),
    (
        "getopt.py",
        "short_has_arg",
        "Add a docstring that explains what the function returns and when it raises.",
    ),
    ("getopt.py", "do_shorts", "Add type hints to the parameters and the return value."),
    ("quopri.py", "unhex", "Rename the local variable `bits` to `value` and `i` to `base`."),
    ("quopri.py", "needsquoting", "Rename the parameter `c` to `char`."),
    (
        "colorsys.py",
        "rgb_to_hsv",
        "Rename the local variables `maxc` and `minc` to `high` and `low`.",
    ),
    ("explain-eresolve.js", "explain", "Rename the parameter `depth` to `maxDepth`."),
    (
        "explain-eresolve.js",
        "report",
        "Add a JSDoc comment describing the parameters and the return value.",
    ),
    ("npm-usage.js", "cmdNames", "Rename the local variables `out` to `lines` and `l` to `row`."),
    ("npm-usage.js", "cmdUsages", "Rename the parameter `Npm` to `npm`."),
    ("tar.js", "logTar", "Rename the parameter `tarball` to `pkg`."),
    (
        "MoveToCell.ts",
        "wrappedRowsForRow",
        "Rename the parameter `currentRow` to `row` and the local variable `rowCount` to `count`.",
    ),
    (
        "MoveToCell.ts",
        "repeat",
        "Use String.prototype.repeat instead of the loop; keep the signature.",
    ),
    ("MoveToCell.ts", "wrappedRowsCount", "Rename the local variable `wrappedRows` to `count`."),
    ("SortedList.ts", "delete", "Rename the local variable `key` to `sortKey`."),
    (
        "client.go",
        "readAddr",
        "Rename the local variables `addrs` to `parts` and `addr` to `address`.",
    ),
    ("proxy.go", "closeOnIdle", "Rename the parameter `sockCtx` to `ctx`."),
    ("proxy.go", "closeOnUpdate", "Rename the local variable `out` to `output`."),
    ("socket.go", "checkPermissions", "Rename the receiver `s` to `sock`."),
    (
        "socket.go",
        "defaultDir",
        "Add a doc comment that says where the socket directory is and when it is relative.",
    ),
]


@dataclass
class Task:
    name: str
    kind: str  # "completion" or "refactor"
    path: str
    text: str
    start: int  # cursor (completion) or selection start (refactor)
    end: int = 0
    expected: str = ""  # the removed original text (completion)
    instruction: str = ""
    multiline: bool = False
    split: str = "dev"

    @property
    def language(self) -> str:
        return language_id_for_path(self.path)


def split_of(name: str) -> str:
    """A task's split, fixed by its name: the low bit of sha256(name)."""
    return SPLITS[hashlib.sha256(name.encode()).digest()[-1] & 1]


# A definition's header, by language: Python, JS/TS functions, Go functions and
# methods (with a receiver), TS class methods.
_HEADER = r"(?:def|function|func(?: \([^)]*\))?|public|private|protected) {name}[(<]"


def _definition_span(text: str, path: str, name: str) -> tuple[int, int]:
    """(start, end) of the named definition: whole lines, from its first line to its last."""
    if (at := text.find(f"const {name} = ")) >= 0:  # an arrow function: to its closing line
        end = text.find("\n}\n", at)
        return text.rfind("\n", 0, at) + 1, end + 3
    match = re.search(_HEADER.format(name=re.escape(name)), text)
    if match:
        scope = Grounding(text, language_id_for_path(path)).enclosing_scope(match.end() - 1)
        if scope:
            start = text.rfind("\n", 0, scope[0]) + 1
            end = text.find("\n", scope[1])
            return start, (end + 1 if end >= 0 else len(text))
    raise ValueError(f"{name} not found in {path}")


def corpus_files() -> list[Path]:
    """Every source file of the corpus, in a stable order."""
    order = [".py", ".js", ".ts", ".go", ".rs"]  # the first corpus's files first, as before
    files = [p for p in CORPUS.iterdir() if p.suffix in order]
    return sorted(files, key=lambda p: (order.index(p.suffix), p.name))


def completion_tasks(per_file: int = 3) -> list[Task]:
    """Remove a line's code (or a block of 4 lines) and ask for it back."""
    tasks: list[Task] = []
    for path in corpus_files():
        text = path.read_text()
        lines = text.split("\n")
        candidates = [
            i
            for i, ln in enumerate(lines)
            if ln.startswith(("    ", "\t"))
            and len(ln.strip()) >= 16
            and not ln.strip().startswith(("#", "//", '"', "'", "*"))
        ]
        picks = [candidates[(k + 1) * len(candidates) // (per_file + 1)] for k in range(per_file)]
        for k, i in enumerate(picks):
            multiline = k == per_file - 1
            indent = len(lines[i]) - len(lines[i].lstrip())
            start = sum(len(s) + 1 for s in lines[:i]) + indent
            n_lines = 4 if multiline else 1
            end = sum(len(s) + 1 for s in lines[: i + n_lines]) - 1
            name = f"{path.name}:{i + 1}{'+' if multiline else ''}"
            tasks.append(
                Task(
                    name,
                    "completion",
                    path.name,
                    text[:start] + text[end:],
                    start,
                    expected=text[start:end],
                    multiline=multiline,
                    split="dev" if path.name in TUNED_FILES else split_of(name),
                )
            )
    return tasks


def refactor_tasks() -> list[Task]:
    tasks = []
    for n, (file, name, instruction) in enumerate(REFACTORS):
        text = (CORPUS / file).read_text()
        start, end = _definition_span(text, file, name)
        task_name = f"{file}:{name}"
        split = "dev" if n < TUNED_REFACTORS else split_of(task_name)
        tasks.append(
            Task(
                task_name, "refactor", file, text, start, end, instruction=instruction, split=split
            )
        )
    return tasks


def select(tasks: list[Task], split: str) -> list[Task]:
    """The tasks of one split ("dev", "test") or all of them ("all")."""
    return tasks if split == "all" else [t for t in tasks if t.split == split]


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
