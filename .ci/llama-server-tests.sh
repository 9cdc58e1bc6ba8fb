#!/usr/bin/env bash
# llama.cpp's own server tests (tools/server/tests) from the llama.cpp vendored in the pinned
# llama-cpp-python sdist, unpacked once per machine into the cache; prints their folder.
# The sdist comes from the package registry through pip, as for .ci/llama-server.sh; only the
# tests folder is kept (they drive llama-server over HTTP: tests/e2e/test_llama_server_suite.py
# runs them against groundspec through .ci/llama-server-shim).
set -euo pipefail

# shellcheck source=.ci/llama-build.sh
. "$(dirname "$0")/llama-build.sh"  # VERSION, CACHE
DEST="$CACHE/llama-server-tests/$VERSION"

if [[ ! -f "$DEST/tests/utils.py" ]]; then
    WORK="$(mktemp -d)"
    trap 'rm -rf "$WORK"' EXIT
    "${PYTHON:-python3}" -m pip download -q --no-deps --no-binary :all: \
        "llama-cpp-python==$VERSION" -d "$WORK" >&2
    tar -xzf "$WORK/llama_cpp_python-$VERSION.tar.gz" -C "$WORK" \
        "llama_cpp_python-$VERSION/vendor/llama.cpp/tools/server/tests"
    rm -rf "$DEST.tmp"
    mkdir -p "$DEST.tmp"
    mv "$WORK/llama_cpp_python-$VERSION/vendor/llama.cpp/tools/server/tests" "$DEST.tmp/tests"
    rm -rf "$DEST"
    mv "$DEST.tmp" "$DEST"
fi
echo "$DEST/tests"
