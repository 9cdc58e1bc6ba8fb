"""logit_bias and n_probs in the decode loop (speculator/token_probs.py): a biased
speculative decode is exactly plain decoding with the bias, and every emitted
token reports its probabilities, in llama-server's shapes on the HTTP side."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import pytest
from modelled_decode import LearnsNothing

from lsp_server.http_probs import LOWEST_FLOAT, bias_entries, probabilities
from speculator.controller import REFACTOR_PRIORS, Controller
from speculator.decode import Decoder
from speculator.drafters import Draft
from speculator.sampling import SamplingParams, token_prob
from speculator.token_probs import Shaping, kept_choices, softmax, token_bias
from speculator.types import CompletionRequest, TokenChoice, TokenProb

VOCAB = 48
END = 0


def row_after(token: int) -> np.ndarray:
    """The target's logits after `token`: fixed per token, never END."""
    row = np.random.default_rng(token).normal(0.0, 2.0, VOCAB).astype(np.float32)
    row[END] = -50.0
    return row


class Target:
    """A target session whose next-token logits depend on the last token only."""

    threads = 2

    def __init__(self, prompt: list[int]) -> None:
        self.cells = list(prompt)
        self.batches: list[int] = []

    def room(self) -> int:
        return 4096 - len(self.cells)

    def append(self, tokens: Sequence[int]) -> np.ndarray:
        self.batches.append(len(tokens))
        self.cells.extend(tokens)
        return np.stack([row_after(t) for t in tokens])

    def trim(self, n: int) -> None:
        del self.cells[n:]


class Vocab:
    def tokenize(self, text: str, special: bool = False) -> list[int]:
        return [ord(c) % VOCAB for c in text]

    def token_bytes(self, token: int, special: bool = False) -> bytes:
        return b"t%d " % token


class Follows(LearnsNothing):
    """Drafts what unbiased greedy decoding would emit: wrong wherever a bias bans it."""

    def propose(self, history: Sequence[int], k: int) -> Draft | None:
        tokens, last = [], history[-1]
        for _ in range(k):
            last = int(np.argmax(row_after(last)))
            tokens.append(last)
        return Draft(tokens, self.name, "lookup:aligned")


def decode(request: CompletionRequest, drafting: bool, n: int = 24) -> tuple[list[int], Decoder]:
    target = Target([7])
    decoder = Decoder(
        target,  # type: ignore[arg-type]
        token_bytes=Vocab().token_bytes,
        is_end=lambda t: t == END,
        controller=Controller(priors=REFACTOR_PRIORS, max_draft=16),
        drafters=[Follows()] if drafting else [],  # type: ignore[list-item]
        params=SamplingParams(request.temperature, seed=request.seed),
        min_draft=1 if drafting else 0,
        shaping=Shaping.of(request, Vocab()),
    )
    out = decoder.run(row_after(7), n)
    decoder.outcome = out  # type: ignore[attr-defined]
    return out.tokens, decoder


def request(**fields: object) -> CompletionRequest:
    return CompletionRequest(text="", cursor=0, **fields)  # type: ignore[arg-type]


def banned_greedy() -> list[tuple[int | str, float]]:
    """A bias that bans the first few tokens unbiased greedy decoding emits."""
    plain, _ = decode(request(), drafting=False, n=6)
    return [(t, -100.0) for t in plain[:3]]


@pytest.mark.parametrize("temperature", [0.0, 0.8])
def test_a_biased_speculative_decode_is_plain_decoding_with_the_bias(temperature: float) -> None:
    bias = banned_greedy()
    asked = request(logit_bias=bias, temperature=temperature, seed=3)
    plain, _ = decode(asked, drafting=False)
    drafted, decoder = decode(asked, drafting=True)
    assert drafted == plain
    assert not {t for t, _ in bias} & set(plain)  # the banned tokens never come
    assert max(decoder.session.batches) > 1  # drafts were verified (and rejected)
    unbiased, _ = decode(request(temperature=temperature, seed=3), drafting=False)
    assert unbiased != plain


