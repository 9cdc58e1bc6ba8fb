"""Does a position's logits row depend on the batch it is evaluated in?

A minimal llama-cpp-python check, outside groundspec's session: evaluate a
prompt, then the next token alone (twice: is it deterministic?) and as row 0
of batches of k rows, and print the largest logit difference per k. Run it
with the knobs that select ggml's CPU kernels:

    python -m bench.batch_invariance MODEL.gguf --flash-attn auto --repack 1 --threads 2

docs/exactness.md has the results on the 2-core machine and what they mean.
"""

from __future__ import annotations

import argparse
import ctypes
import sysconfig
from pathlib import Path

import llama_cpp
import numpy as np

FLASH_ATTN = {"auto": -1, "off": 0, "on": 1}
SIZES = (2, 3, 4, 5, 8, 16, 32, 56, 64)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("model")
    parser.add_argument("--flash-attn", choices=FLASH_ATTN, default="auto")
    parser.add_argument("--repack", type=int, choices=(0, 1), default=1, help="use_extra_bufts")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--prompt-tokens", type=int, default=600)
    args = parser.parse_args()

    llama_cpp.llama_backend_init()
    model_params = llama_cpp.llama_model_default_params()
    model_params.use_extra_bufts = bool(args.repack)
    model = llama_cpp.llama_model_load_from_file(args.model.encode(), model_params)
    vocab = llama_cpp.llama_model_get_vocab(model)
    n_vocab = llama_cpp.llama_vocab_n_tokens(vocab)
    params = llama_cpp.llama_context_default_params()
    params.n_ctx, params.n_batch, params.n_ubatch = 4096, 512, 512
    params.n_threads = params.n_threads_batch = args.threads
    params.flash_attn_type = FLASH_ATTN[args.flash_attn]
    ctx = llama_cpp.llama_init_from_model(model, params)
    memory = llama_cpp.llama_get_memory(ctx)
    batch = llama_cpp.llama_batch_init(512, 0, 1)

    text = (Path(sysconfig.get_paths()["stdlib"]) / "colorsys.py").read_bytes()
    buf = (llama_cpp.llama_token * 8192)()
    n = llama_cpp.llama_tokenize(vocab, text, len(text), buf, 8192, True, False)
    tokens = list(buf[:n])
    start = args.prompt_tokens

    def evaluate(toks: list[int], pos: int) -> None:
        batch.n_tokens = len(toks)
        for i, tok in enumerate(toks):
            batch.token[i], batch.pos[i], batch.n_seq_id[i] = tok, pos + i, 1
            batch.seq_id[i][0], batch.logits[i] = 0, True
        if llama_cpp.llama_decode(ctx, batch) != 0:
            raise SystemExit("llama_decode failed")

    def decode(toks: list[int], pos: int) -> np.ndarray:
        """Logits of every row, then the cache back to the prompt."""
        evaluate(toks, pos)
        ptr = ctypes.cast(llama_cpp.llama_get_logits(ctx), ctypes.POINTER(ctypes.c_float))
        rows = np.ctypeslib.as_array(ptr, shape=(len(toks), n_vocab)).copy()
        llama_cpp.llama_memory_seq_rm(memory, 0, pos, -1)
        return rows

    for lo in range(0, start, 512):
        evaluate(tokens[lo : min(start, lo + 512)], lo)
    alone = decode([tokens[start]], start)[0]
    again = decode([tokens[start]], start)[0]
    cells = [f"repeat {np.abs(alone - again).max():.3g}"]
    for k in SIZES:
        row0 = decode(tokens[start : start + k], start)[0]
        cells.append(f"k={k} {np.abs(row0 - alone).max():.3g}")
    print(
        f"flash-attn={args.flash_attn} repack={args.repack} threads={args.threads}: "
        + " | ".join(cells)
    )


if __name__ == "__main__":
    main()
