-- Ghost text: how a suggestion is drawn with extmarks, and how it is split for
-- partial accepts. No LSP here.
local M = {}

M.ns = vim.api.nvim_create_namespace("groundspec")

--- The next word of `text` (with the blanks before it), for accept-word.
function M.next_word(text)
  return text:match("^[ \t]*[%w_]+")
    or text:match("^[ \t]*[^%w_%s]+")
    or text:match("^\r?\n[ \t]*")
    or text:match("^%s+")
    or text
end

--- The rest of the current line of `text`, for accept-line. At a line break
--- it takes the break and the whole next line.
function M.next_line(text)
  if text:sub(1, 1) == "\n" then
    return "\n" .. (text:match("^\n([^\n]*)") or "")
  end
  return text:match("^[^\n]*")
end

--- Plain text of an InlineCompletionItem's insertText (string or snippet).
function M.insert_text(item)
  local text = item.insertText
  if type(text) == "table" then
    text = (text.value or "")
      :gsub("%${%d+:([^}]*)}", "%1")
      :gsub("%${%d+}", "")
      :gsub("%$%d+", "")
      :gsub("\\([%$}\\])", "%1")
  end
  return text or ""
end

local function expand_tabs(line)
  return (line:gsub("\t", string.rep(" ", vim.bo.tabstop)))
end

--- Draw `text` at byte position (row, col) of `buf`: the first line as virtual
--- text at the cursor, the other lines as virtual lines below it.
function M.show(buf, row, col, text, opts)
  M.clear(buf)
  local hl = opts.hl or "GroundspecGhost"
  local lines = vim.split(text, "\n", { plain = true })
  local mark = { hl_mode = "combine", priority = 1000 }
  if lines[1] ~= "" then
    mark.virt_text = { { expand_tabs(lines[1]), hl } }
    mark.virt_text_pos = opts.pos or "inline"
  end
  if #lines > 1 then
    mark.virt_lines = {}
    for i = 2, #lines do
      table.insert(mark.virt_lines, { { expand_tabs(lines[i]), hl } })
    end
  end
  return vim.api.nvim_buf_set_extmark(buf, M.ns, row, col, mark)
end

function M.clear(buf)
  if vim.api.nvim_buf_is_valid(buf) then
    vim.api.nvim_buf_clear_namespace(buf, M.ns, 0, -1)
  end
end

return M
