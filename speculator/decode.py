"""The speculative decode loop: draft, verify in one target batch, accept, trim.

Shapes: the target session holds prompt + output; `logits` is the target's
distribution for the next token (vocab,). Each round emits token x, drafts
d1..dk after it, and evaluates [x, d1..dk] in one batch, getting k + 1 rows:
row i is the target's distribution p_i for the token after d_i (row 0: after x).

Greedy: accept d_i while it equals argmax p_{i-1}; the first mismatch's
argmax is the next x. The output is exactly plain greedy decoding (k = 0).
Sampling: p is the target's distribution after temperature/top-k/top-p.
  - deterministic draft: sample y ~ p, accept if y == d, else y is the next x;
  - stochastic draft with probabilities q: accept with min(1, p(d)/q(d)),
    else the next x ~ norm(max(0, p - q)).
Both leave the output distributed exactly as the target's alone.
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

import numpy as np

from .controller import DRAFT_TOKEN_RATIO, MAX_VERIFY_ROWS, Controller
from .drafters import Draft, Drafter
from .loss_guard import LossGuard
from .outcome import DecodeOutcome, PureStop, StopReason
from .sampling import SamplingParams, next_token, target_probs, token_prob, verify_token
from .token_probs import Shaping, one_hot
from .types import Cancelled, CancelToken
from .validate import refactor_cut_short, token_limit_reached

if TYPE_CHECKING:
    from .session import Session

log = logging.getLogger(__name__)

# Text generated so far -> index where it must be cut (stop), or None to go on.
StopRule = Callable[[str], int | None]


# With no budget left to draft, the lookup drafters still follow the source
# (Decoder._keep_following) while a look costs at most this share of a step.
FOLLOW_LOOK_SHARE = 0.05


class Decoder:
    """Runs one generation on a synced target session."""

    def __init__(
        self,
        session: Session,
        token_bytes: Callable[[int], bytes],
        is_end: Callable[[int], bool],
        controller: Controller,
        drafters: Sequence[Drafter],
        params: SamplingParams,
        min_draft: int = 0,
        clock: Callable[[], float] = time.perf_counter,
        max_ms: float = 0.0,
        allowance: float = LossGuard.ALLOWANCE,
        deadline_ms: float = 0.0,
        record_probs: bool = False,
        shaping: Shaping | None = None,
        stop_loops: bool = True,
        guarded: bool = True,
    ):
        # False: no clock-driven loss guard (probes, budgets), so the draft lengths
        # are the controller's alone (a raw request: generators/reproducible.py).
        self.guarded = guarded
        self.stop_loops = stop_loops  # False: a repeating output runs on to the limit
        self.record_probs = record_probs  # fill DecodeOutcome.token_probs
        self.shaping = shaping  # a logit bias, n_probs: DecodeOutcome.token_choices
        self.min_draft = min_draft  # > 0: the user chose the drafters, always try them
        # > 0: stop at the first new line generated after this long (llama-server's
        # t_max_predict_ms, for editors that want a suggestion in time).
        self.max_ms = max_ms
        # > 0: the output is due this long after run() starts; a round that
        # would end later is not started, even mid-line (a typing suggestion
        # on a busy machine: half a line in time beats a whole one too late).
        self.deadline_ms = deadline_ms
        self._next_round_ms = controller.cost(1)  # the deadline's estimate
        self._started = 0.0
        self.session = session
        self.token_bytes = token_bytes
        self.is_end = is_end
        self.controller = controller
        self.drafters = list(drafters)
        self.params = params
        self.clock = clock  # seconds; the replay simulator charges modelled costs
        controller.use_threads(session.threads)
        self.guard = LossGuard(
            controller.cost(1),
            steady_samples=controller.steady_samples,
            allowance=allowance,
            t1_measured=controller.measured(1),
        )
        self._expected_tokens = 0  # the caller's expected length (run())
        self._follow_when_broke = True  # _keep_following: looks are cheap so far
        self._followed_copy = False  # _project_length: the output followed a source
        self._prompt: list[int] = []
        self._pieces: list[bytes] = []  # the output's token texts so far (run())
        self._bound: PureStop | None = None  # the stop rule drafts are cut at

    def run(
        self,
        logits: np.ndarray,
        max_tokens: int,
        stop: StopRule | None = None,
        cancel: CancelToken | None = None,
        expected_tokens: int = 0,
    ) -> DecodeOutcome:
        started = self._started = self.clock()
        if self.deadline_ms < self._next_round_ms:
            # Not even one round fits (a cold prompt took the time): the wait is
            # long already, and a whole first line is worth more than a token.
            self.deadline_ms = 0.0
        self.guard.expected_tokens = self._expected_tokens = expected_tokens
        out = DecodeOutcome()
        prompt = self._prompt = list(self.session.cells)
        prompt_len = len(prompt)
        pieces: list[bytes] = []
        self._pieces, self._bound = pieces, stop if isinstance(stop, PureStop) else None
        forced: int | None = None  # replacement token from a rejected draft
        while len(out.tokens) < max_tokens:
            if cancel is not None and cancel.cancelled:
                raise Cancelled()
            round_start = self.clock()
            x = forced if forced is not None else next_token(self._decide(logits), self.params)
            forced = None
            if self.is_end(x):
                out.stop = StopReason.END
                break
            if self._emit(x, out, pieces, stop, logits):
                break
            if len(out.tokens) >= max_tokens:
                break
            if self._past_deadline():
                out.stop = StopReason.DEADLINE
                break
            rows_that_fit = self.session.room()
            if rows_that_fit < 1:
                out.stop = StopReason.CONTEXT_FULL  # keep what was generated; the caller says so
                break
            room = min(max_tokens - len(out.tokens), rows_that_fit)
            drafting_start = self.clock()
            self.controller.use_threads(self.session.threads)  # what the last step ran on
            draft = self._draft(prompt + out.tokens, room, rows_that_fit)
            drafting_ms = (self.clock() - drafting_start) * 1000
            k = len(draft.tokens) if draft else 0
            padding = [x] * draft.padding if draft else []  # any token: never verified
            t0 = self.clock()
            rows = self.session.append([x] + (draft.tokens if draft else []) + padding)
            self.controller.observe_cost(k + 1 + len(padding), (self.clock() - t0) * 1000)
            out.rounds += 1
            accepted, forced, done = self._verify(rows, draft, out, pieces, stop)
            self.session.trim(prompt_len + len(out.tokens))
            round_ms = (self.clock() - round_start) * 1000
            self._next_round_ms = round_ms
            if draft is None:
                self.guard.observe_plain(round_ms - drafting_ms, wasted_ms=drafting_ms)
            else:
                self.guard.observe_draft_round(round_ms, 1 + accepted)
                out.count(draft.drafter, k, accepted)
                self.controller.observe_acceptance(draft.bucket, k, accepted)
                for drafter in self.drafters:
                    if drafter.name == draft.drafter:
                        drafter.feedback(draft, accepted, forced)
            if done:
                break
            logits = rows[accepted].copy()  # rows is a view the next decode reuses
        out.text = _decode_text(pieces)
        if stop is not None:
            cut = stop(out.text)
            if cut is not None:
                out.text = out.text[:cut]
        out.decode_ms = (self.clock() - started) * 1000
        if self.guard.steady_samples is not None:
            self.controller.steady_samples = list(self.guard.steady_samples)
        return out

    def _emit(
        self,
        token: int,
        out: DecodeOutcome,
        pieces: list[bytes],
        stop: StopRule | None,
        row: np.ndarray | None = None,
    ) -> bool:
        """Append a token (chosen from the logits `row`); True when a stop rule
        fires, the output loops, or the time is up at a new line."""
        out.tokens.append(token)
        if self.record_probs and row is not None:
            out.token_probs.append(token_prob(row, token))
        if self.shaping is not None and row is not None:
            self.shaping.record(row, token, self._distribution, out.token_choices)
        piece = self.token_bytes(token)
        pieces.append(piece)
        looped = self.stop_loops and len(out.tokens) % LOOP_CHECK_EVERY == 0
        if looped and repeating_tail(out.tokens, self._prompt):
            out.stop = StopReason.LOOPED
            return True
        if stop is not None and stop(_decode_text(pieces)) is not None:
            out.stop = StopReason.END
            return True
        if self.max_ms > 0 and b"\n" in piece and self._elapsed_ms() > self.max_ms:
            out.stop = StopReason.TIME_LIMIT  # the new line is kept, as llama-server keeps it
            return True
        return False

    def _decide(self, row: np.ndarray) -> np.ndarray:
        """The logits a token is chosen (or a draft verified) from: with the bias."""
        return row if self.shaping is None else self.shaping.decide(row)

    def _distribution(self, row: np.ndarray) -> np.ndarray:
        return one_hot(row) if self.params.greedy else target_probs(row, self.params)

    def _past_deadline(self) -> bool:
        """The next round, if it costs what the last one did, would end past the deadline."""
        return self._next_round_ms > self._time_left_ms()

    def _elapsed_ms(self) -> float:
        return (self.clock() - self._started) * 1000

    def _time_left_ms(self) -> float:
        return self.deadline_ms - self._elapsed_ms() if self.deadline_ms > 0 else math.inf

    def _draft(self, history: list[int], room: int, rows_that_fit: int) -> Draft | None:
        """Ask drafters in order (cheapest first); size the draft by expected gain,
        within what this request can afford to lose (LossGuard), and pad its batch
        to a size the kernels run more cheaply (Controller.verify_rows)."""
        if self.min_draft == 0 and self.guarded and self.guard.must_probe():
            return None  # a plain round, to measure t1 under the current load
        self._project_length(history)
        if self.min_draft == 0 and self._affordable(1, 0.0) == 0:
            self._keep_following(history)
            return None  # lost too much already: no draft until more is earned
        for drafter in self.drafters:
            extra = self._draft_token_ms(drafter)
            affordable = self._affordable(room - 1, extra)
            # Ask for as much as the most confident bucket would verify.
            best = "draft" if drafter.name == "draft" else "lookup:aligned"
            budget = self.controller.draft_length(best, affordable, extra)
            # Lookup drafts are free to propose, so ask for plenty; draft-model
            # tokens cost time each, so never generate more than will be verified.
            floor = self.min_draft * (1 if drafter.name == "draft" else 8)
            budget = min(room - 1, max(budget, floor))
            if budget <= 0:
                continue
            draft = drafter.propose(history, budget)
            if draft is None:
                continue
            draft.tokens = self._before_stop(draft.tokens)
            k = self.controller.draft_length(
                draft.bucket, min(len(draft.tokens), affordable), extra
            )
            k = min(len(draft.tokens), max(k, self.min_draft))
            if k > 0:
                rows = self.controller.verify_rows(k, rows_that_fit)
                # The padded rows verify more of the proposal where it has more (at
                # no extra cost), and are padding only past its end.
                draft.tokens = draft.tokens[: min(rows - 1, room - 1)]
                draft.padding = rows - 1 - len(draft.tokens)
                return draft
            self.controller.declined(draft.bucket)
            drafter.declined(draft)
        return None

    def _before_stop(self, tokens: list[int]) -> list[int]:
        """The draft up to the token after which the stop rule (a PureStop) would
        end the output, were the draft taken: the rows after it cannot count. The
        rule is asked as _emit asks it, token by token (a rule may read only the
        end of the text: rejoin.py's)."""
        if self._bound is None:
            return tokens
        data = b"".join(self._pieces)
        for i, token in enumerate(tokens):
            data += self.token_bytes(token)
            if self._bound(data.decode("utf-8", errors="ignore")) is not None:
                return tokens[: i + 1]
        return tokens

    def _project_length(self, history: list[int]) -> None:
        """Where the caller gave an expected length (a refactor's selection),
        follow what the output does with it. The guard's allowance is a share
        of the expected length, lent before the tokens exist; the loan holds
        only while the length is known:
        - copying its source, the output will be what was written plus what is
          left of the copy (longer than the selection after added text);
        - once it has left the copy it followed (a rewrite), its length is
          unknown, and only what was written counts;
        - before any copy was followed, the selection is the estimate.
        Where a stop rule would end the copy early (a next edit's rewrite ends a
        few lines after its change), only the copy up to there is lent on: lent on
        the whole window, a short rewrite could lose a third of its time."""
        if self._expected_tokens <= 0:
            return
        ahead = [
            len(self._before_stop(list(rest)))
            for d in self.drafters
            if (rest := d.copy_ahead(history)) is not None
        ]
        if ahead:
            self._followed_copy = True
            self.guard.expected_tokens = self.guard.tokens + max(ahead)
        elif self._followed_copy:
            self.guard.expected_tokens = self.guard.tokens

    def _keep_following(self, history: list[int]) -> None:
        """With no budget left, let free (lookup) drafters still find their
        place in the source, so that a copy that starts now is seen
        (_project_length) and can earn the budget back. Only where a length
        was projected at all; elsewhere not looking saves the lookup."""
        if self._expected_tokens <= 0 or not self._follow_when_broke:
            return
        started = self.clock()
        for drafter in self.drafters:
            if self._draft_token_ms(drafter) == 0.0:
                draft = drafter.propose(history, 1)
                if draft is not None:
                    drafter.declined(draft)
        # A look is a loss here (nothing can be drafted): one that costs more
        # than a small share of a step is not repeated in this request.
        if (self.clock() - started) * 1000 > FOLLOW_LOOK_SHARE * self.guard.plain_ms:
            self._follow_when_broke = False

    def _draft_token_ms(self, drafter: Drafter) -> float:
        """What producing one draft token costs now (0 for lookup)."""
        if drafter.name != "draft":
            return 0.0
        measured = getattr(drafter, "token_ms", None)
        return measured if measured is not None else DRAFT_TOKEN_RATIO * self.guard.t1

    def _affordable(self, available: int, extra_ms: float) -> int:
        """The longest draft whose worst case (all rejected) fits the guard's budget,
        and whose round ends before the deadline.

        Verify costs come from the controller's curve as ratios to a 1-row
        step, times t1 measured in this request: both sides at the same moment."""
        if self.min_draft > 0 or not self.guarded:
            return available  # the user asked for these drafters, or no guard
        budget = self.guard.budget_ms()
        unit = self.guard.t1 / self.controller.cost(1)
        # _past_deadline priced the next round as the last one (after a plain
        # round, a step); a drafted round costs its batch, which must fit too.
        time_left = self._time_left_ms()
        best = 0
        # No draft is longer than a verify batch allows: looking further only
        # costs time (each cost() past the controller's table is a scan).
        longest = min(available, MAX_VERIFY_ROWS - 1)
        costs = self.controller.verify_costs(longest)
        for k in range(1, longest + 1):
            round_ms = costs[k] * unit + extra_ms * k
            if round_ms - self.guard.plain_ms > budget or round_ms > time_left:
                break
            best = k
        return best

    def _verify(
        self,
        rows: np.ndarray,
        draft: Draft | None,
        out: DecodeOutcome,
        pieces: list[bytes],
        stop: StopRule | None,
    ) -> tuple[int, int | None, bool]:
        """(accepted drafts, forced next token or None, generation finished)."""
        if draft is None:
            return 0, None, False
        for i, d in enumerate(draft.tokens):
            q = draft.q[i] if draft.q is not None else None
            ok, replacement = verify_token(self._decide(rows[i]), d, q, self.params)
            if not ok:
                return i, replacement, False
            if self.is_end(d):
                out.stop = StopReason.END
                return i, None, True
            if self._emit(d, out, pieces, stop, rows[i]):
                return i + 1, None, True
        return len(draft.tokens), None, False


# A generation whose tail repeats one block over and over is a loop (small
# models fall into them); it is cut the same way with or without speculation.
LOOP_CHECK_EVERY = 8
LOOP_MIN_TOKENS = 96  # the repeated tail must be at least this long ...
LOOP_MIN_REPEATS = 4  # ... and hold the block at least this many times
LOOP_MAX_PERIOD = 48


# A refactor rewrites its selection: output much longer than the selection
# plus this margin (or the selection's length again) is a runaway.
REFACTOR_MARGIN_TOKENS = 256


def refactor_budget(max_tokens: int, selection_tokens: int) -> int:
    """Room for the selection rewritten plus what an instruction adds, and no
    more: a runaway (rewriting past the selection, a loop) stops there."""
    return min(max(max_tokens, selection_tokens + 64), runaway_bound(selection_tokens))


def runaway_bound(selection_tokens: int) -> int:
    return selection_tokens + max(REFACTOR_MARGIN_TOKENS, selection_tokens)


def unfinished_refactor(outcome: DecodeOutcome, budget: int, selection_tokens: int) -> str:
    """The error for a rewrite the model did not end, saying why it stopped."""
    if outcome.stop is StopReason.LOOPED:
        why = "the model kept repeating itself"
    elif outcome.stop is StopReason.CONTEXT_FULL:
        why = "the context is full"
    elif budget >= runaway_bound(selection_tokens):
        why = f"it ran past {budget} tokens for a {selection_tokens}-token selection"
    else:
        why = token_limit_reached(budget)
    return refactor_cut_short(why)


def repeating_tail(tokens: Sequence[int], prompt: Sequence[int] = ()) -> bool:
    """True when the tail is one block of up to LOOP_MAX_PERIOD tokens repeated,
    and the prompt does not repeat that block itself (rewriting repetitive code,
    such as a table of similar lines, is not a loop)."""
    for period in range(1, LOOP_MAX_PERIOD + 1):
        span = max(LOOP_MIN_TOKENS, LOOP_MIN_REPEATS * period)
        if span > len(tokens):
            break
        tail = list(tokens[-span:])
        if tail[period:] == tail[:-period]:
            return not _contains(prompt, tail[: max(2 * period, 24)])
    return False


def _contains(haystack: Sequence[int], needle: list[int]) -> bool:
    n = len(needle)
    first = needle[0]
    return any(
        haystack[i] == first and list(haystack[i : i + n]) == needle
        for i in range(len(haystack) - n + 1)
    )


def _decode_text(pieces: list[bytes]) -> str:
    return b"".join(pieces).decode("utf-8", errors="ignore")
