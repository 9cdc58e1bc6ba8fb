"""A KV-cached token sequence for one model (one llama.cpp context, sequence 0).

`cells[i]` is the token whose KV sits at position i. A new prompt reuses:
1. the longest common prefix with `cells` (exact), and
2. with `shift_reuse`, whole prompt segments that are still in the cache at
   another position (e.g. the FIM suffix after the user typed in the prefix):
   their KV is moved with `llama_memory_seq_add`, as llama.cpp's `--cache-reuse`
   does. That is approximate: the moved KV was computed with the old text in
   front of it (see docs/kv-reuse.md for what it does to quality).
Everything else is evaluated in batches with logits only where needed. A
rejected draft is a trim.
"""

from __future__ import annotations

import ctypes
import logging
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import llama_cpp
import numpy as np
import numpy.typing as npt

from .threads import ThreadPolicy
from .tokens import common_prefix
from .types import Cancelled, CancelToken, EngineError

log = logging.getLogger(__name__)

Logits = npt.NDArray[np.float32]

# A cancellable sync evaluates the prompt in batches of this many tokens and
# checks its token between them. On the CPU backend the AbortFlag stops a batch
# at once; elsewhere a cancel waits for the batch (~1.5 s on the 2-core machine).
# Measured (1.5B, 640 tokens, 2 cores): 128-token batches run at 81-87 tok/s,
# 64 at 77-78, 32 at 60-69.
CANCEL_CHECK_TOKENS = 128

# A prompt range this long is evaluated with its last token in a batch of its own
# (_prompt_batches).
LAST_TOKEN_ALONE = 16

# What llama_decode returns when its abort callback stopped it.
DECODE_ABORTED = 2


class AbortFlag:
    """Stops a running llama_decode between two graph nodes once raised.

    llama.cpp's CPU backend calls the context's abort callback after every graph
    node, on its compute thread. The callback is libc's `strlen` over a two-byte
    buffer: 0 while running, 1 once raised. A Python callback would take the GIL
    about a thousand times a step, and wait on any Python thread that holds it.
    Backends that do not poll the callback (GPUs) finish the batch instead."""

    def __init__(self, ctx: llama_cpp.llama_context_p) -> None:
        self._buffer = ctypes.create_string_buffer(2)
        self._callback = _libc_strlen()  # kept alive as long as the context
        if self._callback is not None:
            data = ctypes.cast(self._buffer, ctypes.c_void_p)
            llama_cpp.llama_set_abort_callback(ctx, self._callback, data)

    def raise_(self) -> None:
        self._buffer[0] = b"\x01"

    def lower(self) -> None:
        self._buffer[0] = b"\x00"

    @property
    def raised(self) -> bool:
        return self._buffer[0] != b"\x00"


def _prompt_batches(
    start: int, end: int, step: int, last_alone: bool = False
) -> list[tuple[int, int]]:
    """The [lo, hi) batches that evaluate prompt[start:end], at most `step` each.

    With `last_alone`, a range of LAST_TOKEN_ALONE tokens or more ends with its last
    token alone. Its logits give the first generated token, and a prompt the cache
    already holds evaluates only that token, alone (Session.sync). A row rounds
    differently in a batch than alone (docs/exactness.md), so without this the same
    request could start differently cold and warm: `off` and `auto` on one prompt
    did, on a near-tie (an AMD EPYC Zen 3 VM, 2026-12-01). Short ranges (a
    keystroke's few tokens) stay one batch: a step more per keystroke would cost
    typing latency."""
    body_end = end - 1 if last_alone and end - start >= LAST_TOKEN_ALONE else end
    batches = [(lo, min(body_end, lo + step)) for lo in range(start, body_end, step)]
    if body_end < end:
        batches.append((body_end, end))
    return batches


