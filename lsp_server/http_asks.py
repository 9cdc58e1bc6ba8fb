"""HTTP bodies read into what the application service is asked.

One pure function per endpoint: the decoded body (http_wire.py), its prompts as
text where the endpoint takes prompts, and the server's options in; engine
requests out (or BadRequest). No aiohttp, no engine, no state: http.py routes a
request, reads it here, calls the service (lsp_server/service.py, the one the
LSP handlers call) and formats the answer. The KV slot is the one thing added
afterwards, by http.py's SlotRouter, which remembers each client's documents.
"""

from __future__ import annotations

from typing import Any, TypeVar

import msgspec

from speculator.types import CompletionRequest, RefactorRequest, Snippet
from speculator.validate import text_problem

from . import http_wire as wire
from .http_probs import shaping_fields
from .options import ServerOptions

T = TypeVar("T")
SamplingBody = wire.InfillBody | wire.CompletionBody | wire.OpenAICompletionBody | wire.ChatBody


class Source(msgspec.Struct, frozen=True):
    """What a llama-server request completes, and the prompt its answer echoes."""

    text: str
    cursor: int
    language: str
    extra: list[Snippet]
    echo: str
    # The text is the prompt, as llama-server reads one (special tokens parsed),
    # generated on to n_predict, an end token or a stop string.
    raw: bool = False


class LlamaAsk(msgspec.Struct, frozen=True):
    """One /infill or /completion prompt, as the engine is asked it."""

    # None when n_predict is 0: llama.vim and llama.vscode send extra context ahead
    # of time this way; it travels with each completion anyway, so nothing is computed.
    completion: CompletionRequest | None
    echo: str
    stops: list[str]
    n_indent: int
    max_tokens: int
    settings: dict[str, Any]


class OpenAIPrompt(msgspec.Struct, frozen=True):
    """One prompt of a /v1/completions request."""

    prompt: str
    completion: CompletionRequest


class OpenAIAsk(msgspec.Struct, frozen=True):
    prompts: list[OpenAIPrompt]
    max_tokens: int
    stops: list[str]


# -- llama-server: /infill and /completion --------------------------------------------


def infill_ask(body: wire.InfillBody, options: ServerOptions) -> LlamaAsk:
    """/infill: the typed part of the line (`prompt`) follows input_prefix."""
    prefix = body.input_prefix + body.prompt
    extra = [Snippet(path=c.filename, text=c.text) for c in body.input_extra if c.text]
    language = wire.guess_language(body, body.input_extra)
    source = Source(prefix + body.input_suffix, len(prefix), language, extra, body.prompt)
    check_text(source.text, options)
    return llama_ask(body, source, options)


def completion_asks(
    body: wire.CompletionBody, prompts: list[str], options: ServerOptions
) -> list[LlamaAsk]:
    """/completion: each prompt read as llama-server reads it (a raw prompt: special
    tokens parsed, so a client's own FIM layout is FIM); several prompts answer as
    a list, never streamed."""
    if len(prompts) > 1 and body.stream:
        raise wire.BadRequest("stream: true takes one prompt at a time")
    for prompt in prompts:
        check_text(prompt, options)
    language = wire.guess_language(body)
    sources = [Source(p, len(p), language, [], p, raw=True) for p in prompts]
    return [llama_ask(body, source, options) for source in sources]


def llama_ask(
    body: wire.InfillBody | wire.CompletionBody, source: Source, options: ServerOptions
) -> LlamaAsk:
    """The engine request for one checked source (none when n_predict is 0)."""
    limit = max_tokens(body.n_predict, options)
    completion = None
    if limit > 0:
        completion = msgspec.structs.replace(
            completion_request(body, source.text, source.cursor, source.language, limit, options),
            max_predict_ms=max(0.0, body.t_max_predict_ms or 0.0),
            extra_context=source.extra or None,  # ranked ahead of the workspace's
        )
        if source.raw:
            completion = as_raw(completion, body.stop or [])
    return LlamaAsk(
        completion=completion,
        echo=source.echo,
        stops=body.stop or [],
        n_indent=body.n_indent if isinstance(body, wire.InfillBody) else 0,
        max_tokens=limit,
        settings=settings(body, limit, options),
    )


def settings(
    body: wire.InfillBody | wire.CompletionBody, n_predict: int, options: ServerOptions
) -> dict[str, Any]:
    """llama-server's generation_settings, as this request was served."""
    return {
        "n_predict": n_predict,
        **sampling(body, options),
        "stop": body.stop or [],
        "speculation": body.speculation or options.speculation,
    }


# -- OpenAI: /v1/completions and /v1/chat/completions -------------------------------


