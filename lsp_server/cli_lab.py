"""`groundspec demo` (in the product) and `groundspec bench` (the lab, in a checkout).

The benchmarks, their corpus and runners live in the repository's bench/ folder,
which the package does not ship: `groundspec bench` runs them from a checkout
and, without one, says where to get them.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from pathlib import Path
from types import ModuleType

from .cli_common import EXIT_FAILED, EXIT_OK, add_command, engine_config, engine_flags

CHECKOUT = Path(__file__).resolve().parents[1]
NO_BENCH = (
    "the benchmarks live in the groundspec repository's bench/ folder, which this install "
    "does not have: run `groundspec bench` (or `python -m bench`) in a checkout of it"
)


def register_demo(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    demo = add_command(
        sub,
        "demo",
        help="a completion and a refactor, plain and speculative, with the speedup; a next edit",
        description="Load the models, write a completion and a refactor of a bundled example "
        "plainly (off) and with grounded speculation (auto), and say how long each took, "
        "the speedup and whether the text is the same; then propose the next edit after a "
        "rename in it.",
        examples=["groundspec demo", "groundspec demo --json", "groundspec demo --threads 2"],
    )
    demo.add_argument(
        "--json", action="store_true", help="print the raw texts and stats as JSON instead"
    )
    engine_flags(demo)
    demo.set_defaults(run=run_demo)


def run_demo(args: argparse.Namespace) -> int:
    from .demo import as_json, load_and_run, summary

    outcomes, next_edit = load_and_run(engine_config(args))
    print(as_json(outcomes, next_edit) if args.json else summary(outcomes, next_edit))
    return EXIT_OK


def bench_module() -> ModuleType | None:
    """bench.cli from this checkout, or None when the install has no bench/."""
    if not (CHECKOUT / "bench" / "cli.py").is_file():
        return None
    if str(CHECKOUT) not in sys.path:
        sys.path.insert(0, str(CHECKOUT))
    return importlib.import_module("bench.cli")


def register_bench(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    lab = bench_module()
    if lab is None:
        bench = sub.add_parser("bench", help="benchmarks (in a checkout of the repository)")
        bench.set_defaults(run=run_without_bench, accepts_extra_args=True)
        return
    bench = add_command(sub, "bench", **lab.COMMAND_TEXT)
    lab.add_arguments(bench)
    bench.set_defaults(run=lab.run)


def run_without_bench(args: argparse.Namespace) -> int:
    print(f"groundspec: error: {NO_BENCH}", file=sys.stderr)
    return EXIT_FAILED
