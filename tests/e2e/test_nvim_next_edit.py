"""Next edits in the Neovim plugin (issue 59, clients/nvim/lua/groundspec/next_edit.lua):
a rename in headless Neovim, against `groundspec serve --fake`, whose rewrite carries
the last rename to the other lines of the window. The proposal is read from its
extmarks (tests/clients/nvim_harness.lua, H.next_edit), applied with the accept key,
dropped with the dismiss key, and never asked for when next edits are off."""

from __future__ import annotations

from pathlib import Path

from .nvim_helpers import pytestmark, run_nvim

__all__ = ["pytestmark"]  # the skip marks (no nvim, no server) apply here too

CODE = [
    "def register(plugin):",
    "    for name in dir(plugin):",
    "        opts = parse(plugin, name)",
    "        if opts is None:",
    "            continue",
    "        method = getattr(plugin, name)",
]
RENAMED = [line.replace("getattr(plugin, name)", "getattr(plugin, attr_name)") for line in CODE]
CARRIED = [line.replace("name", "attr_name") for line in CODE]


def lua_lines(lines: list[str]) -> str:
    return "{ " + ", ".join(f'"{line}"' for line in lines) + " }"


# Records every groundspec/nextEdit the plugin sends.
RECORD = """
local client = H.client()
H.wait(function() return client.initialized end, 20000, "the server")
local sent = {}
local request = client.request
client.request = function(self, method, params, ...)
  if method == "groundspec/nextEdit" then
    table.insert(sent, params)
  end
  return request(self, method, params, ...)
end
"""

# Rename `name` to `attr_name` on the getattr line (ciw, in insert mode, then <Esc>).
RENAME = (
    """
H.open("plugins.py", """
    + lua_lines(CODE)
    + ")"
    + RECORD
    + """
vim.api.nvim_win_set_cursor(0, { 6, #"        method = getattr(plugin, " })
H.input("ciwattr_name<Esc>")
"""
)

WAIT_PROPOSAL = """
H.out.proposal = H.wait(function()
  local n = H.next_edit()
  return n and n.added and n
end, 20000, "the next edit")
H.out.renamed = H.lines()
"""


def test_a_rename_shows_the_next_edit_as_a_diff_and_alt_l_applies_it(tmp_path: Path) -> None:
    out = run_nvim(
        tmp_path,
        "H.setup()"
        + RENAME
        + WAIT_PROPOSAL
        + """
H.out.sent = #sent
H.out.api = require("groundspec").next_edit_proposal()
H.input("<M-l>")
H.out.accepted = { lines = H.lines(), cursor = vim.api.nvim_win_get_cursor(0),
                   mode = vim.api.nvim_get_mode().mode, marks = H.next_edit() or vim.NIL }
H.input("u")
H.out.undone = H.lines()
H.out.stats = H.stats(function(s) return s.acceptedItems >= 1 end)
""",
    )
    assert out["renamed"] == RENAMED
    proposal = out["proposal"]
    # The new lines as virtual lines under the ones they rewrite (rows 1-2).
    assert proposal["added"] == CARRIED[1:3]
    assert proposal["added_row"] == 2
    assert proposal["added_hl"] == {
        "GroundspecNextEditAdd": ["attr_name", "attr_name"],  # the new words
        "GroundspecNextEditContext": [
            "    for ",
            " in dir(plugin):",
            "        opts = parse(plugin, ",
            ")",
        ],
    }
    # The words it replaces, highlighted where they are.
    delete = "GroundspecNextEditDelete"
    assert proposal["deleted"] == [[1, 8, 1, 12, "name", delete], [2, 29, 2, 33, "name", delete]]
    # The edit is away from the cursor (row 5): the hint says where, and the key.
    assert proposal["hint"]["row"] == 5
    assert proposal["hint"]["text"] == "  groundspec: next edit ↑ line 2: <M-l> accepts"
    assert out["sent"] >= 1
    # The edit as the server sent it: from the first `name` to the second.
    assert out["api"] == {
        "start": [1, 8],
        "finish": [2, 29],
        "text": "attr_name in dir(plugin):\n        opts = parse(plugin, attr_",
    }
    accepted = out["accepted"]
    assert accepted["lines"] == CARRIED
    assert accepted["mode"] == "n"
    assert accepted["cursor"][0] == 3  # at the end of the applied edit
    assert accepted["marks"] is None
    assert out["undone"] == RENAMED  # one undo step
    assert out["stats"]["acceptedItems"] == 1


