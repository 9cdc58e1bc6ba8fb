# Sourced by .ci/llama-cpp.sh and .ci/llama-server.sh: what both builds share.
# VERSION: the pinned llama-cpp-python (and the llama.cpp it vendors).
# CACHE: where built artifacts are kept ($GROUNDSPEC_CACHE, as the models).
# FLAGS: the C/C++ flags this machine needs (.ci/cpu-flags.sh), recorded with each build
# and exported in CFLAGS/CXXFLAGS, where CMake reads them.
# shellcheck shell=bash
VERSION=0.3.36
if [[ -n "${GROUNDSPEC_CACHE:-}" ]]; then
    CACHE="$GROUNDSPEC_CACHE"
else
    CACHE="${XDG_CACHE_HOME:-$HOME/.cache}/groundspec"
fi
FLAGS="$(bash "$(dirname "${BASH_SOURCE[0]}")/cpu-flags.sh")"
export CFLAGS="${CFLAGS:-} $FLAGS" CXXFLAGS="${CXXFLAGS:-} $FLAGS"
