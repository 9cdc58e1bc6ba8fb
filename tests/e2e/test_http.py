"""`groundspec serve --http` over real HTTP, with requests shaped as llama.vim and
llama.vscode send them, chats, engine slots and concurrency (fake engine). The
OpenAI Python client: test_http_openai.py; bad input: test_http_bad_input.py."""

from __future__ import annotations

import asyncio
import json
import re
from typing import Any

import aiohttp
import pytest

from .conftest import FAKE_TEXT
from .http_fixtures import LLAMA_VSCODE_FIM, ORIGINAL, http, post, server
from .http_helpers import Served, serve_http

__all__ = ["http", "server"]  # the fixtures: the module's server, a client session


# What llama.vim's llama#fim() sends (autoload/llama.vim), cursor after "    ret".
LLAMA_VIM_FIM: dict[str, Any] = {
    "input_prefix": "def area(w, h):\n",
    "input_suffix": "\n\nprint(area(2, 3))\n",
    "input_extra": [
        {
            "text": "def volume(w, h, d):\n    return w * h * d\n",
            "time": [1, 2],
            "filename": "geo.py",
        }
    ],  # fmt: skip
    "prompt": "    ret",
    "n_predict": 128,
    "stop": [],
    "n_indent": 4,
    "top_k": 40,
    "top_p": 0.90,
    "stream": False,
    "samplers": ["top_k", "top_p", "infill"],
    "cache_prompt": True,
    "t_max_prompt_ms": 500,
    "t_max_predict_ms": 250,
    "response_fields": [
        "content",
        "timings/prompt_n",
        "timings/prompt_ms",
        "timings/prompt_per_token_ms",
        "timings/prompt_per_second",
        "timings/predicted_n",
        "timings/predicted_ms",
        "timings/predicted_per_token_ms",
        "timings/predicted_per_second",
        "truncated",
        "tokens_cached",
    ],
}
# llama.vim's ring-buffer update: extra context only, nothing to predict.
LLAMA_VIM_RING: dict[str, Any] = {
    "input_prefix": "",
    "input_suffix": "",
    "input_extra": [{"text": "x = 1\n", "time": [1, 2], "filename": "a.py"}],
    "prompt": "",
    "n_predict": 0,
    "temperature": 0.0,
    "stream": False,
    "samplers": [],
    "cache_prompt": True,
    "t_max_prompt_ms": 1,
    "t_max_predict_ms": 1,
    "response_fields": [""],
}


VSCODE_EDIT_PROMPT = (
    "Modify the following original code according to the instructions. Output only the "
    "modified code. No explanations.\n\ninstructions:\n{instructions}\n\noriginal code:\n"
    "{original}\n\nmodified code:"
)


def llama_vscode_edit(instructions: str, original: str) -> dict[str, Any]:
    """llama.vscode's getChatEditCompletion payload (createChatEditRequestPayload)."""
    content = VSCODE_EDIT_PROMPT.format(instructions=instructions, original=original)
    return {
        "messages": [
            {"role": "system", "content": "You are an expert coder."},
            {"role": "user", "content": content},
        ],
        "stream": False,
        "cache_prompt": True,
        "samplers": "edkypmxt",
        "temperature": 0.8,
        "dynatemp_range": 0,
        "top_k": 40,
        "top_p": 0.95,
        "min_p": 0.05,
        "typical_p": 1,
        "repeat_last_n": 64,
        "dry_penalty_last_n": -1,
        "max_tokens": -1,
        "timings_per_token": False,
    }


# One server for the module, on the module's event loop.
pytestmark = pytest.mark.asyncio(loop_scope="module")


async def test_health_has_llama_servers_bytes(server: Served, http: aiohttp.ClientSession) -> None:
    async with http.get(server.url + "/health") as response:
        assert response.status == 200
        assert response.headers["Content-Type"] == "application/json; charset=utf-8"
        assert await response.read() == b'{"status":"ok"}'


