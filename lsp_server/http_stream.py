"""Streaming a completion's text over HTTP as the engine accepts tokens."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable

import msgspec

from speculator.types import CompletionRequest, CompletionResult, Progress

from . import http_wire as wire

log = logging.getLogger(__name__)

Send = Callable[[str, int, int], Awaitable[None]]


async def streamed(
    complete: Callable[[CompletionRequest], Awaitable[CompletionResult]],
    completion: CompletionRequest,
    stops: list[str],
    n_indent: int,
    send: Send,
) -> CompletionResult:
    """Run `complete(completion)`, sending its text as the engine accepts tokens.

    The engine reports the text as it would be if decoding stopped now; only
    the part later tokens can no longer change is sent (complete lines, or the
    line but for a tail that could still turn out to repeat the text after the
    cursor or start a stop string), the rest once decoding is done; all after
    the HTTP side's own post-processing (stop strings, n_indent). A raw request
    (ends_at "limit") sends each token's text as it comes, but for a tail that
    may start a stop string."""

    def cut(text: str) -> str:
        return wire.finish(text, stops, n_indent, 0, 0).content

    loop = asyncio.get_running_loop()
    reports: asyncio.Queue[Progress | None] = asyncio.Queue()

    def report(progress: Progress) -> None:  # on the engine thread
        with contextlib.suppress(RuntimeError):  # the loop closed: shutting down
            loop.call_soon_threadsafe(reports.put_nowait, progress)

    hold = max(
        [len(wire.rest_of_line(completion.text, completion.cursor))] + [len(s) for s in stops]
    )
    task = asyncio.ensure_future(complete(msgspec.structs.replace(completion, on_progress=report)))
    task.add_done_callback(lambda _: reports.put_nowait(None))
    raw = completion.ends_at == "limit"  # the text as generated, token by token
    sent = ""
    try:
        while (progress := await reports.get()) is not None:
            so_far = cut(progress.text)
            stable = before_stop(so_far, stops) if raw else wire.streamable(so_far, hold)
            if len(stable) > len(sent) and stable.startswith(sent):
                await send(stable[len(sent) :], progress.generated_tokens, progress.prompt_tokens)
                sent = stable
        result = await task
    finally:
        task.cancel()  # the client went away: cancel the engine call (no-op when done)
    final = cut(result.text)
    if not final.startswith(sent):
        log.warning("streamed text %r is not a prefix of the completion %r", sent, final)
    elif len(final) > len(sent):
        stats = result.stats
        await send(final[len(sent) :], stats.generated_tokens, stats.prompt_tokens)
    return result


def before_stop(text: str, stops: list[str]) -> str:
    """`text` less a tail that may be the start of a stop string (held back, as
    llama-server holds it, until the next tokens say)."""
    longest = max((len(stop) for stop in stops), default=0)
    for n in range(min(longest - 1, len(text)), 0, -1):
        if any(stop.startswith(text[-n:]) for stop in stops):
            return text[:-n]
    return text
