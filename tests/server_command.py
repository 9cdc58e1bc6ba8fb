"""The `groundspec serve` command the editor and client tests start: the one in
$GROUNDSPEC_TEST_SERVER_CMD (a JSON list), else the installed `groundspec`."""

from __future__ import annotations

import json
import os
import shutil
import sys
from pathlib import Path


def server_cmd() -> list[str] | None:
    if os.environ.get("GROUNDSPEC_TEST_SERVER_CMD"):
        return list(json.loads(os.environ["GROUNDSPEC_TEST_SERVER_CMD"]))
    beside_python = Path(sys.executable).parent / "groundspec"
    found = str(beside_python) if beside_python.exists() else shutil.which("groundspec")
    return [found, "serve"] if found else None
