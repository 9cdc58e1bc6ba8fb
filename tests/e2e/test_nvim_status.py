"""What the Neovim plugin tells the user, in headless Neovim against `groundspec
serve`: :checkhealth (the models missing, a failed load), :GroundspecStats, and
the loading, generating and warming hints at the cursor (fake engine, or the
real one pointed at models that do not exist).
"""

from __future__ import annotations

from pathlib import Path

from .nvim_helpers import TYPE_RETURN, pytestmark, run_nvim

__all__ = ["pytestmark"]  # the skip marks (no nvim, no server) apply here too


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
