-- Inline suggestions drawn by the plugin: asking the server
-- (textDocument/inlineCompletion), showing the answer as ghost text, typing
-- through it, accepting all or part of it, cycling.
local util = require("groundspec.util")
local ghost = require("groundspec.ghost")
local status = require("groundspec.status")
local config = require("groundspec.config")
local native = require("groundspec.native")

local api = vim.api

local M = {}

M.INVOKED, M.AUTOMATIC = 1, 2 -- LSP InlineCompletionTriggerKind

-- Per buffer: the suggestion list on screen, the request in flight, a
-- request waiting for the end of this main-loop turn.
local shown = {} -- buf -> { list, index, client_id, tick, trigger }
local pending = {} -- buf -> { client, id, tick, row, col, trigger }
local asking = {} -- buf -> true
M.enabled = true -- :GroundspecToggle; vim.b.groundspec_enabled = false turns one buffer off

function M.get_client(buf)
  return vim.lsp.get_clients({ bufnr = buf, name = "groundspec" })[1]
end

function M.in_insert()
  return api.nvim_get_mode().mode:sub(1, 1) == "i"
end

--- Suggestions allowed in `buf` (globally on, and not turned off for the buffer).
function M.allowed(buf)
  return M.enabled and vim.b[buf].groundspec_enabled ~= false
end

--- Ask while typing in `buf`: vim.b.groundspec_auto_trigger, else the
--- option; never where Neovim's built-in inline completion asks.
function M.auto_trigger(buf)
  if native.active(buf) then
    return false
  end
  local value = vim.b[buf].groundspec_auto_trigger
  if value == nil then
    value = config.options.auto_trigger
  end
  return value ~= false
end

local function pum_visible()
  return vim.fn.pumvisible() == 1
end

function M.current(buf)
  local state = shown[buf]
  return state and state.list[state.index]
end

local function cancel_pending(buf)
  if util.cancel_pending(pending, buf) then
    status.set_generating(false)
  end
end

function M.dismiss(buf)
  buf = buf or api.nvim_get_current_buf()
  cancel_pending(buf)
  shown[buf] = nil
  ghost.clear(buf)
  status.set_cycle(0, 0)
end

--- Forget `buf` (wiped out, or its client went away: nothing to cancel).
function M.forget(buf)
  pending[buf] = nil
  M.dismiss(buf)
  shown[buf], asking[buf] = nil, nil
end

