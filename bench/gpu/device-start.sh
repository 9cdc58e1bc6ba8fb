#!/bin/bash
# On the GPU machine, first call: unpack, install the wheels, start the CUDA build of
# libllama and llama-server in the background (about 5 minutes on 16 cores).
cd "$(dirname "$0")/../.." || exit 1
mkdir -p /tmp/b /tmp/parts /tmp/site
mv build/g/[td].[0-9][0-9] /tmp/parts/ 2>/dev/null
cp build/g/models.sha /tmp/models.sha
tar xzf build/g/llama.tgz -C /tmp/b
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site build/g/whl/*.whl
cp -r build/g/pkg_llama_cpp /tmp/site/llama_cpp
cd /tmp/b/llama.cpp || exit 1
setsid nohup bash -c 'date +%s > /tmp/b/t0
  cmake -B build -G Ninja -DGGML_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES=90 -DBUILD_SHARED_LIBS=ON \
    -DLLAMA_BUILD_SERVER=ON -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_CURL=OFF \
    -DCMAKE_BUILD_TYPE=Release > /tmp/b/cmake.log 2>&1 &&
  cmake --build build -j16 --target llama-server llama > /tmp/b/build.log 2>&1
  echo $? > /tmp/b/rc; date +%s > /tmp/b/t1' > /dev/null 2>&1 < /dev/null &
sleep 3
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv
python3 -V; nproc; date -u; tail -3 /tmp/b/cmake.log
