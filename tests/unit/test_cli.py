"""The command line: bad input gives one clear line on stderr and a non-zero exit:
2 for a usage error, 1 for what could not be done (a model, a server, a file)."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest
from contract import STATS_KEYS

from lsp_server.cli import UsageError, cursor_offset, line_range, parse_location, read_source
from lsp_server.cli_common import CannotError
from speculator.models import check_same_vocab
from speculator.types import EngineError


def groundspec(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "lsp_server.cli", *args],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, **(env or {})},
    )


def assert_clean_error(
    proc: subprocess.CompletedProcess[str], words: str, code: int | None = None
) -> None:
    assert proc.returncode != 0
    if code is not None:
        assert proc.returncode == code, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    assert "Traceback" not in proc.stderr
    assert words in lines[0]


@pytest.fixture
def source(tmp_path: Path) -> Path:
    path = tmp_path / "a.py"
    path.write_text("def add(a, b):\n    return a + b\n")
    return path


def test_complete_json_has_the_contract_keys(source: Path) -> None:
    proc = groundspec("complete", f"{source}:2:5", "--json", "--fake")
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout)
    assert set(result) == {"text", "stats"}
    assert set(result["stats"]) == STATS_KEYS


def test_refactor_json_has_the_contract_keys(source: Path) -> None:
    proc = groundspec(
        "refactor", str(source), "--lines", "1-2", "--instruction", "rename", "--json", "--fake"
    )
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout)
    assert set(result) == {"newText", "range", "stats"}
    assert result["range"] == {
        "start": {"line": 0, "character": 0},
        "end": {"line": 2, "character": 0},
    }
    assert set(result["stats"]) == STATS_KEYS


def test_missing_file_exits_1(tmp_path: Path) -> None:
    proc = groundspec("complete", f"{tmp_path}/nope.py:1:1", "--fake")
    assert_clean_error(proc, "no such file", code=1)


def test_a_usage_error_exits_2(source: Path) -> None:
    assert_clean_error(groundspec("complete", f"{source}:x:1", "--fake"), "PATH:LINE:COL", code=2)
    proc = groundspec("complete", f"{source}:1:1", "--speculation", "fast", "--fake")
    assert proc.returncode == 2 and "invalid choice: 'fast'" in proc.stderr
    assert groundspec("models").returncode == 2  # the action is missing
    proc = groundspec("bench", "--modes", "off,warp")
    assert proc.returncode == 2 and "unknown mode(s) warp" in proc.stderr


def test_bad_line_and_column(source: Path) -> None:
    assert_clean_error(
        groundspec("complete", f"{source}:9:1", "--fake"), "past the end of the file"
    )
    assert_clean_error(groundspec("complete", f"{source}:1:99", "--fake"), "past the end of line 1")
    assert_clean_error(groundspec("complete", f"{source}:x:1", "--fake"), "PATH:LINE:COL")
    # "²".isdigit() is true, but int("²") fails
    assert_clean_error(groundspec("complete", f"{source}:²:1", "--fake"), "PATH:LINE:COL")
    proc = groundspec("refactor", str(source), "--lines", "1-²", "--instruction", "x", "--fake")
    assert_clean_error(proc, "--lines expects A-B")


def test_empty_and_binary_files(tmp_path: Path) -> None:
    empty = tmp_path / "e.py"
    empty.write_text("")
    assert_clean_error(groundspec("complete", f"{empty}:1:1", "--fake"), "is empty")
    binary = tmp_path / "b.py"
    binary.write_bytes(b"\x00\x01\x02abc")
    assert_clean_error(groundspec("complete", f"{binary}:1:1", "--fake"), "looks binary")


def test_a_nul_anywhere_in_the_file_is_binary_as_json_rpc_says(tmp_path: Path) -> None:
    """Only the first 8 KB were looked at, so a NUL later reached the engine (which
    refused it once the models had loaded; the fake engine completed it)."""
    late = tmp_path / "late.py"
    late.write_bytes(b"x = 1\n" * 2000 + b"y = '\x00'\n")
    with pytest.raises(CannotError, match="looks binary"):
        read_source(str(late))
    assert_clean_error(groundspec("complete", f"{late}:1:1", "--fake"), "looks binary")


def test_a_file_over_the_engines_limit_is_refused_before_the_models_load(tmp_path: Path) -> None:
    """A 2-5 MB file passed the CLI's byte limit and was refused by the engine
    only once the models had loaded."""
    big = tmp_path / "big.py"
    big.write_text("x = 1\n" * 500_000)  # 3,000,000 characters
    with pytest.raises(CannotError, match="too large"):
        read_source(str(big))
    assert_clean_error(groundspec("complete", f"{big}:1:1", "--fake"), "too large")
    wide = tmp_path / "wide.py"
    wide.write_text("# " + "\u00e9" * 1_500_000 + "\n")  # 3 MB of UTF-8, 1.5M characters
    assert len(read_source(str(wide))) == 1_500_003


@pytest.mark.skipif(not Path("/proc/self/mem").is_file(), reason="Linux /proc")
def test_a_file_that_cannot_be_read() -> None:
    # A regular file whose read fails (EIO), even for root, like a file without read permission.
    proc = groundspec("complete", "/proc/self/mem:1:1", "--fake")
    assert_clean_error(proc, "cannot read /proc/self/mem")


def test_a_byte_order_mark_is_not_part_of_the_text(tmp_path: Path) -> None:
    """Editors do not count the BOM in columns, nor show it in a selection."""
    bom = tmp_path / "bom.py"
    bom.write_bytes(b"\xef\xbb\xbfx = 1\ny = 2\n")
    assert_clean_error(groundspec("complete", f"{bom}:1:7", "--fake"), "past the end of line 1")
    proc = groundspec(
        "refactor", str(bom), "--lines", "1-1", "--instruction", "x", "--json", "--fake"
    )
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["newText"] == "# x\nx = 1\n"


def test_inverted_line_range(source: Path) -> None:
    proc = groundspec("refactor", str(source), "--lines", "2-1", "--instruction", "x", "--fake")
    assert_clean_error(proc, "invalid line range")


def test_line_range_past_the_last_line(source: Path) -> None:
    """The file has two lines: the empty rest after its final line break is not a third."""
    proc = groundspec("refactor", str(source), "--lines", "3", "--instruction", "x", "--fake")
    assert_clean_error(proc, "line 3 is past the end of the file (2 lines)")
    proc = groundspec("refactor", str(source), "--lines", "1-9", "--instruction", "x", "--fake")
    assert_clean_error(proc, "line 9 is past the end of the file (2 lines)")
    assert line_range("a\nb", "2") == (2, 3)
    assert line_range("a\r\nb\r\n", "2") == (3, 6)


@pytest.mark.parametrize(
    "flags, words",
    [
        (["--max-tokens", "0"], "--max-tokens must be between 1 and 8192, got 0"),
        (["--max-tokens", "-1"], "--max-tokens must be between 1 and 8192, got -1"),
        (["--max-tokens", "8193"], "--max-tokens must be between 1 and 8192, got 8193"),
        (["--temperature", "-1"], "--temperature must be between 0 and 2"),
        (["--temperature", "9"], "--temperature must be between 0 and 2"),
        (["--temperature", "nan"], "--temperature must be between 0 and 2"),
    ],
)
def test_bad_request_flags_are_refused_before_the_models_load(
    source: Path, flags: list[str], words: str
) -> None:
    assert_clean_error(groundspec("complete", f"{source}:1:1", *flags, "--fake"), words)
    proc = groundspec(
        "refactor", str(source), "--lines", "1-2", "--instruction", "x", *flags, "--fake"
    )
    assert_clean_error(proc, words)


def test_missing_model_file(source: Path, tmp_path: Path) -> None:
    proc = groundspec(
        "complete", f"{source}:2:5", "--target-model", str(tmp_path / "none.gguf"), "--no-draft"
    )
    assert_clean_error(proc, "model file not found", code=1)


def test_corrupt_model_file(source: Path, tmp_path: Path) -> None:
    bad = tmp_path / "bad.gguf"
    bad.write_bytes(b"GGUF" + b"\x03\x00\x00\x00" + os.urandom(4096))
    proc = groundspec("complete", f"{source}:2:5", "--target-model", str(bad), "--no-draft")
    assert_clean_error(proc, "could not load")
    notgguf = tmp_path / "text.gguf"
    notgguf.write_text("hello")
    proc = groundspec("complete", f"{source}:2:5", "--target-model", str(notgguf), "--no-draft")
    assert_clean_error(proc, "not a GGUF model file")


class _FakeModel:
    def __init__(self, n_vocab: int, name: str):
        self.n_vocab = n_vocab
        self.path = Path(name)

    def vocab_signature(self) -> tuple[int, tuple[bytes, ...]]:
        return self.n_vocab, (b"a",)


def test_wrong_vocabulary_is_refused() -> None:
    with pytest.raises(EngineError, match="different vocabulary"):
        check_same_vocab(_FakeModel(151936, "t.gguf"), _FakeModel(32000, "d.gguf"))  # type: ignore[arg-type]


def test_position_helpers() -> None:
    assert parse_location("C:/x/a.py:3:4") == ("C:/x/a.py", 3, 4)
    assert cursor_offset("ab\ncd\n", 2, 2) == 4
    assert line_range("a\nb\nc\n", "2-3") == (2, 6)
    with pytest.raises(UsageError):
        line_range("a\n", "0-1")


def test_models_path_fails_when_a_model_is_missing(tmp_path: Path) -> None:
    proc = groundspec("models", "path", env={"GROUNDSPEC_CACHE": str(tmp_path)})
    assert proc.returncode == 1
    assert len(proc.stdout.splitlines()) == 2  # the paths are still printed
    assert "groundspec models fetch" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_models_path_succeeds_when_both_models_are_there(tmp_path: Path) -> None:
    from speculator import provision

    for spec in provision.DEFAULT_MODELS:
        with (tmp_path / spec.file_name).open("wb") as f:
            f.truncate(spec.size)  # sparse: the right size, no disk used
    proc = groundspec("models", "path", env={"GROUNDSPEC_CACHE": str(tmp_path)})
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == [str(tmp_path / s.file_name) for s in provision.DEFAULT_MODELS]
    (tmp_path / provision.DEFAULT_MODELS[0].file_name).write_bytes(b"GGUF")
    assert groundspec("models", "path", env={"GROUNDSPEC_CACHE": str(tmp_path)}).returncode == 1


@pytest.mark.parametrize(
    "flags, words",
    [
        (["--tcp", "nohost"], "invalid --tcp address 'nohost'"),
        (["--tcp", "1.2.3.4:99999"], "invalid --tcp address"),
        (["--http", "80:x"], "invalid --http address"),
        (["--http", "0", "--tcp", "x"], "invalid --tcp address 'x'"),
        (["--log-file", "/nonexistent/dir/x.log"], "cannot write the log file /nonexistent/dir"),
    ],
)
def test_bad_serve_flags_are_one_line_errors(flags: list[str], words: str) -> None:
    assert_clean_error(groundspec("serve", *flags, "--fake"), words)


@pytest.mark.parametrize("mode", [["--tcp"], ["--http"], ["--http", "0", "--tcp"]])
def test_a_taken_port_is_a_one_line_error(mode: list[str]) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        proc = groundspec("serve", *mode, str(port), "--fake")
    assert_clean_error(proc, f"cannot listen on 127.0.0.1:{port}")


def test_python_m_lsp_server_checks_its_flags_too() -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "lsp_server", "--tcp", "nohost", "--fake"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert "invalid --tcp address 'nohost'" in proc.stderr


def test_a_remote_backend_that_is_down_is_one_line(source: Path) -> None:
    down = ["--backend", "llama-server", "--backend-url", "http://127.0.0.1:1"]
    proc = groundspec("complete", f"{source}:2:5", *down)
    assert_clean_error(proc, "cannot reach llama-server at http://127.0.0.1:1", code=1)


def test_models_verify_exits_1_when_a_model_is_missing(tmp_path: Path) -> None:
    proc = groundspec("models", "verify", env={"GROUNDSPEC_CACHE": str(tmp_path)})
    assert_clean_error(proc, "is not assembled yet: run `groundspec models fetch`", code=1)