local function render(buf)
  local s = M.current(buf)
  local state = shown[buf]
  ghost.show(buf, s.row, s.col, s.text, config.options.ghost_text)
  state.tick = api.nvim_buf_get_changedtick(buf)
  status.set_cycle(state.index, #state.list)
end

-- A suggestion at the cursor from an InlineCompletionItem: the text still to
-- insert and the byte range it replaces (cursor .. item.range end).
local function to_suggestion(buf, item, row, col, encoding)
  local text = ghost.insert_text(item)
  local s = { item = item, row = row, col = col, end_row = row, end_col = col }
  if item.range then
    local start = util.from_lsp(buf, item.range.start, encoding)
    local finish = util.from_lsp(buf, item.range["end"], encoding)
    local after_cursor = finish[1] > row or (finish[1] == row and finish[2] >= col)
    if start[1] ~= row or start[2] > col or not after_cursor then
      return nil
    end
    local typed = util.line(buf, row):sub(start[2] + 1, col)
    if text:sub(1, #typed) ~= typed then
      return nil
    end
    text = text:sub(#typed + 1)
    s.end_row, s.end_col = finish[1], finish[2]
  end
  s.text = text
  return text ~= "" and s or nil
end

-- Show the answer to a request made at `cursor` (tick unchanged). With
-- `step`, the user cycled from a single suggestion: show the one after it.
local function show_result(buf, client, result, cursor, encoding, trigger, step)
  local list = {}
  for _, item in ipairs(result.items or result) do
    local s = to_suggestion(buf, item, cursor[1] - 1, cursor[2], encoding)
    if s then
      table.insert(list, s)
    end
  end
  if #list == 0 or pum_visible() then
    return M.dismiss(buf)
  end
  local before = M.current(buf)
  local index = 1
  if step and #list > 1 and before and before.text == list[1].text then
    index = step % #list + 1
  end
  shown[buf] = { list = list, index = index, client_id = client.id, trigger = trigger }
  render(buf)
end

-- The answer is for what is on screen: same buffer, text, cursor, still typing.
local function still_current(buf, tick, cursor)
  local now = api.nvim_win_get_cursor(0)
  return api.nvim_get_current_buf() == buf
    and api.nvim_buf_get_changedtick(buf) == tick
    and now[1] == cursor[1]
    and now[2] == cursor[2]
    and M.in_insert()
end

--- Ask the server for inline completions at the cursor and show the first.
--- `trigger_kind`: LSP's Invoked (1, the default: the user asked) or
--- Automatic (2, typing). `step`: see show_result.
function M.request(buf, trigger_kind, step)
  buf = (buf == nil or buf == 0) and api.nvim_get_current_buf() or buf
  local client = M.get_client(buf)
  if not client or not M.allowed(buf) then
    return
  end
  trigger_kind = trigger_kind or M.INVOKED
  local win = api.nvim_get_current_win()
  local cursor = api.nvim_win_get_cursor(win)
  local tick = api.nvim_buf_get_changedtick(buf)
  local p = pending[buf]
  if p and p.tick == tick and p.row == cursor[1] and p.col == cursor[2] and p.trigger == trigger_kind then
    return -- the same question is in flight
  end
  cancel_pending(buf)
  local encoding = client.offset_encoding or "utf-16"
  local params = vim.lsp.util.make_position_params(win, encoding)
  params.context = { triggerKind = trigger_kind }

  local request_id, answered = nil, false
  local ok, id = util.call(client, "request", "textDocument/inlineCompletion", params, function(err, result)
    answered = true -- (an in-process server answers before request() returns)
    if pending[buf] and pending[buf].id == request_id then
      pending[buf] = nil
      status.set_generating(false)
    end
    if err then
      return status.on_request_error(err.message or "request failed")
    end
    if result and still_current(buf, tick, cursor) then
      show_result(buf, client, result, cursor, encoding, trigger_kind, step)
    end
  end, buf)
  if not ok or answered then
    return
  end
  request_id = id
  pending[buf] = { client = client, id = id, tick = tick, row = cursor[1], col = cursor[2], trigger = trigger_kind }
  -- Say "generating" only when it takes long enough to notice.
  vim.defer_fn(function()
    if pending[buf] and pending[buf].id == id then
      status.set_generating(true)
    end
  end, 300)
end

-- Ask once the keys typed in this main-loop turn are in (TextChangedI and
-- CursorMovedI both fire for one keystroke). No timer: the server debounces.
function M.ask_soon(buf)
  if asking[buf] or not M.auto_trigger(buf) then
    return
  end
  asking[buf] = true
  vim.schedule(function()
    asking[buf] = nil
    if api.nvim_buf_is_valid(buf) and api.nvim_get_current_buf() == buf and M.in_insert() and not pum_visible() then
      M.request(buf, M.AUTOMATIC)
    end
  end)
end

-- The user typed the next characters of suggestion `s`: keep the rest on screen.
local function typed_through(buf, s, row, col)
  local typed = row == s.row and col > s.col and util.line(buf, row):sub(s.col + 1, col)
  if not (typed and s.text:sub(1, #typed) == typed and #typed < #s.text) then
    return false
  end
  s.text = s.text:sub(#typed + 1)
  if s.end_row == s.row then
    s.end_col = s.end_col + #typed
  end
  s.col = col
  shown[buf].list, shown[buf].index = { s }, 1
  render(buf)
  return true
end

--- InsertEnter / TextChangedI / CursorMovedI: keep the suggestion while the
--- user types through it, otherwise drop it and ask again (when auto_trigger).
function M.on_change(buf)
  if pum_visible() then
    return M.dismiss(buf) -- the completion menu has the user's attention
  end
  local s = M.current(buf)
  local row, col = unpack(api.nvim_win_get_cursor(0))
  row = row - 1
  if s then
    local state = shown[buf]
    if api.nvim_buf_get_changedtick(buf) == state.tick and row == s.row and col == s.col then
      return -- nothing changed since we drew it (our own edit, or the other event)
    end
    if typed_through(buf, s, row, col) then
      return
    end
    M.dismiss(buf)
  end
  cancel_pending(buf) -- its answer would be stale
  status.refresh(buf) -- keep the hint on the cursor line
  M.ask_soon(buf)
end

local function run_command(buf, s)
  local state = shown[buf]
  if s.command_sent or not s.item.command or not state then
    return
  end
  s.command_sent = true
  local client = vim.lsp.get_client_by_id(state.client_id)
  if client then
    local cmd = s.item.command
    local params = { command = cmd.command, arguments = cmd.arguments }
    util.call(client, "request", "workspace/executeCommand", params, function() end, buf)
  end
end

-- Insert `chunk` (the start of suggestion `s`) at the cursor; with `replace`
-- the text up to the end of the item's range is replaced too.
local function insert(buf, s, chunk, replace)
  local lines = vim.split(chunk, "\n", { plain = true })
  local end_row, end_col = s.row, s.col
  if replace then
    end_row, end_col = s.end_row, s.end_col
  end
  api.nvim_buf_set_text(buf, s.row, s.col, end_row, end_col, lines)
  local row = s.row + #lines - 1
  local col = (#lines == 1 and s.col or 0) + #lines[#lines]
  api.nvim_win_set_cursor(0, { row + 1, col })
  return row, col
end

--- Accept the whole suggestion; false when none is shown.
function M.accept()
  local buf = api.nvim_get_current_buf()
  local s = M.current(buf)
  if not s then
    return false
  end
  run_command(buf, s)
  M.dismiss(buf)
  insert(buf, s, s.text, true)
  return true
end

local function accept_part(split)
  local buf = api.nvim_get_current_buf()
  local s = M.current(buf)
  if not s then
    return false
  end
  local chunk = split(s.text)
  if chunk == s.text then
    return M.accept()
  end
  run_command(buf, s)
  local row, col = insert(buf, s, chunk, false)
  if s.end_row == s.row then
    s.end_col = s.end_col - s.col + col
  end
  s.end_row = s.end_row + row - s.row
  s.row, s.col, s.text = row, col, s.text:sub(#chunk + 1)
  shown[buf].list, shown[buf].index = { s }, 1
  render(buf)
  return true
end

function M.accept_word()
  return accept_part(ghost.next_word)
end

function M.accept_line()
  return accept_part(ghost.next_line)
end

--- Show the next (step 1) or previous (step -1) suggestion. With one
--- suggestion from typing (or none), ask the server explicitly (triggerKind
--- Invoked), which may return several, and show the next of those.
function M.cycle(step)
  local buf = api.nvim_get_current_buf()
  local state = shown[buf]
  if state and #state.list > 1 then
    state.index = (state.index - 1 + step) % #state.list + 1
    render(buf)
  elseif not state or state.trigger ~= M.INVOKED then
    M.request(buf, M.INVOKED, state and step or nil)
  end
  return true
end

return M
