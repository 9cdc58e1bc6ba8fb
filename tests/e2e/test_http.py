"""`groundspec serve --http` over real HTTP, with requests shaped as llama.vim,
llama.vscode and the OpenAI Python client send them (fake engine)."""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import openai
import pytest
import pytest_asyncio

from .conftest import FAKE_TEXT
from .http_helpers import Served, serve_http

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
# llama.vscode's getFIMCompletion (src/llama-server.ts createRequestPayload).
LLAMA_VSCODE_FIM: dict[str, Any] = {
    "input_prefix": "function add(a, b) {\n",
    "input_suffix": "\n}\n",
    "input_extra": [{"text": "const x = 1;\n", "filename": "x.js"}],
    "prompt": "  return",
    "n_predict": 6,
    "top_k": 40,
    "top_p": 0.99,
    "stream": False,
    "samplers": ["top_k", "top_p", "infill"],
    "cache_prompt": True,
    "n_indent": 2,
    "t_max_prompt_ms": 500,
    "t_max_predict_ms": 2500,
}
VSCODE_EDIT_PROMPT = (
    "Modify the following original code according to the instructions. Output only the "
    "modified code. No explanations.\n\ninstructions:\n{instructions}\n\noriginal code:\n"
    "{original}\n\nmodified code:"
)
ORIGINAL = "def f(x):\n    return x * 2\n"


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


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def server() -> AsyncIterator[Served]:
    async with serve_http() as served:
        yield served


@pytest_asyncio.fixture(loop_scope="module")
async def http() -> AsyncIterator[aiohttp.ClientSession]:
    async with aiohttp.ClientSession() as session:
        yield session


async def post(
    http: aiohttp.ClientSession, url: str, body: Any, *, raw: bytes | None = None
) -> tuple[int, bytes]:
    data = raw if raw is not None else json.dumps(body).encode()
    headers = {"Content-Type": "application/json"}
    async with http.post(url, data=data, headers=headers) as response:
        return response.status, await response.read()


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


# -- the OpenAI Python client -----------------------------------------------------------


@pytest.fixture
def client(server: Served) -> openai.AsyncOpenAI:
    return openai.AsyncOpenAI(base_url=server.url + "/v1", api_key="unused", max_retries=0)


async def test_openai_completion_with_suffix_is_fim(client: openai.AsyncOpenAI) -> None:
    result = await client.completions.create(
        model="groundspec", prompt="def f():\n    return ", suffix="\n", max_tokens=5
    )
    assert [c.text for c in result.choices] == [FAKE_TEXT[:5]]
    assert result.choices[0].finish_reason == "length"
    assert result.usage is not None and result.usage.completion_tokens == 5
    assert result.usage.total_tokens == result.usage.prompt_tokens + 5


async def test_openai_completion_of_zero_tokens_predicts_nothing(
    client: openai.AsyncOpenAI,
) -> None:
    """max_tokens 0 with echo asks for the prompt alone (as /infill's n_predict 0)."""
    result = await client.completions.create(
        model="groundspec", prompt="x = ", max_tokens=0, echo=True
    )
    assert [(c.text, c.finish_reason) for c in result.choices] == [("x = ", "length")]
    assert result.usage is not None and result.usage.completion_tokens == 0
    stream = await client.completions.create(
        model="groundspec", prompt="x = ", max_tokens=0, stream=True
    )
    chunks = [chunk async for chunk in stream]
    assert "".join(c.text for chunk in chunks for c in chunk.choices) == ""
    assert chunks[-1].choices[0].finish_reason == "length"


async def test_openai_completion_n_and_several_prompts(client: openai.AsyncOpenAI) -> None:
    result = await client.completions.create(
        model="groundspec", prompt=["a = ", "b = "], max_tokens=64, n=2
    )
    assert [c.index for c in result.choices] == [0, 1, 2, 3]
    assert {c.text for c in result.choices} == {FAKE_TEXT}
    assert {c.finish_reason for c in result.choices} == {"stop"}


