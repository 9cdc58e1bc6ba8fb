# Sourced by .ci/llama-cpp.sh and .ci/llama-server.sh: what both builds share.
# VERSION: the pinned llama-cpp-python (and the llama.cpp it vendors).
# CACHE: where built artifacts are kept ($GROUNDSPEC_CACHE, as the models).
# FLAGS: the C/C++ flags this machine needs (.ci/cpu-flags.sh), recorded with each build
# and exported in CFLAGS/CXXFLAGS, where CMake reads them.
# PATCHES: a digest of .ci/patches/*.patch, our changes to the vendored llama.cpp, so a
# build made before a patch changed is not reused; patched_source applies them.
# shellcheck shell=bash
VERSION=0.3.36
if [[ -n "${GROUNDSPEC_CACHE:-}" ]]; then
    CACHE="$GROUNDSPEC_CACHE"
else
    CACHE="${XDG_CACHE_HOME:-$HOME/.cache}/groundspec"
fi
FLAGS="$(bash "$(dirname "${BASH_SOURCE[0]}")/cpu-flags.sh")"
export CFLAGS="${CFLAGS:-} $FLAGS" CXXFLAGS="${CXXFLAGS:-} $FLAGS"

PATCH_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")/patches" && pwd)"
PATCHES="$(cat "$PATCH_DIR"/*.patch | sha256sum | cut -c1-12)"

# patched_source DIR: the pinned llama-cpp-python sdist, unpacked in DIR with our patches
# applied to its vendored llama.cpp; prints the source tree's path.
patched_source() {
    local dir="$1" src patch
    "${PYTHON:-python3}" -m pip download -q --no-deps --no-binary :all: \
        "llama-cpp-python==$VERSION" -d "$dir" >&2
    tar -xzf "$dir/llama_cpp_python-$VERSION.tar.gz" -C "$dir"
    src="$dir/llama_cpp_python-$VERSION"
    for patch in "$PATCH_DIR"/*.patch; do
        patch -s -p1 -d "$src/vendor/llama.cpp" <"$patch" >&2
    done
    echo "$src"
}
