"""Emacs with its LSP client eglot against `groundspec serve --fake`.

tests/clients/eglot_harness.el runs in `emacs --batch`: eglot starts the server
as clients/README.md tells users to configure it, asks for completions at the
end of a Python file, and lets `completion-at-point` insert the candidate. Tested
with Debian's emacs-nox 28.2 and elpa-eglot 1.9 (`.ci/code-server.sh` installs
neither; `apt-get install emacs-nox elpa-eglot`); skipped without Emacs or eglot.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
HARNESS = ROOT / "tests" / "clients" / "eglot_harness.el"
FAKE_TEXT = "fake_completion()"
EMACS = shutil.which("emacs")


def find_groundspec() -> str | None:
    beside_python = Path(sys.executable).parent / "groundspec"
    return str(beside_python) if beside_python.exists() else shutil.which("groundspec")


def has_eglot() -> bool:
    if EMACS is None:
        return False
    probe = [EMACS, "--batch", "--eval", "(kill-emacs (if (require 'eglot nil t) 0 1))"]
    return subprocess.run(probe, capture_output=True, timeout=60).returncode == 0


GROUNDSPEC = find_groundspec()

pytestmark = [
    pytest.mark.skipif(
        not has_eglot(), reason="Emacs with eglot not found (apt-get install emacs-nox elpa-eglot)"
    ),
    pytest.mark.skipif(GROUNDSPEC is None, reason="groundspec is not installed (pip install -e .)"),
]


def test_eglot_completes_from_groundspec(tmp_path: Path) -> None:
    assert EMACS is not None and GROUNDSPEC is not None
    source = tmp_path / "app.py"
    source.write_text("import math\n\nresult = are\n")
    result = tmp_path / "result.json"
    env = {k: v for k, v in os.environ.items() if not k.startswith("GROUNDSPEC_FAKE")}
    env.update(
        GS_SERVER_CMD=json.dumps([GROUNDSPEC, "serve", "--fake"]),
        GS_FILE=str(source),
        GS_RESULT=str(result),
        GROUNDSPEC_FAKE_TEXT=FAKE_TEXT,
        XDG_CONFIG_HOME=str(tmp_path / "config"),  # ignore the user's groundspec config
        PYTHONPATH=os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")]).rstrip(os.pathsep),
        HOME=str(tmp_path),  # no ~/.emacs.d of the user's
    )
    run = subprocess.run(
        [EMACS, "--batch", "-l", str(HARNESS)],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert run.returncode == 0, run.stderr[-3000:]
    out = json.loads(result.read_text())
    assert out["server"] == "groundspec"
    assert out["candidates"] == [f"are{FAKE_TEXT}"]
    assert out["buffer"] == f"import math\n\nresult = are{FAKE_TEXT}\n"
