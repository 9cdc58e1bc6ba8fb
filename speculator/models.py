"""Load GGUF models with llama.cpp (the only llama_cpp import besides session.py).

Bad model files become one clear EngineError: missing, not GGUF, truncated,
or a draft whose vocabulary differs from the target's.
"""

from __future__ import annotations

import ctypes
import logging
import os
from pathlib import Path

import llama_cpp
import llama_cpp._logger  # noqa: F401  (installs its own callback on import; ours replaces it)
from llama_cpp.llama_chat_format import Jinja2ChatFormatter

from . import provision
from .types import EngineError

log = logging.getLogger(__name__)
llama_log = logging.getLogger("llama_cpp")

# ggml.h's enum ggml_log_level (NONE 0, DEBUG 1, INFO 2, WARN 3, ERROR 4, CONT 5).
# llama-cpp-python 0.3.36 maps these with an older enum: it printed WARN lines
# (such as "control-looking token ... this is probably a bug in the model",
# printed for every Qwen2.5 load) to stderr, where an editor shows them as
# errors, and hid ERROR lines. Both are details behind an EngineError that says
# what failed in one line, or model metadata a user cannot act on: INFO, so a
# log file keeps them and stderr (WARNING by default) stays clean.
_GGML_TO_LOGGING = {
    1: logging.DEBUG,
    2: logging.DEBUG,
    3: logging.INFO,
    4: logging.INFO,
}
_GGML_CONT = 5


class _LlamaLogRouter:
    """Collects llama.cpp's log pieces into lines and logs them in Python."""

    def __init__(self) -> None:
        self.level = logging.DEBUG
        self.pending = ""
        # Kept on the instance: ctypes must not free the callback while C holds it.
        self.callback = llama_cpp.llama_log_callback(self._on_log)

    def _on_log(self, level: int, text: bytes | None, _user_data: ctypes.c_void_p) -> None:
        if level != _GGML_CONT:
            self.level = _GGML_TO_LOGGING.get(level, logging.DEBUG)
        if not llama_log.isEnabledFor(self.level):
            return
        self.pending += (text or b"").decode("utf-8", errors="replace")
        *lines, self.pending = self.pending.split("\n")
        for line in lines:
            if line.strip(" ."):  # llama.cpp prints bare dots as a progress bar
                llama_log.log(self.level, "%s", line)


_log_router = _LlamaLogRouter()
llama_cpp.llama_log_set(_log_router.callback, ctypes.c_void_p(0))


class Model:
    """A loaded GGUF model: weights, vocabulary and tokenizer."""

    def __init__(self, path: Path, n_gpu_layers: int | None):
        check_gguf_file(path)
        params = llama_cpp.llama_model_default_params()
        params.n_gpu_layers = gpu_layers(n_gpu_layers)
        model = llama_cpp.llama_model_load_from_file(str(path).encode(), params)
        if model is None:
            raise EngineError(
                f"llama.cpp could not load {path}: the file is corrupt or unsupported"
            )
        self.path = path
        self.model = model
        self.vocab = llama_cpp.llama_model_get_vocab(model)
        self.n_vocab = llama_cpp.llama_vocab_n_tokens(self.vocab)
        self.n_layers = llama_cpp.llama_model_n_layer(model)
        self.n_gpu_layers = params.n_gpu_layers

    def close(self) -> None:
        if self.model is not None:
            llama_cpp.llama_model_free(self.model)
            self.model = None

    def tokenize(self, text: str, special: bool = False) -> list[int]:
        data = text.encode("utf-8", errors="replace")
        capacity = len(data) + 8
        buf = (llama_cpp.llama_token * capacity)()
        n = llama_cpp.llama_tokenize(self.vocab, data, len(data), buf, capacity, False, special)
        if n < 0:
            raise EngineError("tokenization failed")
        return list(buf[:n])

    def token_bytes(self, token: int, special: bool = False) -> bytes:
        """The token's text; a special token's (<|fim_prefix|>) only if `special`."""
        buf = ctypes.create_string_buffer(64)
        n = llama_cpp.llama_token_to_piece(self.vocab, token, buf, 64, 0, special)
        return buf.raw[:n] if n > 0 else b""

    def special_token(self, text: str) -> int:
        """The id of a special token such as <|fim_prefix|>."""
        ids = self.tokenize(text, special=True)
        if len(ids) != 1:
            raise EngineError(f"{self.path.name} has no special token {text}")
        return ids[0]

    def chat_template(self) -> str | None:
        """The GGUF's own chat template (tokenizer.chat_template), if it has one."""
        template = llama_cpp.llama_model_chat_template(self.model, None)
        return template.decode("utf-8") if template else None

    def format_chat(self, messages: list[dict[str, str]]) -> str | None:
        """The chat rendered with the model's template as llama-cpp-python renders it
        (Jinja2ChatFormatter: the template's own bos/eos texts, the assistant's turn
        opened), or None without a template."""
        template = self.chat_template()
        if template is None:
            return None
        specials = (llama_cpp.llama_vocab_bos(self.vocab), llama_cpp.llama_vocab_eos(self.vocab))
        bos, eos = (self.token_bytes(t, special=True).decode() if t >= 0 else "" for t in specials)
        formatter = Jinja2ChatFormatter(template, eos_token=eos, bos_token=bos)
        return formatter(messages=messages).prompt  # type: ignore[arg-type]

    def is_end_of_generation(self, token: int) -> bool:
        return bool(llama_cpp.llama_vocab_is_eog(self.vocab, token))

    def vocab_signature(self) -> tuple[int, tuple[bytes, ...]]:
        """Size plus a sample of token texts: equal for models sharing a vocabulary."""
        step = max(1, self.n_vocab // 64)
        return self.n_vocab, tuple(self.token_bytes(t) for t in range(0, self.n_vocab, step))


ALL_LAYERS = 999  # llama.cpp clamps n_gpu_layers to the model's layer count


def gpu_layers(requested: int | None) -> int:
    """The layers to offload: as requested, or (None) all of them when this
    llama.cpp build can offload, else none."""
    if requested is not None:
        return requested
    return ALL_LAYERS if llama_cpp.llama_supports_gpu_offload() else 0


def check_gguf_file(path: Path) -> None:
    if not path.exists():
        raise EngineError(f"model file not found: {path}")
    if not path.is_file():
        raise EngineError(f"model path is not a file: {path}")
    with path.open("rb") as f:
        if f.read(4) != b"GGUF":
            raise EngineError(f"{path} is not a GGUF model file")


def resolve_path(explicit: str | None, spec: provision.ModelSpec) -> Path:
    """An explicit path (flag, env, config) wins; otherwise the default model."""
    if explicit:
        return Path(os.path.expanduser(explicit))
    return provision.resolve(spec)


def check_same_vocab(target: Model, draft: Model) -> None:
    if target.vocab_signature() != draft.vocab_signature():
        raise EngineError(
            f"the draft model {draft.path.name} has a different vocabulary "
            f"({draft.n_vocab} tokens) from the target {target.path.name} "
            f"({target.n_vocab} tokens); speculation needs the same tokenizer"
        )
