"""What the server is doing: a noticeable warm-up is shown as $/progress."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
import pytest_lsp
from lsprotocol import types
from pytest_lsp import ClientServerConfig, LanguageClient, client_capabilities

from .conftest import CLIENTS, SERVER, server_env, start_session
from .helpers import eventually, inline, open_doc, pos, stats

URI = "file:///work/project/warm.py"


def warm_reports(client: LanguageClient) -> dict[Any, list[Any]]:
    return {
        token: values
        for token, values in client.progress_reports.items()
        if str(token).startswith("groundspec/warm")
    }


def ended(client: LanguageClient) -> bool:
    # A token is in the reports from window/workDoneProgress/create on, before its "begin".
    reports = warm_reports(client)
    return bool(reports) and all(values and values[-1].kind == "end" for values in reports.values())


@pytest_lsp.fixture(
    config=ClientServerConfig(
        server_command=SERVER, server_env=server_env(GROUNDSPEC_FAKE_WARM_MS="1000")
    ),
    params=CLIENTS,
)
async def warming(lsp_client: LanguageClient, request: pytest.FixtureRequest):
    """A fake engine whose warm-up takes a second, like a new file's prompt."""
    await start_session(lsp_client, request.param)
    yield
    await lsp_client.shutdown_session()


@pytest_lsp.fixture(
    config=ClientServerConfig(
        server_command=SERVER, server_env=server_env(GROUNDSPEC_FAKE_WARM_MS="1000")
    )
)
async def rewarming(lsp_client: LanguageClient):
    """Warm-ups of a second, resumed 0.2 s after a completion or an edit."""
    await start_session(lsp_client, "neovim", {"idleWarmMs": 200})
    yield
    await lsp_client.shutdown_session()


@pytest_lsp.fixture(config=ClientServerConfig(server_command=SERVER, server_env=server_env()))
async def quick(lsp_client: LanguageClient):
    """The fake engine's warm-up takes no time, like a keystroke's."""
    await start_session(lsp_client, "visual-studio-code")
    yield
    await lsp_client.shutdown_session()


@pytest_lsp.fixture(
    config=ClientServerConfig(
        server_command=SERVER, server_env=server_env(GROUNDSPEC_FAKE_WARM_MS="1000")
    )
)
async def no_progress(lsp_client: LanguageClient):
    """A client that does not support workDoneProgress."""
    capabilities = client_capabilities("visual-studio-code")
    capabilities.window = types.WindowClientCapabilities(work_done_progress=False)
    await lsp_client.initialize_session(
        types.InitializeParams(
            capabilities=capabilities, initialization_options={"debounceMs": 0, "idleWarmMs": 0}
        )
    )
    yield
    await lsp_client.shutdown_session()


async def test_a_long_warm_up_after_open_is_shown_then_ended(warming: LanguageClient) -> None:
    open_doc(warming, URI)
    await eventually(lambda: ended(warming), timeout=5)
    [(token, values)] = warm_reports(warming).items()
    assert [v.kind for v in values] == ["begin", "end"]
    assert values[0].title == "groundspec" and values[0].message == "Warming the cache"
    assert values[-1].message == "Cache warm"
    assert (await stats(warming))["server"]["warms"] == 1


async def test_a_completion_interrupts_the_warm_up_and_ends_its_progress(
    warming: LanguageClient,
) -> None:
    open_doc(warming, URI)
    await eventually(lambda: bool(warm_reports(warming)), timeout=5)
    assert (await inline(warming, URI, pos(2, 11))).items  # cancels the warm-up
    await eventually(lambda: ended(warming), timeout=5)
    [values] = warm_reports(warming).values()
    assert values[-1].message == "Warm-up interrupted"


async def test_the_warm_up_resumes_after_a_completion_and_is_shown(
    rewarming: LanguageClient,
) -> None:
    """Issue 12: the first completion on an unseen file comes from the quick window
    and interrupts didOpen's warm-up; the full prompt goes on warming, shown."""
    open_doc(rewarming, URI)
    await eventually(lambda: bool(warm_reports(rewarming)), timeout=5)
    assert (await inline(rewarming, URI, pos(2, 11))).items
    await eventually(lambda: len(warm_reports(rewarming)) == 2 and ended(rewarming), timeout=5)
    first, second = warm_reports(rewarming).values()
    assert first[-1].message == "Warm-up interrupted"
    assert [v.kind for v in second] == ["begin", "end"] and second[-1].message == "Cache warm"


async def test_a_quick_warm_up_is_not_shown(quick: LanguageClient) -> None:
    open_doc(quick, URI)
    await asyncio.sleep(1.0)  # the warm-up ran, and the threshold passed
    # One warm-up, or two when the models finish loading after didOpen (a slow machine).
    assert (await stats(quick))["server"]["warms"] >= 1
    assert warm_reports(quick) == {}


async def test_no_warm_progress_without_client_support(no_progress: LanguageClient) -> None:
    open_doc(no_progress, URI)
    await asyncio.sleep(1.5)  # the warm-up runs and ends meanwhile
    assert (await stats(no_progress))["server"]["warms"] == 1
    assert no_progress.progress_reports == {}
