"""The linter's next fix, carried on (Python, with ruff).

When the user's last edit made exactly the change that one of ruff's fixes
makes (`typing.Optional[int]` -> `int | None`, `class A(object):` -> `class A:`,
`t.List[str]` -> `list[str]`), they are applying that rule by hand: the draft
makes the same rule's nearest other fix, and the fixes of that rule on the lines
next to it (a run of annotations is one edit). A fix ruff calls unsafe (it may
change what the code does at the edges: `"%s" % x` -> `"{}".format(x)`) is
followed only for the rule the user applied: having made it by hand, they
accept it. An import that the edit left
unused (its last use renamed away) is removed, wherever it stands.

The fix is ruff's, never guessed, and the model still scores it against the bar.
Only fixes of the rule the user applied are followed: a project's other lint
findings are its own business, not the user's next edit. Bar one family: a
pyupgrade rule applied by hand brings its siblings on the lines followed
(`t.Optional[t.List[str]]` -> `list[str] | None`), unless the user left one of
them undone on their own lines.
"""

from __future__ import annotations

import difflib
import functools
import json
import logging
import subprocess
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import PurePosixPath

from ..edits import Edit
from .draft import word_pattern
from .occurrences import MAX_PLACE_LINES
from .window import edited_lines, line_starts

log = logging.getLogger(__name__)

# Rules whose fixes are mechanical, so one made by hand says the next is wanted:
# pyupgrade (UP), comprehensions (C4), needless code (PIE), simplifications (SIM)
# comparisons (E711-E714), branches needlessly nested after a return, raise,
# continue or break (RET505-RET508: `elif` -> `if`) and the trailing comma of a
# call or signature written over lines (COM812). F401 (unused import) is only
# followed when the user's edit made the import unused. (All of ruff's rules were
# tried on the dev sets: one more right draft, RUF036.)
FOLLOWED_RULES = (
    *("UP", "C4", "PIE", "SIM", "E711", "E712", "E713", "E714"),
    *("RET505", "RET506", "RET507", "RET508", "COM812"),
)
UNUSED_IMPORT = "F401"
# The newest Python this ruff knows: a user applying a rule by hand shows that the
# code takes it. From 3.14 annotations are deferred, so quotes removed from one
# (UP037) are followed in a file without `from __future__ import annotations`.
TARGET_VERSION = "py315"
RUFF_TIMEOUT_S = 2.0
# A run of the same rule's fixes is carried on together up to this many lines apart.
RUN_GAP_LINES = 1
# ruff is asked again after each fix applied: overlapping fixes (two unused names
# in one import) are made one at a time.
MAX_FIX_ROUNDS = 8
# Families whose rules modernize a line together: a person writing `list[str]` for
# `t.List[str]` by hand writes `X | None` for `Optional[X]` beside it (pyupgrade).
FAMILY_RULES = ("UP",)
# Rules whose fixes are one fix, followed as one rule: a branch needlessly nested
# after a return, raise, continue or break (`elif` -> `if`).
ONE_FIX = {"RET506": "RET505", "RET507": "RET505", "RET508": "RET505"}
MAX_LINT_CHARS = 300_000

# Lines of the document rewritten: a line's new text (it may hold several lines),
# or None where the line is deleted.
LineRewrites = Mapping[int, str | None]


@dataclass(frozen=True)
class Fix:
    rule: str
    message: str
    first_line: int  # 0-based lines the fix touches, inclusive
    last_line: int
    edits: tuple[tuple[int, int, str], ...]  # (start offset, end offset, new text)
    safe: bool  # ruff's applicability: safe, or unsafe


def lint_fix_lines(
    before: str,
    text: str,
    edit: Edit,
    path: str,
    language_id: str,
    renamed: Collection[str] = (),
) -> LineRewrites:
    """Lines of `text` rewritten by the next fix of the rule that the last edit
    (`before` -> `text`) applied, or by removing an import it left unused (not one
    of a `renamed` name: the draft renames that import); {} when it applied none
    (or ruff is not at hand)."""
    if language_id != "python" or max(len(before), len(text)) > MAX_LINT_CHARS:
        return {}
    name = PurePosixPath(path).name or "untitled.py"
    old, new = lint(before, name), lint(text, name)
    if old is None or new is None:
        return {}
    focus = edited_lines(text, edit)
    # The lines the edit replaced: the same helper, on the edit undone.
    replaced = range(*edited_lines(before, replace(edit, old=edit.new, new=edit.old)))
    rules = applied_rules(before, text, replaced, old)
    rules = rules or _family_applied(before, text, replaced, old, name)
    declined = {f.rule for f in old if f.first_line in replaced} - rules
    fixes = [f for f in new if not _touches(f, focus) and (f.safe or f.rule in rules)]
    followed = [f for f in fixes if f.rule in rules and _near(f, focus)]
    followed += _newly_unused(old, [f for f in fixes if f.safe], name, renamed, text)
    if not followed:
        return {}
    first = min(followed, key=lambda f: (_distance(f, focus), f.first_line))
    lines = _run_lines(first, [f for f in followed if f.rule == first.rule])
    select, left_out = _with_family(first.rule, declined)
    fixed = fixed_by(text, name, lines, select, left_out, unsafe=rules)
    log.info("next edit: following ruff %s (%s)", first.rule, first.message)
    return line_rewrites(text, fixed)