async def test_llama_vim_fim_gets_the_fields_it_asked_for(
    server: Served, http: aiohttp.ClientSession
) -> None:
    status, raw = await post(http, server.url + "/infill", LLAMA_VIM_FIM)
    assert status == 200
    # llama.vim (Vim's out_cb) hands over the raw text line by line: one line of JSON.
    assert b"\n" not in raw and raw.startswith(b'{"content":')
    body = json.loads(raw)
    assert list(body) == LLAMA_VIM_FIM["response_fields"]
    assert body["content"] == FAKE_TEXT
    assert body["timings/prompt_n"] > 0 and body["tokens_cached"] >= body["timings/prompt_n"]
    assert body["truncated"] is False


async def test_llama_vim_ring_update_is_answered_at_once(
    server: Served, http: aiohttp.ClientSession
) -> None:
    status, raw = await post(http, server.url + "/infill", LLAMA_VIM_RING)
    assert (status, raw) == (200, b"{}")  # response_fields [""] selects nothing


async def test_llama_vscode_fim_gets_the_full_response(
    server: Served, http: aiohttp.ClientSession
) -> None:
    status, raw = await post(http, server.url + "/infill", LLAMA_VSCODE_FIM)
    assert status == 200
    body = json.loads(raw)
    assert body["content"] == FAKE_TEXT[:6]
    assert body["stop_type"] == "limit" and body["stop"] is True
    assert body["truncated"] is False and body["tokens_cached"] > 0
    timings = body["timings"]
    for key in ("prompt_n", "prompt_ms", "predicted_n", "predicted_ms", "predicted_per_second"):
        assert key in timings
    assert timings["predicted_n"] == 6
    keys = list(body)
    assert keys[:3] == ["index", "content", "tokens"] and keys[-1] == "timings"


async def test_completion_takes_a_raw_prompt_and_stop_strings(
    server: Served, http: aiohttp.ClientSession
) -> None:
    status, raw = await post(
        http, server.url + "/completion", {"prompt": "result = ", "stop": ["("]}
    )
    assert status == 200
    body = json.loads(raw)
    assert body["content"] == FAKE_TEXT.split("(")[0]
    assert (body["stop_type"], body["stopping_word"]) == ("word", "(")


async def test_completion_streams_server_sent_events(
    server: Served, http: aiohttp.ClientSession
) -> None:
    body = {"prompt": "x = ", "n_predict": 4, "stream": True}
    async with http.post(server.url + "/completion", json=body) as response:
        assert response.headers["Content-Type"].startswith("text/event-stream")
        events = [json.loads(line[6:]) for line in (await response.text()).split("\n\n") if line]
    assert "".join(e["content"] for e in events) == FAKE_TEXT[:4]
    assert [e["stop"] for e in events][-1] is True and "timings" in events[-1]


async def test_completion_streams_text_as_the_engine_accepts_it(
    server: Served, http: aiohttp.ClientSession
) -> None:
    body = {"prompt": "x = ", "stream": True, "id_slot": 2}
    async with http.post(server.url + "/completion", json=body) as response:
        raw = await response.read()
    # llama-server's bytes: "data: " + compact JSON + a blank line, per event
    events = raw.split(b"\n\n")
    assert events[-1] == b"" and all(e.startswith(b'data: {"index":0,') for e in events[:-1])
    parsed = [json.loads(e[6:]) for e in events[:-1]]
    partials, final = parsed[:-1], parsed[-1]
    assert len(partials) > 3  # in pieces, not one event
    assert "".join(p["content"] for p in partials) == FAKE_TEXT
    assert list(partials[0]) == [
        "index", "content", "tokens", "stop", "id_slot", "tokens_predicted", "tokens_evaluated"
    ]  # fmt: skip
    assert all(p["stop"] is False and p["id_slot"] == 2 for p in partials)
    assert final["stop"] is True and final["content"] == "" and final["stop_type"] == "eos"
    assert final["timings"]["predicted_n"] == len(FAKE_TEXT)


