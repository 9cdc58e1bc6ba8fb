-- Next-edit suggestions (groundspec/nextEdit): after a pause in normal-mode
-- editing, or when asked, the server proposes the edit that most likely
-- follows the user's last one; it is drawn as a diff (next_edit_view.lua), one
-- key applies it (moving there), one dismisses it. Proposals live in normal
-- mode: entering insert mode or changing the text drops them, and an answer
-- to an older text is never shown.
local util = require("groundspec.util")
local config = require("groundspec.config")
local status = require("groundspec.status")
local suggest = require("groundspec.suggest")
local view = require("groundspec.next_edit_view")

local api = vim.api

local M = {}

M.METHOD = "groundspec/nextEdit"
local ACCEPTED = "groundspec.accepted" -- counted in the server's acceptedItems
local CANCELLED = -32800 -- LSP RequestCancelled

local shown = {} -- buf -> { start, finish, text, tick, client_id, jumped }
local pending = {} -- buf -> { client, id }
local asked = {} -- buf -> edits_key() when it was last asked for
local generation = {} -- buf -> counter: a newer pause replaces the timer of an older one

local function options()
  return config.next_edit(config.options)
end

--- Next edits on for `buf`: the option, the server's `nextEdit`, the toggles.
function M.enabled(buf)
  local init = config.options.init_options or {}
  return options().enabled ~= false and init.nextEdit ~= false and suggest.allowed(buf)
end

--- The proposal on screen in `buf` as {range (byte positions), newText}, or nil.
function M.current(buf)
  return shown[buf]
end

--- Hide the proposal and stop asking; true when one was shown.
function M.dismiss(buf)
  buf = (buf == nil or buf == 0) and api.nvim_get_current_buf() or buf
  local was = shown[buf] ~= nil
  generation[buf] = (generation[buf] or 0) + 1
  util.cancel_pending(pending, buf)
  shown[buf] = nil
  view.clear(buf)
  return was
end

function M.forget(buf)
  pending[buf] = nil
  asked[buf] = nil
  M.dismiss(buf)
  generation[buf] = nil
end

-- Grows with every change to a buffer the server knows: the edits it has seen.
local function edits_key()
  local key = 0
  for _, b in ipairs(api.nvim_list_bufs()) do
    if api.nvim_buf_is_loaded(b) and vim.lsp.get_clients({ bufnr = b, name = "groundspec" })[1] then
      key = key + api.nvim_buf_get_changedtick(b)
    end
  end
  return key
end

local function in_normal(buf)
  return api.nvim_get_current_buf() == buf and api.nvim_get_mode().mode == "n"
end

local function hint_text(p, row)
  local key = options().accept
  local arrow = p.start[1] < row and "↑" or "↓"
  local keys = (key and key ~= "") and (": " .. key .. " accepts") or ""
  return ("  groundspec: next edit %s line %d%s"):format(arrow, p.start[1] + 1, keys)
end

