"""Scripts driving the daemon with groundspec/* methods, with and without didOpen."""

from __future__ import annotations

import pytest
from contract import STATS_KEYS
from pygls.exceptions import JsonRpcException
from pytest_lsp import LanguageClient

from .conftest import FAKE_TEXT
from .helpers import SOURCE, call, open_doc


async def test_complete_with_inline_text(client: LanguageClient) -> None:
    out = await call(
        client,
        "groundspec/complete",
        {
            "text": "x = 😀\ny = ",
            "languageId": "python",
            "position": {"line": 1, "character": 4},
            "maxTokens": 4,
            "speculation": "off",
        },
    )
    assert out["text"] == FAKE_TEXT[:4]
    assert set(out["stats"]) == STATS_KEYS
    assert out["stats"]["promptTokens"] == len("x = 😀\ny = ")  # the fake counts chars
    assert out["stats"]["speculation"] == "off"


async def test_complete_an_open_document(client: LanguageClient) -> None:
    open_doc(client, "file:///s/a.py")
    out = await call(
        client,
        "groundspec/complete",
        {"textDocument": {"uri": "file:///s/a.py"}, "position": {"line": 2, "character": 11}},
    )
    assert out["text"] == FAKE_TEXT


async def test_refactor_with_inline_text(client: LanguageClient) -> None:
    out = await call(
        client,
        "groundspec/refactor",
        {
            "text": SOURCE,
            "range": {"start": {"line": 2, "character": 4}, "end": {"line": 2, "character": 10}},
            "instruction": "Rename",
        },
    )
    assert out["newText"] == "# Rename\nreturn"
    assert out["range"] == {
        "start": {"line": 2, "character": 4},
        "end": {"line": 2, "character": 10},
    }
    assert set(out["stats"]) == STATS_KEYS


async def test_stats_count_headless_requests(client: LanguageClient) -> None:
    for _ in range(3):
        await call(
            client, "groundspec/complete", {"text": "a", "position": {"line": 0, "character": 1}}
        )
    totals = await call(client, "groundspec/stats", {})
    assert totals["requests"] == 3
    assert totals["generatedTokens"] == 3 * len(FAKE_TEXT)
    assert totals["server"]["cacheHits"] == 0  # headless requests always run the engine


@pytest.mark.parametrize(
    "params, message",
    [
        ({"position": {"line": 0, "character": 0}}, "textDocument"),
        ({"text": "a", "position": {"line": 5, "character": 0}}, "out of range"),
        ({"text": "a", "position": {"line": -1, "character": 0}}, "invalid params"),
        ({"text": "a"}, "position"),
        (
            {
                "textDocument": {"uri": "file:///never-opened.py"},
                "position": {"line": 0, "character": 0},
            },
            "unknown document",
        ),  # noqa: E501
        (
            {"text": "a", "position": {"line": 0, "character": 0}, "speculation": "warp"},
            "speculation",
        ),  # noqa: E501
    ],
)
async def test_bad_headless_params_get_clear_errors(
    client: LanguageClient, params: dict, message: str
) -> None:
    with pytest.raises(JsonRpcException, match=message):
        await call(client, "groundspec/complete", params)
    # ...and the server keeps answering.
    assert (await call(client, "groundspec/stats", {}))["requests"] == 0
