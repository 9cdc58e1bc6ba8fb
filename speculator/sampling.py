"""Sampling the target's next token, and accepting or rejecting a drafted one, so
that speculation leaves the output distributed exactly as the target's alone (the
rules are in decode.py's docstring).

The filters follow llama.cpp's default chain: top-k, then top-p and min-p on the
untempered distribution, then the temperature over the tokens left.
"""

from __future__ import annotations

import numpy as np


class SamplingParams:
    __slots__ = ("temperature", "top_p", "top_k", "min_p", "rng")

    # Below this a temperature is greedy: logits divided by a subnormal one overflow
    # to inf and the probabilities to NaN, and at 1e-6 a gap of a millionth of a
    # logit already decides the token.
    MIN_TEMPERATURE = 1e-6

    def __init__(
        self,
        temperature: float = 0.0,
        top_p: float = 1.0,
        top_k: int = 0,
        seed: int = 0,
        min_p: float = 0.0,
    ):
        self.temperature = temperature
        self.top_p = top_p
        self.top_k = top_k
        self.min_p = min_p
        # A negative seed asks for a random one (llama-server's -1).
        self.rng = np.random.default_rng(seed if seed >= 0 else None)

    @property
    def greedy(self) -> bool:
        return self.temperature < self.MIN_TEMPERATURE


def target_probs(logits: np.ndarray, params: SamplingParams) -> np.ndarray:
    """The target's sampling distribution p, by llama.cpp's default chain: top-k, then
    top-p and min-p on the untempered distribution, then the temperature over the
    tokens left (so a temperature never changes which tokens may be drawn)."""
    z = logits.astype(np.float64)
    keep = np.ones(z.size, dtype=bool)
    if 0 < params.top_k < z.size:
        keep &= z >= np.partition(z, -params.top_k)[-params.top_k]
    if params.top_p < 1.0 or params.min_p > 0.0:
        p = _masked_softmax(z, keep)
        if params.top_p < 1.0:
            order = np.argsort(-p, kind="stable")
            cut = int(np.searchsorted(np.cumsum(p[order]), params.top_p)) + 1
            top = np.zeros_like(keep)
            top[order[:cut]] = True
            keep &= top
        if params.min_p > 0.0:
            keep &= p >= params.min_p * p.max()
    return _masked_softmax(z / params.temperature, keep)


def _masked_softmax(z: np.ndarray, keep: np.ndarray) -> np.ndarray:
    masked = np.where(keep, z, -np.inf)
    p = np.exp(masked - masked.max())
    result: np.ndarray = p / p.sum()
    return result


def token_prob(logits: np.ndarray, token: int) -> float:
    """softmax(logits)[token], in the logits' own precision and summed in float64:
    within 1e-6 of the float64 softmax, at an eighth of its cost (0.3 ms against
    2.4 ms over Qwen's 151,936 tokens on 2 cores: it runs for every token a next
    edit scores or writes)."""
    exps = np.exp(logits - logits.max())
    return float(exps[token]) / float(exps.sum(dtype=np.float64))


def sample(p: np.ndarray, rng: np.random.Generator) -> int:
    return int(rng.choice(p.size, p=p))


def verify_token(
    logits: np.ndarray,
    draft_token: int,
    q: np.ndarray | None,
    params: SamplingParams,
) -> tuple[bool, int]:
    """Accept or reject one drafted token; on rejection also return the replacement."""
    if params.greedy:
        best = int(np.argmax(logits))
        return best == draft_token, best
    p = target_probs(logits, params)
    if q is None:  # deterministic draft: sample from p, accept on equality
        y = sample(p, params.rng)
        return y == draft_token, y
    if params.rng.random() < min(1.0, p[draft_token] / max(q[draft_token], 1e-12)):
        return True, draft_token
    residual = np.maximum(p - q, 0.0)
    total = residual.sum()
    return False, sample(residual / total if total > 0 else p, params.rng)


def next_token(logits: np.ndarray, params: SamplingParams) -> int:
    if params.greedy:
        return int(np.argmax(logits))
    return sample(target_probs(logits, params), params.rng)
