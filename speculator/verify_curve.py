"""This machine's verify curve: what a batch of k rows costs against a 1-row step.

The controller prices a draft by such a curve, and the curves tabled in
controller.py were measured on one CPU (AMD EPYC, llama.cpp's repacked Q4_K
kernels). Other CPUs differ a lot: on an Intel Xeon VM (AVX-512, AMX off) an
8-row batch on one thread costs 3.5 steps where the table says 9.1, and a
4-row batch is cheaper than a 3-row one. Priced by the table, the controller
declines drafts there that would pay, and it never learns better: it only
times the batch sizes it runs. So a CPU build measures the curve once per
machine, model, llama.cpp build and thread count, and keeps it on disk
(bench/archive/benchmarks.md, "Each CPU its own verify curve").

Each batch is timed right after a 1-row step on the same context and priced as
the ratio of the two, so a load that comes and goes between sizes does not
bend the curve; the median of a few rounds is kept.
"""

from __future__ import annotations

import functools
import hashlib
import logging
import os
import platform
import statistics
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Protocol

import msgspec

from .threads import ThreadPolicy
from .types import EngineError

log = logging.getLogger(__name__)

# Batch sizes timed: the controller's verify batches (a draft of k tokens is a
# batch of k + 1 rows, controller.DRAFT_SIZES); sizes between are interpolated.
# 24 and 48 rows are timed too: on one EPYC thread 24 rows cost 17.2 steps where
# the line between 16 and 32 says 15.0, and a draft priced 13% low is chosen too often.
# And the row just below 16, 32, 48 and 64: ggml's CPU kernels run those sizes much
# more cheaply than the ones below them (one EPYC thread: 15 rows 10.6 steps, 16 rows
# 8.5), so a draft that ends off that grid is verified in the larger batch where this
# curve says it costs less (Controller.verify_rows).
CURVE_ROWS = (2, 3, 4, 8, 15, 16, 24, 31, 32, 47, 48, 63, 64)
# Tokens in the cache before each batch (the cost of a batch grows a little
# with the context; the curve's shape hardly does).
CONTEXT_TOKENS = 128
# Each size timed this many times (the median ratio is kept). One was not enough:
# a 1-row step descheduled once (a step is 45 ms, a time slice about as long)
# stored an EPYC thread's 32-row batch as 14.6 steps where it costs 19.1, and
# drafts of 23 to 47 tokens, priced 25% low, were chosen under load where they
# lose (bench/archive/benchmarks.md, "A verify curve timed once").
ROUNDS = 3
# A ratio outside [1, SLACK * rows] is a timing gone wrong (a descheduled
# step), not the machine: clamp it rather than price drafts by it.
SLACK = 1.5
# 2: three rounds, and 24 and 48 rows; 3: and 15, 31, 47 and 63 rows. An older
# curve is measured again.
FORMAT_VERSION = 3

Clock = Callable[[], float]


class TimedSession(Protocol):
    """What measuring needs of a speculator.session.Session."""

    @property
    def cells(self) -> list[int]: ...

    def append(self, tokens: Sequence[int]) -> object: ...

    def trim(self, n: int) -> None: ...


def machine_shapes(
    session: TimedSession,
    policy: ThreadPolicy,
    tokenize: Callable[[str], list[int]],
    model_fingerprint: str,
    store: CurveStore,
    clock: Clock = time.perf_counter,
) -> dict[int, dict[int, float]]:
    """The curves of the thread counts the engine runs on (all it may use, and one
    under load), {threads: shape}: from the store, else measured and stored.

    A curve that cannot be measured now is left out (the controller then keeps
    its table): the many-thread one while other processes keep cores busy, and
    any where the context is too small."""
    keys = {threads: curve_key(model_fingerprint, threads) for threads in {policy.max_threads, 1}}
    shapes = {t: shape for t, key in keys.items() if (shape := store.load(key)) is not None}
    missing = [t for t in sorted(keys) if t not in shapes]
    if any(t > 1 for t in missing) and not policy.free_for(max(missing)):
        log.info("not measuring the %d-thread verify curve: cores are busy", max(missing))
        missing = [t for t in missing if t == 1]
    if not missing:
        return shapes
    log.info("timing this machine's verify batches on %s thread(s), once", missing)
    try:
        tokens = tokenize(Path(__file__).read_text())
        measured = measure_shapes(session, policy, tokens, missing, clock=clock)
    except (ValueError, EngineError) as exc:
        log.warning("the verify curve was not measured (the tabled one is used): %s", exc)
        return shapes
    for threads, shape in measured.items():
        store.save(keys[threads], shape)
    return shapes | measured