def test_a_new_name_sharing_letters_with_the_old_one_is_still_one_rename(
    tmp_path: Path,
) -> None:
    # `name` -> `label` key by key: after `labe` the `e` is shared with `name`, and
    # the `l` typed next must still extend the one rename the server follows.
    out = run_nvim(
        tmp_path,
        "H.setup()"
        + RENAME.replace("ciwattr_name", "ciwlabel")
        + WAIT_PROPOSAL
        + 'H.input("<M-l>")\nH.out.accepted = H.lines()',
    )
    assert out["renamed"][5] == "        method = getattr(plugin, label)"
    assert out["proposal"]["added"] == [line.replace("name", "label") for line in CODE[1:3]]
    assert out["accepted"][:3] == [line.replace("name", "label") for line in CODE[:3]]


def test_escape_dismisses_the_next_edit_and_leaves_the_buffer(tmp_path: Path) -> None:
    out = run_nvim(
        tmp_path,
        "H.setup()"
        + RENAME
        + WAIT_PROPOSAL
        + """
local before = #sent
H.input("<Esc>")
H.out.after_dismiss = H.next_edit() or vim.NIL
H.sleep(800) -- no change since: not asked again
H.out.later = { marks = H.next_edit() or vim.NIL, sent = #sent - before }
H.input("<M-l>") -- nothing shown: <M-l> does what it did before (moves right)
H.out.lines = H.lines()
H.out.proposal_api = require("groundspec").next_edit_proposal() or vim.NIL
""",
    )
    assert out["after_dismiss"] is None
    assert out["later"] == {"marks": None, "sent": 0}
    assert out["lines"] == RENAMED
    assert out["proposal_api"] is None


def test_insert_mode_and_a_change_clear_the_proposal(tmp_path: Path) -> None:
    out = run_nvim(
        tmp_path,
        "H.setup()"
        + RENAME
        + WAIT_PROPOSAL
        + """
H.input("i")
H.out.in_insert = H.next_edit() or vim.NIL
H.input("<Esc>")
H.out.back = H.wait(function()
  local n = H.next_edit()
  return n and n.added and n
end, 20000, "the next edit again").added
H.input("ggdd") -- a normal-mode change: its positions are stale
H.out.after_change = H.next_edit() or vim.NIL
H.out.lines = H.lines()
""",
    )
    assert out["in_insert"] is None
    assert out["back"] == CARRIED[1:3]
    assert out["after_change"] is None
    assert out["lines"] == RENAMED[1:]


def test_an_answer_to_an_older_text_is_dropped(tmp_path: Path) -> None:
    """The user changed the buffer while the request ran: the answer (an edit
    for the older text) is not shown and nothing typed is lost."""
    out = run_nvim(
        tmp_path,
        """
H.setup({ next_edit = { auto_trigger = false } })
"""
        + RENAME
        + """
local request = client.request
client.request = function(self, method, params, handler, ...)
  if method ~= "groundspec/nextEdit" then
    return request(self, method, params, handler, ...)
  end
  return request(self, method, params, function(err, result, ...)
    vim.api.nvim_buf_set_lines(0, 0, 0, false, { "# typed meanwhile" })
    handler(err, result, ...)
    H.out.answer = result
    H.out.marks = H.next_edit() or vim.NIL
  end, ...)
end
vim.cmd("GroundspecNextEdit")
H.wait(function() return H.out.answer end, 20000, "the answer")
H.out.lines = H.lines()
""",
    )
    assert len(out["answer"]["edits"]) == 1  # there was an edit to propose ...
    assert out["marks"] is None  # ... for a text that is gone
    assert out["lines"] == ["# typed meanwhile", *RENAMED]


def test_next_edits_off_send_no_request(tmp_path: Path) -> None:
    out = run_nvim(
        tmp_path,
        """
H.setup({ next_edit = { enabled = false } })
"""
        + RENAME
        + """
H.sleep(800)
vim.cmd("GroundspecNextEdit")
H.input("<M-Space>")
H.sleep(300)
H.out.sent = #sent
H.out.marks = H.next_edit() or vim.NIL
H.out.init = client.config.init_options.nextEdit
H.out.alt_l = vim.fn.maparg("<M-l>", "n")
""",
    )
    assert out == {"sent": 0, "marks": None, "init": False, "alt_l": ""}


