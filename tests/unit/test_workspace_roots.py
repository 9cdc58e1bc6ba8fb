"""Which workspace roots the index may scan (lsp_server/roots.py), and that HTTP
requests get workspace snippets only when configured."""

from __future__ import annotations

from pathlib import Path

import pytest

from lsp_server.http_asks import completion_asks
from lsp_server.http_wire import CompletionBody
from lsp_server.options import ServerOptions, StartupConfig
from lsp_server.roots import RootPolicy
from lsp_server.service import CompletionService
from speculator.pipeline import prepare_completion
from speculator.types import CompletionRequest, Snippet

HOME = "/home/ada"


@pytest.mark.parametrize(
    "root, says",
    [
        ("/", "whole file system"),
        ("/etc", "system folder (/etc)"),
        ("/usr/lib/python3", "system folder (/usr)"),
        ("/proc/1", "system folder (/proc)"),
        ("/var", "other users' or programs' files"),
        ("/home", "other users' or programs' files"),
        (HOME, "home folder itself"),
        (HOME + "/", "home folder itself"),
    ],
)
def test_never_indexed_whoever_asks(root: str, says: str) -> None:
    problem = RootPolicy().problem(root, home=HOME)
    assert problem is not None and says in problem and root in problem


def test_a_project_is_indexed(tmp_path: Path) -> None:
    assert RootPolicy().problem(str(tmp_path), home=HOME) is None
    assert RootPolicy().problem("/var/www/site", home=HOME) is None
    assert RootPolicy().problem(HOME + "/src/app", home=HOME) is None


def test_a_confined_server_indexes_only_under_its_folders(tmp_path: Path) -> None:
    start, listed, other = tmp_path / "start", tmp_path / "listed", tmp_path / "other"
    policy = RootPolicy([str(start), str(listed)], confined=True)
    assert policy.problem(str(start)) is None
    assert policy.problem(str(start / "sub" / "project")) is None
    assert policy.problem(str(listed)) is None
    problem = policy.problem(str(other))
    assert problem is not None and "outside the folders" in problem and str(start) in problem
    # A path that climbs out is judged where it lands.
    assert policy.problem(str(start / ".." / "other")) is not None
    assert RootPolicy([str(start)], confined=False).problem(str(other)) is None


def test_the_service_refuses_a_root_and_says_why_once() -> None:
    service = CompletionService(StartupConfig(options=ServerOptions()))
    assert service.admit_root("/") is None
    assert len(service.problems) == 1 and "whole file system" in service.problems[0]
    assert "completions still work" in service.problems[0]
    assert service.admit_root(None) is None and len(service.problems) == 1


def test_config_file_roots_widen_a_confined_server(tmp_path: Path) -> None:
    options = ServerOptions(workspace_roots=[str(tmp_path)])
    service = CompletionService(StartupConfig(options=options))
    service.roots.confined = True
    assert service.admit_root(str(tmp_path / "app")) == str(tmp_path / "app")
    assert service.admit_root("/opt/elsewhere/app") is None


class Provider:
    def __init__(self) -> None:
        self.asked = 0

    def related(self, path: str | None, query: str, limit: int) -> list[Snippet]:
        self.asked += 1
        return [Snippet(path="secret.py", text="API_TOKEN = 'x'\n")]


def test_a_request_without_workspace_context_never_asks_the_index() -> None:
    provider = Provider()
    extra = [Snippet(path="sent.py", text="def sent(): pass\n")]
    request = CompletionRequest(text="x = ", cursor=4, extra_context=extra, workspace_context=False)
    assert prepare_completion(request, 0.0, provider).context() == extra
    assert provider.asked == 0
    with_index = CompletionRequest(text="x = ", cursor=4)
    assert [s.path for s in prepare_completion(with_index, 0.0, provider).context()] == [
        "secret.py"
    ]


@pytest.mark.parametrize("configured", [False, True])
def test_http_requests_follow_http_workspace_context(configured: bool) -> None:
    options = ServerOptions(http_workspace_context=configured)
    (ask,) = completion_asks(CompletionBody(prompt="x = "), ["x = "], options)
    assert ask.completion is not None
    assert ask.completion.workspace_context is configured
