"""The script client and its examples against the real `groundspec serve` (fake engine)."""

from __future__ import annotations

import json
import os
import shlex
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
CLIENT_DIR = ROOT / "clients" / "python"
sys.path.insert(0, str(CLIENT_DIR))

from groundspec_client import Client, GroundspecError, start  # noqa: E402


def server_cmd() -> list[str] | None:
    if os.environ.get("GROUNDSPEC_TEST_SERVER_CMD"):
        return list(json.loads(os.environ["GROUNDSPEC_TEST_SERVER_CMD"]))
    beside_python = Path(sys.executable).parent / "groundspec"
    found = str(beside_python) if beside_python.exists() else shutil.which("groundspec")
    return [found, "serve"] if found else None


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
    assert result["text"] == "fake_completion()"
    assert result["stats"]["generatedTokens"] > 0


def test_complete_file_and_max_tokens(client: Client, tmp_path: Path) -> None:
    source = tmp_path / "m.py"
    source.write_text("x = \n", encoding="utf-8")
    result = client.complete(path=source, line=0, character=4, max_tokens=4)
    assert result["text"] == "fake"


def test_refactor_and_stats(client: Client) -> None:
    text = "def f():\n    return 1\n"
    result = client.refactor(text=text, start=(0, 0), end=(2, 0), instruction="rename f to g")
    assert result["newText"].startswith("# rename f to g\n")
    assert result["range"] == {
        "start": {"line": 0, "character": 0},
        "end": {"line": 2, "character": 0},
    }
    stats = client.stats()
    assert stats["requests"] == 1


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
            assert result["text"] == "fake_completion()"
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