def test_manual_mode_asks_only_on_the_key_and_the_command(tmp_path: Path) -> None:
    out = run_nvim(
        tmp_path,
        """
H.setup({ next_edit = { auto_trigger = false } })
"""
        + RENAME
        + """
H.sleep(800)
H.out.typed = #sent
H.input("<M-Space>")
H.out.key = H.wait(function() local n = H.next_edit(); return n and n.added end, 20000, "<M-Space>")
H.input("<Esc>")
vim.cmd("GroundspecNextEdit")
H.out.command = H.wait(function() local n = H.next_edit(); return n and n.added end, 20000, ":GroundspecNextEdit")
H.out.sent = #sent
""",
    )
    assert out["typed"] == 0
    assert out["key"] == CARRIED[1:3]
    assert out["command"] == CARRIED[1:3]
    assert out["sent"] == 2


def test_an_edit_off_screen_is_jumped_to_before_it_is_applied(tmp_path: Path) -> None:
    out = run_nvim(
        tmp_path,
        "H.setup()"
        + RENAME
        + """
vim.cmd("split") -- a window two lines high, showing rows 6-7: the edit is off screen
vim.cmd("resize 2")
vim.cmd("normal! zt")
"""
        + WAIT_PROPOSAL
        + """
H.input("<M-l>")
H.out.jumped = { lines = H.lines(), cursor = vim.api.nvim_win_get_cursor(0), shown = H.next_edit() ~= nil }
H.input("<M-l>")
H.out.applied = H.lines()
H.input("<C-o>")
H.out.back_row = vim.api.nvim_win_get_cursor(0)[1]
""",
    )
    jumped = out["jumped"]
    assert jumped["lines"] == RENAMED
    assert jumped["cursor"][0] == 2 and jumped["shown"]
    assert out["applied"] == CARRIED
    assert out["back_row"] == 2  # <C-o> goes back to where it was jumped from


def test_a_rename_in_one_file_is_proposed_in_the_file_opened_next(tmp_path: Path) -> None:
    """A function renamed in shapes.py, then main.py opened: the plugin asks on
    entering it, and the rename is proposed at main.py's import. An explicit ask
    with nothing to propose says so."""
    main = ["from shapes import describe", "", "", "def main():", "    return describe(1.0)"]
    (tmp_path / "main.py").write_text("\n".join(main) + "\n")
    out = run_nvim(
        tmp_path,
        """
H.setup()
H.open("shapes.py", { "def describe(radius):", "    return str(radius)" })
local client = H.client()
H.wait(function() return client.initialized end, 20000, "the server")
vim.api.nvim_win_set_cursor(0, { 1, 4 })
H.input("ciwdescribe_circle<Esc>")
H.sleep(500)
local echoed = {}
vim.api.nvim_echo = function(chunks) table.insert(echoed, chunks[1][1]) end
vim.cmd("GroundspecNextEdit") -- nothing else in shapes.py uses the name
H.out.echoed = H.wait(function() return echoed[1] end, 20000, "the empty answer")
local asks = 0 -- for main.py
local request = client.request
client.request = function(self, method, params, ...)
  if method == "groundspec/nextEdit" and params.textDocument.uri:match("main%.py$") then
    asks = asks + 1
  end
  return request(self, method, params, ...)
end
vim.o.hidden = true
vim.cmd("edit main.py")
local function proposal()
  return H.wait(function()
    local n = H.next_edit()
    return n and n.added and n
  end, 20000, "the next edit in main.py").added
end
H.out.proposal = proposal()
-- Dismissed, then back from another buffer with nothing edited: not asked again.
H.input("<Esc>")
vim.cmd("edit shapes.py")
vim.cmd("edit main.py")
H.sleep(800)
H.out.back = { asks = asks, marks = H.next_edit() or vim.NIL }
H.input("<M-Space>")
H.out.asked_again = proposal()
H.input("<M-l>")
H.out.lines = H.lines()
""",
    )
    assert out["echoed"] == "groundspec: no next edit to propose"
    assert out["proposal"] == ["from shapes import describe_circle"]
    assert out["back"] == {"asks": 1, "marks": None}
    assert out["asked_again"] == out["proposal"]
    assert out["lines"] == ["from shapes import describe_circle", *main[1:]]
