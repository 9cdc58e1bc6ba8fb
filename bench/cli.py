"""The flags of `groundspec bench` (or `python -m bench` in a checkout).

Kept with the lab it runs: the package's command line (lsp_server/cli_lab.py)
finds this module in a checkout and asks it for its flags and its entry point.
"""

from __future__ import annotations

import argparse

from lsp_server.cli_common import UsageError, engine_config, engine_flags
from speculator.types import SPECULATION_MODES

MODES = (*SPECULATION_MODES, "peer")
COMMAND_TEXT = {
    "help": "benchmark speculation modes on the fixed corpus (in a checkout)",
    "description": "Run every speculation mode on the same tasks (real code, dev and test "
    "splits) one after the other on one warm engine, and report decode speed against `off` "
    "and whether the text is identical. Takes minutes; progress goes to stderr.",
    "examples": [
        "groundspec bench --split test --repeat 3 --output report.md",
        "groundspec bench --load --kind refactor",
        "groundspec bench --replay",
        "groundspec bench --simulate --split dev",
    ],
}


def modes(text: str) -> str:
    """--modes: comma-separated names, checked here so a typo is a usage error."""
    chosen = [m.strip() for m in text.split(",") if m.strip()]
    unknown = [m for m in chosen if m not in MODES]
    if unknown or not chosen:
        raise argparse.ArgumentTypeError(
            f"unknown mode(s) {', '.join(unknown) or '(none)'}: choose from {', '.join(MODES)}"
        )
    return ",".join(chosen)


def add_arguments(bench: argparse.ArgumentParser) -> None:
    what = bench.add_argument_group("what to run")
    what.add_argument("--replay", action="store_true", help="keystroke replay benchmark instead")
    what.add_argument(
        "--workspace", action="store_true", help="multi-file workspace benchmark instead"
    )
    what.add_argument(
        "--next-edit",
        action="store_true",
        help="next-edit tasks (shared/nes) through groundspec/nextEdit instead (bench/next_edit.py)",
    )
    what.add_argument(
        "--kind",
        choices=["all", "completion", "refactor"],
        default="all",
        help="which tasks (default all)",
    )
    what.add_argument(
        "--split", choices=["dev", "test", "all"], default="all", help="which split (default all)"
    )
    what.add_argument(
        "--modes",
        type=modes,
        default="off,auto,lookup,peer",
        help="comma-separated, of off,auto,lookup,draft,both,peer (llama-server); "
        "default off,auto,lookup,peer",
    )
    what.add_argument("--load", action="store_true", help="keep one core busy all run long")
    what.add_argument(
        "--limit", type=int, default=0, metavar="N", help="only the first N tasks of each kind"
    )
    what.add_argument(
        "--repeat",
        type=int,
        default=1,
        metavar="N",
        help="run each mode N times per task, keep the median",
    )
    sim = bench.add_argument_group("recorded traces (no model time)")
    sim.add_argument(
        "--record-traces", nargs="?", const="", metavar="PATH", help="save off's tokens"
    )
    sim.add_argument("--simulate", action="store_true", help="replay traces, no model time")
    sim.add_argument("--traces", metavar="PATH", help="trace file for --simulate")
    sim.add_argument(
        "--cost-scale", type=float, default=1.0, metavar="X", help="--simulate: cost factor"
    )
    sim.add_argument(
        "--curve",
        metavar="PATH",
        help="--simulate: a verify curve from `python -m bench.verify_cost` (its report) "
        "as the target's cost and the curve drafts are priced by",
    )
    sim.add_argument(
        "--fresh-policy",
        action="store_true",
        help="--simulate: each task starts from the priors, as a new process (a CLI call) does",
    )
    out = bench.add_argument_group("output")
    out.add_argument("--output", metavar="PATH", help="write the markdown report here too")
    out.add_argument("--json", action="store_true", help="print raw results as JSON")
    engine_flags(bench)


def run(args: argparse.Namespace) -> int:
    from .run import main

    if args.limit < 0 or args.repeat < 1:
        raise UsageError("--limit must be 0 or more and --repeat 1 or more")
    if args.next_edit:
        from . import next_edit

        return next_edit.run_bench(next_edit.args_from(args))
    return main(args, engine_config(args))
