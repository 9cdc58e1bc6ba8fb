"""Every command in README.md is run as written, by a test here or by CI (.ci/run).

- The test command is .ci/run's steps, in order.
- The main job's install steps are CI's (with fewer extras); `groundspec demo` is run
  by tests/model/test_demo_as_in_readme.py.
- The `groundspec complete`/`refactor` lines run here on the fake engine
  (GROUNDSPEC_FAKE_ENGINE=1), on an app.py made for them.
- Every other `groundspec ...` the README names is accepted by the real parser.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

from lsp_server.cli import build_parser
from lsp_server.reference import ENVIRONMENT

ROOT = Path(__file__).resolve().parents[2]
README = (ROOT / "README.md").read_text(encoding="utf-8")
MAX_LINES = 150


def code_blocks(language: str) -> list[str]:
    return re.findall(rf"^```{language}\n(.*?)^```", README, flags=re.MULTILINE | re.DOTALL)


def shell_lines() -> list[str]:
    return [line for block in code_blocks("sh") for line in block.splitlines() if line.strip()]


def ci_steps() -> list[str]:
    """.ci/run's commands after its "README's test command" marker, comments dropped."""
    text = (
        (ROOT / ".ci" / "run").read_text(encoding="utf-8").split("--- the README's test command")[1]
    )
    lines = [line.split("  #")[0].strip() for line in text.splitlines()[1:]]
    return [line for line in lines if line and not line.startswith("#")]


def steps(command: str) -> list[str]:
    return [step.strip() for step in command.split("&&")]


def test_the_readme_is_short() -> None:
    assert len(README.splitlines()) <= MAX_LINES


def test_the_test_command_is_what_ci_runs() -> None:
    test_command = next(line for line in shell_lines() if "pytest" in line)
    venv, activate, *rest = steps(test_command)
    assert (venv, activate) == ("python3 -m venv .venv", ". .venv/bin/activate")
    assert rest == ci_steps()


def test_the_main_job_installs_as_ci_does_then_runs_the_demo() -> None:
    main_job = next(line for line in shell_lines() if line.endswith("groundspec demo"))
    _, _, *rest = steps(main_job)
    ci = ci_steps()
    assert rest[-1] == "groundspec demo"
    for step in rest[:-1]:
        assert step in ci or step == "pip install -e '.[models]'", step


def test_the_script_commands_run_as_written(tmp_path: Path) -> None:
    (tmp_path / "app.py").write_text("def add(a, b):\n    return a + b\n")
    scripts = [
        line
        for line in shell_lines()
        if line.startswith(("groundspec complete", "groundspec refactor"))
    ]
    assert len(scripts) == 2
    for line in scripts:
        proc = subprocess.run(
            [sys.executable, "-m", "lsp_server.cli", *shlex.split(line, comments=True)[1:]],
            capture_output=True,
            text=True,
            timeout=60,
            cwd=tmp_path,
            env={**os.environ, "GROUNDSPEC_FAKE_ENGINE": "1", "PYTHONPATH": str(ROOT)},
        )
        assert proc.returncode == 0, (line, proc.stderr)
        assert proc.stdout.strip()


def test_every_groundspec_command_named_is_accepted_by_the_parser() -> None:
    named = re.findall(r"`(groundspec [^`]+)`", README) + [
        line for line in shell_lines() if line.startswith("groundspec ")
    ]
    assert len(named) >= 4
    parser = build_parser()
    for command in named:
        parser.parse_args(shlex.split(command, comments=True)[1:])  # exits 2 on a bad flag


def test_the_shared_server_variables_are_ones_groundspec_reads() -> None:
    exports = [line for line in shell_lines() if line.startswith("export ")]
    names = {word.split("=")[0] for line in exports for word in shlex.split(line)[1:]}
    assert names == {"GROUNDSPEC_BACKEND", "GROUNDSPEC_BACKEND_URL"}
    config = (ROOT / "speculator" / "config.py").read_text(encoding="utf-8")
    assert all(f'"{name}"' in config for name in names) and names.isdisjoint(ENVIRONMENT)


def test_the_links_point_at_files_that_exist() -> None:
    links = re.findall(r"\]\(([^)#]+)(?:#[^)]*)?\)", README)
    assert "docs/guide.md" in links and "LICENSE" in links
    missing = [link for link in links if not link.startswith("http") and not (ROOT / link).exists()]
    assert missing == []


def test_the_clients_readme_installs_as_the_readme_does() -> None:
    main_job = next(line for line in shell_lines() if line.endswith("groundspec demo"))
    clients = (ROOT / "clients" / "README.md").read_text(encoding="utf-8")
    assert main_job in clients
