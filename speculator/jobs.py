"""The pipeline's plain data (speculator/pipeline.py): the jobs that prepare makes
and a generator runs, and the Generated it answers with."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import msgspec

from .grounding import Grounding
from .limits import Limits
from .outcome import StopReason
from .postprocess import finish_completion
from .types import CompletionRequest, RefactorRequest, Snippet, TokenChoice

# Text generated so far -> index where it must be cut (stop), or None to go on.
StopRule = Callable[[str], int | None]


@dataclass
class CompletionJob:
    """A completion (or a warm-up of its prompt), prepared: everything but the prompt."""

    request: CompletionRequest
    grounding: Grounding
    multiline: bool
    stop: StopRule
    limits: Limits
    context: Callable[[], list[Snippet]]  # workspace snippets, fetched once when asked
    quick: bool = False  # may be answered from a short window while the prompt is cold
    # Whether the context's source has its answers yet (the workspace index has
    # read the folder): a header chosen before is provisional (headers.py).
    context_ready: Callable[[], bool] = lambda: True
    warm: bool = False  # an idle warm-up's: evaluate the prompt, generate nothing

    def shown(self, text: str) -> str:
        """Generated text as the caller gets it: a suggestion cleaned up, or (ends_at
        "limit") the text as generated."""
        if self.request.ends_at == "limit":
            return text
        return finish_completion(text, self.multiline)


@dataclass
class RewriteJob:
    """A rewrite of a span of the document (a refactor; next edit's window)."""

    request: RefactorRequest
    selection: str  # what the rewrite replaces: text[request.start:request.end]
    code: str  # the selection, dedented: what the prompt shows
    lead: str  # the indentation taken off `code`, put back by finish
    prompt: str  # the chat prompt (special tokens in it)
    fence: str  # the code fence the model closes when it is done
    stop: StopRule
    limits: Limits
    renames: dict[str, str] = field(default_factory=dict)  # old -> new names asked for
    expected: str = ""  # text the output is expected to resemble (default: `code`)
    slot_kind: str = "refactor"  # the local KV slot it is kept in, beside the document's
    # One slot of its kind for every document: the prompts start alike in any file.
    shared_slot: bool = False
    trace: bool = False  # record each token's probability (a next edit's confidence)

    @property
    def expected_text(self) -> str:
        return self.expected or self.code


class Counts(msgspec.Struct):
    """What one generation cost, as the generator measured it (or the server said)."""

    prompt_tokens: int = 0
    reused_prompt_tokens: int = 0
    prompt_ms: float = 0.0
    decode_ms: float = 0.0
    generated_tokens: int = 0
    drafted_tokens: int = 0
    accepted_tokens: int = 0


@dataclass
class Generated:
    """A generator's answer: raw text, why it stopped, what it cost."""

    text: str
    stop: StopReason
    counts: Counts
    speculation: str  # named in the stats: the mode asked for, or the server's own
    started: float  # when this generation began (an alternative: its own start)
    per_drafter: dict[str, tuple[int, int]] = field(default_factory=dict)  # (drafted, accepted)
    record: bool = True  # counted in the totals (an alternative after the first is not)
    why_unfinished: str = ""  # a rewrite that did not end: the error the user sees
    # Where a RewriteJob asked for a trace and the generator has one: each token's
    # end in `text` (characters) and the model's probability of it.
    token_ends: list[int] = field(default_factory=list)
    token_probs: list[float] = field(default_factory=list)
    # Where the request asked for n_probs: each generated token's probabilities.
    token_choices: list[TokenChoice] = field(default_factory=list)

    @property
    def timed_out(self) -> bool:
        return self.stop in (StopReason.TIME_LIMIT, StopReason.DEADLINE)
