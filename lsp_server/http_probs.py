"""llama-server's n_probs and logit_bias on the HTTP door.

The local engine applies the bias in its decode loop, to the next token and to
every drafted token's verification alike (speculator/token_probs.py), so a
biased completion is exactly plain decoding's with the bias. It reports each
generated token's probabilities from the rows the verify batches computed
anyway. This module reads llama-server's request forms and writes its answer
shapes (`completion_probabilities`, OpenAI's `logprobs.content`).
"""

from __future__ import annotations

import math
from typing import Any

from speculator.types import CompletionResult, TokenChoice

from .http_wire import BadRequest
from .options import ServerOptions

# llama-server writes a zero probability's log as the lowest float (JSON has no -inf).
LOWEST_FLOAT = -3.4028234663852886e38

BiasEntries = list[tuple[int | str, float]]


def bias_entries(raw: Any) -> BiasEntries | None:
    """logit_bias as llama-server reads it: `[[token id or text, bias], ...]` or
    `{"token id or text": bias}`; `false` as a bias bans the token; entries of any
    other shape are skipped (llama-server skips them too)."""
    if isinstance(raw, dict):
        pairs = [(_key(str(k)), v) for k, v in raw.items()]
    elif isinstance(raw, list):
        pairs = [(el[0], el[1]) for el in raw if isinstance(el, list) and len(el) == 2]
    else:
        return None
    entries: BiasEntries = []
    for key, value in pairs:
        bias = _bias(value)
        if bias is None or isinstance(key, bool) or not isinstance(key, int | str):
            continue
        entries.append((key, bias))
    return entries or None


def _key(key: str) -> int | str:
    """An object key that is a whole integer is a token id, else a text."""
    try:
        return int(key)
    except ValueError:
        return key


def _bias(value: Any) -> float | None:
    if value is False:
        return -math.inf
    if isinstance(value, int | float) and not isinstance(value, bool):
        return float(value)
    return None


def shaping_fields(body: Any, options: ServerOptions) -> dict[str, Any]:
    """The CompletionRequest fields of a body's n_probs (OpenAI: logprobs),
    post_sampling_probs and logit_bias; refused (400) on a remote backend, whose
    server samples the tokens itself, rather than silently ignored."""
    n_probs = max(0, int(getattr(body, "n_probs", 0) or getattr(body, "logprobs", 0) or 0))
    bias = bias_entries(getattr(body, "logit_bias", None))  # a chat body has none
    if (n_probs or bias) and options.engine.backend != "local":
        raise BadRequest(
            f"n_probs and logit_bias need groundspec's local engine; the {options.engine.backend} "
            "backend's server samples the tokens itself"
        )
    post_sampling = bool(getattr(body, "post_sampling_probs", False))
    return {"n_probs": n_probs, "post_sampling_probs": post_sampling, "logit_bias": bias}


def probabilities(choices: list[TokenChoice], post_sampling: bool) -> list[dict[str, Any]]:
    """llama-server's completion_probabilities: each token with its log-probability
    (`prob` after sampling with post_sampling_probs) and the top ones."""
    name, top_name = ("prob", "top_probs") if post_sampling else ("logprob", "top_logprobs")

    def value(prob: float) -> float:
        if post_sampling:
            return prob
        return math.log(prob) if prob > 0.0 else LOWEST_FLOAT

    def entry(token: int, piece: bytes, prob: float) -> dict[str, Any]:
        text = piece.decode("utf-8", errors="ignore")
        return {"id": token, "token": text, "bytes": list(piece), name: value(prob)}

    return [
        entry(c.token, c.piece, c.prob)
        | {top_name: [entry(t.token, t.piece, t.prob) for t in c.top]}
        for c in choices
    ]


def result_probabilities(result: CompletionResult, post_sampling: bool) -> list[Any] | None:
    """/completion's completion_probabilities, where n_probs asked for them."""
    return probabilities(result.token_probs, post_sampling) if result.token_probs else None


def openai_logprobs(result: CompletionResult, post_sampling: bool) -> dict[str, Any] | None:
    """llama-server's /v1/completions `logprobs`: its own shape under `content`."""
    found = result_probabilities(result, post_sampling)
    return None if found is None else {"content": found}


def token_events(result: CompletionResult, id_slot: int, post_sampling: bool) -> list[Any]:
    """A streamed answer with n_probs: one partial event per token, as llama-server
    sends them, once decoding has ended (the content is final then, so the events
    add up to it exactly)."""
    choices = result.token_probs or []
    text, sent, data, events = result.text, 0, b"", []
    for i, choice in enumerate(choices):
        data += choice.piece
        upto = len(text) if i == len(choices) - 1 else len(data.decode("utf-8", errors="ignore"))
        delta, sent = text[sent : max(sent, upto)], max(sent, upto)
        event = {"index": 0, "content": delta, "tokens": [choice.token], "stop": False}
        event |= {"id_slot": id_slot, "tokens_predicted": i + 1}
        event |= {"tokens_evaluated": result.stats.prompt_tokens}
        events.append(event | {"completion_probabilities": probabilities([choice], post_sampling)})
    return events
