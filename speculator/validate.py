"""Checks every engine (local or remote) makes on a request before any work."""

from __future__ import annotations

from .syntax import MAX_DOCUMENT_CHARS
from .types import CompletionRequest, EngineError, RefactorRequest


def text_problem(text: str, max_chars: int = MAX_DOCUMENT_CHARS) -> str | None:
    """Why `text` cannot be worked on, or None (the engines, the CLI and the server's
    documents ask the same; the server's limit is its `maxDocumentChars`)."""
    if len(text) > max_chars:
        return f"the document is too large ({len(text):,} characters; limit {max_chars:,})"
    if "\x00" in text:
        return "the document looks binary (it contains NUL characters)"
    return None


def check_text(text: str) -> None:
    if (problem := text_problem(text)) is not None:
        raise EngineError(problem)


def check_completion(request: CompletionRequest) -> None:
    check_text(request.text)
    if not 0 <= request.cursor <= len(request.text):
        raise EngineError(
            f"position is outside the document (offset {request.cursor} of {len(request.text)})"
        )


def check_refactor(request: RefactorRequest) -> str:
    """The selection to rewrite, once the request is known to be sound."""
    check_text(request.text)
    if not 0 <= request.start <= request.end <= len(request.text):
        raise EngineError(f"invalid range {request.start}-{request.end}")
    if (problem := instruction_problem(request.instruction)) is not None:
        raise EngineError(problem)
    return request.text[request.start : request.end]


def instruction_problem(instruction: str) -> str | None:
    """Why a refactor instruction cannot be used, or None (the CLI, JSON-RPC and the
    engines ask the same)."""
    if not instruction.strip():
        return "the refactor instruction is empty (or only whitespace)"
    return None


def check_rewrite_fits(prompt_tokens: int, selection_tokens: int, n_ctx: int) -> None:
    """Refuse at once a refactor whose rewrite cannot fit the context beside its
    prompt (which holds the selection once already), rather than after minutes
    of decoding."""
    if prompt_tokens + selection_tokens >= n_ctx:
        raise EngineError(
            f"the selection is too long to rewrite: its prompt is {prompt_tokens} tokens and "
            f"the rewrite about {selection_tokens} more, over the context of {n_ctx}; "
            "select less, or raise the context size (GROUNDSPEC_N_CTX)"
        )


def token_limit_reached(limit: int) -> str:
    return f"it reached its limit of {limit} tokens: raise maxTokens or select less"


def refactor_cut_short(why: str) -> str:
    """The error for a rewrite that stopped before the model ended it: half a
    rewrite put in place of the selection would lose the rest of the code."""
    return f"the rewrite stopped before its end ({why}); the selection is unchanged"