async def test_t_max_predict_ms_stops_at_a_new_line_after_the_limit(
    http: aiohttp.ClientSession,
) -> None:
    lines = "".join(f"line{i}\n" for i in range(40))  # 240 characters at 10 ms each
    async with serve_http(GROUNDSPEC_FAKE_TEXT=lines, GROUNDSPEC_FAKE_DELAY_MS="10") as slow:
        body = {"input_prefix": "a = 1\n", "n_predict": 400, "t_max_predict_ms": 300}
        status, raw = await post(http, slow.url + "/infill", body)
    answer = json.loads(raw)
    assert status == 200 and answer["stop_type"] == "limit" and answer["truncated"] is False
    # stopped at the first new line after 300 ms, which it keeps, as llama-server does
    assert answer["content"].endswith("\n") and lines.startswith(answer["content"])
    assert 30 <= len(answer["content"]) < len(lines) // 2


async def _slot_lines(served: Served, at_least: int) -> list[str]:
    """The KV slots the fake engine logged, once there are `at_least` of them."""
    for _ in range(100):
        found = re.findall(r"fake completion in KV slot '([^']*)'", b"".join(served.log).decode())
        if len(found) >= at_least:
            return found
        await asyncio.sleep(0.02)
    raise AssertionError(f"only {len(found)} KV slot lines in the log")


async def test_each_client_and_file_reaches_an_engine_slot_of_its_own(
    server: Served, http: aiohttp.ClientSession
) -> None:
    # Two editors on one machine (one client address), typing in two files.
    file_a = "".join(f"def alpha_{i}(value):\n    return value * {i}\n" for i in range(30))
    file_b = "".join(f"const beta{i} = compute({i}, 'beta');\n" for i in range(30))
    before = len(await _slot_lines(server, 0))
    for prefix in (file_a, file_b, file_a + "x", file_b + "y"):
        body = {"input_prefix": prefix, "input_suffix": "\n", "n_predict": 2}
        assert (await post(http, server.url + "/infill", body))[0] == 200
    body = {"input_prefix": file_a, "n_predict": 2, "id_slot": 5}
    assert (await post(http, server.url + "/infill", body))[0] == 200
    a1, b1, a2, b2, own = (await _slot_lines(server, before + 5))[before : before + 5]
    assert a1 == a2 and b1 == b2 and a1 != b1
    assert a1.startswith("http peer:127.0.0.1 ") and own.startswith("http slot:5 ")


async def test_llama_vscode_chat_edit_is_a_refactor_of_the_selection(
    server: Served, http: aiohttp.ClientSession
) -> None:
    request = llama_vscode_edit("Add a docstring", ORIGINAL.rstrip("\n"))
    status, raw = await post(http, server.url + "/v1/chat/completions", request)
    assert status == 200
    body = json.loads(raw)
    # The fake refactor answers "# {instruction}\n{selection}".
    assert body["choices"][0]["message"] == {
        "role": "assistant",
        "content": "# Add a docstring\n" + ORIGINAL.rstrip("\n"),
    }
    assert body["object"] == "chat.completion" and body["usage"]["total_tokens"] > 0


async def test_llama_vim_instruct_edit_rewrites_only_the_selected_block(
    server: Served, http: aiohttp.ClientSession
) -> None:
    content = (
        "--- instruction ------------------------------------------------\n"
        "Add explanatory comments.\n"
        "--- range -------------------------------------------------------\n"
        "start_line: 2\nend_line: 2\n"
        "--- surrounding context (optional) -------------\n"
        "before:\n1: def compute(a, b):\nafter:\n3: print(compute(1, 2))\n"
        "--- selected block ---------------------------------------------\n"
        "2:     return a + b\n"
        "--- end --------------------------------------------------------"
    )
    request = {
        "messages": [
            {"role": "system", "content": "You are a code-editing assistant."},
            {"role": "user", "content": content},
        ]
    }
    status, raw = await post(http, server.url + "/v1/chat/completions", request)
    assert status == 200
    answer = json.loads(raw)["choices"][0]["message"]["content"]
    assert answer == "# Add explanatory comments.\n    return a + b\n"


