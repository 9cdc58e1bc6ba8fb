"""Prompt text for completions (Qwen FIM) and refactors (chat template).

The FIM prompt is built as segments whose boundaries do not move while the
user types: [repo snippets][<fim_prefix> prefix][<fim_suffix> rest of line]
[following lines][<fim_middle>]. Typing changes only the end of the prefix
segment, so the session reuses everything before it and shifts the suffix
segments (see session.py).
"""

from __future__ import annotations

from collections.abc import Callable

from .grounding import Grounding
from .types import Snippet

FIM_PREFIX = "<|fim_prefix|>"
FIM_SUFFIX = "<|fim_suffix|>"
FIM_MIDDLE = "<|fim_middle|>"
REPO_NAME = "<|repo_name|>"
FILE_SEP = "<|file_sep|>"

PREFIX_BUDGET_CHARS = 4000  # ~1,100 tokens
SUFFIX_BUDGET_CHARS = 1200  # ~350 tokens
# The quick window (EngineConfig.quick_window_tokens): a first suggestion on an
# unseen file from ~300 tokens while the full prompt warms in the background.
QUICK_PREFIX_CHARS = 800
QUICK_SUFFIX_CHARS = 200
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
    line_end = suffix.find("\n")
    rest_of_line, following = (
        (suffix, "") if line_end < 0 else (suffix[: line_end + 1], suffix[line_end + 1 :])
    )
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


def _fit(snippets: list[Snippet], budget: int) -> list[Snippet]:
    """Snippets in order until the budget is spent; the last one cut at a line end."""
    out: list[Snippet] = []
    left = budget
    for s in snippets:
        text = s.text if len(s.text) <= left else s.text[: s.text.rfind("\n", 0, left) + 1]
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


def build_refactor(selection: str, instruction: str, language_id: str) -> tuple[str, str]:
    """(chat prompt ending inside the assistant's code fence, closing fence)."""
    lang = FENCE_LANGUAGE.get(language_id, "")
    user = f"{instruction.strip()}\n\n```{lang}\n{selection}\n```"
    prompt = (
        f"<|im_start|>system\n{SYSTEM}<|im_end|>\n"
        f"<|im_start|>user\n{user}<|im_end|>\n"
        f"<|im_start|>assistant\n```{lang}\n"
    )
    return prompt, "```"


def fence_stop(fence: str) -> Callable[[str], int | None]:
    """The stop rule of a refactor: cut the output where the code fence closes."""

    def stop(text: str) -> int | None:
        at = text.find(fence)
        return at if at >= 0 else None

    return stop
