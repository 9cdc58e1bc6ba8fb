"""The script client and its examples against the real `groundspec serve` (fake engine)."""

from __future__ import annotations

import os
import shlex
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from groundspec_client import (
    Client,
    GroundspecError,
    Message,
    MessageType,
    NextEdit,
    Progress,
    apply_edit,
    start,
)
from next_edit_sample import PLUGINS
from server_command import server_cmd

ROOT = Path(__file__).resolve().parents[2]
CLIENT_DIR = ROOT / "clients" / "python"


SERVER = server_cmd()
pytestmark = pytest.mark.skipif(SERVER is None, reason="groundspec is not installed")

FAKE_ENV = {
    "GROUNDSPEC_FAKE_ENGINE": "1",
    "GROUNDSPEC_FAKE_TEXT": "fake_completion()",
    "XDG_CONFIG_HOME": "/nonexistent-groundspec-test",
}


@pytest.fixture
def client(tmp_path: Path) -> Iterator[Client]:
    assert SERVER is not None
    with Client.spawn(SERVER, env=FAKE_ENV, root=tmp_path, timeout=30) as gs:
        yield gs


def test_initialize_advertises_inline_completion(client: Client) -> None:
    assert "inlineCompletionProvider" in client.capabilities  # options object, maybe {}


def test_complete_text(client: Client) -> None:
    result = client.complete(text="def add(a, b):\n    return ", line=1, character=11)
    assert result.text == "fake_completion()"
    assert result.stats.generated_tokens > 0


def test_complete_file_and_max_tokens(client: Client, tmp_path: Path) -> None:
    source = tmp_path / "m.py"
    source.write_text("x = \n", encoding="utf-8")
    result = client.complete(path=source, line=0, character=4, max_tokens=4)
    assert result.text == "fake"


def test_refactor_and_stats(client: Client) -> None:
    text = "def f():\n    return 1\n"
    result = client.refactor(text=text, start=(0, 0), end=(2, 0), instruction="rename f to g")
    assert result.new_text.startswith("# rename f to g\n")
    assert (result.range.start.line, result.range.end.line) == (0, 2)
    assert result.range.end.character == 0
    stats = client.stats()
    assert stats.requests == 1
    assert stats.server.engine_state == "ready"


def test_next_edit_learns_from_update_document(client: Client, tmp_path: Path) -> None:
    """A rename typed on the last line (sent as one ranged didChange) is carried to the
    lines above by groundspec/nextEdit (the fake engine carries the last edit on)."""
    source = tmp_path / "plugins.py"
    source.write_text(PLUGINS, encoding="utf-8")
    client.open_document(source)
    renamed = PLUGINS.replace("getattr(plugin, name)", "getattr(plugin, attr_name)")
    client.update_document(source, renamed)
    line = renamed.splitlines()[5]
    result = client.next_edit(
        source, line=5, character=line.index("attr_name") + 9, speculation="off"
    )
    assert isinstance(result, NextEdit) and result.stats.speculation == "off"
    text = renamed
    for edit in sorted(
        result.edits, key=lambda e: (e.range.start.line, e.range.start.character), reverse=True
    ):
        text = apply_edit(text, edit.range, edit.new_text)
    assert text == PLUGINS.replace("name", "attr_name")


def wait_until(what: str, check: Callable[[], bool], timeout: float = 20) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.05)


def test_model_loading_progress_reaches_the_callback(tmp_path: Path) -> None:
    """The server reports the load as $/progress under groundspec/load; the fake engine
    loads at once, so begin and end both arrive."""
    assert SERVER is not None
    seen: list[Progress] = []
    with Client.spawn(SERVER, env=FAKE_ENV, root=tmp_path, timeout=30, on_progress=seen.append):
        wait_until("the end of the load", lambda: any(p.kind == "end" for p in seen))
    load = [p for p in seen if p.token == "groundspec/load"]
    assert load[0].kind == "begin" and load[0].message == "Loading models"
    assert load[-1].kind == "end" and load[-1].message == "Models ready"
    print("progress:", [p.describe() for p in seen])


def test_a_failed_load_reaches_on_message_with_its_fix(tmp_path: Path) -> None:
    assert SERVER is not None
    env = {
        "GROUNDSPEC_TARGET_MODEL": str(tmp_path / "missing.gguf"),
        "XDG_CONFIG_HOME": "/nonexistent-groundspec-test",
    }
    shown: list[Message] = []
    seen: list[Progress] = []
    with Client.spawn(
        SERVER, env=env, root=tmp_path, timeout=30, on_message=shown.append, on_progress=seen.append
    ):
        wait_until("window/showMessage", lambda: bool(shown), 60)
    assert shown[0].type == MessageType.ERROR
    assert "GROUNDSPEC_TARGET_MODEL" in shown[0].message  # the fix names the setting
    assert [p.message for p in seen if p.kind == "end"] == ["Model loading failed"]


def test_bad_position_is_an_error_not_a_hang(client: Client) -> None:
    with pytest.raises(GroundspecError):
        client.complete(text="x", line=7, character=99)


def test_connect_over_tcp(tmp_path: Path) -> None:
    assert SERVER is not None
    with socket.socket() as probe:  # a free port
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    server = subprocess.Popen(
        [*SERVER, "--tcp", f"127.0.0.1:{port}"], env={**os.environ, **FAKE_ENV}
    )
    try:
        deadline = time.monotonic() + 20
        while True:
            try:
                client = start(f"127.0.0.1:{port}", root=tmp_path, timeout=30)
                break
            except ConnectionRefusedError:
                assert time.monotonic() < deadline, "the server did not listen"
                time.sleep(0.1)
        with client:
            result = client.complete(text="x = ", line=0, character=4)
            assert result.text == "fake_completion()"
    finally:
        server.terminate()
        server.wait(10)


def run_example(name: str, *args: str) -> subprocess.CompletedProcess[str]:
    assert SERVER is not None
    return subprocess.run(
        [
            sys.executable,
            str(CLIENT_DIR / "examples" / name),
            *args,
            "--server",
            shlex.join(SERVER),
        ],
        env={**os.environ, **FAKE_ENV},
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_complete_todos_prints_a_diff(tmp_path: Path) -> None:
    source = tmp_path / "todo.py"
    source.write_text("def f():\n    # TODO: return the answer\n\nx = 1  # not a TODO line\n")
    proc = run_example("complete_todos.py", str(source))
    assert proc.returncode == 0, proc.stderr
    added = [
        line for line in proc.stdout.splitlines() if line.startswith("+") and "+++" not in line
    ]
    assert added == ["+    fake_completion()"]
    assert "TODO: return" in source.read_text()  # not written without --write


def test_refactor_functions_writes_every_function(tmp_path: Path) -> None:
    source = tmp_path / "funcs.py"
    source.write_text(
        "import os\n\n\n@decorator\ndef a():\n    return 1\n\n\nasync def b():\n    pass\n"
    )
    proc = run_example("refactor_functions.py", str(source), "--instruction", "add docs", "--write")
    assert proc.returncode == 0, proc.stderr
    assert source.read_text() == (
        "import os\n\n\n# add docs\n@decorator\ndef a():\n    return 1\n\n\n"
        "# add docs\nasync def b():\n    pass\n"
    )
