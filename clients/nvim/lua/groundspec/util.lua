-- Small helpers that paper over API differences between Neovim 0.10 and 0.11+.
local M = {}

local has_011 = vim.fn.has("nvim-0.11") == 1

--- Call a method of an LSP client: `client:name(...)` on 0.11+, `client.name(...)` on 0.10.
function M.call(client, name, ...)
  if has_011 then
    return client[name](client, ...)
  end
  return client[name](...)
end

--- Byte column in `line` of an LSP character offset in `encoding`.
function M.byte_col(line, character, encoding)
  if encoding == "utf-8" then
    return math.min(character, #line)
  end
  local ok, col
  if has_011 then
    ok, col = pcall(vim.str_byteindex, line, encoding, character, false)
  else
    ok, col = pcall(vim.str_byteindex, line, character, encoding == "utf-16")
  end
  return ok and col or #line
end

--- LSP character offset in `encoding` of byte column `col` in `line`.
function M.lsp_char(line, col, encoding)
  col = math.min(col, #line)
  if encoding == "utf-8" then
    return col
  end
  if has_011 then
    return vim.str_utfindex(line, encoding, col, false)
  end
  local utf32, utf16 = vim.str_utfindex(line, col)
  return encoding == "utf-16" and utf16 or utf32
end

--- The text of line `row` (0-based) of `buf`, or "" past the end.
function M.line(buf, row)
  return vim.api.nvim_buf_get_lines(buf, row, row + 1, false)[1] or ""
end

--- Byte position {row, col} (0-based) of an LSP position.
function M.from_lsp(buf, pos, encoding)
  return { pos.line, M.byte_col(M.line(buf, pos.line), pos.character, encoding) }
end

--- LSP position of a byte position {row, col} (0-based).
function M.to_lsp(buf, row, col, encoding)
  return { line = row, character = M.lsp_char(M.line(buf, row), col, encoding) }
end

function M.notify(msg, level)
  vim.notify("groundspec: " .. msg, level or vim.log.levels.INFO)
end

--- Cancel the request `pending[buf]` ({client, id}) and forget it; true when there was one.
function M.cancel_pending(pending, buf)
  local p = pending[buf]
  pending[buf] = nil
  if p then
    pcall(M.call, p.client, "cancel_request", p.id)
  end
  return p ~= nil
end

return M
