"""`groundspec serve --http` through the OpenAI Python client: completions (FIM
with a suffix, several prompts and choices, streamed, zero tokens), the model list,
chat edits of a fenced selection, and a bad request as the client's error (fake engine)."""

from __future__ import annotations

import openai
import pytest

from .conftest import FAKE_TEXT
from .http_fixtures import ORIGINAL, server
from .http_helpers import Served

__all__ = ["server"]  # the fixture: the module's server


# One server for the module, on the module's event loop.
pytestmark = pytest.mark.asyncio(loop_scope="module")


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
