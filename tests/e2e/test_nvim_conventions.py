"""The Neovim plugin follows its ecosystem's conventions (issue 62): help file,
keys that collide with nothing, manual mode, the popup menu, filetypes, one
server across roots, vim.lsp.config, no duplicate completion items, Neovim
0.12's built-in inline completion. Headless Neovim, fake engine (nvim_helpers.py).
"""

from __future__ import annotations

import shutil
from pathlib import Path

from .nvim_helpers import PLUGIN, TYPE_RETURN, pytestmark, run_nvim

__all__ = ["pytestmark"]  # the skip marks (no nvim, no server) apply here too

# Records every textDocument/inlineCompletion the plugin sends (its triggerKind).
RECORD_REQUESTS = """
local client = H.client()
local sent = {}
local request = client.request
client.request = function(self, method, params, ...)
  if method == "textDocument/inlineCompletion" then
    table.insert(sent, params.context.triggerKind)
  end
  return request(self, method, params, ...)
end
"""


def help_tags(doc_dir: Path) -> set[str]:
    return {line.split("\t")[0] for line in (doc_dir / "tags").read_text().splitlines()}


def test_help_covers_every_option_command_key_and_highlight(tmp_path: Path) -> None:
    """`:helptags` then `:help groundspec` opens doc/groundspec.txt; each option
    (nested ones too), command, highlight and API function has its tag."""
    runtime = tmp_path / "rt"
    shutil.copytree(PLUGIN / "doc", runtime / "doc")  # helptags writes beside the file
    out = run_nvim(
        tmp_path,
        """
local dir = vim.fn.getcwd() .. "/rt"
vim.opt.rtp:append(dir)
local ok, err = pcall(vim.cmd.helptags, dir .. "/doc")  -- duplicate tags fail here
H.out.helptags_error = ok and vim.NIL or err
H.setup()
vim.cmd("help groundspec")
H.out.help_file = vim.fn.expand("%:t")
H.out.help_line = vim.api.nvim_get_current_line()
local wanted = { "groundspec-debounce_ms" } -- nil by default: not in pairs()
for key, value in pairs(require("groundspec.config").defaults) do
  table.insert(wanted, "groundspec-" .. key)
  if type(value) == "table" and not vim.islist(value) then
    for sub in pairs(value) do
      table.insert(wanted, "groundspec-" .. key .. "." .. sub)
    end
  end
end
for name in pairs(vim.api.nvim_get_commands({})) do
  if name:find("^Groundspec") then
    table.insert(wanted, ":" .. name)
  end
end
for name in pairs(vim.api.nvim_get_hl(0, {})) do
  if name:find("^Groundspec") then
    table.insert(wanted, "hl-" .. name)
  end
end
for name, value in pairs(require("groundspec")) do
  if type(value) == "function" then
    table.insert(wanted, "groundspec." .. name .. "()")
  end
end
H.out.wanted = wanted
""",
    )
    assert out["helptags_error"] is None
    assert out["help_file"] == "groundspec.txt"
    assert "*groundspec*" in out["help_line"]
    wanted = set(out["wanted"])
    # The ones issue 62 names, so a rename cannot drop them unnoticed.
    named = {"groundspec-root_markers", "groundspec-ghost_text", ":GroundspecSuggest"}
    assert named <= wanted
    assert {"groundspec-keymaps.tab", "hl-GroundspecGhost", "groundspec.accept()"} <= wanted
    assert sorted(wanted - help_tags(runtime / "doc")) == []


def test_default_keys_leave_tab_alone_and_accept_on_alt_l(tmp_path: Path) -> None:
    out = run_nvim(
        tmp_path,
        TYPE_RETURN
        + """
H.out.tab_map = vim.fn.maparg("<Tab>", "i", false, true).desc or ""
H.out.alt_l = vim.fn.maparg("<M-l>", "i", false, true).desc
vim.bo.expandtab, vim.bo.softtabstop = false, 0
H.input("<Tab>")  -- a suggestion is shown: Tab still inserts a tab
H.out.after_tab = H.lines()[2]
H.wait(H.ghost, 20000, "ghost text after the tab")
H.input("<M-l>")
H.out.accepted = H.lines()[2]
H.input("<C-]>")
H.input("<M-l>")  -- nothing shown: <M-l> is not swallowed (its default: <Esc>l)
H.out.mode_after = vim.api.nvim_get_mode().mode
""",
    )
    assert not out["tab_map"].startswith("groundspec")  # Neovim's own (snippet jumps) or none
    assert out["alt_l"] == "groundspec accept"
    assert out["after_tab"] == "    return \t"
    assert out["accepted"] == "    return \tfake_completion()"
    assert out["mode_after"] == "n"