def lint(text: str, name: str, rules: Sequence[str] | None = None) -> list[Fix] | None:
    """ruff's fixes for `text` (a file called `name`), safe and unsafe; None: ruff
    could not say."""
    found = ruff_findings(text, name, rules or (*FOLLOWED_RULES, UNUSED_IMPORT))
    if found is None:
        return None
    starts = line_starts(text)
    return [f for d in found if (f := _fix(d, starts)) is not None]


def ruff_findings(text: str, name: str, rules: Sequence[str]) -> list[object] | None:
    """ruff's findings of `rules` in `text` (a file called `name`), as its JSON
    reports them; None: ruff could not say."""
    command = [
        *_ruff(),
        "check",
        "--isolated",
        "--no-cache",
        "--quiet",
        "--exit-zero",
        f"--select={','.join(rules)}",
        f"--target-version={TARGET_VERSION}",
        "--output-format=json",
        f"--stdin-filename={name}",
        "-",
    ]
    try:
        done = subprocess.run(
            command, input=text, capture_output=True, text=True, timeout=RUFF_TIMEOUT_S
        )
        found = json.loads(done.stdout or "null")
    except (OSError, subprocess.TimeoutExpired, ValueError) as exc:
        log.info("next edit: ruff not run (%s)", exc)
        return None
    if done.returncode != 0 or not isinstance(found, list):
        log.info("next edit: ruff failed: %s", done.stderr.strip()[:200])
        return None
    return found


def applied_rules(before: str, after: str, changed: Iterable[int], fixes: list[Fix]) -> set[str]:
    """The rules whose fixes on the `changed` lines of `before`, made there,
    give what the user wrote (`after`): every line they write is one of the
    user's, or they are all the user changed."""
    lines = set(changed)
    by_rule: dict[str, list[Fix]] = {}
    for fix in fixes:
        if fix.first_line in lines:
            by_rule.setdefault(fix.rule, []).append(fix)
    return {
        rule
        for rule, found in by_rule.items()
        if _made_by(before, apply_edits(before, [e for f in found for e in f.edits]), after)
    }


def _family_applied(
    before: str, after: str, changed: range, fixes: list[Fix], name: str
) -> set[str]:
    """The rules of a family (FAMILY_RULES) whose fixes on the `changed` lines,
    made together and one after another, give what the user wrote
    (`t.Optional[t.List[str]]` -> `list[str] | None`: neither rule alone does;
    `"%s" % x` -> `f"{x}"`: UP031's `.format` that UP032 makes an f-string)."""
    for family in FAMILY_RULES:
        rules = {f.rule for f in fixes if f.first_line in changed and f.rule.startswith(family)}
        if not rules:
            continue
        lines = (changed.start, changed.stop - 1)
        fixed = fixed_by(before, name, lines, family, unsafe=rules)
        if _made_by(before, fixed, after):
            return rules
    return set()


def _made_by(before: str, fixed: str, after: str) -> bool:
    """Are the fixes that made `fixed` of `before` what the user wrote (`after`):
    every line they write is one of the user's, or they are all the user changed?"""
    written = {line.strip() for line in after.split("\n")} - {""}
    made = (
        {line.strip() for line in fixed.split("\n")}
        - {line.strip() for line in before.split("\n")}
        - {""}
    )
    return (bool(made) and made <= written) or _same_lines(fixed, after)


def apply_edits(text: str, edits: Iterable[tuple[int, int, str]]) -> str:
    """`text` with non-overlapping (start, end, new text) edits made."""
    for start, end, new in sorted(edits, reverse=True):
        text = text[:start] + new + text[end:]
    return text


def line_rewrites(text: str, fixed: str) -> LineRewrites:
    """`fixed` as lines of `text` rewritten (draft.draft_window's form)."""
    old, new = text.split("\n"), fixed.split("\n")
    rewrites: dict[int, str | None] = {}
    matcher = difflib.SequenceMatcher(None, old, new, autojunk=False)
    for op, i1, i2, j1, j2 in matcher.get_opcodes():
        if op == "equal":
            continue
        if i1 == i2:  # lines inserted: written after the line above (or before the first)
            if i1 > 0:
                rewrites[i1 - 1] = "\n".join([old[i1 - 1], *new[j1:j2]])
            else:
                rewrites[0] = "\n".join([*new[j1:j2], old[0]])
            continue
        rewrites[i1] = "\n".join(new[j1:j2]) if j2 > j1 else None
        rewrites.update(dict.fromkeys(range(i1 + 1, i2)))
    return rewrites


