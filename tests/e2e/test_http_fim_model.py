"""A raw Qwen FIM prompt, as Zed (`prompt_format: qwen`), minuet and Continue send it,
on the real default model (marked `model`; run under the model lock): groundspec reads
the special tokens as llama-server does, evaluates the same prompt tokens and answers
what llama-server answers, to max_tokens."""

from __future__ import annotations

import socket
import subprocess
import time
from pathlib import Path
from typing import Any, NamedTuple

import aiohttp
import httpx
import pytest

from speculator import provision
from speculator.backends.llama_server import find_llama_server

from .http_helpers import serve_http

pytestmark = pytest.mark.model

RAW_FIM = "<|fim_prefix|>def add(a, b):\n    return <|fim_suffix|>\n<|fim_middle|>"
REQUEST = {"prompt": RAW_FIM, "max_tokens": 16, "temperature": 0}


class Answer(NamedTuple):
    text: str
    prompt_tokens: list[int]  # /tokenize's, special tokens parsed
    usage: dict[str, int]  # the answer's counts: the prompt it evaluated, what it generated


async def groundspec_answer() -> Answer:
    async with serve_http(fake=False, GROUNDSPEC_FAKE_ENGINE="0") as served:
        async with aiohttp.ClientSession() as http:
            async with http.post(served.url + "/v1/completions", json=REQUEST) as response:
                assert response.status == 200
                body = await response.json()
            async with http.post(served.url + "/tokenize", json={"content": RAW_FIM}) as response:
                tokens = (await response.json())["tokens"]
    return Answer(body["choices"][0]["text"], tokens, usage_counts(body))


def usage_counts(body: dict[str, Any]) -> dict[str, int]:
    return {k: body["usage"][k] for k in ("prompt_tokens", "completion_tokens")}


async def test_a_raw_fim_prompt_gets_a_fim_completion() -> None:
    answer = await groundspec_answer()
    assert answer.text.startswith("a + b")
    # The three markers are one token each, as llama-server reads them (49 as text),
    # and the prompt evaluated is those tokens, nothing added.
    assert len(answer.prompt_tokens) < 20
    assert answer.usage["prompt_tokens"] == len(answer.prompt_tokens)


def llama_server_answer(binary: Path, model: Path) -> Answer:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = int(sock.getsockname()[1])
    url = f"http://127.0.0.1:{port}"
    command = [str(binary), "-m", str(model), "--host", "127.0.0.1", "--port", str(port)]
    process = subprocess.Popen(
        [*command, "--no-webui", "-t", "2", "-c", "2048", "-np", "1"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 180
        while time.monotonic() < deadline:
            assert process.poll() is None, "llama-server died"
            try:
                if httpx.get(url + "/health", timeout=1.0).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            time.sleep(0.2)
        answer = httpx.post(url + "/v1/completions", json=REQUEST, timeout=120).json()
        asked = {"content": RAW_FIM, "parse_special": True}
        tokens = httpx.post(url + "/tokenize", json=asked, timeout=30).json()["tokens"]
        return Answer(str(answer["choices"][0]["text"]), tokens, usage_counts(answer))
    finally:
        process.kill()
        process.wait(timeout=10)


@pytest.mark.llama_server
async def test_the_same_completion_as_llama_server() -> None:
    binary = find_llama_server()
    if binary is None:
        pytest.skip(
            "no llama-server binary: run .ci/llama-server.sh (or set GROUNDSPEC_LLAMA_SERVER)"
        )
    model = provision.model_path(provision.TARGET)
    if not model.exists():
        pytest.skip(f"the default target model is missing ({model}): run `groundspec models fetch`")
    theirs = llama_server_answer(binary, model)
    ours = await groundspec_answer()
    # The same model reading the same tokens, to the same limit: the same answer
    # ("a + b\n\ndef subtract(a, b): ..."), token for token.
    assert ours == theirs, (ours, theirs)
