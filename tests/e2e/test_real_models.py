"""The daemon with the real default models (marked `model`; deselect with -m 'not model')."""

from __future__ import annotations

import sys

import pytest
import pytest_lsp
from lsprotocol import types
from pytest_lsp import ClientServerConfig, LanguageClient, client_capabilities

from .conftest import record_edits, server_env
from .helpers import call, change, inline, open_doc, pos, rng

pytestmark = pytest.mark.model

URI = "file:///work/project/shapes.py"
SOURCE = """import math


class Circle:
    def __init__(self, radius: float) -> None:
        self.radius = radius

    def area(self) -> float:
        return math.pi * self.radius ** 2

    def perimeter(self) -> float:
        return 
"""


@pytest_lsp.fixture(
    config=ClientServerConfig(
        server_command=[sys.executable, "-m", "lsp_server"],
        server_env={**server_env(), "GROUNDSPEC_FAKE_ENGINE": "0"},
    )
)
async def real(lsp_client: LanguageClient):
    record_edits(lsp_client)
    await lsp_client.initialize_session(
        types.InitializeParams(
            capabilities=client_capabilities("visual-studio-code"),
            initialization_options={"debounceMs": 0, "maxTokens": 12},
        )
    )
    yield
    await lsp_client.shutdown_session()


async def test_inline_completion_and_kv_reuse_across_a_keystroke(real: LanguageClient) -> None:
    open_doc(real, URI, SOURCE)
    first = await inline(real, URI, pos(11, 15))
    assert first.items and first.items[0].insert_text.strip()
    # A keystroke that does not match the suggestion: the engine runs again and
    # reuses the cached prompt instead of evaluating it all.
    change(real, URI, 2, rng((11, 15), (11, 15)), "(")
    headless = await call(
        real,
        "groundspec/complete",
        {"textDocument": {"uri": URI}, "position": {"line": 11, "character": 16}, "maxTokens": 8},
    )
    stats = headless["stats"]
    assert stats["promptTokens"] > 0
    assert stats["reusedPromptTokens"] > stats["promptTokens"] // 2
    kinds = [value.kind for value in real.progress_reports["groundspec/load"]]
    assert kinds[0] == "begin" and kinds[-1] == "end"
