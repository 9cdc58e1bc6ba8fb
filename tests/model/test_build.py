"""The installed llama.cpp runs on this CPU.

ggml builds with -march=native. On a virtual machine that lists AMX but traps its
instructions, a build with AMX died with SIGILL on its first matrix multiply, and
took the whole test run with it (.ci/cpu-flags.sh, .ci/llama-cpp.sh). Here the
model runs in a child process, so such a build fails one test that says why.
"""

from __future__ import annotations

import signal
import subprocess
import sys

from speculator import provision

EVAL_ONE_BATCH = """
import sys
from llama_cpp import Llama
model = Llama(sys.argv[1], n_ctx=256, n_batch=64, verbose=False)
model.eval(model.tokenize(b"def add(a, b):\\n    return a + b\\n" * 4))
print(len(model.eval_tokens))
"""


def test_the_target_evaluates_a_batch_in_this_build() -> None:
    path = provision.resolve(provision.TARGET)
    done = subprocess.run(
        [sys.executable, "-c", EVAL_ONE_BATCH, str(path)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode != -signal.SIGILL, (
        "llama.cpp died on an illegal instruction: rebuild it for this CPU "
        "with `bash .ci/llama-cpp.sh` (.ci/cpu-flags.sh prints the flags it needs)"
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert int(done.stdout.split()[-1]) > 40  # every prompt token was evaluated
