#!/usr/bin/env bash
# Build and unit-test the VS Code extension (called by .ci/run).
# The Neovim plugin and the Python client are tested by pytest:
# tests/e2e/test_nvim.py, tests/clients/, tests/unit/test_python_client.py.
set -euo pipefail
cd "$(dirname "$0")/vscode"
if ! command -v npm >/dev/null; then
    echo "clients/ci.sh: npm not found (Node.js 20 or newer is needed)" >&2
    exit 1
fi
npm ci --no-audit --no-fund
npm run compile
npm test
