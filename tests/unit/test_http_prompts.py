"""llama-server's prompt forms (lsp_server/http_prompts.py), on plain data."""

from __future__ import annotations

import pytest

from lsp_server.http_prompts import (
    TokenizeBody,
    detokenize,
    prompt_text,
    prompts_of,
    tokenize_answer,
)
from lsp_server.http_wire import BadRequest

SPECIALS = {0: "<|fim_prefix|>", 1: "<|fim_suffix|>", 2: "<|fim_middle|>"}


class ByteVocab:
    """Tokens 0-2 are FIM specials, 3.. are single bytes (3 + byte)."""

    n_vocab = 3 + 256

    def tokenize(self, text: str, special: bool = False) -> list[int]:
        out: list[int] = []
        rest = text
        while rest:
            hit = next((t for t, s in SPECIALS.items() if special and rest.startswith(s)), None)
            if hit is not None:
                out.append(hit)
                rest = rest[len(SPECIALS[hit]) :]
            else:
                out += [3 + b for b in rest[0].encode()]
                rest = rest[1:]
        return out

    def token_bytes(self, token: int, special: bool = False) -> bytes:
        if token in SPECIALS:
            return SPECIALS[token].encode() if special else b""
        return bytes([token - 3])


def test_the_prompt_forms_of_llama_server() -> None:
    assert prompts_of("abc") == [["abc"]]
    assert prompts_of([1, 2, 3]) == [[1, 2, 3]]
    assert prompts_of([1, "a", 2]) == [[1, "a", 2]]  # mixed: one prompt
    assert prompts_of(["a", "b"]) == [["a"], ["b"]]  # strings only: several
    assert prompts_of([[1, 2], "b", [3, "c"]]) == [[1, 2], ["b"], [3, "c"]]
    # llama-server's JSON prompt, alone or in a list; media is refused (text models)
    assert prompts_of({"prompt_string": "p"}) == [["p"]]
    assert prompts_of([[1, 2], {"prompt_string": "p"}]) == [[1, 2], ["p"]]
    with pytest.raises(BadRequest, match="multimodal"):
        prompts_of({"prompt_string": "p <__media__>", "multimodal_data": ["aGk="]})
    for bad, says in [([], "empty"), (3, "must be"), ([{}], "prompt_string"), ([[True]], "each")]:
        with pytest.raises(BadRequest, match=says):
            prompts_of(bad)


def test_token_ids_are_spelled_out_with_special_tokens() -> None:
    vocab = ByteVocab()
    ids = vocab.tokenize("<|fim_prefix|>x = <|fim_suffix|>\n<|fim_middle|>", special=True)
    assert ids[0] == 0 and ids[-1] == 2
    text = prompt_text([*ids[:5], "y", *ids[5:]], vocab)
    assert text == "<|fim_prefix|>x = y<|fim_suffix|>\n<|fim_middle|>"
    with pytest.raises(BadRequest, match="outside the vocabulary"):
        detokenize([9999], vocab)
    with pytest.raises(BadRequest, match="vocabulary"):
        prompt_text([1, 2], None)
    assert prompt_text(["only text"], None) == "only text"


def test_tokenize_with_pieces_keeps_partial_utf8_as_bytes() -> None:
    vocab = ByteVocab()
    answer = tokenize_answer(TokenizeBody(content="a😀", with_pieces=True), vocab)
    pieces = answer["tokens"]
    assert pieces[0] == {"id": 3 + ord("a"), "piece": "a"}
    assert all(isinstance(p["piece"], list) for p in pieces[1:])  # 4 bytes of one emoji
    assert tokenize_answer(TokenizeBody(content="ab"), vocab) == {"tokens": [100, 101]}
