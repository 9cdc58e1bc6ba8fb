"""Remote engines: groundspec's editor-facing half in front of a shared server.

`llama-server` (llama.cpp) or any OpenAI-compatible `/v1/completions` (vLLM,
SGLang, Ollama) evaluates and generates; the prompt building, stop rules,
post-processing and stats stay in groundspec. No llama_cpp import here: a
thin client needs no models on the machine.
"""

from __future__ import annotations

import os

from ..config import EngineConfig
from ..types import Engine, ProgressCallback
from . import llama_server, openai
from .http import Transport


def load_remote(config: EngineConfig, progress: ProgressCallback | None = None) -> Engine:
    """A remote engine for config.backend; connects lazily, so a server that is
    down now only fails the requests made while it is down."""
    api_key = os.environ.get("GROUNDSPEC_API_KEY") or None  # never from a file
    engine: llama_server.LlamaServerEngine | openai.OpenAIEngine
    if config.backend == "llama-server":
        url = config.backend_url or llama_server.DEFAULT_URL
        engine = llama_server.LlamaServerEngine(Transport(url, "llama-server", api_key))
    else:
        url = config.backend_url or openai.DEFAULT_URL
        engine = openai.OpenAIEngine(Transport(url, "OpenAI-compatible server", api_key))
    if progress:
        progress(f"using {config.backend} at {url}", 100)
    return engine
