"""Prompt text for completions (Qwen FIM) and refactors (chat template).

The FIM prompt is built as segments whose boundaries do not move while the
user types: [repo snippets][<fim_prefix> prefix][<fim_suffix> rest of line]
[following lines][<fim_middle>]. Typing changes only the end of the prefix
segment, so the session reuses everything before it and shifts the suffix
segments (see session.py).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import NamedTuple

from .chunks import identifiers
from .grounding import Grounding
from .syntax import line_end, line_start
from .types import Snippet

FIM_PREFIX = "<|fim_prefix|>"
FIM_SUFFIX = "<|fim_suffix|>"
FIM_MIDDLE = "<|fim_middle|>"
REPO_NAME = "<|repo_name|>"
FILE_SEP = "<|file_sep|>"

PREFIX_BUDGET_CHARS = 4000  # ~1,100 tokens
SUFFIX_BUDGET_CHARS = 1200  # ~350 tokens
# The quick window (EngineConfig.quick_window_tokens): a first suggestion on an
# unseen file from a short prompt while the full one warms in the background.
# Shares of its token budget: the text after the cursor, and at most this much
# for the first lines of the scopes around the cursor (the lines right before
# the cursor get the rest).
QUICK_SUFFIX_SHARE = 0.2
QUICK_HEADER_SHARE = 0.25
QUICK_DEFINITION_SHARE = 0.0  # the lines that define the names near the cursor
QUICK_HEADER_LINES = 4  # a signature spread over more lines is cut here
CHARS_PER_TOKEN = 3  # to cut a line too long for the budget (minified code)
SNIPPET_BUDGET_CHARS = 3000  # ~850 tokens: room for two or three 32-line chunks


class FimPrompt:
    """Segments of text; `special` segments hold special tokens only."""

    def __init__(self, segments: list[tuple[str, str]], prefix: str, suffix: str):
        self.segments = segments  # (special token prefix, plain text)
        self.prefix = prefix  # the prefix window text
        self.suffix = suffix  # the suffix window text


def _line_starts(text: str) -> list[int]:
    starts = [0]
    for i, ch in enumerate(text):
        if ch == "\n":
            starts.append(i + 1)
    return starts


def prefix_window_start(text: str, cursor: int, grounding: Grounding, budget: int) -> int:
    """Offset where the prefix window starts: the earliest top-level node start
    (or 32-line step, for huge nodes) whose distance to the cursor fits the budget.
    Both kinds of boundary stay put while the user types."""
    starts = _line_starts(text)
    cursor_line = text.count("\n", 0, cursor)
    lines = set(grounding.top_level_starts()) | set(range(0, cursor_line + 1, 32))
    for line in sorted(lines):
        if line <= cursor_line and cursor - starts[line] <= budget:
            return starts[line]
    return starts[cursor_line] if cursor - starts[cursor_line] <= budget else cursor - budget


def suffix_window_end(text: str, cursor: int, budget: int) -> int:
    """Offset where the suffix window ends: a line end within the budget."""
    if len(text) - cursor <= budget:
        return len(text)
    cut = text.rfind("\n", cursor, cursor + budget)
    return cut + 1 if cut > cursor else cursor + budget


def build_fim(
    text: str,
    cursor: int,
    grounding: Grounding,
    snippets: list[Snippet],
    path: str | None,
    window_start: int | None = None,
    prefix_budget: int = PREFIX_BUDGET_CHARS,
    suffix_budget: int = SUFFIX_BUDGET_CHARS,
) -> FimPrompt:
    start = (
        window_start
        if window_start is not None
        else prefix_window_start(text, cursor, grounding, prefix_budget)
    )
    end = suffix_window_end(text, cursor, suffix_budget)
    prefix, suffix = text[start:cursor], text[cursor:end]
    line, newline, following = suffix.partition("\n")
    rest_of_line = line + newline
    segments: list[tuple[str, str]] = []
    if snippets:
        header = "groundspec\n" + "".join(
            f"{FILE_SEP}{s.path}\n{s.text.rstrip()}\n" for s in _fit(snippets, SNIPPET_BUDGET_CHARS)
        )
        segments.append((REPO_NAME, header))
        segments.append((FILE_SEP, f"{path or 'current'}\n"))
    segments += [
        (FIM_PREFIX, prefix),
        (FIM_SUFFIX, rest_of_line),
        ("", following),
        (FIM_MIDDLE, ""),
    ]
    return FimPrompt(segments, prefix, suffix)


class QuickWindow(NamedTuple):
    """Where a quick window starts, and the lines put before it (kept while typing)."""

    start: int
    header: str


def build_quick_fim(
    text: str,
    cursor: int,
    grounding: Grounding,
    budget_tokens: int,
    count_tokens: Callable[[str], int],
    previous: QuickWindow | None = None,
) -> tuple[FimPrompt, QuickWindow]:
    """A short FIM prompt of about `budget_tokens`: the first lines of the scopes
    around the cursor (their signatures), the lines right before the cursor, and
    the lines after it. No other files. The `previous` window (the last call's)
    is kept while it still fits, so typing reuses the KV."""
    end = _quick_suffix_end(text, cursor, int(budget_tokens * QUICK_SUFFIX_SHARE), count_tokens)
    prefix_budget = max(budget_tokens - count_tokens(text[cursor:end]), 1)
    window = previous
    if window is None or not _quick_start_fits(
        text, cursor, window.start, prefix_budget - count_tokens(window.header), count_tokens
    ):
        window = _quick_window(text, cursor, grounding, prefix_budget, count_tokens)
    prefix, suffix = text[window.start : cursor], text[cursor:end]
    line, newline, following = suffix.partition("\n")
    rest_of_line = line + newline
    segments = [
        (FIM_PREFIX, window.header + prefix),
        (FIM_SUFFIX, rest_of_line),
        ("", following),
        (FIM_MIDDLE, ""),
    ]
    return FimPrompt(segments, window.header + prefix, suffix), window


def _quick_window(
    text: str,
    cursor: int,
    grounding: Grounding,
    budget: int,
    count_tokens: Callable[[str], int],
) -> QuickWindow:
    """A fresh window: scope headers and definitions first, the nearest lines after."""
    headers = _scope_headers(
        text, cursor, grounding, int(budget * QUICK_HEADER_SHARE), count_tokens
    )
    lines_budget = budget - sum(count_tokens(h) for _, h in headers)
    start = _quick_prefix_start(text, cursor, lines_budget, count_tokens)
    definitions = _definition_lines(
        text, cursor, start, int(budget * QUICK_DEFINITION_SHARE), count_tokens
    )
    if definitions:
        spent = sum(count_tokens(line) for _, line in definitions)
        start = _quick_prefix_start(text, cursor, lines_budget - spent, count_tokens)
        headers = sorted(headers + definitions)
    return QuickWindow(start, "".join(h for at, h in headers if at < start))


def _quick_suffix_end(
    text: str, cursor: int, budget: int, count_tokens: Callable[[str], int]
) -> int:
    """The rest of the cursor's line and whole following lines, within the budget."""
    end = text.find("\n", cursor)
    end = len(text) if end < 0 else end + 1
    if count_tokens(text[cursor:end]) > budget:
        return min(end, cursor + budget * CHARS_PER_TOKEN)
    left = budget - count_tokens(text[cursor:end])
    while end < len(text):
        nxt = text.find("\n", end)
        nxt = len(text) if nxt < 0 else nxt + 1
        left -= count_tokens(text[end:nxt])
        if left < 0:
            break
        end = nxt
    return end


def _quick_prefix_start(
    text: str, cursor: int, budget: int, count_tokens: Callable[[str], int]
) -> int:
    """The earliest line start whose lines up to the cursor fit the budget."""
    start = line_start(text, cursor)
    left = budget - count_tokens(text[start:cursor])
    if left < 0:  # one huge line: its end, cut by characters
        return max(start, cursor - max(budget, 1) * CHARS_PER_TOKEN)
    while start > 0:
        previous = line_start(text, start - 1)
        left -= count_tokens(text[previous:start])
        if left < 0:
            break
        start = previous
    return start


def _quick_start_fits(
    text: str, cursor: int, start: int, budget: int, count_tokens: Callable[[str], int]
) -> bool:
    """Whether last request's window start can stay: at a line start, not past
    the cursor's line, and within a quarter over the budget (hysteresis)."""
    if not 0 <= start <= cursor or (start > 0 and text[start - 1] != "\n"):
        return False
    return count_tokens(text[start:cursor]) <= budget * 5 // 4


def _scope_headers(
    text: str,
    cursor: int,
    grounding: Grounding,
    budget: int,
    count_tokens: Callable[[str], int],
) -> list[tuple[int, str]]:
    """(offset, lines) of the first lines of each scope around the cursor,
    outermost first; the innermost ones are kept first within the budget."""
    cursor_line_start = line_start(text, cursor)
    seen: set[int] = set()
    headers: list[tuple[int, str]] = []
    for scope_start, _end in grounding.enclosing_scopes(cursor):
        header_start = line_start(text, scope_start)
        if header_start >= cursor_line_start or header_start in seen:
            continue
        seen.add(header_start)
        headers.append((header_start, _header_lines(text, header_start, cursor_line_start)))
    kept: list[tuple[int, str]] = []
    left = budget
    for at, header in reversed(headers):  # the innermost scope matters most
        cost = count_tokens(header)
        if cost <= left:
            kept.insert(0, (at, header))
            left -= cost
    return kept


_DEFINES = (
    r"^[ \t]*(?:(?:async\s+)?def|class|function|func|const|let|var|type)\s+{name}\b"
    r"|^[ \t]*(?:self\.|this\.)?{name}\s*(?::[^=\n]*)?=[^=]"
)
# Words never worth a definition line, compared lower-cased. Not drafters.KEYWORDS:
# that set is case-sensitive and wider (`loop`, `map`, `match` are rename
# boundaries there, but ordinary variables whose definition a prompt should show).
_KEYWORDS = frozenset(
    "and as assert async await break class const continue def del elif else except false "
    "finally for from func function global if import in is lambda let nil none nonlocal not "
    "null or pass raise return self this true try type var while with yield".split()
)


def _definition_lines(
    text: str,
    cursor: int,
    start: int,
    budget: int,
    count_tokens: Callable[[str], int],
) -> list[tuple[int, str]]:
    """(offset, line) of the lines before the window that define the names used
    on the cursor's line and the one before (the last definition before the
    window, the nearest names first), within the budget."""
    if budget <= 0:
        return []
    before = line_start(text, max(line_start(text, cursor) - 1, 0))
    names = [n for n in reversed(identifiers(text[before:cursor])) if len(n) >= 3]
    found: dict[int, str] = {}
    left = budget
    for name in names:
        if name.lower() in _KEYWORDS:
            continue
        pattern = re.compile(_DEFINES.format(name=re.escape(name)), re.MULTILINE)
        if pattern.search(text, start, cursor):
            continue  # defined in the window already
        matches = list(pattern.finditer(text, 0, start))
        if not matches:
            continue
        at = line_start(text, matches[-1].start() + 1)
        line = text[at : min(line_end(text, at) + 1, len(text))]
        cost = count_tokens(line)
        if at not in found and cost <= left:
            found[at] = line
            left -= cost
    return sorted(found.items())


def _header_lines(text: str, start: int, limit: int) -> str:
    """A scope's signature: its lines up to one that opens the body (`:`, `{`)."""
    end = start
    for _ in range(QUICK_HEADER_LINES):
        nxt = text.find("\n", end)
        nxt = limit if nxt < 0 else min(nxt + 1, limit)
        line, end = text[end:nxt].rstrip(), nxt
        if line.endswith((":", "{")) or end >= limit:
            break
    return text[start:end]


def _fit(snippets: list[Snippet], budget: int) -> list[Snippet]:
    """Snippets in order until the budget is spent; the last one cut at a line end."""
    out: list[Snippet] = []
    left = budget
    for s in snippets:
        text = s.text if len(s.text) <= left else s.text[: line_start(s.text, left)]
        if text.strip():
            out.append(Snippet(s.path, text))
            left -= len(text)
        if left <= 80:
            break
    return out


SYSTEM = (
    "You are an expert programmer. Rewrite the code as the instruction says. "
    "Keep everything else exactly as it is, including indentation and comments. "
    "Reply with the complete rewritten code only, in one fenced code block."
)

FENCE_LANGUAGE = {
    "python": "python",
    "javascript": "javascript",
    "typescript": "typescript",
    "go": "go",
    "rust": "rust",
    "javascriptreact": "jsx",
    "typescriptreact": "tsx",
}


REFACTOR_FENCE = "```"  # closes the code block a refactor is written in
_LINE_START_BACKTICKS = re.compile(r"^`{3,}", re.MULTILINE)


def refactor_fence(selection: str) -> str:
    """The fence a refactor's code block is written in: three backticks, or one
    more than the longest run that starts a line of the selection (Markdown's
    rule), so a fence inside the code never reads as the end of the answer."""
    longest = max((len(m.group()) for m in _LINE_START_BACKTICKS.finditer(selection)), default=0)
    return "`" * max(len(REFACTOR_FENCE), longest + 1)


def build_refactor(selection: str, instruction: str, language_id: str) -> tuple[str, str]:
    """(chat prompt ending inside the assistant's code fence, closing fence).

    The selection's own trailing newlines are left out of its fence: the model
    closes its answer with "\n```", and written so in the prompt too, the
    lookup drafts that close with the copy's last line instead of costing a
    plain step after it (a selection of whole lines would read "\n\n```")."""
    lang = FENCE_LANGUAGE.get(language_id, "")
    fence = refactor_fence(selection)
    code = selection.rstrip("\n")
    user = f"{instruction.strip()}\n\n{fence}{lang}\n{code}\n{fence}"
    prompt = (
        f"<|im_start|>system\n{SYSTEM}<|im_end|>\n"
        f"<|im_start|>user\n{user}<|im_end|>\n"
        f"<|im_start|>assistant\n{fence}{lang}\n"
    )
    return prompt, fence


def fence_stop(fence: str) -> Callable[[str], int | None]:
    """The stop rule of a refactor: cut the output where the code fence closes.

    Only a fence that starts a line closes the block: backticks inside the
    code (a string "\\n```", a doc comment's "/// ```", an indented docstring's
    example) are code, and cutting there would replace the selection with
    half of it."""
    closing = re.compile("^" + re.escape(fence), re.MULTILINE)

    def stop(text: str) -> int | None:
        found = closing.search(text)
        return found.start() if found else None

    return stop