async def test_a_plain_chat_is_answered_with_the_chat_template(
    server: Served, http: aiohttp.ClientSession
) -> None:
    # No edit asked: the chat (ChatML without the model's template) is completed raw.
    request = {"messages": [{"role": "user", "content": "hello, how are you?"}], "max_tokens": 5}
    status, raw = await post(http, server.url + "/v1/chat/completions", request)
    assert status == 200
    body = json.loads(raw)
    assert body["object"] == "chat.completion"
    choice = body["choices"][0]
    assert choice["message"] == {"role": "assistant", "content": FAKE_TEXT[:5]}
    assert choice["finish_reason"] == "length"
    prompt = "<|im_start|>user\nhello, how are you?<|im_end|>\n<|im_start|>assistant\n"
    assert body["usage"]["prompt_tokens"] == len(prompt)  # the fake counts characters


async def test_a_plain_chat_streams_its_tokens(server: Served, http: aiohttp.ClientSession) -> None:
    request = {"messages": [{"role": "user", "content": "hi"}], "stream": True}
    async with http.post(server.url + "/v1/chat/completions", json=request) as response:
        assert response.status == 200
        raw = (await response.read()).decode()
    events = [json.loads(line[6:]) for line in raw.splitlines() if line.startswith("data: {")]
    deltas = [e["choices"][0]["delta"] for e in events]
    assert deltas[0] == {"role": "assistant", "content": None}
    assert "".join(d.get("content") or "" for d in deltas) == FAKE_TEXT
    assert events[-1]["choices"][0]["finish_reason"] == "stop" and raw.rstrip().endswith("[DONE]")


# -- concurrency ----------------------------------------------------------------------------


SLOW = {"GROUNDSPEC_FAKE_TEXT": "x" * 400, "GROUNDSPEC_FAKE_DELAY_MS": "20"}  # 8 s uncancelled


async def test_requests_queue_on_the_one_engine_thread(http: aiohttp.ClientSession) -> None:
    async with serve_http(GROUNDSPEC_FAKE_TEXT="y" * 20, GROUNDSPEC_FAKE_DELAY_MS="10") as slow:
        bodies = [{"prompt": f"v{i} = ", "n_predict": 20} for i in range(4)]
        results = await asyncio.gather(*(post(http, slow.url + "/completion", b) for b in bodies))
    assert [status for status, _ in results] == [200] * 4
    assert {json.loads(raw)["content"] for _, raw in results} == {"y" * 20}


async def test_a_client_that_disconnects_cancels_its_request(http: aiohttp.ClientSession) -> None:
    async with serve_http(**SLOW) as slow:
        long = asyncio.create_task(
            post(http, slow.url + "/infill", {"input_prefix": "a = ", "n_predict": 400})
        )
        await asyncio.sleep(0.5)
        long.cancel()  # closes the connection, as curl does when llama.vim stops its job
        loop = asyncio.get_running_loop()
        started = loop.time()
        status, raw = await post(
            http, slow.url + "/infill", {"input_prefix": "b = ", "n_predict": 3}
        )
        waited = loop.time() - started
    assert (status, json.loads(raw)["content"]) == (200, "xxx")
    # Uncancelled, the first request would hold the engine thread for ~7.5 s more.
    assert waited < 4.0, f"the disconnected request kept the engine for {waited:.1f} s"


async def test_the_http_port_binds_loopback_by_default(server: Served) -> None:
    assert server.url.startswith("http://127.0.0.1:")
