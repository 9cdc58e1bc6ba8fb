"""What llama-server's own clients and tests expect of the HTTP door (fake engine):
raw prompts (FIM or plain), prompt forms, /props, /slots, /tokenize, n_probs and logit_bias,
and input_extra checked as llama-server checks it."""

from __future__ import annotations

import asyncio
import json
import re
from typing import Any

import aiohttp
import pytest

from .conftest import FAKE_TEXT
from .http_fixtures import http, server
from .http_helpers import Served, serve_http

PREFIX = "def add(a, b):\n    return "
RAW_FIM = f"<|fim_prefix|>{PREFIX}<|fim_suffix|>\n<|fim_middle|>"
INFILL = {
    "input_prefix": '#include <cstdio>\n#include "llama.h"\n\nint main() {\n',
    "prompt": "    int n_threads = llama_",
    "input_suffix": "}\n",
}


pytestmark = pytest.mark.asyncio(loop_scope="module")
__all__ = ["http", "server"]  # the fixtures: the module's server, a client session


async def post(http: aiohttp.ClientSession, url: str, body: Any) -> tuple[int, Any]:
    async with http.post(url, json=body) as response:
        return response.status, await response.json()


def engine_asks(server: Served) -> list[str]:
    """How the fake engine was asked each completion: its prompt format and end."""
    return re.findall(r"\(a (\w+) prompt, ending at the (\w+)\)", b"".join(server.log).decode())


async def asks_after(server: Served, before: int, count: int = 1) -> list[str]:
    """The engine's next `count` asks after the first `before`: the server's log is
    read by another thread, so its line may come a little after the answer."""
    for _ in range(100):
        asks = engine_asks(server)
        if len(asks) >= before + count:
            return asks[before:]
        await asyncio.sleep(0.05)
    return engine_asks(server)[before:]


async def test_a_raw_fim_prompt_is_the_prompt(server: Served, http: aiohttp.ClientSession) -> None:
    # As llama-server reads it: the whole text is the prompt (the fake engine counts
    # its characters as prompt tokens), generated on to the limit.
    before = len(engine_asks(server))
    status, body = await post(http, server.url + "/v1/completions", {"prompt": RAW_FIM})
    assert status == 200 and body["choices"][0]["text"] == FAKE_TEXT
    assert body["usage"]["prompt_tokens"] == len(RAW_FIM)
    status, body = await post(http, server.url + "/completion", {"prompt": RAW_FIM})
    assert status == 200 and body["content"] == FAKE_TEXT
    assert body["tokens_evaluated"] == len(RAW_FIM) and body["prompt"] == RAW_FIM
    assert await asks_after(server, before, 2) == [("raw", "limit")] * 2


async def test_plain_prompts_are_continued_as_llama_server_continues_them(
    server: Served, http: aiohttp.ClientSession
) -> None:
    before = len(engine_asks(server))
    asked = {"prompt": PREFIX, "n_predict": 9, "stop": ["("]}
    status, body = await post(http, server.url + "/completion", asked)
    assert status == 200 and body["tokens_evaluated"] == len(PREFIX)
    assert (body["content"], body["stop_type"], body["stopping_word"]) == (
        FAKE_TEXT[:9],
        "limit",
        "",
    )
    assert body["timings"]["predicted_n"] == 9
    status, body = await post(http, server.url + "/completion", {"prompt": PREFIX, "stop": ["("]})
    assert (body["content"], body["stop_type"]) == (FAKE_TEXT.split("(")[0], "word")
    assert await asks_after(server, before, 2) == [("raw", "limit")] * 2


async def test_infill_and_an_openai_suffix_end_where_a_suggestion_ends(
    server: Served, http: aiohttp.ClientSession
) -> None:
    before = len(engine_asks(server))
    status, _ = await post(http, server.url + "/infill", INFILL)
    assert status == 200 and await asks_after(server, before) == [("document", "suggestion")]
    asked = {"prompt": PREFIX, "suffix": "\n"}
    status, _ = await post(http, server.url + "/v1/completions", asked)
    assert status == 200 and await asks_after(server, before + 1) == [("document", "suggestion")]


