#!/bin/bash
# Stage what a lent GPU machine needs into build/g/ (ignored by git, kept there between
# calls): the llama.cpp vendored in the pinned sdist, patched (trimmed to 9 MB), the
# cp312 wheels the device image lacks, the llama_cpp Python package, and the two models
# in 61 MiB parts (a call carries at most 64 MiB). docs/gpu.md says how the calls use them.
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
source "$root/.ci/llama-build.sh"
stage="$root/build/g"
models="$CACHE/models"
rm -rf "$stage" && mkdir -p "$stage/whl" "$stage/sd"
cp "$root"/bench/gpu/device-*.sh "$stage/"
src="$(patched_source "$stage/sd")"  # with .ci/patches applied, as the CPU builds
cp -r "$src/llama_cpp" "$stage/pkg_llama_cpp"
skip=(docs models tests benches media gguf-py ggml/src/ggml-{vulkan,sycl,opencl,metal,hexagon,et})
tar czf "$stage/llama.tgz" -C "$src/vendor" "${skip[@]/#/--exclude=llama.cpp/}" llama.cpp
rm -rf "$stage/sd"
python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
    --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 \
    --platform manylinux2014_x86_64 --platform manylinux1_x86_64 -d "$stage/whl" \
    pygls lsprotocol cattrs tree-sitter tree-sitter-python tree-sitter-javascript \
    tree-sitter-typescript tree-sitter-go tree-sitter-rust watchdog msgspec tenacity diskcache
(cd "$models" && sha256sum -- *.gguf) > "$stage/models.sha"
split -b 61M -d -a 2 "$models/qwen2.5-coder-1.5b-instruct-q4_k_m.gguf" "$stage/t."
split -b 61M -d -a 2 "$models/qwen2.5-coder-0.5b-instruct-q4_k_m.gguf" "$stage/d."
ls "$stage"
