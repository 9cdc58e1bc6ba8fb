"""A raw Qwen FIM prompt, as Zed (`prompt_format: qwen`), minuet and Continue send it,
on the real default model (marked `model`; run under the model lock): groundspec reads
the special tokens as llama-server does and answers the start of llama-server's
completion, up to where a suggestion ends."""

from __future__ import annotations

import socket
import subprocess
import time
from pathlib import Path

import aiohttp
import httpx
import pytest

from speculator import provision
from speculator.backends.llama_server import find_llama_server

from .http_helpers import serve_http

pytestmark = pytest.mark.model

RAW_FIM = "<|fim_prefix|>def add(a, b):\n    return <|fim_suffix|>\n<|fim_middle|>"
REQUEST = {"prompt": RAW_FIM, "max_tokens": 16, "temperature": 0}


async def groundspec_answer() -> tuple[str, int]:
    """The completion's text, and how many tokens /tokenize makes of the prompt."""
    async with serve_http(fake=False, GROUNDSPEC_FAKE_ENGINE="0") as served:
        async with aiohttp.ClientSession() as http:
            async with http.post(served.url + "/v1/completions", json=REQUEST) as response:
                assert response.status == 200
                text = (await response.json())["choices"][0]["text"]
            async with http.post(served.url + "/tokenize", json={"content": RAW_FIM}) as response:
                tokens = (await response.json())["tokens"]
    return text, len(tokens)


async def test_a_raw_fim_prompt_gets_a_fim_completion() -> None:
    text, n_tokens = await groundspec_answer()
    assert text.strip() == "a + b"
    # The three markers are one token each, as llama-server reads them (49 as text).
    assert n_tokens < 20


def llama_server_answer(binary: Path, model: Path) -> str:
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
        return str(answer["choices"][0]["text"])
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
    ours, _ = await groundspec_answer()
    # The same model reading the same tokens: llama-server runs on to max_tokens
    # ("a + b\n\ndef subtract(a, b): ..."), groundspec stops where a suggestion ends
    # (its post-processing, docs/http.md): its text is the start of llama-server's.
    assert ours == "a + b" and theirs.startswith(ours), (ours, theirs)