async def test_completions_without_v1_is_llama_servers(
    server: Served, http: aiohttp.ClientSession
) -> None:
    status, body = await post(http, server.url + "/completions", {"prompt": "x = "})
    assert status == 200 and body["content"] == FAKE_TEXT and "choices" not in body


async def test_several_prompts_get_a_list(server: Served, http: aiohttp.ClientSession) -> None:
    status, body = await post(http, server.url + "/completion", {"prompt": ["a = ", RAW_FIM]})
    assert status == 200 and [answer["index"] for answer in body] == [0, 1]
    assert [answer["tokens_evaluated"] for answer in body] == [len("a = "), len(RAW_FIM)]
    stream = {"prompt": ["a", "b"], "stream": True}
    status, body = await post(http, server.url + "/completion", stream)
    assert status == 400 and "one prompt at a time" in body["error"]["message"]
    status, body = await post(http, server.url + "/v1/completions", {"prompt": ["a", "b"]})
    assert status == 200 and len(body["choices"]) == 2


async def test_token_ids_need_a_vocabulary(server: Served, http: aiohttp.ClientSession) -> None:
    status, body = await post(http, server.url + "/completion", {"prompt": [1, 2, 3]})
    assert status == 400 and "vocabulary" in body["error"]["message"]
    status, body = await post(http, server.url + "/tokenize", {"content": "x"})
    assert status == 501 and "tokenize" in body["error"]["message"]


@pytest.mark.parametrize(
    "extra",
    [{}, {"filename": "ok"}, {"filename": 123}, {"filename": 123, "text": "abc"}, {"text": 4}],
)
async def test_invalid_input_extra_is_a_400(
    server: Served, http: aiohttp.ClientSession, extra: dict[str, Any]
) -> None:
    status, body = await post(http, server.url + "/infill", INFILL | {"input_extra": [extra]})
    assert status == 400 and "input_extra" in body["error"]["message"]


async def test_n_probs_reports_each_tokens_probabilities_in_llama_servers_shape(
    server: Served, http: aiohttp.ClientSession
) -> None:
    # The fake engine's tokens are characters, each certain, the next ones after it.
    status, body = await post(http, server.url + "/completion", {"prompt": "x = ", "n_probs": 3})
    assert status == 200 and body["content"] == FAKE_TEXT
    probs = body["completion_probabilities"]
    assert "".join(p["token"] for p in probs) == FAKE_TEXT
    first = probs[0]
    assert first == {
        "id": ord("f"),
        "token": "f",
        "bytes": [ord("f")],
        "logprob": 0.0,
        "top_logprobs": [
            {"id": ord("f"), "token": "f", "bytes": [ord("f")], "logprob": 0.0},
            {"id": ord("a"), "token": "a", "bytes": [ord("a")], "logprob": -3.4028234663852886e38},
            {"id": ord("k"), "token": "k", "bytes": [ord("k")], "logprob": -3.4028234663852886e38},
        ],
    }
    asked = {"prompt": "x = ", "n_probs": 2, "post_sampling_probs": True}
    status, body = await post(http, server.url + "/completion", asked)
    first = body["completion_probabilities"][0]
    assert first["prob"] == 1.0 and [p["prob"] for p in first["top_probs"]] == [1.0, 0.0]
    status, body = await post(http, server.url + "/completion", {"prompt": "x = "})
    assert "completion_probabilities" not in body  # only when asked for


async def test_a_streamed_n_probs_answer_sends_one_event_per_token(
    server: Served, http: aiohttp.ClientSession
) -> None:
    asked = {"prompt": "x = ", "n_probs": 2, "stream": True}
    async with http.post(server.url + "/completion", json=asked) as response:
        assert response.status == 200
        raw = (await response.read()).decode()
    events = [json.loads(line[6:]) for line in raw.split("\n\n") if line.startswith("data: ")]
    partial, final = events[:-1], events[-1]
    assert [len(e["completion_probabilities"]) for e in partial] == [1] * len(FAKE_TEXT)
    assert "".join(e["content"] for e in partial) == FAKE_TEXT
    assert [e["tokens"] for e in partial] == [[ord(c)] for c in FAKE_TEXT]
    assert final["stop"] is True and "completion_probabilities" not in final


