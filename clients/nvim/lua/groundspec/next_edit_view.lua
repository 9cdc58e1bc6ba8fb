-- A proposed next edit drawn as a diff in the buffer, with extmarks only (the
-- text is not touched): the words it replaces highlighted, the lines it makes
-- as virtual lines below them (new words marked), and a hint at the cursor
-- line when the edit is elsewhere. No LSP here.
local util = require("groundspec.util")

local api = vim.api

local M = {}

M.ns = api.nvim_create_namespace("groundspec_next_edit")

M.HL = {
  add = "GroundspecNextEditAdd",
  context = "GroundspecNextEditContext",
  delete = "GroundspecNextEditDelete",
  hint = "GroundspecNextEditHint",
}

--- Define the highlight groups (`default = true`: a colorscheme wins).
function M.define_highlights()
  local links = { add = "DiffAdd", context = "DiffChange", delete = "DiffDelete", hint = "DiagnosticHint" }
  for key, link in pairs(links) do
    api.nvim_set_hl(0, M.HL[key], { link = link, default = true })
  end
end

local function expand_tabs(buf, text)
  return (text:gsub("\t", string.rep(" ", vim.bo[buf].tabstop)))
end

--- Whole lines replaced by whole lines (column 0 to column 0, the new text
--- ending with a line break or empty): shown without the rows around them.
function M.linewise(p)
  return p.start[2] == 0 and p.finish[2] == 0 and (p.text == "" or p.text:sub(-1) == "\n")
end

--- `chunks` ({text, hl} pairs) cut at line breaks: a list of virtual lines.
local function split_chunks(buf, chunks)
  local lines = { {} }
  for _, chunk in ipairs(chunks) do
    local parts = vim.split(chunk[1], "\n", { plain = true })
    for i, part in ipairs(parts) do
      if i > 1 then
        table.insert(lines, {})
      end
      if part ~= "" then
        table.insert(lines[#lines], { expand_tabs(buf, part), chunk[2] })
      end
    end
  end
  return lines
end

local function is_word(c)
  return c:match("^[%w_]$") ~= nil
end

--- The changed part of `old` -> `new` (one line each), widened to whole words
--- (`name` -> `attr_name`, not an inserted `attr_`): the length of the common
--- prefix and of the common suffix.
function M.changed_span(old, new)
  local pre, suf = 0, 0
  while pre < #old and pre < #new and old:byte(pre + 1) == new:byte(pre + 1) do
    pre = pre + 1
  end
  while suf < #old - pre and suf < #new - pre and old:byte(#old - suf) == new:byte(#new - suf) do
    suf = suf + 1
  end
  local function inside(at_old, at_new) -- a word character at either edge of the change
    return is_word(old:sub(at_old, at_old)) or is_word(new:sub(at_new, at_new))
  end
  while pre > 0 and is_word(old:sub(pre, pre)) and inside(pre + 1, pre + 1) do
    pre = pre - 1
  end
  while suf > 0 and is_word(old:sub(-suf, -suf)) and inside(#old - suf, #new - suf) do
    suf = suf - 1
  end
  return pre, suf
end

--- The rows the edit rewrites (first, last; last < first for lines inserted
--- before `first`), their text before and after it.
function M.rows(buf, p)
  if M.linewise(p) then
    local after = p.text == "" and {} or vim.split(p.text:sub(1, -2), "\n", { plain = true })
    return p.start[1], p.finish[1] - 1, after
  end
  local prefix = util.line(buf, p.start[1]):sub(1, p.start[2])
  local suffix = util.line(buf, p.finish[1]):sub(p.finish[2] + 1)
  return p.start[1], p.finish[1], vim.split(prefix .. p.text .. suffix, "\n", { plain = true })
end

local function mark(buf, row, col, opts)
  opts.priority = opts.priority or 1100 -- above the ghost text's 1000
  return api.nvim_buf_set_extmark(buf, M.ns, row, col, opts)
end

local function mark_deleted(buf, row, col, end_row, end_col, eol)
  if row ~= end_row or col ~= end_col then
    mark(buf, row, col, { end_row = end_row, end_col = end_col, hl_group = M.HL.delete, hl_eol = eol })
  end
end

-- Rows rewritten one for one: each row's changed words are highlighted, and
-- its virtual line marks the new words.
local function line_by_line(buf, first, after)
  local virt = {}
  for i, new in ipairs(after) do
    local row = first + i - 1
    local old = util.line(buf, row)
    local pre, suf = M.changed_span(old, new)
    mark_deleted(buf, row, pre, row, #old - suf, false)
    local chunks = { { new:sub(1, pre), M.HL.context }, { new:sub(pre + 1, #new - suf), M.HL.add } }
    table.insert(chunks, { new:sub(#new - suf + 1), M.HL.context })
    table.insert(virt, split_chunks(buf, chunks)[1])
  end
  return virt
end

-- Any other edit: its whole range highlighted, its text marked in the new rows.
local function as_a_block(buf, p, after)
  mark_deleted(buf, p.start[1], p.start[2], p.finish[1], p.finish[2], M.linewise(p))
  if M.linewise(p) then
    return split_chunks(buf, { { table.concat(after, "\n"), M.HL.add } })
  end
  local prefix = util.line(buf, p.start[1]):sub(1, p.start[2])
  local suffix = util.line(buf, p.finish[1]):sub(p.finish[2] + 1)
  return split_chunks(buf, { { prefix, M.HL.context }, { p.text, M.HL.add }, { suffix, M.HL.context } })
end

--- Draw proposal `p` ({start = {row, col}, finish = {row, col}, text}, byte
--- positions) in `buf`: the rewritten rows' new text as virtual lines below
--- them; `hint` (or nil) goes at the end of row `hint_row`.
function M.show(buf, p, hint, hint_row)
  M.clear(buf)
  local first, last, after = M.rows(buf, p)
  local virt
  if last - first + 1 == #after and #after > 0 then
    virt = line_by_line(buf, first, after)
  else
    virt = #after > 0 and as_a_block(buf, p, after) or {}
    if #after == 0 then
      mark_deleted(buf, p.start[1], p.start[2], p.finish[1], p.finish[2], true)
    end
  end
  if #virt > 0 then
    local count = api.nvim_buf_line_count(buf)
    local above = last < first and first < count -- inserted lines go above the row after them
    local row = above and first or math.min(math.max(last, 0), count - 1)
    mark(buf, row, 0, { virt_lines = virt, virt_lines_above = above })
  end
  if hint then
    mark(buf, hint_row, 0, { virt_text = { { hint, M.HL.hint } }, virt_text_pos = "eol" })
  end
end

function M.clear(buf)
  if api.nvim_buf_is_valid(buf) then
    api.nvim_buf_clear_namespace(buf, M.ns, 0, -1)
  end
end

return M