def openai_ask(
    body: wire.OpenAICompletionBody, prompts: list[str], options: ServerOptions
) -> OpenAIAsk:
    """/v1/completions: each prompt read as llama-server reads it (raw), or, with a
    `suffix`, an insertion between the two, completed as /infill completes one."""
    limit = max_tokens(body.max_tokens, options)
    language = body.language or (
        wire.language_id_for_path(body.filename) if body.filename else "plaintext"
    )
    suffix = body.suffix or ""
    for prompt in prompts:
        check_text(prompt + suffix, options)
    asks = []
    for prompt in prompts:
        completion = completion_request(
            body, prompt + suffix, len(prompt), language, limit, options
        )
        if not suffix:
            completion = as_raw(completion, body.stops())
        asks.append(OpenAIPrompt(prompt=prompt, completion=completion))
    return OpenAIAsk(prompts=asks, max_tokens=limit, stops=body.stops())


def as_raw(completion: CompletionRequest, stops: list[str]) -> CompletionRequest:
    """The request for a raw prompt: the text as the prompt, ending as llama-server's
    answers end (n_predict, an end token, a stop string, the context's end)."""
    return msgspec.structs.replace(
        completion, prompt_format="raw", ends_at="limit", stop=stops, extra_context=None
    )


def nth_sample(completion: CompletionRequest, j: int) -> CompletionRequest:
    """The j-th of `n` samples: its own seed (-1 stays random)."""
    seed = completion.seed + j if completion.seed >= 0 else -1
    return msgspec.structs.replace(completion, seed=seed)


def chat_ask(body: wire.ChatBody, options: ServerOptions) -> RefactorRequest:
    """/v1/chat/completions: an instruction edit of the selection in the last user
    message (llama.vim's, llama.vscode's or a fenced block), run as a refactor."""
    ask = wire.edit_ask(body.messages)
    check_text(ask.text, options)
    asked = body.max_tokens
    limit = (
        options.refactor_max_tokens if asked is None or asked <= 0 else min(asked, wire.MAX_PREDICT)
    )
    return RefactorRequest(
        text=ask.text,
        start=ask.start,
        end=ask.end,
        instruction=ask.instruction,
        language_id=body.language
        or (wire.language_id_for_path(body.filename) if body.filename else "plaintext"),
        path=body.filename,
        max_tokens=limit,
        speculation=body.speculation or options.speculation,
        seed=body.seed or 0,
        **sampling(body, options),
    )


# -- shared -------------------------------------------------------------------------


def check_text(text: str, options: ServerOptions) -> None:
    """Refuse (400) what groundspec/complete refuses: text over maxDocumentChars or
    with NUL bytes; before any stream starts or the engine is waited for."""
    if (problem := text_problem(text, options.max_document_chars)) is not None:
        raise wire.BadRequest(problem)


def max_tokens(asked: int | None, options: ServerOptions) -> int:
    """n_predict / max_tokens: -1 or absent is the server's maxTokens; 0 computes nothing."""
    if asked is None or asked < 0:
        return options.max_tokens
    return min(asked, wire.MAX_PREDICT)


def completion_request(
    body: SamplingBody,
    text: str,
    cursor: int,
    language: str,
    limit: int,
    options: ServerOptions,
) -> CompletionRequest:
    return CompletionRequest(
        text=text,
        cursor=cursor,
        language_id=language,
        path=body.filename,
        max_tokens=max(1, limit),
        speculation=body.speculation or options.speculation,
        seed=body.seed or 0,
        **sampling(body, options),
        workspace_context=options.http_workspace_context,
        cache_prompt=getattr(body, "cache_prompt", True),  # llama-server's bodies only
        **shaping_fields(body, options),  # n_probs, logit_bias (http_probs.py)
    )


# llama-server's sampling defaults, for a request that names none (its top-k, top-p
# and min-p filters: a sampled answer is drawn from the same tokens as there).
DEFAULT_TOP_K = 40
DEFAULT_TOP_P = 0.95
DEFAULT_MIN_P = 0.05


def sampling(body: SamplingBody, options: ServerOptions) -> dict[str, Any]:
    """temperature, top_k, top_p and min_p as llama-server reads them (0 or 1.0: off)."""
    return {
        "temperature": pick(body.temperature, options.temperature),
        "top_k": max(0, pick(body.top_k, DEFAULT_TOP_K)),
        "top_p": pick(body.top_p, DEFAULT_TOP_P),
        "min_p": pick(body.min_p, DEFAULT_MIN_P),
    }


def pick(value: T | None, default: T) -> T:
    return default if value is None else value