def measure_shapes(
    session: TimedSession,
    policy: ThreadPolicy,
    tokens: Sequence[int],
    thread_counts: Sequence[int],
    rows: Sequence[int] = CURVE_ROWS,
    rounds: int = ROUNDS,
    clock: Clock = time.perf_counter,
) -> dict[int, dict[int, float]]:
    """Each batch size's cost as a multiple of a 1-row step, {threads: {1: 1.0,
    k: ratio}}, on each thread count.

    `tokens` fills the context first (CONTEXT_TOKENS of them) and then the
    batches; the session is left empty."""
    context, filler = list(tokens[:CONTEXT_TOKENS]), list(tokens[CONTEXT_TOKENS:])
    if len(filler) < max(rows):
        raise ValueError(f"{len(tokens)} tokens: too few to time a {max(rows)}-row batch")
    session.trim(0)
    try:
        session.append(context)
        shapes = {}
        for threads in thread_counts:
            with policy.pinned(threads):
                shapes[threads] = _shape(session, filler, rows, rounds, clock)
        return shapes
    finally:
        session.trim(0)


def _shape(
    session: TimedSession, filler: list[int], rows: Sequence[int], rounds: int, clock: Clock
) -> dict[int, float]:
    base = len(session.cells)
    ratios: dict[int, list[float]] = {k: [] for k in rows}
    for _ in range(rounds):
        for k in rows:
            step = _timed(session, filler[:1], base, clock)
            batch = _timed(session, filler[:k], base, clock)
            ratios[k].append(batch / step if step > 0 else float(k))
    shape = {1: 1.0}
    for k, measured in ratios.items():
        shape[k] = min(max(statistics.median(measured), 1.0), SLACK * k)
    return shape


def _timed(session: TimedSession, tokens: list[int], base: int, clock: Clock) -> float:
    started = clock()
    session.append(tokens)
    elapsed = clock() - started
    session.trim(base)
    return elapsed


class CurveFile(msgspec.Struct):
    version: int
    key: str
    shape: dict[int, float]


class CurveStore:
    """Measured curves on disk, one file per machine, model, build and thread count."""

    def __init__(self, folder: Path):
        self.folder = folder

    def load(self, key: str) -> dict[int, float] | None:
        path = self._path(key)
        try:
            saved = msgspec.json.decode(path.read_bytes(), type=CurveFile)
        except FileNotFoundError:
            return None
        except (OSError, msgspec.DecodeError, msgspec.ValidationError) as exc:
            log.warning("ignoring the verify curve %s (measuring again): %s", path, exc)
            return None
        if saved.version != FORMAT_VERSION:
            log.info("measuring the verify curve again: %s is of an older format", path)
            return None
        if saved.key != key or not _plausible(saved.shape):
            log.warning("ignoring the verify curve %s (measuring again): not this one", path)
            return None
        return saved.shape

    def save(self, key: str, shape: dict[int, float]) -> None:
        path = self._path(key)
        try:
            self.folder.mkdir(parents=True, exist_ok=True)
            partial = path.with_suffix(".part")
            partial.write_bytes(msgspec.json.encode(CurveFile(FORMAT_VERSION, key, shape)))
            os.replace(partial, path)
        except OSError as exc:
            log.warning("the verify curve is not kept (measured again next start): %s", exc)

    def _path(self, key: str) -> Path:
        return self.folder / f"{key}.json"


def _plausible(shape: dict[int, float]) -> bool:
    return shape.get(1) == 1.0 and all(1.0 <= r <= SLACK * k for k, r in shape.items())


def curve_key(model_fingerprint: str, threads: int) -> str:
    """Names what the curve depends on: the weights, llama.cpp's build, the CPU
    and the thread count."""
    import llama_cpp

    parts = [
        model_fingerprint,
        llama_cpp.__version__,
        llama_cpp.llama_print_system_info().decode(errors="replace"),  # the kernels built
        _loaded_cpu_kernels(),  # a patched kernel (.ci/patches) prices batches anew
        cpu_name(),
        str(os.cpu_count()),
        str(threads),
        f"context {CONTEXT_TOKENS}",
    ]
    return hashlib.sha256("|".join(parts).encode()).hexdigest()[:32]


def cpu_kernels_fingerprint(lib_dir: Path) -> str:
    """A digest of ggml's CPU backend library in `lib_dir`, the code a batch's cost
    comes from.

    The version and the system info stay the same when a build carries other kernels
    (our VNNI patch, for one), so the library's bytes name them."""
    digest = hashlib.sha256()
    for path in sorted({p.resolve() for p in lib_dir.glob("*ggml-cpu*")}):
        try:
            digest.update(path.read_bytes())
        except OSError:
            continue  # an unreadable copy: the other parts of the key still apply
    return digest.hexdigest()[:16]


@functools.cache
def _loaded_cpu_kernels() -> str:
    """The fingerprint of the library llama-cpp-python loaded (about 1.5 MB, hashed
    once per process)."""
    from llama_cpp import llama_cpp as bindings

    default = Path(bindings.__file__).parent / "lib"
    return cpu_kernels_fingerprint(Path(getattr(bindings, "_base_path", default)))


def cpu_name() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as info:
            for line in info:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()
