"""`python -m lsp_server [--tcp HOST:PORT] [--log-file F] [--config F] [--fake]`."""

from __future__ import annotations

import argparse

from .options import load_startup_config
from .run import run_lsp
from .startup import check_serve_flags


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m lsp_server", description=__doc__)
    parser.add_argument("--tcp", metavar="HOST:PORT", help="serve on TCP (loopback by default)")
    parser.add_argument("--log-file", help="log here instead of stderr")
    parser.add_argument("--config", help="config file (default ~/.config/groundspec/config.toml)")
    parser.add_argument("--fake", action="store_true", help="use the deterministic fake engine")
    args = parser.parse_args(argv)
    try:
        check_serve_flags(args.tcp, None, args.log_file)
    except ValueError as exc:
        parser.error(str(exc))
    config = load_startup_config(args.config, fake=args.fake)
    run_lsp(config, tcp=args.tcp, log_file=args.log_file)


if __name__ == "__main__":
    main()
