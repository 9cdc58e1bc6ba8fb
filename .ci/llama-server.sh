#!/usr/bin/env bash
# Build llama.cpp's llama-server once per machine, for the remote-backend tests and benchmarks.
# It comes from the llama.cpp vendored in the llama-cpp-python sdist the project pins, so the
# server runs the same ggml as the in-process engine, with the same patches (.ci/patches).
# About 8 minutes on 2 cores; the binary is cached by version and later runs return at once.
set -euo pipefail

# shellcheck source=.ci/llama-build.sh
. "$(dirname "$0")/llama-build.sh"  # VERSION, CACHE, FLAGS, PATCHES, patched_source
DEST="$CACHE/llama-server/$VERSION"  # a binary built with other FLAGS or patches is rebuilt
BUILT_WITH="$FLAGS|patches $PATCHES"

if [[ -x "$DEST/llama-server" && "$(cat "$DEST/build-flags" 2>/dev/null)" == "$BUILT_WITH" ]]; then
    echo "llama-server $VERSION already built: $DEST/llama-server"
    exit 0
fi

WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT
cd "$(patched_source "$WORK")/vendor/llama.cpp"

# BUILD_SHARED_LIBS=OFF: one self-contained binary that still runs after the build tree is gone.
cmake -B build -DLLAMA_BUILD_SERVER=ON -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_UI=OFF \
    -DLLAMA_USE_PREBUILT_UI=OFF -DLLAMA_CURL=OFF -DCMAKE_BUILD_TYPE=Release -DBUILD_SHARED_LIBS=OFF
cmake --build build -j2 --target llama-server

mkdir -p "$DEST"
cp build/bin/llama-server "$DEST/llama-server.tmp"
mv "$DEST/llama-server.tmp" "$DEST/llama-server"
printf '%s' "$BUILT_WITH" >"$DEST/build-flags"
echo "llama-server $VERSION built: $DEST/llama-server"
