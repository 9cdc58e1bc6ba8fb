"""`python -m bench ...` is `groundspec bench ...` (flags: bench/cli.py)."""

import sys

from lsp_server.cli import main

main(["bench", *sys.argv[1:]])