def test_opt_in_tab_accepts_or_falls_through_to_the_previous_mapping(tmp_path: Path) -> None:
    """keymaps.tab = true over a completion-menu style <expr> <Tab> mapping:
    with a suggestion, Tab accepts; without, the old mapping runs (its text,
    or <C-n> in the popup menu)."""
    out = run_nvim(
        tmp_path,
        """
vim.cmd([[inoremap <expr> <Tab> pumvisible() ? "\\<C-n>" : "<tab-map>"]])
H.setup({ keymaps = { tab = true } })
H.open("calc.py", { "def add(a, b):", "" })
vim.api.nvim_win_set_cursor(0, { 2, 0 })
H.input("i    return ")
H.wait(H.ghost, 20000, "ghost text")
H.input("<Tab>")
H.out.accepted = H.lines()[2]
H.input("<C-]>")
H.out.ghost_after_dismiss = H.ghost() or vim.NIL
H.input("<Tab>")
H.out.fell_through = H.lines()[2]
H.input("<CR>x = <Cmd>call complete(col('.'), ['alpha', 'beta'])<CR>")
H.out.menu = vim.fn.pumvisible()
H.input("<Tab>")
H.out.in_menu = H.lines()[3]
""",
    )
    assert out["accepted"] == "    return fake_completion()"
    assert out["ghost_after_dismiss"] is None
    assert out["fell_through"] == "    return fake_completion()<tab-map>"
    assert out["menu"] == 1
    assert out["in_menu"] == "x = beta"  # <C-n> moved from alpha to beta


def test_opt_in_tab_without_a_mapping_inserts_a_tab(tmp_path: Path) -> None:
    out = run_nvim(
        tmp_path,
        """
H.setup({ keymaps = { tab = true } })
H.open("calc.py", { "def add(a, b):", "" })
vim.bo.expandtab, vim.bo.softtabstop = false, 0
vim.api.nvim_win_set_cursor(0, { 2, 0 })
H.input("ireturn ")
H.wait(H.ghost, 20000, "ghost text")
H.input("<C-]>")
H.input("<Tab>")
H.out.line = H.lines()[2]
H.out.mapping = vim.fn.maparg("<Tab>", "i", false, true).desc
""",
    )
    assert out["line"] == "return \t"
    assert out["mapping"] == "groundspec accept (Tab)"


def test_manual_mode_sends_no_automatic_request(tmp_path: Path) -> None:
    """auto_trigger = false: typing sends nothing; <M-Space> and
    :GroundspecSuggest ask (triggerKind Invoked) and show the suggestion."""
    out = run_nvim(
        tmp_path,
        """
H.setup({ auto_trigger = false })
H.open("calc.py", { "def add(a, b):", "" })
"""
        + RECORD_REQUESTS
        + """
vim.api.nvim_win_set_cursor(0, { 2, 0 })
H.input("i    return ")
H.sleep(500)
H.out.typed = { requests = vim.deepcopy(sent), ghost = H.ghost() or vim.NIL }
H.input("<M-Space>")
H.out.asked = { requests = vim.deepcopy(sent), ghost = H.wait(H.ghost, 20000, "ghost text").text }
H.input("<M-l>")
H.input("<CR>    y = ")
H.sleep(300)
H.out.typed_again = vim.deepcopy(sent)
H.input("<Cmd>GroundspecSuggest<CR>")
H.out.command = H.wait(H.ghost, 20000, "ghost text from :GroundspecSuggest").text
H.out.requests = sent
""",
    )
    assert out["typed"] == {"requests": [], "ghost": None}
    assert out["asked"] == {"requests": [1], "ghost": "fake_completion()"}
    assert out["typed_again"] == [1]
    assert out["command"] == "fake_completion()"
    assert out["requests"] == [1, 1]


