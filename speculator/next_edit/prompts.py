"""Prompt formats for next edits: what the model reads, where its answer stops,
and how the answer becomes the rewritten window.

- `qwen` (default): a chat prompt for the shipped Qwen2.5-Coder instruct model.
  Recent edits as a unified diff (bare `@@` hunk headers; file headers only
  when another file's edits are shown), the window in a code fence with the cursor
  marked, the answer prefilled with the opening fence; it ends at the closing one.
- `zeta2`: Zed's Zeta 2 layout (the `zeta_prompt` crate, ordered variant):
  `<|file_sep|>edit history` with each edit as `--- a/PATH` `+++ b/PATH` and its
  hunks, then `<|file_sep|>PATH`, `<|fim_prefix|>` + the lines above the window,
  `<|fim_middle|>current` + the window with `<|user_cursor|>`, `<|fim_suffix|>` +
  the lines below it, and `<|fim_middle|>updated`: the model writes the window anew.
- `sweep`: Sweep Next-Edit's layout, on Qwen2.5-Coder's pretraining tokens: each
  recent edit as `<|file_sep|>PATH.diff` with `original:` and `updated:` blocks,
  then `<|file_sep|>original/PATH` (the window before the edits),
  `<|file_sep|>current/PATH` (the window now) and `<|file_sep|>updated/PATH`.

docs/next-edit.md shows each one whole. Special tokens are tokenized as such;
the answers of the `zeta2` and `sweep` models end with an end-of-generation token
(the decode loop stops there) or a `<|file_sep|>`, also cut here.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from dataclasses import dataclass

from ..prompt import FENCE_LANGUAGE, fence_stop, refactor_fence
from .window import Hunk, Window

PROMPT_FORMATS = ("qwen", "zeta2", "sweep")
# Formats for models not trained on next edits (the shipped instruct model): their
# own changes were never right at a confidence of 0.1 or more on the dev tasks
# (docs/next-edit.md), so they are asked only to verify and score the draft's.
DRAFT_ONLY_FORMATS = frozenset({"qwen"})
CURSOR_MARKER = "<|user_cursor|>"
# Lines around the window shown as context (not rewritten) by `zeta2`.
CONTEXT_LINES = 8
# Unchanged lines shown around each recent edit by `qwen` (the others show the
# hunk's, window.DIFF_CONTEXT).
QWEN_DIFF_CONTEXT = 1

QWEN_SYSTEM = (
    "You predict a programmer's next edit. You see their recent edits as a diff and "
    "the code around their cursor. Rewrite that code with the one edit that most "
    "likely comes next, if any: the same change made to a similar line, a rename "
    "carried on, the import, argument or branch the recent edit calls for. Keep every "
    "other line exactly as it is. If nothing else needs to change, repeat the code "
    "unchanged. Reply with the code only, in one fenced code block."
)


@dataclass(frozen=True)
class PromptInput:
    path: str
    language_id: str
    text: str  # the document now
    window: Window
    hunks: list[Hunk]  # recent edits, oldest first (this file's and others')
    original_window: str  # the window's lines before the recent edits (`sweep`)


@dataclass(frozen=True)
class Prompt:
    text: str  # special tokens written as text, tokenized as special tokens
    stop: Callable[[str], int | None]  # where the answer ends (StopRule)
    stop_text: str  # what ends it, for servers that stop at a string

    def rewritten(self, answer: str, window: Window) -> str:
        """The window as the answer rewrites it: the cursor marker taken out, and
        the window's own trailing new lines (the fence or marker that ends an answer
        takes blank lines before it with it, so they are not the model's to change)."""
        code = answer.replace(CURSOR_MARKER, "").rstrip("\n")
        trailing = len(window.text) - len(window.text.rstrip("\n"))
        return code + "\n" * trailing


def build_prompt(fmt: str, given: PromptInput) -> Prompt:
    if fmt == "zeta2":
        return _zeta2(given)
    if fmt == "sweep":
        return _sweep(given)
    if fmt == "qwen":
        return _qwen(given)
    raise ValueError(
        f"unknown next-edit prompt format {fmt!r} (one of {', '.join(PROMPT_FORMATS)})"
    )


def _with_cursor(window: Window) -> str:
    if window.cursor is None:
        return window.text
    return window.text[: window.cursor] + CURSOR_MARKER + window.text[window.cursor :]


