"""`serve --http` with the real default models (marked `model`; run under the model lock)."""

from __future__ import annotations

import aiohttp
import pytest

from .http_helpers import serve_http

pytestmark = pytest.mark.model

PREFIX = "import math\n\n\ndef circle_area(radius: float) -> float:\n"


async def test_llama_vim_shaped_infill_completes_and_reuses_the_kv_cache() -> None:
    async with serve_http(fake=False, GROUNDSPEC_FAKE_ENGINE="0") as served:
        async with aiohttp.ClientSession() as http:
            answers = []
            for typed in ("    return", "    return "):
                body = {
                    "input_prefix": PREFIX,
                    "prompt": typed,
                    "input_suffix": "\n",
                    "n_predict": 12,
                    "n_indent": 4,
                    "samplers": ["top_k", "top_p", "infill"],
                    "cache_prompt": True,
                }
                async with http.post(served.url + "/infill", json=body) as response:
                    assert response.status == 200
                    answers.append(await response.json())
    first, second = answers
    assert first["content"].strip() and first["timings"]["predicted_n"] > 0
    # One more character typed: almost all of the prompt comes from the KV cache.
    assert second["timings"]["cache_n"] > second["timings"]["prompt_n"]