async def test_openai_completion_streams(client: openai.AsyncOpenAI) -> None:
    stream = await client.completions.create(
        model="groundspec",
        prompt="x = ",
        max_tokens=64,
        stream=True,
        stream_options={"include_usage": True},
    )
    chunks = [chunk async for chunk in stream]
    assert "".join(c.text for chunk in chunks for c in chunk.choices) == FAKE_TEXT
    assert len(chunks) > 4  # streamed in pieces
    assert chunks[-2].choices[0].finish_reason == "stop"
    assert chunks[-1].usage is not None and chunks[-1].usage.completion_tokens == len(FAKE_TEXT)


async def test_openai_models_lists_one_model(client: openai.AsyncOpenAI) -> None:
    models = [m async for m in client.models.list()]
    assert [m.id for m in models] == ["groundspec"]


async def test_openai_chat_edit_of_a_fenced_selection(client: openai.AsyncOpenAI) -> None:
    result = await client.chat.completions.create(
        model="groundspec",
        messages=[{"role": "user", "content": f"Rename x to y\n```python\n{ORIGINAL}```"}],
    )
    assert result.choices[0].message.content == "# Rename x to y\n" + ORIGINAL


async def test_openai_chat_edit_streams(client: openai.AsyncOpenAI) -> None:
    stream = await client.chat.completions.create(
        model="groundspec",
        messages=[{"role": "user", "content": f"Rename x\n```\n{ORIGINAL}```"}],
        stream=True,
    )
    text = "".join([c.choices[0].delta.content or "" async for c in stream if c.choices])
    assert text == "# Rename x\n" + ORIGINAL


async def test_openai_client_sees_a_bad_request_error(client: openai.AsyncOpenAI) -> None:
    with pytest.raises(openai.BadRequestError) as error:
        await client.completions.create(model="groundspec", prompt="x", max_tokens=5, n=50)
    assert "n" in str(error.value)


# -- bad input ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "path, raw, needle",
    [
        ("/infill", b'{"input_prefix": "def f(', "not valid JSON"),
        ("/infill", b'{"input_prefix": 5}', "$.input_prefix"),
        ("/infill", b'{"n_predict": "many"}', "$.n_predict"),
        ("/infill", b'{"input_extra": [{"text": 1}]}', "$.input_extra[0].text"),
        ("/infill", b"[1, 2]", "JSON object"),
        ("/infill", b"\xff\xfe{}", "not valid UTF-8"),
        ("/infill", b'{"input_prefix": "caf\xe9"}', "not valid UTF-8"),
        ("/completion", b"{}", "prompt"),
        ("/completion", b'{"prompt": "x", "temperature": -1}', "$.temperature"),
        ("/v1/completions", b'{"prompt": 3}', '"prompt" must be a string'),
        ("/v1/completions", b'{"prompt": []}', "prompt is empty"),
        ("/v1/chat/completions", b'{"messages": []}', "$.messages"),
        ("/v1/chat/completions", b'{"messages": [{"content": "x"}]}', "role"),
    ],
)
async def test_bad_input_gets_a_400_with_a_clear_message(
    server: Served, http: aiohttp.ClientSession, path: str, raw: bytes, needle: str
) -> None:
    status, body = await post(http, server.url + path, None, raw=raw)
    assert status == 400
    error = json.loads(body)["error"]
    assert error["code"] == 400 and error["type"] == "invalid_request_error"
    assert needle in error["message"]


async def test_a_body_that_does_not_decompress_is_a_400(
    server: Served, http: aiohttp.ClientSession
) -> None:
    headers = {"Content-Type": "application/json", "Content-Encoding": "gzip"}
    for path in ("/infill", "/completion", "/v1/completions"):
        async with http.post(server.url + path, data=b"hello", headers=headers) as response:
            assert response.status == 400, path
            assert "cannot read the request body" in (await response.json())["error"]["message"]


