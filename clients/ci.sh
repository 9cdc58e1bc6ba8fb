#!/usr/bin/env bash
# Build and unit-test the VS Code extension (called by .ci/run).
# The Neovim plugin and the Python client are tested by pytest:
# tests/e2e/test_nvim.py, tests/clients/, tests/unit/test_python_client.py; the built
# extension in code-server by tests/e2e/test_vscode.py (.ci/code-server.sh installs it).
set -euo pipefail
cd "$(dirname "$0")/vscode"
# Node 24 from .ci/code-server.sh when the machine has no npm of its own.
ci_bin="${GROUNDSPEC_CI_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/groundspec-ci}/bin"
if ! command -v npm >/dev/null && [ -x "$ci_bin/npm" ]; then
    PATH="$ci_bin:$PATH"
fi
if ! command -v npm >/dev/null; then
    echo "clients/ci.sh: npm not found (Node.js 20 or newer is needed)" >&2
    exit 1
fi
npm ci --no-audit --no-fund
npm run compile
npm test
