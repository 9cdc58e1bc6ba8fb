"""The Neovim plugin (clients/nvim) in a real headless Neovim against `groundspec serve`.

Each test writes a Lua scenario run by tests/clients/nvim_harness.lua: it types
into a buffer, waits for the ghost-text extmark, presses keys, and records what
it saw in `H.out`; the assertions are here. The server runs with the fake engine
(GROUNDSPEC_FAKE_ENGINE=1) except in the test marked `model`.

Refactors: test_nvim_refactor.py; health, statistics and progress hints:
test_nvim_status.py; the harness: nvim_helpers.py.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from .nvim_helpers import TYPE_RETURN, pytestmark, run_nvim

__all__ = ["pytestmark"]  # the skip marks (no nvim, no server) apply here too


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
