"""A scripted stand-in for the models, to run the local generator without llama_cpp.

Tokens are characters (code points; 0 ends generation). Whatever the prompt,
the "model" continues with `script`: after the prompt and g generated tokens
its logits pick script[g] (the end token past the script's end). The session
keeps the cells as speculator.session.Session does, so the decoder, the slots
and the generator's prompt arithmetic run unchanged.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from speculator.config import EngineConfig
from speculator.generators.local import LocalGenerator
from speculator.threads import ThreadPolicy
from speculator.tokens import common_prefix
from speculator.totals import Totals
from speculator.types import Cancelled, CancelToken

END = 0
VOCAB = 0x3000  # enough for the ASCII and Latin text the tests use


class ScriptedModel:
    n_gpu_layers = 0
    path = Path("/scripted.gguf")

    def tokenize(self, text: str, special: bool = False) -> list[int]:
        return [ord(c) for c in text]

    def token_bytes(self, token: int) -> bytes:
        return chr(token).encode()

    def is_end_of_generation(self, token: int) -> bool:
        return token == END

    def close(self) -> None:
        pass


class Synced:
    def __init__(self, prompt_tokens: int, reused: int) -> None:
        self.prompt_tokens = prompt_tokens
        self.reused = reused
        self.evaluated = prompt_tokens - reused
        self.shifted = 0
        self.ms = 0.5


class ScriptedSession:
    def __init__(self, script: str, n_ctx: int = 8192) -> None:
        self.script = [ord(c) for c in script]
        self.n_ctx = n_ctx
        self.threads = 1
        self.cells: list[int] = []
        self.rows_asked: list[int] = []  # logits rows each append returned
        self.segments: list[tuple[int, int]] = []
        self.prompt_len = 0
        self.synced: list[list[int]] = []  # each sync's prompt, for tests

    def _logits(self, generated: int) -> np.ndarray:
        row = np.zeros(VOCAB, dtype=np.float32)
        row[self.script[generated] if generated < len(self.script) else END] = 10.0
        return row

    def pending(self, segments: Sequence[Sequence[int]], shift_reuse: bool = True) -> int:
        prompt = [t for seg in segments for t in seg]
        return len(prompt) - common_prefix(self.cells, prompt)

    def sync(
        self,
        segments: Sequence[Sequence[int]],
        shift_reuse: bool = True,
        cancel: CancelToken | None = None,
    ) -> tuple[Synced, np.ndarray]:
        if cancel is not None and cancel.cancelled:
            raise Cancelled()
        prompt = [t for seg in segments for t in seg]
        reused = min(common_prefix(self.cells, prompt), len(prompt) - 1)
        self.cells = list(prompt)
        self.prompt_len = len(prompt)
        self.synced.append(prompt)
        return Synced(len(prompt), reused), self._logits(0)

    def room(self) -> int:
        return self.n_ctx - len(self.cells)

    def append(self, tokens: Sequence[int], first_row: int = 0) -> np.ndarray:
        generated = len(self.cells) - self.prompt_len
        self.cells += list(tokens)
        self.rows_asked.append(len(tokens) - first_row)
        rows = range(first_row, len(tokens))
        return np.stack([self._logits(generated + i + 1) for i in rows])

    def trim(self, n: int) -> None:
        del self.cells[n:]

    def save_state(self, spare: Any = None) -> bytes:
        return b""

    def restore_state(self, data: Any, cells: list[int], segments: Any) -> bool:
        return False

    def close(self) -> None:
        pass


def scripted_generator(script: str) -> tuple[LocalGenerator, ScriptedSession]:
    """A local generator whose target writes `script` (no draft model, no KV files)."""
    config = EngineConfig(kv_ram_mb=0, kv_disk_mb=0, quick_window_tokens=0, use_draft=False)
    session = ScriptedSession(script)
    generator = LocalGenerator(
        ScriptedModel(),  # type: ignore[arg-type]
        None,
        config,
        (session, None),  # type: ignore[arg-type]
        ThreadPolicy(1, adaptive=False),
        Totals(),
        lambda: ("scripted", None),
    )
    return generator, session