def _with_family(rule: str, declined: set[str]) -> tuple[str, set[str]]:
    """What to fix on the lines followed, as ruff's selection and the rules left
    out: `rule` (with the codes that make the same fix, ONE_FIX), or its family
    (FAMILY_RULES) bar the rules whose fixes the user left undone on their own
    lines."""
    family = next((f for f in FAMILY_RULES if rule.startswith(f)), None)
    if family is None:
        return ",".join([rule, *(code for code, same in ONE_FIX.items() if same == rule)]), set()
    return family, declined


def fixed_by(
    text: str,
    name: str,
    lines: tuple[int, int],
    select: str,
    left_out: Collection[str] = (),
    unsafe: Collection[str] = (),
) -> str:
    """`text` with the safe fixes of the rules ruff's `select` names, bar `left_out`,
    and the unsafe ones of the `unsafe` rules, made on `lines`, asking ruff again
    after each."""
    first, last = lines
    for _ in range(MAX_FIX_ROUNDS):
        found = lint(text, name, [select]) or []
        here = [
            f
            for f in found
            if first <= f.first_line <= last
            and f.rule not in left_out
            and (f.safe or f.rule in unsafe)
        ]
        if not here:
            break
        fixed = apply_edits(text, here[0].edits)
        last += fixed.count("\n") - text.count("\n")
        text = fixed
    return text


def _newly_unused(
    old: list[Fix], fixes: list[Fix], name: str, renamed: Collection[str], text: str
) -> list[Fix]:
    """Imports unused now that were not before the edit, bar those of `renamed`
    names (`Iterator` -> `Generator`: the import is renamed, not removed). In a
    package's `__init__.py` an import is an export, never removed."""
    if name == "__init__.py":
        return []
    before = {f.message for f in old if f.rule == UNUSED_IMPORT}
    lines = text.split("\n")
    return [
        f
        for f in fixes
        if f.rule == UNUSED_IMPORT
        and f.message not in before
        and not any(word_pattern(n, member=False).search(lines[f.first_line]) for n in renamed)
    ]


def _run_lines(first: Fix, same_rule: list[Fix]) -> tuple[int, int]:
    """The lines of `first` and of the same rule's fixes next to it, one after
    another."""
    lo, hi = first.first_line, first.last_line
    grown = True
    while grown:
        grown = False
        for fix in same_rule:
            if fix.first_line <= hi + RUN_GAP_LINES and fix.last_line >= lo - RUN_GAP_LINES:
                if fix.first_line < lo or fix.last_line > hi:
                    lo, hi = min(lo, fix.first_line), max(hi, fix.last_line)
                    grown = True
    return lo, hi


def _fix(found: object, starts: list[int]) -> Fix | None:
    """One ruff diagnostic as a Fix, if it has a fix to apply (safe or unsafe, not
    one ruff only displays)."""
    if not isinstance(found, dict):
        return None
    fix = found.get("fix")
    if not isinstance(fix, dict) or not fix.get("edits"):
        return None
    applicability = fix.get("applicability")
    if applicability not in ("safe", "unsafe"):
        return None
    try:
        edits = tuple(
            (_offset(starts, e["location"]), _offset(starts, e["end_location"]), e["content"])
            for e in fix["edits"]
        )
        rows = [e["location"]["row"] for e in fix["edits"]]
        rows += [e["end_location"]["row"] for e in fix["edits"]]
    except (KeyError, TypeError, IndexError):
        return None
    last = max(rows) - 1
    if max(e[1] for e in edits) == starts[min(last, len(starts) - 1)]:
        last -= 1  # a fix that ends at a line's start (a line deleted) ends on the line above
    code, message = str(found.get("code")), str(found.get("message"))
    code = ONE_FIX.get(code, code)
    first = min(rows) - 1
    return Fix(code, message, first, max(last, first), edits, applicability == "safe")


def _offset(starts: list[int], location: dict[str, int]) -> int:
    """ruff's 1-based row and column (in characters) as an offset into the text."""
    return starts[location["row"] - 1] + location["column"] - 1


def _same_lines(a: str, b: str) -> bool:
    return [line.rstrip() for line in a.split("\n")] == [line.rstrip() for line in b.split("\n")]


def _touches(fix: Fix, focus: tuple[int, int]) -> bool:
    return fix.first_line < focus[1] and fix.last_line >= focus[0]


def _distance(fix: Fix, focus: tuple[int, int]) -> int:
    if fix.last_line < focus[0]:
        return focus[0] - fix.last_line
    return max(0, fix.first_line - (focus[1] - 1))


def _near(fix: Fix, focus: tuple[int, int]) -> bool:
    return _distance(fix, focus) <= MAX_PLACE_LINES


@functools.cache
def _ruff() -> list[str]:
    """The ruff command: the one installed with groundspec, else on PATH (looked
    up once: every next-edit request runs ruff)."""
    try:
        from ruff.__main__ import find_ruff_bin
    except ImportError:
        return ["ruff"]
    try:
        return [str(find_ruff_bin())]
    except FileNotFoundError:
        return ["ruff"]
