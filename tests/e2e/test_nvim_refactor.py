"""Refactors in the Neovim plugin, in headless Neovim against `groundspec serve`
(fake engine, whose refactor puts "# INSTRUCTION" above the selection): the preview
accepted, rejected or outdated, a charwise selection's UTF-16 range, and a slow
refactor cancelled.
"""

from __future__ import annotations

from pathlib import Path

from .nvim_helpers import pytestmark, run_nvim

__all__ = ["pytestmark"]  # the skip marks (no nvim, no server) apply here too


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