def test_buffer_toggle_and_buffer_auto_trigger(tmp_path: Path) -> None:
    out = run_nvim(
        tmp_path,
        """
H.setup()
H.open("calc.py", { "def add(a, b):", "" })
"""
        + RECORD_REQUESTS
        + """
H.record_notes()
vim.cmd("GroundspecToggleBuffer")
vim.api.nvim_win_set_cursor(0, { 2, 0 })
H.input("i    return ")
H.input("<M-Space>")
H.sleep(300)
H.out.off = { requests = #sent, ghost = H.ghost() or vim.NIL }
H.input("<Esc>")
vim.cmd("GroundspecToggleBuffer")
H.input("A ")
H.out.on = H.wait(H.ghost, 20000, "ghost text after the toggle").text
H.input("<Esc>")
vim.b.groundspec_auto_trigger = false
local before = #sent
H.input("Ax")
H.sleep(300)
H.out.manual_buffer = #sent - before
H.out.notes = vim.tbl_map(function(n) return n.msg end, H.out.notes)
""",
    )
    assert out["off"] == {"requests": 0, "ghost": None}
    assert out["on"] == "fake_completion()"
    assert out["manual_buffer"] == 0
    assert out["notes"] == [
        "groundspec: disabled in this buffer",
        "groundspec: enabled in this buffer",
    ]


def test_popup_menu_hides_the_suggestion(tmp_path: Path) -> None:
    out = run_nvim(
        tmp_path,
        TYPE_RETURN
        + RECORD_REQUESTS
        + """
H.input("<Cmd>call complete(col('.'), ['alpha', 'beta'])<CR>")
H.out.menu = vim.fn.pumvisible()
H.out.ghost_with_menu = H.ghost() or vim.NIL
local before = #sent
H.input("<C-p>a")  -- back to what was typed, then type in the menu
H.sleep(300)
H.out.in_menu = { requests = #sent - before, ghost = H.ghost() or vim.NIL, menu = vim.fn.pumvisible() }
H.input("<C-e> ")
H.out.after_menu = H.wait(H.ghost, 20000, "ghost text after the menu").text
""",
    )
    assert out["menu"] == 1
    assert out["ghost_with_menu"] is None
    assert out["in_menu"] == {"requests": 0, "ghost": None, "menu": 1}
    assert out["after_menu"] == "fake_completion()"


def test_every_grammar_filetype_is_served(tmp_path: Path) -> None:
    """The default filetypes are the server's grammars (speculator/languages.py),
    React files included, detected by Neovim from the file name."""
    out = run_nvim(
        tmp_path,
        """
H.setup()
H.out.filetypes = require("groundspec").config.filetypes
H.out.attached = {}
for _, name in ipairs({ "app.tsx", "app.jsx" }) do
  vim.cmd.edit(name)
  H.wait(function() return #vim.lsp.get_clients({ bufnr = 0, name = "groundspec" }) > 0 end, 20000, name)
  H.out.attached[name] = vim.bo.filetype
end
""",
    )
    assert sorted(out["filetypes"]) == sorted(
        ["python", "javascript", "javascriptreact", "typescript", "typescriptreact", "go", "rust"]
    )
    assert out["attached"] == {"app.tsx": "typescriptreact", "app.jsx": "javascriptreact"}


def test_a_second_project_root_reuses_the_running_server(tmp_path: Path) -> None:
    for project in ("alpha", "beta"):
        (tmp_path / project / ".git").mkdir(parents=True)
        (tmp_path / project / "main.py").write_text("def add(a, b):\n\n")
    out = run_nvim(
        tmp_path,
        """
H.setup()
vim.cmd.edit("alpha/main.py")
local first = H.client()
vim.cmd.edit("beta/main.py")
local second = H.wait(function()
  return vim.lsp.get_clients({ bufnr = 0, name = "groundspec" })[1]
end, 10000, "the client in beta")
H.out.ids = { first.id, second.id }
H.out.clients = #vim.lsp.get_clients({ name = "groundspec" })
H.out.root = vim.fs.basename(first.root_dir)
H.out.servers = #vim.tbl_filter(function(pid)
  return (vim.api.nvim_get_proc(pid) or {}).name ~= "nvim"
end, vim.api.nvim_get_proc_children(vim.fn.getpid()))
vim.api.nvim_win_set_cursor(0, { 2, 0 })
H.input("i    return ")
H.out.ghost = H.wait(H.ghost, 20000, "ghost text in beta").text
""",
    )
    assert out["ids"][0] == out["ids"][1]
    assert out["clients"] == 1
    assert out["root"] == "alpha"
    assert out["servers"] == 1
    assert out["ghost"] == "fake_completion()"