def test_false_bans_and_texts_bias_each_of_their_tokens() -> None:
    assert bias_entries([[5, False], ["ab", -1], [1.5, 2], ["x"], "junk"]) == [
        (5, -math.inf),
        ("ab", -1.0),
    ]
    assert bias_entries({"12": -100, "hello": 3, "bad": "x"}) == [(12, -100.0), ("hello", 3.0)]
    assert bias_entries("nope") is None and bias_entries([]) is None
    # Biases of one token add up, as llama-server's logit_bias sampler adds them.
    assert token_bias([("aa", -1.0), (ord("a") % VOCAB, -2.0)], Vocab()) == {ord("a") % VOCAB: -4.0}


@pytest.mark.parametrize("post_sampling", [False, True])
def test_every_emitted_token_reports_its_probabilities(post_sampling: bool) -> None:
    asked = request(n_probs=5, post_sampling_probs=post_sampling, temperature=1.0, seed=1)
    tokens, decoder = decode(asked, drafting=True, n=10)
    choices = decoder.outcome.token_choices  # type: ignore[attr-defined]
    assert [c.token for c in choices] == tokens
    for choice in choices:
        assert len(choice.top) == 5
        probs = [t.prob for t in choice.top]
        assert probs == sorted(probs, reverse=True) and 0.0 < probs[-1] <= probs[0] <= 1.0
        assert choice.piece == Vocab().token_bytes(choice.token)
        top = {t.token: t.prob for t in choice.top}
        assert choice.token not in top or top[choice.token] == pytest.approx(choice.prob)


def test_greedy_post_sampling_probabilities_are_all_on_the_chosen_token() -> None:
    asked = request(n_probs=5, post_sampling_probs=True)
    tokens, decoder = decode(asked, drafting=False, n=3)
    for token, choice in zip(tokens, decoder.outcome.token_choices, strict=True):  # type: ignore[attr-defined]
        assert choice.prob == 1.0
        assert [(t.token, t.prob) for t in choice.top] == [(token, 1.0)]


def test_llama_servers_shapes() -> None:
    choice = TokenChoice(
        5, b"\xe5\xaa", 0.5, [TokenProb(5, b"\xe5\xaa", 0.5), TokenProb(9, b"x", 0.0)]
    )
    (entry,) = probabilities([choice], post_sampling=False)
    assert entry == {
        "id": 5,
        "token": "",  # half a character: its bytes say the rest
        "bytes": [0xE5, 0xAA],
        "logprob": math.log(0.5),
        "top_logprobs": [
            {"id": 5, "token": "", "bytes": [0xE5, 0xAA], "logprob": math.log(0.5)},
            {"id": 9, "token": "x", "bytes": [120], "logprob": LOWEST_FLOAT},
        ],
    }
    (post,) = probabilities([choice], post_sampling=True)
    assert post["prob"] == 0.5 and post["top_probs"][1]["prob"] == 0.0


def test_only_the_tokens_of_the_finished_text_are_reported() -> None:
    choices = [TokenChoice(i, piece, 1.0, []) for i, piece in enumerate([b"ab", b"c", b"\n"])]
    assert [c.token for c in kept_choices(choices, "abc")] == [0, 1]
    assert [c.token for c in kept_choices(choices, "ab")] == [0]


def test_a_tokens_probability_is_the_float64_softmax_within_a_millionth() -> None:
    rng = np.random.default_rng(7)
    row = rng.normal(0.0, 4.0, 151_936).astype(np.float32)
    row[11] += 30.0  # one token nearly certain, the rest in its tail
    exact = softmax(row)
    for token in (11, 0, int(np.argmin(row)), 151_935):
        assert math.isclose(token_prob(row, token), exact[token], rel_tol=1e-6, abs_tol=1e-30)
    assert token_prob(np.array([0.0, -np.inf], dtype=np.float32), 1) == 0.0
