-- A refactor shown before it is applied: a scratch split with the unified diff
-- of the selection; accept applies the rewrite to the buffer, reject drops it.
local util = require("groundspec.util")

local api = vim.api

local M = {}

local current = nil -- { buf, tick, start, finish, lines, win, preview_buf }

local function close_window()
  local p = current
  current = nil
  if p and api.nvim_buf_is_valid(p.preview_buf) then
    api.nvim_buf_delete(p.preview_buf, { force = true }) -- closes its window too
  end
  return p
end

--- The unified diff (ctx 3) from `old` to `new`, as lines, with file headers.
function M.diff_lines(name, old, new)
  local function ended(text)
    return text:sub(-1) == "\n" and text or (text .. "\n")
  end
  local diff = vim.diff(ended(old), ended(new), { result_type = "unified", ctxlen = 3 })
  local lines = { "--- " .. name, "+++ " .. name .. " (groundspec refactor)" }
  vim.list_extend(lines, vim.split(diff, "\n", { plain = true, trimempty = true }))
  return lines
end

local function map_keys(preview_buf, keys)
  local function set(lhs, fn, desc)
    if lhs and lhs ~= "" then
      vim.keymap.set("n", lhs, fn, { buffer = preview_buf, nowait = true, desc = "groundspec " .. desc })
    end
  end
  set(keys.accept, M.accept, "accept the refactor")
  set(keys.reject, M.reject, "reject the refactor")
end

--- Show the rewrite of `range` (LSP, in `encoding`) of `buf` to `new_text`.
--- `keys`: { accept = lhs, reject = lhs } in the preview window.
function M.open(buf, range, encoding, new_text, keys)
  close_window()
  local start = util.from_lsp(buf, range.start, encoding)
  local finish = util.from_lsp(buf, range["end"], encoding)
  local old = table.concat(api.nvim_buf_get_text(buf, start[1], start[2], finish[1], finish[2], {}), "\n")
  local name = vim.fn.fnamemodify(api.nvim_buf_get_name(buf), ":~:.")
  local lines = M.diff_lines(name ~= "" and name or "[No Name]", old, new_text)

  local preview_buf = api.nvim_create_buf(false, true)
  api.nvim_buf_set_lines(preview_buf, 0, -1, false, lines)
  vim.bo[preview_buf].modifiable = false
  vim.bo[preview_buf].bufhidden = "wipe"
  vim.bo[preview_buf].filetype = "diff"
  pcall(api.nvim_buf_set_name, preview_buf, "groundspec://refactor-preview")
  local win = api.nvim_open_win(preview_buf, true, { split = "below", height = math.min(#lines + 1, 20) })
  vim.wo[win].winbar = ("groundspec refactor: %s accepts, %s rejects"):format(keys.accept or "-", keys.reject or "-")
  map_keys(preview_buf, keys)
  current = {
    buf = buf,
    tick = api.nvim_buf_get_changedtick(buf),
    start = start,
    finish = finish,
    lines = vim.split(new_text, "\n", { plain = true }),
    preview_buf = preview_buf,
  }
  return preview_buf
end

function M.is_open()
  return current ~= nil
end

--- Apply the previewed rewrite; false when there is none or the buffer changed.
function M.accept()
  local p = close_window()
  if not p then
    util.notify("no refactor to accept", vim.log.levels.WARN)
    return false
  end
  if not api.nvim_buf_is_valid(p.buf) or api.nvim_buf_get_changedtick(p.buf) ~= p.tick then
    util.notify("the buffer changed since the refactor was made: not applied", vim.log.levels.WARN)
    return false
  end
  api.nvim_buf_set_text(p.buf, p.start[1], p.start[2], p.finish[1], p.finish[2], p.lines)
  util.notify("refactor applied")
  return true
end

--- Drop the previewed rewrite.
function M.reject()
  local p = close_window()
  util.notify(p and "refactor rejected" or "no refactor to reject")
  return p ~= nil
end

return M
