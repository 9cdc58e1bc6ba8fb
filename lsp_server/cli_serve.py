"""`groundspec serve`: the LSP server (stdio or TCP), HTTP, or both on one engine."""

from __future__ import annotations

import argparse
import os
from typing import TYPE_CHECKING

from .auth import check_exposure, resolve_key
from .cli_common import ENGINE_FLAG_ENV, UsageError, add_command, engine_flags
from .startup import check_serve_flags

if TYPE_CHECKING:
    from .options import ServerOptions


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    serve = add_command(
        sub,
        "serve",
        help="run the LSP server on stdio (or --tcp), or an HTTP server (--http)",
        description="Run the language server editors start (stdio by default), and/or "
        "llama-server- and OpenAI-compatible HTTP on the same engine. Addresses bind "
        "127.0.0.1 unless a host is given.",
        examples=[
            "groundspec serve",
            "groundspec serve --tcp 7777 --log-file /tmp/groundspec.log",
            "groundspec serve --http 8012",
            "groundspec serve --http 8012 --stdio",
            "GROUNDSPEC_API_KEY=secret groundspec serve --http 0.0.0.0:8012",
        ],
    )
    serve.add_argument(
        "--tcp",
        metavar="[HOST:]PORT",
        help="serve LSP on TCP instead of stdio; binds 127.0.0.1 unless HOST is given",
    )
    serve.add_argument(
        "--http",
        metavar="[HOST:]PORT",
        help="serve llama-server/OpenAI-compatible HTTP; binds 127.0.0.1 unless HOST is given "
        "(alone: HTTP only; with --tcp or --stdio: beside the LSP server)",
    )
    serve.add_argument(
        "--stdio", action="store_true", help="LSP on stdio (the default; with --http: both)"
    )
    serve.add_argument(
        "--api-key",
        metavar="KEY",
        help="require this key of every client (default: $GROUNDSPEC_API_KEY): HTTP "
        "`Authorization: Bearer KEY` (or X-Api-Key) on all but /health, LSP over "
        "TCP initializationOptions.apiKey; needed to listen beyond loopback",
    )
    serve.add_argument(
        "--insecure-no-key",
        action="store_true",
        help="listen beyond loopback without a key: anyone who can connect gets completions "
        "that quote this workspace's code",
    )
    serve.add_argument(
        "--parallel",
        "-np",
        type=int,
        metavar="N",
        help="HTTP request slots, as llama-server's (default: the option httpParallel, 1): N "
        "requests are accepted and listed in /slots at once; the one engine serves them in turns",
    )
    serve.add_argument(
        "--no-slots",
        action="store_true",
        help="answer /slots with 501 (the option httpSlots off), as llama-server's --no-slots",
    )
    serve.add_argument("--log-file", metavar="PATH", help="write logs here instead of stderr")
    serve.add_argument(
        "--config", metavar="PATH", help="config file (default ~/.config/groundspec/config.toml)"
    )
    engine_flags(serve)
    serve.set_defaults(run=run_serve)


def http_flags(options: ServerOptions, args: argparse.Namespace) -> ServerOptions:
    """The options with the command line's HTTP slot flags over the config file's."""
    import msgspec

    from .options import MAX_PARALLEL

    if args.parallel is not None:
        if not 1 <= args.parallel <= MAX_PARALLEL:
            raise UsageError(f"--parallel takes 1 to {MAX_PARALLEL}, not {args.parallel}")
        options = msgspec.structs.replace(options, http_parallel=args.parallel)
    if args.no_slots:
        options = msgspec.structs.replace(options, http_slots=False)
    return options


def run_serve(args: argparse.Namespace) -> int:
    from .options import load_startup_config
    from .run import serve

    # Engine flags travel as the environment variables EngineConfig reads.
    for flag, env in ENGINE_FLAG_ENV:
        if getattr(args, flag) is not None:
            os.environ[env] = str(getattr(args, flag))
    key = resolve_key(args.api_key)
    try:
        check_serve_flags(args.tcp, args.http, args.log_file)
        check_exposure(tcp=args.tcp, http=args.http, key=key, insecure_no_key=args.insecure_no_key)
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    config = load_startup_config(args.config, fake=args.fake, use_draft=not args.no_draft)
    config.options = http_flags(config.options, args)
    # Returns only when HTTP runs alone; with LSP it ends the process.
    return serve(
        config,
        stdio=args.stdio,
        tcp=args.tcp,
        http=args.http,
        log_file=args.log_file,
        api_key=key,
    )
