"""A request's time limits, one object for both generators.

The local decoder (speculator/decode.py) stops at a new line once
`max_predict_ms` has passed and before a round that would end past the
deadline; the remote stream (backends/remote.py, TimedStop) applies the same
two limits to the server's events. Both read them from here, measured from the
moment the pipeline started on the request.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from .types import CompletionRequest

# What is left of a limit the prompt already spent: stop at the first new line
# (0 would mean no limit at all).
SPENT_LIMIT_MS = 0.001


@dataclass(frozen=True)
class Limits:
    started: float  # time.perf_counter() when the pipeline took the request
    # > 0: stop at the first new line generated after this long (llama-server's
    # t_max_predict_ms), counted from the first token or, with `from_start`,
    # from `started` (the prompt's evaluation included: an editor's typing request).
    max_predict_ms: float = 0.0
    from_start: bool = False
    # > 0: the output is due this long after `started`: no round (or server
    # event) that would end later, even mid-line.
    deadline_ms: float = 0.0

    @classmethod
    def of(cls, request: CompletionRequest, started: float) -> Limits:
        return cls(
            started, request.max_predict_ms, request.max_predict_from_start, request.deadline_ms
        )

    @classmethod
    def none(cls, started: float) -> Limits:
        return cls(started)

    def decode_max_ms(self, now: float | None = None) -> float:
        """The decoder's max_ms once the prompt is ready: the limit, less the
        time already spent when it counts from the start; a spent limit still
        lets the first line end."""
        if self.max_predict_ms <= 0 or not self.from_start:
            return self.max_predict_ms
        return self.remaining_ms(self.max_predict_ms, now)

    def deadline_left_ms(self, now: float | None = None) -> float:
        """The decoder's deadline once the prompt is ready (0: none)."""
        return self.remaining_ms(self.deadline_ms, now)

    def remaining_ms(self, limit: float, now: float | None = None) -> float:
        """What is left of a limit counted from `started` (0: none; a spent limit
        leaves SPENT_LIMIT_MS, so it still applies)."""
        if limit <= 0:
            return limit
        spent_ms = ((time.perf_counter() if now is None else now) - self.started) * 1000
        return max(limit - spent_ms, SPENT_LIMIT_MS)

    def elapsed_ms(self, now: float | None = None) -> float:
        return ((time.perf_counter() if now is None else now) - self.started) * 1000