async def test_nothing_to_predict_streams_when_asked(
    server: Served, http: aiohttp.ClientSession
) -> None:
    for path in ("/infill", "/completion"):
        body = {"input_prefix": "x = ", "prompt": "", "n_predict": 0, "stream": True}
        async with http.post(server.url + path, json=body) as response:
            assert response.headers["Content-Type"].startswith("text/event-stream"), path
            text = await response.text()
        events = [json.loads(line[6:]) for line in text.split("\n\n") if line]
        assert [(e["content"], e["stop"]) for e in events] == [("", True)], path


async def test_huge_body_is_refused_with_413(server: Served, http: aiohttp.ClientSession) -> None:
    huge = json.dumps({"input_prefix": "x" * (9 * 1024 * 1024)}).encode()
    status, body = await post(http, server.url + "/infill", None, raw=huge)
    assert status == 413
    assert "too large" in json.loads(body)["error"]["message"]


TOO_LONG = "x" * 2_000_001  # over maxDocumentChars (2,000,000), under the 8 MiB body limit


@pytest.mark.parametrize("stream", [False, True])
@pytest.mark.parametrize(
    "path, body",
    [
        ("/infill", {"input_prefix": "a = 1\x00\n", "n_predict": 8}),
        ("/infill", {"input_prefix": TOO_LONG, "n_predict": 8}),
        ("/infill", {"input_prefix": "a = 1\x00\n", "n_predict": 0}),
        ("/completion", {"prompt": TOO_LONG, "n_predict": 0}),
        ("/completion", {"prompt": "a = 1\x00\n"}),
        ("/completion", {"prompt": TOO_LONG}),
        ("/v1/completions", {"prompt": ["ok", "a = 1\x00\n"]}),
        ("/v1/completions", {"prompt": "a = 1", "suffix": TOO_LONG}),
        (
            "/v1/chat/completions",
            {"messages": [{"role": "user", "content": "Fix\n```\n\x00\n```"}]},
        ),
        (
            "/v1/chat/completions",
            {"messages": [{"role": "user", "content": f"Fix\n```\n{TOO_LONG}\n```"}]},
        ),
    ],
)
async def test_binary_or_huge_text_is_refused_with_a_400_as_json_rpc_does(
    server: Served, http: aiohttp.ClientSession, path: str, body: dict[str, Any], stream: bool
) -> None:
    """groundspec/complete refuses text with NUL bytes or over maxDocumentChars; HTTP
    took it (a streamed request got a 200 and, from a real engine, an error event)."""
    status, raw = await post(http, server.url + path, body | {"stream": stream})
    assert status == 400, raw[:200]
    error = json.loads(raw)["error"]
    assert error["code"] == 400 and error["type"] == "invalid_request_error"
    assert "binary" in error["message"] or "too large" in error["message"]


async def test_unknown_path_and_method(server: Served, http: aiohttp.ClientSession) -> None:
    async with http.get(server.url + "/nope") as response:
        assert response.status == 404
        assert (await response.json())["error"]["type"] == "not_found_error"
    async with http.get(server.url + "/infill") as response:
        assert response.status == 405
        assert (await response.json())["error"]["code"] == 405


async def test_server_survives_a_barrage_of_bad_requests(
    server: Served, http: aiohttp.ClientSession
) -> None:
    bad = [b"", b"{", b"\x00\x01", b'{"prompt": "\\ud800"}', b'{"input_extra": 7}', b"null"]
    for raw in bad * 5:
        status, _ = await post(http, server.url + "/infill", None, raw=raw)
        assert 400 <= status < 500
    status, raw = await post(http, server.url + "/infill", LLAMA_VSCODE_FIM)
    assert status == 200 and json.loads(raw)["content"] == FAKE_TEXT[:6]
    assert server.process.returncode is None
    assert b"Traceback" not in b"".join(server.log)


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