-- Byte position of an LSP position, nil past the text. The line after the
-- last (after the final line break, which Neovim does not store) becomes the
-- end of the last line, `eof` true.
local function clamp(buf, pos, encoding)
  local count = api.nvim_buf_line_count(buf)
  if pos.line > count then
    return nil
  elseif pos.line == count then
    return { count - 1, #util.line(buf, count - 1) }, true
  end
  return util.from_lsp(buf, pos, encoding), false
end

-- The edit as byte positions and the text to put there, or nil.
local function to_proposal(buf, edit, encoding)
  local start, start_eof = clamp(buf, edit.range.start, encoding)
  local finish, finish_eof = clamp(buf, edit.range["end"], encoding)
  if not start or not finish then
    return nil
  end
  local text = edit.newText
  if finish_eof and text:sub(-1) == "\n" then
    text = text:sub(1, -2) -- the final line break stays where it is
    text = start_eof and ("\n" .. text) or text -- lines added at the end
  end
  return { start = start, finish = finish, text = text }
end

-- Show the first edit of `result` (answered for changedtick `tick`); asked
-- `explicit`ly (the key, the command), say so when there is none.
local function show_result(buf, client, result, encoding, tick, explicit)
  local edit = (result and result.edits or {})[1]
  if api.nvim_buf_get_changedtick(buf) ~= tick or not in_normal(buf) then
    return -- an answer to an older text: dropped
  elseif not edit then
    if explicit then
      api.nvim_echo({ { "groundspec: no next edit to propose" } }, false, {})
    end
    return
  end
  local p = to_proposal(buf, edit, encoding)
  if not p then
    return
  end
  local start, finish = p.start, p.finish
  p.tick, p.client_id = tick, client.id
  local old = table.concat(api.nvim_buf_get_text(buf, start[1], start[2], finish[1], finish[2], {}), "\n")
  if old == p.text then
    return
  end
  shown[buf] = p
  local row = api.nvim_win_get_cursor(0)[1] - 1
  local away = row < start[1] or row > finish[1]
  view.show(buf, p, away and hint_text(p, row) or nil, row)
end

--- Ask the server for a next edit at the cursor now; `explicit`: asked by the
--- user (a key, the command), who is told when there is none.
function M.request(buf, explicit)
  buf = (buf == nil or buf == 0) and api.nvim_get_current_buf() or buf
  local client = suggest.get_client(buf)
  if not client or not M.enabled(buf) then
    return false
  end
  M.dismiss(buf)
  asked[buf] = edits_key()
  local encoding = client.offset_encoding or "utf-16"
  local params = vim.lsp.util.make_position_params(0, encoding)
  local tick = api.nvim_buf_get_changedtick(buf)
  local request_id, answered = nil, false
  local ok, id = util.call(client, "request", M.METHOD, params, function(err, result)
    answered = true -- (an in-process server answers before request() returns)
    if pending[buf] and pending[buf].id == request_id then
      pending[buf] = nil
    elseif request_id then
      return -- replaced or dismissed meanwhile
    end
    if err then
      return err.code ~= CANCELLED and status.on_request_error(err.message or "next edit failed")
    end
    show_result(buf, client, result, encoding, tick, explicit)
  end, buf)
  if ok and not answered then
    request_id = id
    pending[buf] = { client = client, id = id }
  end
  return true
end

--- After a pause of `debounce_ms` with no other change, ask (auto_trigger).
function M.schedule(buf)
  if options().auto_trigger == false or not M.enabled(buf) then
    return
  end
  generation[buf] = (generation[buf] or 0) + 1
  local gen = generation[buf]
  vim.defer_fn(function()
    if generation[buf] == gen and api.nvim_buf_is_valid(buf) and in_normal(buf) then
      M.request(buf)
    end
  end, options().debounce_ms or 300)
end

--- BufEnter: ask, unless nothing was edited anywhere since the last ask here (back
--- from a picker or another window: a proposal dismissed stays dismissed).
function M.on_enter(buf)
  if asked[buf] ~= edits_key() then
    M.schedule(buf)
  end
end

--- TextChanged (normal mode): the proposal's positions are stale; ask again.
function M.on_text_changed(buf)
  local p = shown[buf]
  if p and api.nvim_buf_get_changedtick(buf) ~= p.tick then
    M.dismiss(buf)
  end
  M.schedule(buf)
end


local function send_accepted(buf, p)
  local client = vim.lsp.get_client_by_id(p.client_id)
  if client then
    local args = { { uri = vim.uri_from_bufnr(buf), length = #p.text, kind = "edit" } }
    local params = { command = ACCEPTED, arguments = args }
    util.call(client, "request", "workspace/executeCommand", params, function() end, buf)
  end
end

local function visible(row)
  return row + 1 >= vim.fn.line("w0") and row + 1 <= vim.fn.line("w$")
end

--- Apply the proposal (one undo step) and put the cursor at its end. An edit
--- off screen is first jumped to (the cursor goes to its start, the diff
--- stays), so it is seen before it is applied. False when none is shown.
function M.accept(buf)
  buf = (buf == nil or buf == 0) and api.nvim_get_current_buf() or buf
  local p = shown[buf]
  if not p or api.nvim_buf_get_changedtick(buf) ~= p.tick then
    M.dismiss(buf)
    return false
  end
  vim.cmd("normal! m'") -- back with <C-o>
  if not p.jumped and not visible(p.start[1]) then
    p.jumped = true
    api.nvim_win_set_cursor(0, { p.start[1] + 1, p.start[2] })
    view.show(buf, p, nil)
    return true
  end
  M.dismiss(buf)
  local lines = vim.split(p.text, "\n", { plain = true })
  api.nvim_buf_set_text(buf, p.start[1], p.start[2], p.finish[1], p.finish[2], lines)
  local row = p.start[1] + #lines - 1
  local col = (#lines == 1 and p.start[2] or 0) + #lines[#lines]
  local last = math.max(#util.line(buf, row) - 1, 0) -- normal mode: on a character
  api.nvim_win_set_cursor(0, { row + 1, math.min(math.max(col - 1, 0), last) })
  send_accepted(buf, p)
  return true
end

return M
