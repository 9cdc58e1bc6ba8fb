"""Prompts as llama-server takes them: text, token ids, lists of either, and JSON
prompts ({"prompt_string"}).

llama-server tokenizes a prompt with special tokens parsed, so a client that
writes Qwen's FIM layout itself (Zed's `prompt_format: qwen`, minuet, Continue)
gets a FIM completion:

    [<|repo_name|>NAME\n<|file_sep|>PATH\nTEXT\n...<|file_sep|>PATH\n]
    <|fim_prefix|>PREFIX<|fim_suffix|>SUFFIX<|fim_middle|>[MIDDLE SO FAR]

groundspec does the same: such a prompt is the engine's prompt as sent (a raw
request, speculator/types.py's prompt_format). Token ids are turned back into
text with the model's vocabulary (special tokens as their text), which the
engine tokenizes again with special tokens parsed.
"""

from __future__ import annotations

from typing import Any, Protocol

import msgspec

from .http_wire import BadRequest

Piece = str | int  # a run of text, or one token id
Prompt = list[Piece]


class Tokenizer(Protocol):
    """The model's vocabulary (speculator/models.py's Model)."""

    n_vocab: int

    def tokenize(self, text: str, special: bool = False) -> list[int]: ...

    def token_bytes(self, token: int, special: bool = False) -> bytes: ...


def prompts_of(value: Any) -> list[Prompt]:
    """llama-server's prompt forms: a string, token ids (mixed with strings: one
    prompt), a JSON prompt ({"prompt_string"}), or a list of those (several
    prompts). BadRequest otherwise."""
    if isinstance(value, str):
        return [[value]]
    if isinstance(value, dict):
        return [_json_prompt(value)]
    if isinstance(value, list) and not value:
        raise BadRequest("prompt is empty")
    if not isinstance(value, list):
        raise BadRequest('"prompt" must be a string, token ids, or a list of them')
    if any(_is_token(v) for v in value):
        return [_one_prompt(value)]
    return [
        [v] if isinstance(v, str) else _json_prompt(v) if isinstance(v, dict) else _one_prompt(v)
        for v in value
    ]


def _json_prompt(value: dict[str, Any]) -> Prompt:
    """llama-server's JSON prompt: {"prompt_string", "multimodal_data"}; groundspec's
    models read text only, so media is refused as llama-server refuses it without a
    multimodal projector."""
    if value.get("multimodal_data"):
        raise BadRequest("multimodal data is not supported: groundspec's models read text only")
    text = value.get("prompt_string")
    if not isinstance(text, str):
        raise BadRequest('a JSON prompt needs "prompt_string" (a string)')
    return [text]


def _is_token(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _one_prompt(value: Any) -> Prompt:
    if not isinstance(value, list) or not all(isinstance(v, str) or _is_token(v) for v in value):
        raise BadRequest("each prompt must be a string or a list of token ids and strings")
    return list(value)


def needs_tokenizer(prompts: list[Prompt]) -> bool:
    return any(_is_token(piece) for prompt in prompts for piece in prompt)


def prompt_text(prompt: Prompt, tokenizer: Tokenizer | None) -> str:
    """The prompt as text: token ids spelled out (special tokens as their text)."""
    out: list[str] = []
    tokens: list[int] = []
    for piece in prompt + [""]:
        if isinstance(piece, str):
            if tokens:
                out.append(detokenize(tokens, tokenizer))
                tokens = []
            out.append(piece)
        else:
            tokens.append(piece)
    return "".join(out)


def detokenize(tokens: list[int], tokenizer: Tokenizer | None) -> str:
    if tokenizer is None:
        raise BadRequest("token ids need the model's vocabulary: this engine has none (send text)")
    bad = [t for t in tokens if not 0 <= t < tokenizer.n_vocab]
    if bad:
        raise BadRequest(
            f"token id {bad[0]} is outside the vocabulary (0..{tokenizer.n_vocab - 1})"
        )
    data = b"".join(tokenizer.token_bytes(t, special=True) for t in tokens)
    return data.decode("utf-8", errors="replace")


# -- /tokenize and /detokenize -----------------------------------------------------------


class TokenizeBody(msgspec.Struct, kw_only=True):
    content: str
    add_special: bool = False
    parse_special: bool = True
    with_pieces: bool = False


class DetokenizeBody(msgspec.Struct, kw_only=True):
    tokens: list[int]


def tokenize_answer(body: TokenizeBody, tokenizer: Tokenizer) -> dict[str, Any]:
    """llama-server's /tokenize: ids, or {id, piece} with pieces (a piece that is not
    whole UTF-8 is given as its bytes)."""
    tokens = tokenizer.tokenize(body.content, special=body.parse_special)
    if not body.with_pieces:
        return {"tokens": tokens}
    pieces: list[dict[str, Any]] = []
    for token in tokens:
        data = tokenizer.token_bytes(token, special=True)
        try:
            pieces.append({"id": token, "piece": data.decode("utf-8")})
        except UnicodeDecodeError:
            pieces.append({"id": token, "piece": list(data)})
    return {"tokens": pieces}
