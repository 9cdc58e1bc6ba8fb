"""The acceptance rules keep the target's distribution (lossless)."""

import numpy as np

from speculator.sampling import SamplingParams, target_probs, verify_token


def _empirical(draws: list[int], n: int) -> np.ndarray:
    return np.bincount(draws, minlength=n) / len(draws)


def test_greedy_accepts_only_the_argmax() -> None:
    logits = np.array([0.1, 3.0, 0.2], dtype=np.float32)
    assert verify_token(logits, 1, None, SamplingParams()) == (True, 1)
    assert verify_token(logits, 2, None, SamplingParams()) == (False, 1)


def test_deterministic_draft_keeps_the_target_distribution() -> None:
    logits = np.log(np.array([0.5, 0.3, 0.2]))
    params = SamplingParams(temperature=1.0, seed=1)
    out = []
    for _ in range(20000):
        ok, token = verify_token(logits, 0, None, params)
        out.append(0 if ok else token)
    assert np.allclose(_empirical(out, 3), [0.5, 0.3, 0.2], atol=0.015)


def test_stochastic_draft_keeps_the_target_distribution() -> None:
    p_logits = np.log(np.array([0.6, 0.1, 0.3]))
    q = np.array([0.2, 0.5, 0.3])
    params = SamplingParams(temperature=1.0, seed=2)
    rng = np.random.default_rng(3)
    out = []
    for _ in range(30000):
        d = int(rng.choice(3, p=q))
        ok, token = verify_token(p_logits, d, q, params)
        out.append(d if ok else token)
    assert np.allclose(_empirical(out, 3), [0.6, 0.1, 0.3], atol=0.015)


def test_top_k_and_top_p_trim_the_distribution() -> None:
    logits = np.log(np.array([0.5, 0.25, 0.15, 0.1]))
    p = target_probs(logits, SamplingParams(temperature=1.0, top_k=2))
    assert p[2] == 0 and p[3] == 0 and np.isclose(p.sum(), 1)
    p = target_probs(logits, SamplingParams(temperature=1.0, top_p=0.7))
    assert p[0] > 0 and p[1] > 0 and p[2] == 0 and p[3] == 0


def test_min_p_drops_tokens_far_below_the_likeliest() -> None:
    logits = np.log(np.array([0.6, 0.3, 0.07, 0.03]))
    p = target_probs(logits, SamplingParams(temperature=1.0, min_p=0.1))
    # 0.07 >= 0.1 x 0.6 stays; 0.03 does not
    assert p[2] > 0 and p[3] == 0 and np.isclose(p.sum(), 1)


def test_the_filters_read_the_untempered_distribution_as_llama_cpp_does() -> None:
    """top-p and min-p choose the tokens before the temperature scales them: a hot
    temperature flattens what is left, it lets no cut token back in."""
    logits = np.log(np.array([0.7, 0.2, 0.06, 0.04]))
    for temperature in (0.2, 1.0, 5.0):
        p = target_probs(logits, SamplingParams(temperature=temperature, top_p=0.85))
        assert p[0] > 0 and p[1] > 0 and p[2] == 0 and p[3] == 0
        p = target_probs(logits, SamplingParams(temperature=temperature, min_p=0.08))
        assert p[2] > 0 and p[3] == 0
    hot = target_probs(logits, SamplingParams(temperature=5.0, top_p=0.85))
    assert hot[1] / hot[0] > 0.2 / 0.7  # flatter among the kept two
