#!/usr/bin/env bash
# Install llama-cpp-python into the active Python, built for this machine once and then
# installed from a cached wheel (a second run takes seconds).
#
# Why not a plain `pip install`: on a machine that lists AMX but traps it, ggml must be
# built without AMX (.ci/cpu-flags.sh), and pip's own wheel cache ignores CFLAGS, so a
# wheel cached by an earlier build would come back. The wheel is cached here under the
# flags it was built with; CMAKE_ARGS (e.g. -DGGML_CUDA=on) count as flags too.
set -euo pipefail

# shellcheck source=.ci/llama-build.sh
. "$(dirname "$0")/llama-build.sh"  # VERSION, CACHE, FLAGS
PYTHON="${PYTHON:-python3}"
TAG="$(printf '%s|%s' "$FLAGS" "${CMAKE_ARGS:-}" | sha256sum | cut -c1-12)"
WHEELS="$CACHE/wheels/llama-cpp-python-$VERSION-$TAG"

if ! compgen -G "$WHEELS/*.whl" >/dev/null; then
    echo "building llama-cpp-python $VERSION (flags: ${FLAGS:-none}; about 10 minutes on 2 cores)"
    rm -rf "$WHEELS.tmp"
    "$PYTHON" -m pip wheel -q --no-deps --no-cache-dir --no-binary llama-cpp-python \
        "llama-cpp-python==$VERSION" -w "$WHEELS.tmp"
    mv "$WHEELS.tmp" "$WHEELS"
fi
"$PYTHON" -m pip install -q --force-reinstall --no-deps "$WHEELS"/*.whl
