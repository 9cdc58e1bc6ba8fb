"""Engine configuration: backend, model paths, offload, threads, context size.

Read from (in order of precedence) CLI flags, environment variables
(GROUNDSPEC_BACKEND, GROUNDSPEC_BACKEND_URL, GROUNDSPEC_TARGET_MODEL,
GROUNDSPEC_DRAFT_MODEL, GROUNDSPEC_N_GPU_LAYERS, GROUNDSPEC_THREADS,
GROUNDSPEC_N_CTX, GROUNDSPEC_KV_RAM_MB, GROUNDSPEC_KV_DISK_MB, GROUNDSPEC_KV_DIR,
GROUNDSPEC_QUICK_WINDOW_TOKENS), the config file, then defaults. The remote
backends' API key is read from GROUNDSPEC_API_KEY only, never from a file.
"""

from __future__ import annotations

import logging
import os
from typing import Literal

import msgspec

log = logging.getLogger(__name__)

Backend = Literal["local", "llama-server", "openai"]
BACKENDS: tuple[str, ...] = ("local", "llama-server", "openai")


class EngineConfig(msgspec.Struct, kw_only=True, rename="camel"):
    # local: models in-process; llama-server / openai: a shared server at backend_url.
    backend: Backend = "local"
    backend_url: str | None = None  # None: the backend's usual loopback address
    target_model: str | None = None  # None: the default model assembled by `models fetch`
    draft_model: str | None = None
    use_draft: bool = True
    n_gpu_layers: int | None = None  # None: all layers when the build supports offload
    threads: int | None = None  # None: the number of CPU cores
    # Leave cores that other processes keep busy to them (speculator/threads.py).
    adaptive_threads: bool = True
    n_ctx: int = 4096
    # Per-document KV slots (docs/kv-reuse.md): RAM and disk bounds; 0 turns each off.
    kv_ram_mb: int = 512
    kv_disk_mb: int = 2048
    kv_dir: str | None = None  # None: kv-slots in the groundspec cache folder
    # An editor's completion (CompletionRequest.quick_window) is served from a
    # short prompt window of about this many tokens when the full prompt still
    # has more than this many to evaluate (an unseen file); the idle warm-up
    # evaluates the full one. Sized for a first suggestion within 4 s on a
    # 2-core CPU (docs/kv-reuse.md). 0: off.
    quick_window_tokens: int = 192
    fake: bool = False  # deterministic fake engine, for protocol tests

    def with_env(self) -> EngineConfig:
        """Overlay the GROUNDSPEC_* environment variables on this config."""
        env = os.environ
        updates: dict[str, object] = {}
        if env.get("GROUNDSPEC_BACKEND"):
            updates["backend"] = env["GROUNDSPEC_BACKEND"]  # checked by the factory
        if env.get("GROUNDSPEC_BACKEND_URL"):
            updates["backend_url"] = env["GROUNDSPEC_BACKEND_URL"]
        if env.get("GROUNDSPEC_TARGET_MODEL"):
            updates["target_model"] = env["GROUNDSPEC_TARGET_MODEL"]
        if env.get("GROUNDSPEC_DRAFT_MODEL"):
            updates["draft_model"] = env["GROUNDSPEC_DRAFT_MODEL"]
        if env.get("GROUNDSPEC_KV_DIR"):
            updates["kv_dir"] = env["GROUNDSPEC_KV_DIR"]
        for name, key in (
            ("n_gpu_layers", "GROUNDSPEC_N_GPU_LAYERS"),
            ("threads", "GROUNDSPEC_THREADS"),
            ("n_ctx", "GROUNDSPEC_N_CTX"),
            ("kv_ram_mb", "GROUNDSPEC_KV_RAM_MB"),
            ("kv_disk_mb", "GROUNDSPEC_KV_DISK_MB"),
            ("quick_window_tokens", "GROUNDSPEC_QUICK_WINDOW_TOKENS"),
        ):
            value = env.get(key, "").strip()
            if value.lstrip("-").isdigit():
                updates[name] = int(value)
            elif value:
                log.warning("%s=%r is not a whole number: it is ignored", key, env[key])
        if env.get("GROUNDSPEC_ADAPTIVE_THREADS") in ("0", "1"):
            updates["adaptive_threads"] = env["GROUNDSPEC_ADAPTIVE_THREADS"] == "1"
        if env.get("GROUNDSPEC_FAKE_ENGINE") == "1":
            updates["fake"] = True
        return msgspec.structs.replace(self, **updates)
