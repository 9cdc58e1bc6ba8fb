"""`serve --http` with the real default models (marked `model`; run under the model lock)."""

from __future__ import annotations

import json
from pathlib import Path

import aiohttp
import pytest

from .http_helpers import serve_http

pytestmark = pytest.mark.model

CORPUS = Path(__file__).resolve().parents[2] / "bench" / "corpus"
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


def _typing(name: str, line: int, typed: str) -> dict[str, object]:
    """A llama.vim-shaped /infill in a corpus file, the cursor after `typed` on `line`."""
    lines = (CORPUS / name).read_text().split("\n")
    return {
        "input_prefix": "\n".join(lines[max(0, line - 40) : line]) + "\n",
        "prompt": typed,
        "input_suffix": "\n" + "\n".join(lines[line + 1 : line + 11]) + "\n",
        "n_predict": 4,
        "samplers": ["top_k", "top_p", "infill"],
        "cache_prompt": True,
    }


async def test_two_alternating_clients_keep_their_own_kv() -> None:
    # Two editors on one machine, typing in two files in turn: each keystroke
    # evaluates a few tokens, not the prompt the other editor's request replaced.
    # (No slot files: ones a previous run saved would make the first requests cheap.)
    no_disk = {"GROUNDSPEC_FAKE_ENGINE": "0", "GROUNDSPEC_KV_DISK_MB": "0"}
    async with serve_http(fake=False, **no_disk) as served:
        async with aiohttp.ClientSession() as http:
            evaluated = []
            for typed in ("    ", "    r", "    re"):
                for name, line in (("graphlib.py", 120), ("shlex.py", 150)):
                    body = _typing(name, line, typed)
                    async with http.post(served.url + "/infill", json=body) as response:
                        assert response.status == 200
                        answer = await response.json()
                    evaluated.append((name, answer["timings"]["prompt_n"]))
            # streaming on the real engine gives the same text as one answer
            body = _typing("shlex.py", 150, "    re") | {"n_predict": 16}
            async with http.post(served.url + "/infill", json=body) as response:
                whole = (await response.json())["content"]
            async with http.post(served.url + "/infill", json=body | {"stream": True}) as response:
                events = [json.loads(e[6:]) for e in (await response.read()).split(b"\n\n") if e]
    first = [n for _, n in evaluated[:2]]
    later = [n for _, n in evaluated[2:]]
    assert min(first) > 100, evaluated  # a whole prompt each
    assert max(later) <= 16, evaluated
    assert "".join(e["content"] for e in events) == whole and events[-1]["stop"] is True