def _unified(hunks: list[Hunk], here: str) -> str:
    """Hunks as a unified diff, without lines' numbers and with QWEN_DIFF_CONTEXT
    lines around each. File headers (wherever the path changes) only where some
    hunk is of a file other than `here`. Headers, numbers and a second context line
    were a third of the qwen prompt's new tokens; without them the model scored the
    dev and held-out drafts as it did (docs/next-edit.md)."""
    out, path = [], None
    headed = any(hunk.path != here for hunk in hunks)
    for hunk in hunks:
        if headed and hunk.path != path:
            out.append(f"--- a/{hunk.path}\n+++ b/{hunk.path}\n")
            path = hunk.path
        out.append(hunk.unified(numbered=False, context=QWEN_DIFF_CONTEXT))
    return "".join(out)


def _qwen(given: PromptInput) -> Prompt:
    window = given.window
    lang = FENCE_LANGUAGE.get(given.language_id, "")
    code = _with_cursor(window)
    fence = refactor_fence(code)
    diff = _unified(given.hunks, given.path) or "(none)\n"
    user = (
        f"Recent edits:\n```diff\n{diff}```\n\n"
        f"Code around the cursor:\n{fence}{lang}\n{_ending_newline(code)}{fence}"
    )
    text = (
        f"<|im_start|>system\n{QWEN_SYSTEM}<|im_end|>\n"
        f"<|im_start|>user\n{user}<|im_end|>\n"
        f"<|im_start|>assistant\n{fence}{lang}\n"
    )
    return Prompt(text, fence_stop(fence), fence)


def _zeta2(given: PromptInput) -> Prompt:
    window, text = given.window, given.text
    above = _lines_before(text, window.start, CONTEXT_LINES)
    below = _lines_after(text, window.end, CONTEXT_LINES)
    history = "".join(f"--- a/{h.path}\n+++ b/{h.path}\n{h.unified()}" for h in given.hunks)
    prompt = (
        f"<|file_sep|>edit history\n{history}"
        f"<|file_sep|>{given.path}\n"
        f"<|fim_prefix|>\n{_ending_newline(above) if above else ''}"
        f"<|fim_middle|>current\n{_ending_newline(_with_cursor(window))}"
        f"<|fim_suffix|>\n{_ending_newline(below) if below else ''}"
        "<|fim_middle|>updated\n"
    )
    return Prompt(prompt, _marker_stop(("<|file_sep|>", "<|fim_")), "<|file_sep|>")


def _sweep(given: PromptInput) -> Prompt:
    parts = [
        f"<|file_sep|>{h.path}.diff\noriginal:\n{_block(h.before)}updated:\n{_block(h.after)}"
        for h in given.hunks
    ]
    path = given.path
    parts.append(f"<|file_sep|>original/{path}\n{_ending_newline(given.original_window)}")
    parts.append(f"<|file_sep|>current/{path}\n{_ending_newline(given.window.text)}")
    parts.append(f"<|file_sep|>updated/{path}\n")
    return Prompt("".join(parts), _marker_stop(("<|file_sep|>",)), "<|file_sep|>")


def _block(lines: list[str]) -> str:
    return "".join(line + "\n" for line in lines)


def _ending_newline(text: str) -> str:
    return text if text.endswith("\n") else text + "\n"


def _lines_before(text: str, offset: int, n: int) -> str:
    start = offset
    for _ in range(n):
        if start <= 0:
            break
        start = text.rfind("\n", 0, start - 1) + 1
    return text[start:offset]


def _lines_after(text: str, offset: int, n: int) -> str:
    end = offset
    for _ in range(n):
        if end >= len(text):
            break
        found = text.find("\n", end)
        end = len(text) if found == -1 else found + 1
    return text[offset:end]


def _marker_stop(markers: tuple[str, ...]) -> Callable[[str], int | None]:
    """Cut the answer at the first of these markers (if the model writes one as text)."""
    pattern = re.compile("|".join(re.escape(m) for m in markers))

    def stop(text: str) -> int | None:
        found = pattern.search(text)
        return found.start() if found else None

    return stop


def instructions(fmt: str) -> str:
    """The text every prompt of format `fmt` starts with (the qwen system message
    and the head of its user turn): the part an engine may evaluate ahead
    of the first ask. Read off two prompts that share nothing else, one with a
    recent edit and one without, so it follows the builders as they change."""
    prompts = [
        build_prompt(fmt, _sample(name, edited)) for name, edited in (("a", False), ("b", True))
    ]
    return os.path.commonprefix([p.text for p in prompts])


def _sample(name: str, edited: bool) -> PromptInput:
    """A one-line document named `name`, with one recent edit if `edited`."""
    text = f"{name}\n"
    window = Window(0, 1, 0, len(text), text, None, True)
    hunks = [Hunk(f"{name}.py", 0, [name * 2], [name], [], [])] if edited else []
    return PromptInput(f"{name}.py", "python", text, window, hunks, text)
