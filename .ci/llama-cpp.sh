#!/usr/bin/env bash
# Install llama-cpp-python into the active Python, built for this machine once and then
# installed from a cached wheel (a second run takes seconds).
#
# Why not a plain `pip install`: on a machine that lists AMX but traps it, ggml must be
# built without AMX (.ci/cpu-flags.sh), and pip's own wheel cache ignores CFLAGS, so a
# wheel cached by an earlier build would come back. The wheel is cached here under the
# flags it was built with; CMAKE_ARGS (e.g. -DGGML_CUDA=on) count as flags too, and so do
# our patches to the vendored llama.cpp (.ci/patches), which is why it builds from a
# patched copy of the sdist rather than from the registry's.
set -euo pipefail

PYTHON="${PYTHON:-python3}"
# shellcheck source=.ci/llama-build.sh
. "$(dirname "$0")/llama-build.sh"  # VERSION, CACHE, FLAGS, PATCHES, patched_source
TAG="$(printf '%s|%s|%s' "$FLAGS" "${CMAKE_ARGS:-}" "$PATCHES" | sha256sum | cut -c1-12)"
WHEELS="$CACHE/wheels/llama-cpp-python-$VERSION-$TAG"

if ! compgen -G "$WHEELS/*.whl" >/dev/null; then
    echo "building llama-cpp-python $VERSION (flags: ${FLAGS:-none}; about 10 minutes on 2 cores)"
    rm -rf "$WHEELS.tmp"
    WORK="$(mktemp -d)"
    trap 'rm -rf "$WORK"' EXIT
    SRC="$(patched_source "$WORK")"
    "$PYTHON" -m pip wheel -q --no-deps --no-cache-dir "$SRC" -w "$WHEELS.tmp"
    mv "$WHEELS.tmp" "$WHEELS"
fi
"$PYTHON" -m pip install -q --force-reinstall --no-deps "$WHEELS"/*.whl
