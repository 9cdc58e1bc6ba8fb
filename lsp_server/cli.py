"""The `groundspec` command line (positions are 1-based, like compilers print them).

Results go to stdout; progress and errors go to stderr. Bad input exits
non-zero with one clear line on stderr, never a traceback.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
from collections.abc import Sequence
from pathlib import Path

import msgspec

from speculator import provision
from speculator.config import BACKENDS, EngineConfig
from speculator.languages import language_id_for_path
from speculator.syntax import MAX_DOCUMENT_CHARS
from speculator.types import (
    SPECULATION_MODES,
    CompletionRequest,
    Engine,
    EngineError,
    RefactorRequest,
)
from speculator.validate import check_text, instruction_problem

from .convert import LineIndex
from .startup import check_serve_flags

log = logging.getLogger(__name__)

# The engine's limit in characters; a UTF-8 character is at most 4 bytes.
MAX_FILE_BYTES = 4 * MAX_DOCUMENT_CHARS


class UsageError(Exception):
    """Bad input from the user: printed as one line, exit code 2."""


def main(argv: Sequence[str] | None = None) -> None:
    parser = build_parser()
    args = parser.parse_args(argv)
    logging.basicConfig(
        level=logging.DEBUG if args.verbose else logging.WARNING,
        stream=sys.stderr,
        format="%(levelname)s %(name)s: %(message)s",
    )
    if args.command in ("complete", "refactor") and not args.verbose:
        # A remote backend logs "cannot reach ..." once for a server's log; here the
        # same words are the command's one-line error, printed below.
        logging.getLogger("speculator.backends.http").setLevel(logging.ERROR)
    try:
        code = args.run(args)
    except (UsageError, EngineError) as exc:
        print(f"groundspec: error: {exc}", file=sys.stderr)
        code = 2
    except KeyboardInterrupt:
        code = 130
    sys.exit(code)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="groundspec", description="Grounded speculative code completion."
    )
    parser.add_argument("-v", "--verbose", action="store_true", help="debug logs on stderr")
    sub = parser.add_subparsers(dest="command", required=True)

    serve = sub.add_parser("serve", help="run the LSP daemon on stdio (or --tcp)")
    serve.add_argument(
        "--tcp", metavar="HOST:PORT", help="serve on TCP; binds 127.0.0.1 unless HOST is given"
    )
    serve.add_argument(
        "--http",
        metavar="[HOST:]PORT",
        help="serve llama-server/OpenAI-compatible HTTP; binds 127.0.0.1 unless HOST is given "
        "(alone: HTTP only; with --tcp or --stdio: beside the LSP server)",
    )
    serve.add_argument("--stdio", action="store_true", help="LSP on stdio (the default)")
    serve.add_argument("--log-file", help="write logs here instead of stderr")
    serve.add_argument("--config", help="config file (default ~/.config/groundspec/config.toml)")
    _engine_flags(serve)
    serve.set_defaults(run=run_serve)

    complete = sub.add_parser("complete", help="complete at PATH:LINE:COL (1-based)")
    complete.add_argument("location", metavar="PATH:LINE:COL")
    complete.add_argument("--max-tokens", type=int, default=64)
    _request_flags(complete)
    complete.set_defaults(run=run_complete)

    refactor = sub.add_parser("refactor", help="rewrite lines A-B of PATH by an instruction")
    refactor.add_argument("path")
    refactor.add_argument("--lines", required=True, metavar="A-B", help="1-based, inclusive")
    refactor.add_argument("--instruction", required=True)
    refactor.add_argument("--max-tokens", type=int, default=1024)
    _request_flags(refactor)
    refactor.set_defaults(run=run_refactor)

    models = sub.add_parser("models", help="assemble, locate or verify the default models")
    models.add_argument("action", choices=["fetch", "path", "verify"])
    models.set_defaults(run=run_models)

    bench = sub.add_parser("bench", help="benchmark speculation modes on the fixed corpus")
    bench.add_argument("--replay", action="store_true", help="keystroke replay benchmark instead")
    bench.add_argument(
        "--workspace", action="store_true", help="multi-file workspace benchmark instead"
    )
    bench.add_argument("--kind", choices=["all", "completion", "refactor"], default="all")
    bench.add_argument("--split", choices=["dev", "test", "all"], default="all")
    bench.add_argument(
        "--modes",
        default="off,auto,lookup,peer",
        help="comma-separated, of off,auto,lookup,draft,both,peer (llama-server)",
    )
    bench.add_argument("--load", action="store_true", help="keep one core busy all run long")
    bench.add_argument(
        "--record-traces", nargs="?", const="", metavar="PATH", help="save off's tokens"
    )
    bench.add_argument("--simulate", action="store_true", help="replay traces, no model time")
    bench.add_argument("--traces", metavar="PATH", help="trace file for --simulate")
    bench.add_argument("--cost-scale", type=float, default=1.0, help="--simulate: cost factor")
    bench.add_argument(
        "--curve",
        metavar="PATH",
        help="--simulate: a verify curve from `python -m bench.verify_cost` (its report) "
        "as the target's cost and the curve drafts are priced by",
    )
    bench.add_argument(
        "--fresh-policy",
        action="store_true",
        help="--simulate: each task starts from the priors, as a new process (a CLI call) does",
    )
    bench.add_argument("--limit", type=int, default=0, help="only the first N tasks of each kind")
    bench.add_argument(
        "--repeat", type=int, default=1, help="run each mode N times per task, keep the median"
    )
    bench.add_argument(
        "--output", help="write the markdown report here (e.g. docs/bench-results.md)"
    )
    bench.add_argument("--json", action="store_true", help="print raw results as JSON")
    _engine_flags(bench)
    bench.set_defaults(run=run_bench)

    demo = sub.add_parser("demo", help="a completion and a refactor on a bundled example")
    _engine_flags(demo)
    demo.set_defaults(run=run_demo)
    return parser


def _engine_flags(p: argparse.ArgumentParser) -> None:
    p.add_argument("--target-model", help="target GGUF (default: the assembled default model)")
    p.add_argument("--draft-model", help="draft GGUF with the target's vocabulary")
    p.add_argument("--no-draft", action="store_true", help="do not load a draft model")
    p.add_argument(
        "--n-gpu-layers", type=int, help="layers to offload (default: all if the build can)"
    )
    p.add_argument("--threads", type=int, help="CPU threads (default: all cores)")
    p.add_argument("--n-ctx", type=int, help="context size in tokens (default 4096)")
    p.add_argument("--fake", action="store_true", help="deterministic fake engine (for tests)")
    p.add_argument(
        "--backend", choices=BACKENDS, help="engine: local (default), llama-server or openai"
    )
    p.add_argument("--backend-url", metavar="URL", help="the remote backend's base URL")


def _request_flags(p: argparse.ArgumentParser) -> None:
    p.add_argument("--speculation", choices=SPECULATION_MODES, default="auto")
    p.add_argument("--temperature", type=float, default=0.0)
    p.add_argument("--json", action="store_true", help="print the JSON-RPC result")
    _engine_flags(p)


def engine_config(args: argparse.Namespace, *, needs_draft: bool = True) -> EngineConfig:
    config = EngineConfig(use_draft=needs_draft and not args.no_draft, fake=args.fake).with_env()
    updates = {
        name: value
        for name, value in (
            ("target_model", args.target_model),
            ("draft_model", args.draft_model),
            ("n_gpu_layers", args.n_gpu_layers),
            ("threads", args.threads),
            ("n_ctx", args.n_ctx),
            ("backend", args.backend),
            ("backend_url", args.backend_url),
        )
        if value is not None
    }
    return msgspec.structs.replace(config, **updates)


def load(args: argparse.Namespace, *, needs_draft: bool = True) -> Engine:
    from speculator.factory import load_engine

    return load_engine(engine_config(args, needs_draft=needs_draft), env=False)


# -- serve ------------------------------------------------------------------------


def run_serve(args: argparse.Namespace) -> int:
    from .options import load_startup_config
    from .server import run_server

    # Engine flags travel as the environment variables EngineConfig reads.
    for flag, env in (
        ("target_model", "GROUNDSPEC_TARGET_MODEL"),
        ("draft_model", "GROUNDSPEC_DRAFT_MODEL"),
        ("n_gpu_layers", "GROUNDSPEC_N_GPU_LAYERS"),
        ("threads", "GROUNDSPEC_THREADS"),
        ("n_ctx", "GROUNDSPEC_N_CTX"),
        ("backend", "GROUNDSPEC_BACKEND"),
        ("backend_url", "GROUNDSPEC_BACKEND_URL"),
    ):
        if getattr(args, flag) is not None:
            os.environ[env] = str(getattr(args, flag))
    try:
        check_serve_flags(args.tcp, args.http, args.log_file)
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    config = load_startup_config(args.config, fake=args.fake, use_draft=not args.no_draft)
    if args.http:
        from .http import run_http, run_with_lsp

        if args.tcp or args.stdio:  # run_with_lsp ends the process
            run_with_lsp(config, args.http, tcp=args.tcp, log_file=args.log_file)
        return run_http(config, args.http, log_file=args.log_file)
    run_server(config, tcp=args.tcp, log_file=args.log_file)
    return 0


# -- complete / refactor ------------------------------------------------------------


def read_source(path_text: str) -> str:
    path = Path(path_text)
    if not path.exists():
        raise UsageError(f"no such file: {path_text}")
    if not path.is_file():
        raise UsageError(f"not a file: {path_text}")
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise UsageError(f"cannot read {path_text}: {exc.strerror or exc}") from None
    if not data.strip():
        raise UsageError(f"{path_text} is empty")
    if len(data) > MAX_FILE_BYTES:
        raise UsageError(f"{path_text} is too large ({len(data)} bytes; limit {MAX_FILE_BYTES})")
    if b"\x00" in data:  # anywhere, as groundspec/complete refuses (UTF-8 has no other NUL)
        raise UsageError(f"{path_text} looks binary (it contains NUL bytes)")
    try:
        text = data.decode("utf-8-sig")  # editors do not show or count a BOM
    except UnicodeDecodeError:
        raise UsageError(f"{path_text} is not UTF-8 text") from None
    try:
        check_text(text)  # the engine's own limits, here before the models load
    except EngineError as exc:
        raise UsageError(f"{path_text}: {exc}") from None
    return text


def parse_location(location: str) -> tuple[str, int, int]:
    """PATH:LINE:COL, 1-based; PATH may itself contain colons."""
    parts = location.rsplit(":", 2)
    if len(parts) != 3 or not _is_number(parts[1]) or not _is_number(parts[2]):
        raise UsageError(f"expected PATH:LINE:COL with numbers, got {location!r}")
    line, col = int(parts[1]), int(parts[2])
    if line < 1 or col < 1:
        raise UsageError("LINE and COL are 1-based")
    return parts[0], line, col


def cursor_offset(text: str, line: int, col: int) -> int:
    """Offset of 1-based LINE:COL (COL counts characters; one past the end is allowed)."""
    index = LineIndex(text)
    if line > index.line_count:
        raise UsageError(f"line {line} is past the end of the file ({index.line_count} lines)")
    row = index.line_text(line - 1)
    if col > len(row) + 1:
        raise UsageError(f"column {col} is past the end of line {line} ({len(row)} characters)")
    return index.starts[line - 1] + col - 1


def line_range(text: str, spec: str) -> tuple[int, int]:
    """Offsets covering whole lines A-B (1-based, inclusive)."""
    a_text, sep, b_text = spec.partition("-")
    if not sep:
        b_text = a_text
    if not _is_number(a_text) or not _is_number(b_text):
        raise UsageError(f"--lines expects A-B with numbers, got {spec!r}")
    a, b = int(a_text), int(b_text)
    index = LineIndex(text)
    # The empty rest after a final line break is no line to select (as wc -l counts).
    ends_with_break = len(text) > 0 and index.line_start(index.line_count - 1) == len(text)
    lines = index.line_count - 1 if ends_with_break else index.line_count
    if a < 1 or b < a:
        raise UsageError(f"invalid line range {spec}: it must be 1-based with A <= B")
    if b > lines:
        raise UsageError(f"line {b} is past the end of the file ({lines} lines)")
    end = index.starts[b] if b < index.line_count else len(text)
    return index.starts[a - 1], end


def _is_number(text: str) -> bool:
    """Plain digits 0-9 (str.isdigit also takes "²", which int() refuses)."""
    return text.isascii() and text.isdigit()


def check_request_flags(args: argparse.Namespace) -> None:
    """The limits groundspec/complete and groundspec/refactor put on the same fields."""
    from .options import MAX_TOKENS

    if not 1 <= args.max_tokens <= MAX_TOKENS:
        raise UsageError(f"--max-tokens must be between 1 and {MAX_TOKENS}, got {args.max_tokens}")
    if not 0.0 <= args.temperature <= 2.0:  # NaN fails too
        raise UsageError(f"--temperature must be between 0 and 2, got {args.temperature}")


def run_complete(args: argparse.Namespace) -> int:
    path, line, col = parse_location(args.location)
    text = read_source(path)
    cursor = cursor_offset(text, line, col)
    check_request_flags(args)
    engine = load(args, needs_draft=args.speculation in ("draft", "both", "auto"))
    request = CompletionRequest(
        text=text,
        cursor=cursor,
        language_id=language_id_for_path(path),
        path=str(Path(path).resolve()),
        max_tokens=args.max_tokens,
        speculation=args.speculation,
        temperature=args.temperature,
    )
    result = engine.complete(request)
    if args.json:
        print(msgspec.json.encode(result).decode())
    else:
        print(result.text)
    return 0


def run_refactor(args: argparse.Namespace) -> int:
    text = read_source(args.path)
    start, end = line_range(text, args.lines)
    if (problem := instruction_problem(args.instruction)) is not None:
        raise UsageError(f"--instruction: {problem}")
    check_request_flags(args)
    engine = load(args, needs_draft=args.speculation in ("draft", "both", "auto"))
    request = RefactorRequest(
        text=text,
        start=start,
        end=end,
        instruction=args.instruction,
        language_id=language_id_for_path(args.path),
        path=str(Path(args.path).resolve()),
        max_tokens=args.max_tokens,
        speculation=args.speculation,
        temperature=args.temperature,
    )
    result = engine.refactor(request)
    if args.json:
        index = LineIndex(text)
        payload = {
            "newText": result.new_text,
            "range": msgspec.to_builtins(_range_dict(index, result.start, result.end)),
            "stats": msgspec.to_builtins(result.stats),
        }
        print(msgspec.json.encode(payload).decode())
    else:
        sys.stdout.write(result.new_text)
    return 0


def _range_dict(index: LineIndex, start: int, end: int) -> dict[str, dict[str, int]]:
    s, e = index.position(start), index.position(end)
    return {
        "start": {"line": s.line, "character": s.character},
        "end": {"line": e.line, "character": e.character},
    }


# -- models -------------------------------------------------------------------------


def run_models(args: argparse.Namespace) -> int:
    if args.action == "path":
        return print_model_paths()
    for spec in provision.DEFAULT_MODELS:
        if args.action == "fetch":
            path = provision.fetch(spec, provision.progress_bar(spec.role))
            print(path)
        else:
            provision.verify(spec, provision.progress_bar(spec.role))
            print(f"{spec.role}: OK {provision.model_path(spec)}")
    return 0


def print_model_paths() -> int:
    """Print where each default model lives; exit 1 if one is missing or the wrong
    size (a cheap check: `verify` hashes), so scripts and `:checkhealth` can tell."""
    code = 0
    for spec in provision.DEFAULT_MODELS:
        path = provision.model_path(spec)
        print(path)
        if not path.is_file():
            print(
                f"the {spec.role} model is missing: run `groundspec models fetch`", file=sys.stderr
            )
            code = 1
        elif path.stat().st_size != spec.size:
            print(
                f"the {spec.role} model at {path} has the wrong size: "
                "run `groundspec models fetch` again",
                file=sys.stderr,
            )
            code = 1
    return code


# -- bench / demo -------------------------------------------------------------------


def run_bench(args: argparse.Namespace) -> int:
    from bench import run

    return run.main(args, engine_config(args))


def run_demo(args: argparse.Namespace) -> int:
    from bench import demo

    return demo.demo(engine_config(args))


if __name__ == "__main__":
    main()
