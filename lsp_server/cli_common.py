"""What every `groundspec` subcommand shares: exit codes, errors, engine flags.

A subcommand lives in a small `register(sub)` function that builds its parser
with `add_command` (help, description and an example) and sets `run`; cli.py
lists the register functions.
"""

from __future__ import annotations

import argparse
import logging
import textwrap

import msgspec

from speculator.config import BACKENDS, EngineConfig
from speculator.types import SPECULATION_MODES, Engine

log = logging.getLogger(__name__)

# The exit codes, the same for every subcommand (and printed by `groundspec --help`).
EXIT_OK = 0
EXIT_FAILED = 1  # could not do it: a model, the engine, a remote server, a file
EXIT_USAGE = 2  # the command line is wrong (argparse exits 2 too)
EXIT_CODES = (
    "exit codes: 0 done; 1 could not do it (a model, the engine, a remote server, a file); "
    "2 usage error; 130 interrupted"
)
WRAPPED_EXIT_CODES = textwrap.fill(EXIT_CODES, width=79)


class UsageError(Exception):
    """Bad input on the command line: one line on stderr, exit code 2."""


class CannotError(Exception):
    """A well-formed request that could not be done (a file it names): exit code 1."""


def add_command(
    sub: argparse._SubParsersAction[argparse.ArgumentParser],
    name: str,
    *,
    help: str,
    description: str,
    examples: list[str],
) -> argparse.ArgumentParser:
    """A subcommand whose --help ends with examples and the exit codes."""
    epilog = "\n".join(["examples:", *(f"  {line}" for line in examples), "", WRAPPED_EXIT_CODES])
    parser = sub.add_parser(
        name,
        help=help,
        description=textwrap.fill(description, width=79),
        epilog=epilog,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    # Also after the subcommand; SUPPRESS keeps a `-v` given before it.
    parser.add_argument(
        "-v",
        "--verbose",
        action="store_true",
        default=argparse.SUPPRESS,
        help="debug logs on stderr",
    )
    return parser


def engine_flags(p: argparse.ArgumentParser) -> None:
    """The engine's flags: which models, where, on how much hardware."""
    g = p.add_argument_group("engine")
    g.add_argument(
        "--target-model", metavar="GGUF", help="target GGUF (default: the assembled default model)"
    )
    g.add_argument("--draft-model", metavar="GGUF", help="draft GGUF with the target's vocabulary")
    g.add_argument("--no-draft", action="store_true", help="do not load a draft model")
    g.add_argument(
        "--n-gpu-layers",
        type=int,
        metavar="N",
        help="layers to offload to the GPU (default: all when the build can)",
    )
    g.add_argument("--threads", type=int, metavar="N", help="CPU threads (default: all cores)")
    g.add_argument("--n-ctx", type=int, metavar="N", help="context size in tokens (default 4096)")
    g.add_argument(
        "--backend",
        choices=BACKENDS,
        help="where the model runs: local (in-process, the default), or a shared "
        "llama-server or OpenAI-compatible server",
    )
    g.add_argument(
        "--backend-url", metavar="URL", help="the shared server's base URL (with --backend)"
    )
    # The deterministic fake engine, for protocol tests: not for users, so not shown.
    g.add_argument("--fake", action="store_true", help=argparse.SUPPRESS)


def request_flags(p: argparse.ArgumentParser, *, max_tokens: int) -> None:
    """The flags of one request (complete, refactor), then the engine's."""
    p.add_argument(
        "--max-tokens",
        type=int,
        default=max_tokens,
        metavar="N",
        help=f"the most tokens to generate (default {max_tokens}, at most 8192)",
    )
    p.add_argument(
        "--speculation",
        choices=SPECULATION_MODES,
        default="auto",
        help="how to draft: auto (the default: lookup, sized by measured cost), off (plain "
        "decoding), lookup (from the prompt and the file), draft (the draft model), both",
    )
    p.add_argument(
        "--temperature",
        type=float,
        default=0.0,
        metavar="T",
        help="0 (the default) is greedy and exact; up to 2 samples, still lossless",
    )
    p.add_argument("--json", action="store_true", help="print the JSON-RPC result (text and stats)")
    engine_flags(p)


# Engine flags -> the environment variables EngineConfig reads (serve passes them on).
ENGINE_FLAG_ENV = (
    ("target_model", "GROUNDSPEC_TARGET_MODEL"),
    ("draft_model", "GROUNDSPEC_DRAFT_MODEL"),
    ("n_gpu_layers", "GROUNDSPEC_N_GPU_LAYERS"),
    ("threads", "GROUNDSPEC_THREADS"),
    ("n_ctx", "GROUNDSPEC_N_CTX"),
    ("backend", "GROUNDSPEC_BACKEND"),
    ("backend_url", "GROUNDSPEC_BACKEND_URL"),
)


def engine_config(args: argparse.Namespace, *, needs_draft: bool = True) -> EngineConfig:
    """The environment's EngineConfig with the command line's engine flags on top."""
    config = EngineConfig(use_draft=needs_draft and not args.no_draft, fake=args.fake).with_env()
    updates = {
        name: getattr(args, name)
        for name, _ in ENGINE_FLAG_ENV
        if getattr(args, name, None) is not None
    }
    return msgspec.structs.replace(config, **updates)


def keep_kv_slots(engine: Engine) -> None:
    """Save the engine's KV slots for the next call: a script that asks about the
    same file again (another process) restores its prompt in milliseconds instead
    of evaluating it (seconds per thousand tokens on a CPU)."""
    try:
        engine.persist()
    except Exception as exc:  # the answer stands; the next call evaluates it again
        log.warning("could not save the KV slots: %s", exc)
