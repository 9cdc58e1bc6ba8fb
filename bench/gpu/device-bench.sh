#!/bin/bash
# On the GPU machine, last call: wait for the build, assemble and check the models, then
# run each `groundspec bench` given as one argument string, into $OUT, while the budget
# (seconds, $1) lasts. Example: device-bench.sh 400 "--kind refactor --split test --modes off,auto --repeat 3"
budget=$1; shift
cd "$(dirname "$0")/../.." || exit 1
mv build/g/[td].[0-9][0-9] /tmp/parts/ 2>/dev/null
export PYTHONPATH=/tmp/site:$PWD LLAMA_CPP_LIB_PATH=/tmp/b/llama.cpp/build/bin \
    GROUNDSPEC_LLAMA_SERVER=/tmp/b/llama.cpp/build/bin/llama-server PYTHONUNBUFFERED=1
while [ ! -f /tmp/b/rc ]; do sleep 2; done
echo "build rc $(cat /tmp/b/rc), $(($(cat /tmp/b/t1) - $(cat /tmp/b/t0))) s"
m=/tmp/models; mkdir -p $m
target=$m/qwen2.5-coder-1.5b-instruct-q4_k_m.gguf draft=$m/qwen2.5-coder-0.5b-instruct-q4_k_m.gguf
[ -f $target ] || cat /tmp/parts/t.* > $target
[ -f $draft ] || cat /tmp/parts/d.* > $draft
(cd $m && sha256sum -c /tmp/models.sha) || exit 1
date -u
n=0
for args in "$@"; do
    n=$((n + 1))
    if ((SECONDS + 40 > budget)); then echo "skip $args ($SECONDS s used)"; continue; fi
    t=$SECONDS
    # llama_cpp is imported before numpy: with the CUDA build the other order crashes at load.
    # shellcheck disable=SC2086  # args is a list of flags
    timeout $((budget - SECONDS - 5)) python3 -c "import llama_cpp, runpy, sys; sys.argv[0] = 'groundspec'; runpy.run_module('lsp_server.cli', run_name='__main__')" \
        bench --target-model $target --draft-model $draft $args --output "$OUT/run$n.md" > /tmp/run$n.log 2>&1
    echo "run$n ($args): rc $? in $((SECONDS - t)) s"
    tail -3 /tmp/run$n.log; cat /tmp/run$n.log >> "$OUT/all.log"
done
date -u
