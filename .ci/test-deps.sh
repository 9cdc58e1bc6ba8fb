#!/usr/bin/env bash
# What the tests need beyond the Python packages, each step cached by version so a
# second run takes seconds: code-server, Chromium and Emacs for the editor tests (and
# the .vsix), the VS Code extension's own build and unit tests, and llama-server for
# the remote-backend tests and the benchmark's peer row, and llama.cpp's server tests.
set -euo pipefail
cd "$(dirname "$0")/.."
bash .ci/code-server.sh
bash clients/ci.sh
bash .ci/llama-server.sh
bash .ci/llama-server-tests.sh >/dev/null  # llama.cpp's own server tests, for the drop-in check
