"""What a request asks of each token choice beyond its sampling parameters:
llama-server's logit_bias and n_probs (speculator/decode.py applies them).

The bias is added to the target's logits wherever the decode loop chooses a
token: the next token of a round and each drafted token's verification. The
verifier therefore accepts exactly what plain decoding with the bias would
choose (greedy), or keeps the output distributed as the biased target's
(sampling), so speculation never changes the answer.

The probabilities are read from the row each emitted token was chosen from:
every verified position has one (the verify batch computes them all), so
reporting them costs a softmax per token, not a decode.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

import numpy as np

from .types import CompletionRequest, RefactorRequest, TokenChoice, TokenProb


class Vocabulary(Protocol):
    """The model's tokens (speculator/models.py's Model)."""

    def tokenize(self, text: str, special: bool = False) -> list[int]: ...

    def token_bytes(self, token: int, special: bool = False) -> bytes: ...


class Shaping:
    """A request's logit bias and the probabilities it wants reported."""

    def __init__(
        self, n_probs: int, post_sampling: bool, bias: dict[int, float], vocab: Vocabulary
    ) -> None:
        self.n_probs = n_probs
        self.post_sampling = post_sampling
        self.bias = bias
        self.vocab = vocab
        self._vector: np.ndarray | None = None

    @classmethod
    def of(cls, request: CompletionRequest | RefactorRequest, vocab: Vocabulary) -> Shaping | None:
        """None when the request asks for neither (the common case costs nothing)."""
        n_probs = getattr(request, "n_probs", 0)
        entries = getattr(request, "logit_bias", None) or []
        if n_probs <= 0 and not entries:
            return None
        bias = token_bias(entries, vocab)
        return cls(n_probs, getattr(request, "post_sampling_probs", False), bias, vocab)

    def decide(self, row: np.ndarray) -> np.ndarray:
        """The logits a token is chosen from: the model's, plus the bias."""
        if not self.bias:
            return row
        if self._vector is None or self._vector.size != row.size:
            self._vector = bias_vector(self.bias, row.size)
        return row + self._vector

    def record(
        self,
        row: np.ndarray,
        token: int,
        distribution: Callable[[np.ndarray], np.ndarray],
        out: list[TokenChoice],
    ) -> None:
        """Append `token`'s choice from `row` (the model's logits there);
        `distribution` turns biased logits into the sampling distribution."""
        if self.n_probs <= 0:
            return
        if self.post_sampling:
            probs = distribution(self.decide(row))
        else:
            probs = softmax(row)  # llama-server: the model's logits, before any sampler
        top = np.argpartition(-probs, min(self.n_probs, probs.size - 1))[: self.n_probs]
        top = top[np.argsort(-probs[top], kind="stable")]
        if self.post_sampling:
            top = top[probs[top] > 0.0]  # as llama-server: no zero-probability entries
        out.append(
            TokenChoice(
                token=token,
                piece=self.vocab.token_bytes(token),
                prob=float(probs[token]),
                top=[
                    TokenProb(int(t), self.vocab.token_bytes(int(t)), float(probs[t])) for t in top
                ],
            )
        )


def token_bias(entries: list[tuple[int | str, float]], vocab: Vocabulary) -> dict[int, float]:
    """Token id -> bias, as llama-server reads logit_bias: a text biases each of its
    tokens (tokenized as text, special tokens not parsed); biases add up."""
    bias: dict[int, float] = {}
    for key, value in entries:
        tokens = [key] if isinstance(key, int) else vocab.tokenize(key)
        for token in tokens:
            bias[token] = bias.get(token, 0.0) + value
    return bias


def bias_vector(bias: dict[int, float], size: int) -> np.ndarray:
    """The bias as a row to add to logits of `size` tokens (ids outside are ignored)."""
    vector = np.zeros(size, dtype=np.float32)
    for token, value in bias.items():
        if 0 <= token < size:
            vector[token] = value
    return vector


def softmax(row: np.ndarray) -> np.ndarray:
    """The model's distribution over the vocabulary, in float64 (logits are float32)."""
    z = row.astype(np.float64)
    z = np.exp(z - z.max())
    result: np.ndarray = z / z.sum()
    return result


def one_hot(row: np.ndarray) -> np.ndarray:
    """Greedy's distribution: all on the best token."""
    probs = np.zeros(row.size, dtype=np.float64)
    probs[int(np.argmax(row))] = 1.0
    return probs


def kept_choices(choices: list[TokenChoice], text: str) -> list[TokenChoice]:
    """The choices of the tokens that make up `text` (the generated text cut by a
    stop rule or post-processing): those that start inside it."""
    kept: list[TokenChoice] = []
    data = b""
    for choice in choices:
        if len(data.decode("utf-8", errors="ignore")) >= len(text):
            break
        kept.append(choice)
        data += choice.piece
    return kept