def test_lsp_config_and_enable_then_setup(tmp_path: Path) -> None:
    """lsp/groundspec.lua: vim.lsp.enable starts one server for two roots;
    setup() then wires the buffer it already serves."""
    for project in ("alpha", "beta"):
        (tmp_path / project / ".git").mkdir(parents=True)
        (tmp_path / project / "main.py").write_text("def add(a, b):\n\n")
    out = run_nvim(
        tmp_path,
        """
local cmd = vim.json.decode(os.getenv("GS_SERVER_CMD"))
vim.lsp.config("groundspec", { cmd = cmd })
vim.lsp.enable("groundspec")
vim.cmd.edit("alpha/main.py")
local client = H.client()
vim.cmd.edit("beta/main.py")
H.wait(function() return #vim.lsp.get_clients({ bufnr = 0, name = "groundspec" }) > 0 end, 10000, "beta")
H.out.clients = #vim.lsp.get_clients({ name = "groundspec" })
H.out.completion_provider = client.server_capabilities.completionProvider or vim.NIL
H.out.inline_provider = client.server_capabilities.inlineCompletionProvider ~= nil
H.out.init_options = client.config.init_options
vim.cmd.runtime("plugin/groundspec.lua")
require("groundspec").setup({ cmd = cmd })
vim.api.nvim_win_set_cursor(0, { 2, 0 })
H.input("i    return ")
H.out.ghost = H.wait(H.ghost, 20000, "ghost text").text
""",
    )
    assert out["clients"] == 1
    assert out["completion_provider"] is None
    assert out["inline_provider"] is True
    assert out["init_options"] == {"completion": {"lspItems": False}, "nextEdit": True}
    assert out["ghost"] == "fake_completion()"


COMPLETION_PROBE = """
H.open("calc.py", { "def add(a, b):", "    return " })
local client = H.client()
H.out.provider = client.server_capabilities.completionProvider ~= nil
H.out.supports = client:supports_method("textDocument/completion")
local params = { textDocument = { uri = vim.uri_from_bufnr(0) }, position = { line = 1, character = 11 } }
local box = {}
client:request("textDocument/completion", params, function(err, result)
  box.err, box.result = err and err.message or vim.NIL, result or vim.NIL
end, 0)
H.wait(function() return box.err ~= nil end, 10000, "the completion answer")
local items = type(box.result) == "table" and (box.result.items or box.result) or {}
H.out.labels = vim.tbl_map(function(item) return item.insertText or item.label end, items)
H.out.error = box.err
"""


def test_no_lsp_completion_items_unless_asked(tmp_path: Path) -> None:
    """completionProvider is off by default, so nvim-cmp / blink.cmp sources
    list nothing; completion_items = true turns it on."""
    (tmp_path / "off").mkdir()
    (tmp_path / "on").mkdir()
    off = run_nvim(tmp_path / "off", "H.setup()\n" + COMPLETION_PROBE)
    on = run_nvim(tmp_path / "on", "H.setup({ completion_items = true })\n" + COMPLETION_PROBE)
    assert (off["provider"], off["supports"], off["labels"]) == (False, False, [])
    assert "not found" in off["error"].lower()
    assert (on["provider"], on["supports"], on["error"]) == (True, True, None)
    assert on["labels"] == ["fake_completion()"]


def test_neovim_012_inline_completion_is_used_when_present(tmp_path: Path) -> None:
    """A stand-in vim.lsp.inline_completion (Neovim 0.11.4 has none): the
    plugin enables it for the buffer, sends no requests of its own while
    typing, and its keys call get() and select()."""
    out = run_nvim(
        tmp_path,
        """
local calls = {}
vim.lsp.inline_completion = {
  enable = function(on, filter) table.insert(calls, { "enable", on, filter.bufnr }) end,
  get = function(opts) table.insert(calls, { "get", opts.bufnr }); return true end,
  select = function(opts) table.insert(calls, { "select", opts.count }) end,
}
H.setup()
H.open("calc.py", { "def add(a, b):", "" })
"""
        + RECORD_REQUESTS
        + """
H.out.buf = vim.api.nvim_get_current_buf()
vim.api.nvim_win_set_cursor(0, { 2, 0 })
H.input("i    return ")
H.sleep(300)
H.out.own = { requests = #sent, ghost = H.ghost() or vim.NIL }
H.input("<M-l>")
H.input("<M-n>")
H.input("<M-p>")
H.out.calls = calls
""",
    )
    buf = out["buf"]
    assert out["own"] == {"requests": 0, "ghost": None}
    assert out["calls"] == [["enable", True, buf], ["get", buf], ["select", 1], ["select", -1]]