def segments_within(segments: Sequence[Sequence[int]], n: int) -> list[tuple[int, tuple[int, ...]]]:
    """(position, tokens) of each prompt segment that ends within the first n cells."""
    kept: list[tuple[int, tuple[int, ...]]] = []
    pos = 0
    for seg in segments:
        if pos + len(seg) > n:
            break
        kept.append((pos, tuple(seg)))
        pos += len(seg)
    return kept


def _libc_strlen() -> Any:
    """libc's strlen as a ggml abort callback (size_t 0/1 read as a bool), or None."""
    try:
        address = ctypes.cast(ctypes.CDLL(None).strlen, ctypes.c_void_p).value
    except (OSError, AttributeError):
        return None
    return None if address is None else llama_cpp.ggml_abort_callback(address)


class SyncResult:
    __slots__ = ("prompt_tokens", "reused", "evaluated", "shifted", "ms")

    def __init__(self, prompt_tokens: int, reused: int, evaluated: int, shifted: int, ms: float):
        self.prompt_tokens = prompt_tokens
        self.reused = reused
        self.evaluated = evaluated
        self.shifted = shifted
        self.ms = ms


class Session:
    def __init__(
        self,
        model: llama_cpp.llama_model_p,
        n_ctx: int,
        threads: int,
        n_batch: int = 512,
        thread_policy: ThreadPolicy | None = None,
    ):
        params = llama_cpp.llama_context_default_params()
        params.n_ctx = n_ctx
        params.n_batch = n_batch
        params.n_ubatch = n_batch
        params.n_threads = threads
        params.n_threads_batch = threads
        params.no_perf = True
        # Sequence 1 parks reused chunks while the text in front of them is
        # evaluated; a unified cache makes that a relabel, not a copy.
        params.n_seq_max = 2
        params.kv_unified = True
        ctx = llama_cpp.llama_init_from_model(model, params)
        if ctx is None:
            raise EngineError(f"could not create a llama.cpp context of {n_ctx} tokens")
        self.ctx = ctx
        self.abort = AbortFlag(ctx)
        self.memory = llama_cpp.llama_get_memory(ctx)
        self.n_ctx = n_ctx
        self.n_batch = n_batch
        self.n_vocab = llama_cpp.llama_vocab_n_tokens(llama_cpp.llama_model_get_vocab(model))
        self.batch = llama_cpp.llama_batch_init(n_batch, 0, 1)
        self.cells: list[int] = []
        self.segments: list[tuple[int, tuple[int, ...]]] = []  # (position, tokens) of last sync
        self.can_shift = bool(llama_cpp.llama_memory_can_shift(self.memory))
        self.threads = threads
        self.thread_policy = thread_policy

    def close(self) -> None:
        if self.ctx is not None:
            llama_cpp.llama_batch_free(self.batch)
            llama_cpp.llama_free(self.ctx)
            self.ctx = None

    # -- prompt ---------------------------------------------------------------

    def sync(
        self,
        segments: Sequence[Sequence[int]],
        shift_reuse: bool = False,
        cancel: CancelToken | None = None,
    ) -> tuple[SyncResult, Logits]:
        """Make the cache hold exactly the concatenated segments; return the last logits.

        With `cancel`, the prompt is evaluated in small batches and the token is
        checked between them; on Cancelled the cache keeps the evaluated part."""
        started = time.perf_counter()
        prompt = [t for seg in segments for t in seg]
        if not prompt:
            raise EngineError("empty prompt")
        if len(prompt) >= self.n_ctx:
            raise EngineError(
                f"prompt of {len(prompt)} tokens does not fit the context ({self.n_ctx})"
            )
        # The last token is always evaluated: its logits are the ones we need.
        keep = min(common_prefix(self.cells, prompt), len(prompt) - 1)
        moves = self._plan_moves(segments, keep) if shift_reuse and self.can_shift else []
        try:
            logits = self._rebuild(prompt, keep, moves, cancel)
        except Cancelled:
            # _eval_range left the cache holding prompt[:n] exactly: the segments
            # in it are still there to be moved by the next sync (a warm-up
            # cancelled at its last token keeps the FIM suffix reusable).
            self.segments = segments_within(segments, len(self.cells))
            raise
        except BaseException:
            # The cache may hold anything past `keep` now: forget it, so the
            # next prefix reuse never trusts KV cells that are gone.
            self._forget_after(keep)
            raise
        self.cells = list(prompt)
        self.segments = segments_within(segments, len(prompt))
        shifted = sum(length for _o, _n, length in moves)
        evaluated = len(prompt) - keep - shifted
        ms = (time.perf_counter() - started) * 1000
        return SyncResult(len(prompt), keep + shifted, evaluated, shifted, ms), logits

    def pending(self, segments: Sequence[Sequence[int]], shift_reuse: bool = False) -> int:
        """How many tokens sync(segments) would evaluate (the rest is reused)."""
        prompt = [t for seg in segments for t in seg]
        keep = min(common_prefix(self.cells, prompt), max(len(prompt) - 1, 0))
        moves = self._plan_moves(segments, keep) if shift_reuse and self.can_shift else []
        return len(prompt) - keep - sum(length for _o, _n, length in moves)

    def _plan_moves(
        self, segments: Sequence[Sequence[int]], keep: int
    ) -> list[tuple[int, int, int]]:
        """(old position, new position, length) of old segments reusable past `keep`."""
        old_by_tokens: dict[tuple[int, ...], list[int]] = {}
        for pos, toks in self.segments:
            if pos >= keep and len(toks) >= 4 and self.cells[pos : pos + len(toks)] == list(toks):
                old_by_tokens.setdefault(toks, []).append(pos)
        moves: list[tuple[int, int, int]] = []
        new_pos = 0
        last_old_end = keep
        for i, seg in enumerate(segments):
            toks = tuple(seg)
            is_last = i == len(segments) - 1
            if new_pos >= keep and not is_last:
                for old in old_by_tokens.get(toks, []):
                    if old >= last_old_end:  # keep the relative order of moved chunks
                        moves.append((old, new_pos, len(toks)))
                        last_old_end = old + len(toks)
                        break
            new_pos += len(seg)
        return moves

    def _rebuild(
        self,
        prompt: list[int],
        keep: int,
        moves: list[tuple[int, int, int]],
        cancel: CancelToken | None,
    ) -> Logits:
        """Keep the prefix, move the reused chunks, evaluate everything else.

        llama.cpp only accepts a batch that continues a sequence right after
        its last position, so each moved chunk waits in sequence 1 until the
        tokens in front of it have been evaluated in sequence 0.
        """
        for old, _new, length in moves:
            llama_cpp.llama_memory_seq_cp(self.memory, 0, 1, old, old + length)
        self._rm(0, keep, -1)
        # Shift left-movers left to right, then right-movers right to left, so a
        # chunk never lands on cells of a chunk that has not moved yet.
        left = [m for m in moves if m[1] < m[0]]
        right = [m for m in moves if m[1] > m[0]][::-1]
        for old, new, length in left + right:
            llama_cpp.llama_memory_seq_add(self.memory, 1, old, old + length, new - old)
        pos = keep
        for _old, new, length in moves:
            self._eval_range(prompt, pos, new, cancel)
            llama_cpp.llama_memory_seq_cp(self.memory, 1, 0, new, new + length)
            pos = new + length
        if moves:
            self._rm(1, -1, -1)
        return self._eval_range(prompt, pos, len(prompt), cancel, last_alone=True)

    def _rm(self, seq: int, p0: int, p1: int) -> None:
        if p1 != -1 and p1 <= p0:
            return
        if not llama_cpp.llama_memory_seq_rm(self.memory, seq, p0, p1):
            raise EngineError("llama.cpp could not trim the KV cache")

    def _eval_range(
        self,
        prompt: list[int],
        start: int,
        end: int,
        cancel: CancelToken | None,
        last_alone: bool = False,
    ) -> Logits:
        """Evaluate prompt[start:end] at its positions; logits of its last token,
        which `last_alone` evaluates in a batch of its own (_prompt_batches)."""
        step = self.n_batch if cancel is None else CANCEL_CHECK_TOKENS
        with self._abortable(cancel):
            for lo, hi in _prompt_batches(start, end, step, last_alone):
                self._fill(prompt[lo:hi], list(range(lo, hi)), [False] * (hi - lo - 1) + [True])
                if (cancel is not None and cancel.cancelled) or not self._decode(abortable=True):
                    # llama.cpp dropped the aborted batch's cells: prompt[:lo] is left
                    self._keep_evaluated(prompt, lo)
                    raise Cancelled()
        return self._logits(-1)  # -1: the last row that asked for logits

    @contextmanager
    def _abortable(self, cancel: CancelToken | None) -> Iterator[None]:
        """While inside, cancelling `cancel` aborts the llama_decode in progress."""
        if cancel is None:
            yield
            return
        unwatch = cancel.on_cancel(self.abort.raise_)
        try:
            yield
        finally:
            unwatch()
            self.abort.lower()

    def _keep_evaluated(self, prompt: list[int], n: int) -> None:
        """After a cancel: the cache holds prompt[:n] exactly, nothing else."""
        self._rm(0, n, -1)
        self._rm(1, -1, -1)
        self.cells = list(prompt[:n])
        self.segments = []

    def _forget_after(self, n: int) -> None:
        """After a failed evaluation: keep the first n cells, or nothing if even
        trimming fails."""
        self.segments = []
        try:
            self._rm(0, n, -1)
            self._rm(1, -1, -1)
            del self.cells[n:]
        except EngineError:
            llama_cpp.llama_memory_clear(self.memory, True)
            self.cells = []

    # -- decoding -------------------------------------------------------------

    def append(self, tokens: Sequence[int], first_row: int = 0) -> Logits:
        """Evaluate tokens after the cache; logits for tokens[first_row:] (rows x
        vocab): the rows before are context whose output nobody reads.

        The result is a view valid until the next decode on this session."""
        n0 = len(self.cells)
        if n0 + len(tokens) >= self.n_ctx:
            raise EngineError("the context is full")
        if len(tokens) > self.n_batch:
            raise EngineError("too many tokens for one batch")
        wanted = [i >= first_row for i in range(len(tokens))]
        self._fill(list(tokens), list(range(n0, n0 + len(tokens))), wanted)
        try:
            self._decode()
        except EngineError:
            self._forget_after(n0)  # a failed batch may have left some of its cells
            raise
        self.cells.extend(tokens)
        # A view on llama.cpp's buffer (no copy): valid until the next decode.
        ptr = ctypes.cast(llama_cpp.llama_get_logits(self.ctx), ctypes.POINTER(ctypes.c_float))
        return np.ctypeslib.as_array(ptr, shape=(len(tokens) - first_row, self.n_vocab))

    def room(self) -> int:
        """How many more tokens the context can take."""
        return self.n_ctx - 1 - len(self.cells)

    def trim(self, n: int) -> None:
        """Keep the first n cells (a rejected draft is a trim)."""
        if n < len(self.cells):
            self._rm(0, n, -1)
            del self.cells[n:]

    # -- saved state (per-document slots, speculator/slots.py) -----------------

    def save_state(self, spare: npt.NDArray[np.uint8] | None = None) -> memoryview:
        """Sequence 0's KV in llama.cpp's own format: a copy of 20-50 MB, written
        into `spare` (a buffer of a state restored before) when it fits.

        Into a buffer as it is: a zeroed ctypes array and a `bytes` copy of it
        cost 30 ms each for a 43 MB state on the 2-core machine, ten times
        llama.cpp's own copy; and a new buffer's first write costs 20-100 ms of
        page faults there, a reused one's 6 ms (issue 63: a file switch)."""
        size = llama_cpp.llama_state_seq_get_size(self.ctx, 0)
        buf = state_buffer(size, spare)
        written = llama_cpp.llama_state_seq_get_data(self.ctx, _uint8_ptr(buf), size, 0)
        return buf.data[:written]

    def restore_state(
        self,
        data: bytes | memoryview,
        cells: Sequence[int],
        segments: Sequence[tuple[int, tuple[int, ...]]],
    ) -> bool:
        """Replace the cache with a saved state; False (and an empty cache) if
        llama.cpp refuses it or it does not hold exactly `cells`."""
        llama_cpp.llama_memory_clear(self.memory, True)
        self.cells, self.segments = [], []
        if not data or len(cells) >= self.n_ctx:
            return False
        # Read in place (llama.cpp only reads it): copying it first cost 40 ms.
        buf = np.frombuffer(data, dtype=np.uint8)
        read = llama_cpp.llama_state_seq_set_data(self.ctx, _uint8_ptr(buf), len(data), 0)
        if (
            read != len(data)
            or llama_cpp.llama_memory_seq_pos_max(self.memory, 0) != len(cells) - 1
        ):
            log.warning("a saved KV state did not restore (%d of %d bytes read)", read, len(data))
            llama_cpp.llama_memory_clear(self.memory, True)
            return False
        self.cells = list(cells)
        self.segments = list(segments)
        return True

    # -- low level ------------------------------------------------------------

    def _fill(self, tokens: list[int], positions: list[int], want_logits: list[bool]) -> None:
        """Load the batch: sequence 0, the given positions, logits where asked."""
        b = self.batch
        b.n_tokens = len(tokens)
        for i, (tok, pos, want) in enumerate(zip(tokens, positions, want_logits, strict=True)):
            b.token[i] = tok
            b.pos[i] = pos
            b.n_seq_id[i] = 1
            b.seq_id[i][0] = 0
            b.logits[i] = want

    def _decode(self, abortable: bool = False) -> bool:
        """Run the batch; False if the abort flag stopped it (llama.cpp then drops
        the batch's cells). Only an `abortable` batch may be stopped."""
        if self.thread_policy is not None:
            threads = self.thread_policy.current()
            if threads != self.threads:
                llama_cpp.llama_set_n_threads(self.ctx, threads, threads)
                self.threads = threads
        rc = llama_cpp.llama_decode(self.ctx, self.batch)
        if rc == DECODE_ABORTED and abortable and self.abort.raised:
            return False
        if rc != 0:
            raise EngineError(f"llama_decode failed with code {rc}")
        return True

    def _logits(self, row: int) -> Logits:
        ptr = llama_cpp.llama_get_logits_ith(self.ctx, row)
        arr = np.ctypeslib.as_array(
            ctypes.cast(ptr, ctypes.POINTER(ctypes.c_float)), shape=(self.n_vocab,)
        )
        return arr.copy()


# A new state buffer has this much more room (a quarter): the document's next
# save, some tokens longer, or a somewhat longer document's, fits in it.
STATE_HEADROOM = 4


def state_buffer(size: int, spare: npt.NDArray[np.uint8] | None) -> npt.NDArray[np.uint8]:
    """A buffer for a state of `size` bytes: `spare` when it fits and wastes no
    more than twice the headroom, else a new one (uninitialized: llama.cpp
    writes it) with headroom."""
    if spare is not None and size <= spare.nbytes <= size + 2 * (size // STATE_HEADROOM):
        return spare
    return np.empty(size + size // STATE_HEADROOM, dtype=np.uint8)


def _uint8_ptr(array: npt.NDArray[np.uint8]) -> Any:
    """A pointer to the array's bytes, no copy (the array must outlive the call)."""
    return array.ctypes.data_as(ctypes.POINTER(ctypes.c_uint8))
