"""The benchmark corpus and the tasks derived from it.

Completion tasks remove a line (or a block of 4 lines) of a corpus file and
ask for it back; refactor tasks name a definition and an instruction
(`REFACTORS`). Every task sits in a fixed dev or test split (`split_of`).
"""

from __future__ import annotations

import resource
from dataclasses import dataclass
from pathlib import Path

from speculator.grounding import Grounding
from speculator.languages import language_id_for_path

CORPUS = Path(__file__).parent / "corpus"

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


def _definition_span(text: str, path: str, name: str) -> tuple[int, int]:
    grounding = Grounding(text, language_id_for_path(path))
    for pattern in (f"def {name}(", f"const {name} = ", f"function {name}("):
        at = text.find(pattern)
        if at >= 0:
            scope = grounding.enclosing_scope(at + len(pattern) - 1)
            if pattern.startswith("const"):  # take the whole declaration line to its end
                end = text.find("\n}\n", at)
                return text.rfind("\n", 0, at) + 1, end + 3
            if scope:
                start = text.rfind("\n", 0, scope[0]) + 1
                end = text.find("\n", scope[1])
                return start, (end + 1 if end >= 0 else len(text))
    raise ValueError(f"{name} not found in {path}")


def completion_tasks(per_file: int = 3) -> list[Task]:
    """Remove a line's code (or a block of 4 lines) and ask for it back."""
    tasks: list[Task] = []
    for path in sorted(CORPUS.glob("*.py")) + sorted(CORPUS.glob("*.js")):
        text = path.read_text()
        lines = text.split("\n")
        candidates = [
            i
            for i, ln in enumerate(lines)
            if ln.startswith("    ")
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
            expected = text[start:end]
            edited = text[:start] + text[end:]
            tasks.append(
                Task(
                    f"{path.name}:{i + 1}{'+' if multiline else ''}",
                    "completion",
                    path.name,
                    edited,
                    start,
                    expected=expected,
                    multiline=multiline,
                )
            )
    return tasks


def refactor_tasks() -> list[Task]:
    tasks = []
    for file, name, instruction in REFACTORS:
        text = (CORPUS / file).read_text()
        start, end = _definition_span(text, file, name)
        tasks.append(
            Task(f"{file}:{name}", "refactor", file, text, start, end, instruction=instruction)
        )
    return tasks


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