async def test_openai_logprobs_have_llama_servers_shape(
    server: Served, http: aiohttp.ClientSession
) -> None:
    asked = {"prompt": "x = ", "logprobs": 2}
    status, body = await post(http, server.url + "/v1/completions", asked)
    content = body["choices"][0]["logprobs"]["content"]
    assert status == 200 and len(content) == len(FAKE_TEXT)
    assert len(content[0]["top_logprobs"]) == 2
    status, body = await post(http, server.url + "/v1/completions", {"prompt": "x = "})
    assert body["choices"][0]["logprobs"] is None


@pytest.mark.parametrize(
    "path, bias",
    [
        ("/completion", [[ord("o"), False], ["e", -100]]),  # ids, texts; false bans
        ("/completion", {str(ord("o")): -100, "e": False}),  # OpenAI's object form
        ("/v1/completions", {str(ord("o")): -100, "e": -1}),
    ],
)
async def test_logit_bias_reaches_the_engine_as_tokens(
    server: Served, http: aiohttp.ClientSession, path: str, bias: Any
) -> None:
    # The fake engine drops a character (its "token") with a negative bias.
    status, body = await post(http, server.url + path, {"prompt": "x = ", "logit_bias": bias})
    text = body["content"] if path == "/completion" else body["choices"][0]["text"]
    assert status == 200 and text == FAKE_TEXT.replace("o", "").replace("e", "")


async def test_props_and_slots(server: Served, http: aiohttp.ClientSession) -> None:
    async with http.get(server.url + "/props") as response:
        props = await response.json()
    assert props["total_slots"] == 1 and props["default_generation_settings"]["n_ctx"] > 0
    assert props["model_path"].endswith(".gguf")
    async with http.get(server.url + "/slots?fail_on_no_slot=1") as response:
        slots = await response.json()
    assert response.status == 200 and [s["is_processing"] for s in slots] == [False]
    await post(http, server.url + "/completion", {"prompt": "x = ", "id_slot": 4})
    status, body = await post(http, server.url + "/slots/4?action=erase", None)
    assert status == 200 and body == {"id_slot": 4, "n_erased": 1}
    status, body = await post(http, server.url + "/slots/4?action=erase", None)
    assert body["n_erased"] == 0
    status, body = await post(http, server.url + "/slots/0?action=save", {"filename": "x.bin"})
    assert status == 501
    status, body = await post(http, server.url + "/slots/abc?action=erase", None)
    assert status == 400 and body["error"]["message"] == "Invalid slot ID"
    status, body = await post(http, server.url + "/slots/0?action=frobnicate", None)
    assert status == 400 and body["error"]["message"] == "Invalid action"


async def test_erasing_a_slot_cancels_what_it_runs(http: aiohttp.ClientSession) -> None:
    slow = {"GROUNDSPEC_FAKE_TEXT": "x" * 400, "GROUNDSPEC_FAKE_DELAY_MS": "20"}  # 8 s
    async with serve_http(**slow) as served:
        body = {"prompt": "x = ", "id_slot": 2, "n_predict": 400}
        running = asyncio.ensure_future(post(http, served.url + "/completion", body))
        await asyncio.sleep(0.5)
        async with http.get(served.url + "/slots") as response:
            assert (await response.json())[0]["is_processing"] is True
        started = asyncio.get_running_loop().time()
        await post(http, served.url + "/slots/2?action=erase", None)
        status, answer = await asyncio.wait_for(running, timeout=5)
        assert asyncio.get_running_loop().time() - started < 3
        assert status == 503 and "cancelled" in answer["error"]["message"]
