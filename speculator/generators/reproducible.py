"""The same raw request gets the same answer, every time (llama-server's clients).

A raw prompt (CompletionRequest.prompt_format "raw": a script's, a llama-server
client's) is decoded so that repeating it repeats the answer bit for bit. Greedy
decoding is deterministic for a given sequence of batch shapes; what varies
between two identical requests is the shapes (docs/exactness.md: each kernel
rounds differently, and a near-tie can flip):

- the prompt's last token: a cold prompt of under 16 tokens evaluated it as a
  row of one batch, a cached one alone. Here it is always alone (one step more
  for a short cold prompt);
- `cache_prompt: false`: the prompt is evaluated cold, in the same batches every
  time, whatever the KV held before;
- the draft lengths: the engine's controllers learn acceptance across requests
  and verify costs from the clock, and the loss guard stops drafting by measured
  time. A raw request sizes its drafts with a controller of its own, from the
  priors and the tabled cost shape (it learns acceptance within the request
  only), without the clock-driven guard, and under `auto` drafts by lookup only
  (the draft model's proposals depend on its own cache's history).

Editors' requests (document prompts) keep the learned sizing: their answers are
suggestions, and the speed is theirs.
"""

from __future__ import annotations

from collections.abc import Sequence

from ..controller import Controller
from ..session import LAST_TOKEN_ALONE, Logits, Session, SyncResult
from ..types import CancelToken, CompletionRequest, RefactorRequest


def reproducible(request: CompletionRequest | RefactorRequest) -> bool:
    return isinstance(request, CompletionRequest) and request.prompt_format == "raw"


class FixedController(Controller):
    """Draft lengths from the priors and the tabled cost shape, never the clock."""

    def __init__(self) -> None:
        super().__init__()
        self.steady_samples = None

    def use_threads(self, threads: int) -> None:
        pass  # one curve, whatever adaptive threads run the next step on

    def observe_cost(self, rows: int, ms: float) -> None:
        pass  # a measured time would make the next draft's length depend on the load


def sync_raw(
    session: Session,
    segments: Sequence[Sequence[int]],
    cache_prompt: bool,
    cancel: CancelToken | None,
) -> tuple[SyncResult, Logits]:
    """Sync a raw prompt with its last token evaluated alone, cold or cached alike;
    `cache_prompt` False: from an empty cache."""
    if not cache_prompt:
        session.trim(0)
    prompt = [t for seg in segments for t in seg]
    pending = session.pending(segments)
    if not 1 < pending < LAST_TOKEN_ALONE:  # longer ranges end alone already (Session)
        return session.sync(segments, cancel=cancel)
    before, _ = session.sync([prompt[:-1]], cancel=cancel)
    sync, logits = session.sync(segments, cancel=cancel)
    evaluated = before.evaluated + sync.evaluated
    whole = SyncResult(len(prompt), len(prompt) - evaluated, evaluated, 0, before.ms + sync.ms)
    return whole, logits
