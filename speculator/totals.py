"""Aggregate statistics since start: the `groundspec/stats` result."""

from __future__ import annotations

import threading

import numpy as np

from .types import Stats

_MAX_LATENCIES = 2048  # keep memory bounded on a long-running daemon


def percentile(values: list[float], q: float) -> float:
    """The value nearest the q-th percentile (q in 0..100; numpy's "nearest"
    method, a value that occurred); 0.0 for no values."""
    if not values:
        return 0.0
    return float(np.percentile(values, q, method="nearest"))


class Totals:
    """Thread-safe running totals over requests."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.requests = 0
        self.cancelled = 0
        self.accepted_items = 0
        self.generated_tokens = 0
        self.decode_ms = 0.0
        self.prompt_tokens = 0
        self.reused_prompt_tokens = 0
        self.drafted: dict[str, int] = {}
        self.accepted: dict[str, int] = {}
        self.latencies_ms: list[float] = []

    def record(self, stats: Stats, per_drafter: dict[str, tuple[int, int]] | None = None) -> None:
        with self._lock:
            self.requests += 1
            self.generated_tokens += stats.generated_tokens
            self.decode_ms += stats.decode_ms
            self.prompt_tokens += stats.prompt_tokens
            self.reused_prompt_tokens += stats.reused_prompt_tokens
            for name, (drafted, accepted) in (per_drafter or {}).items():
                self.drafted[name] = self.drafted.get(name, 0) + drafted
                self.accepted[name] = self.accepted.get(name, 0) + accepted
            self.latencies_ms.append(stats.total_ms)
            del self.latencies_ms[:-_MAX_LATENCIES]

    def record_cancelled(self) -> None:
        with self._lock:
            self.cancelled += 1

    def record_accepted_item(self) -> None:
        """The user accepted a suggestion (the `groundspec.accepted` command)."""
        with self._lock:
            self.accepted_items += 1

    def snapshot(self) -> dict[str, object]:
        with self._lock:
            acceptance = {
                name: {
                    "drafted": drafted,
                    "accepted": self.accepted.get(name, 0),
                    "rate": round(self.accepted.get(name, 0) / drafted, 4) if drafted else 0.0,
                }
                for name, drafted in self.drafted.items()
            }
            tokens_per_s = (
                self.generated_tokens / (self.decode_ms / 1000) if self.decode_ms else 0.0
            )
            return {
                "requests": self.requests,
                "cancelled": self.cancelled,
                "acceptedItems": self.accepted_items,
                "generatedTokens": self.generated_tokens,
                "tokensPerSecond": round(tokens_per_s, 2),
                "acceptance": acceptance,
                "promptTokens": self.prompt_tokens,
                "reusedPromptTokens": self.reused_prompt_tokens,
                "evaluatedPromptTokens": self.prompt_tokens - self.reused_prompt_tokens,
                "latencyMs": {
                    "p50": round(percentile(self.latencies_ms, 50), 1),
                    "p95": round(percentile(self.latencies_ms, 95), 1),
                },
            }
