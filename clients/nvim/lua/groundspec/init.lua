-- groundspec for Neovim: inline completions (ghost text), next edits and
-- refactors from `groundspec serve`, over standard LSP. This module starts the
-- server and wires buffers to it; suggest.lua draws suggestions, next_edit.lua
-- proposes the next edit, refactor.lua and preview.lua rewrite selections,
-- keys.lua maps keys, native.lua uses Neovim 0.12's built-in inline completion
-- when present.
local util = require("groundspec.util")
local status = require("groundspec.status")
local config = require("groundspec.config")
local suggest = require("groundspec.suggest")
local keys = require("groundspec.keys")
local native = require("groundspec.native")
local refactor = require("groundspec.refactor")
local preview = require("groundspec.preview")
local next_edit = require("groundspec.next_edit")
local next_edit_view = require("groundspec.next_edit_view")

local api = vim.api

local M = {}

local LOAD_PROGRESS = "groundspec/load" -- the server's $/progress token while models load

M.config = config.options

--- Accept the whole suggestion (the built-in's on Neovim 0.12); false when none is shown.
function M.accept()
  local buf = api.nvim_get_current_buf()
  return native.accept(buf) or suggest.accept()
end

M.accept_word = suggest.accept_word
M.accept_line = suggest.accept_line
M.refactor = refactor.refactor
M.cancel = refactor.cancel
M.refactor_accept = preview.accept
M.refactor_reject = preview.reject

function M.dismiss(buf)
  suggest.dismiss(buf)
  return true
end

--- Ask for suggestions now (LSP triggerKind Invoked), whatever auto_trigger says.
function M.suggest(buf, trigger_kind)
  suggest.request(buf, trigger_kind or suggest.INVOKED)
  return true
end

function M.next()
  local buf = api.nvim_get_current_buf()
  return native.active(buf) and not suggest.current(buf) and native.select(buf, 1) or suggest.cycle(1)
end

function M.prev()
  local buf = api.nvim_get_current_buf()
  return native.active(buf) and not suggest.current(buf) and native.select(buf, -1) or suggest.cycle(-1)
end

M.cycle = suggest.cycle

--- Ask for a next edit at the cursor now (groundspec/nextEdit).
function M.next_edit(buf)
  return next_edit.request(buf, true)
end

--- Apply the proposed next edit (first jumping to it when it is off screen).
function M.next_edit_accept(buf)
  return next_edit.accept(buf)
end

--- Hide the proposed next edit; true when one was shown.
function M.next_edit_dismiss(buf)
  return next_edit.dismiss(buf)
end

--- The proposed next edit in `buf`: { start = {row, col}, finish = {row, col},
--- text } (0-based byte positions), or nil.
function M.next_edit_proposal(buf)
  local p = next_edit.current((buf == nil or buf == 0) and api.nvim_get_current_buf() or buf)
  return p and { start = p.start, finish = p.finish, text = p.text }
end

--- The suggestion text on screen in the current buffer, or nil.
function M.visible_text()
  local s = suggest.current(api.nvim_get_current_buf())
  return s and s.text
end

--- Turn suggestions on or off everywhere.
function M.toggle()
  suggest.enabled = not suggest.enabled
  if not suggest.enabled then
    suggest.dismiss()
    next_edit.dismiss()
  end
  util.notify(suggest.enabled and "enabled" or "disabled")
end

--- Turn suggestions on or off in `buf` (vim.b.groundspec_enabled).
function M.toggle_buffer(buf)
  buf = (buf == nil or buf == 0) and api.nvim_get_current_buf() or buf
  local on = vim.b[buf].groundspec_enabled == false
  vim.b[buf].groundspec_enabled = on
  if native.active(buf) or (on and native.available(config.options)) then
    vim.lsp.inline_completion.enable(on, { bufnr = buf })
  end
  if not on then
    suggest.dismiss(buf)
    next_edit.dismiss(buf)
  end
  util.notify((on and "enabled" or "disabled") .. " in this buffer")
end

--- groundspec/stats of the server, without blocking: `callback(stats)` or
--- `callback(nil, error message)`.
function M.stats(callback)
  local buf = api.nvim_get_current_buf()
  local client = suggest.get_client(buf) or vim.lsp.get_clients({ name = "groundspec" })[1]
  if not client then
    return callback(nil, "groundspec is not running")
  end
  local ok = util.call(client, "request", "groundspec/stats", {}, function(err, result)
    if err then
      callback(nil, status.strip(err.message))
    else
      callback(result)
    end
  end, buf)
  if not ok then
    callback(nil, "the server is not answering")
  end
end

--- The server's state in a few words, for a statusline ("" when idle).
function M.status()
  return status.text()
end

local function map_keys(buf)
  local k = config.options.keymaps or {}
  local function always(fn) -- asks the server when nothing is shown: never falls through
    return function()
      fn()
      return true
    end
  end
  keys.map(buf, k.accept, "accept", M.accept)
  keys.map(buf, k.tab and "<Tab>", "accept (Tab)", M.accept)
  keys.map(buf, k.accept_word, "accept_word", suggest.accept_word)
  keys.map(buf, k.accept_line, "accept_line", suggest.accept_line)
  keys.map(buf, k.dismiss, "dismiss", function()
    local shown = suggest.current(buf) ~= nil
    suggest.dismiss(buf)
    return shown
  end)
  keys.map(buf, k.next, "next", always(M.next))
  keys.map(buf, k.prev, "prev", always(M.prev))
  keys.map(buf, k.suggest, "suggest", always(M.suggest))
  local ne = config.next_edit(config.options)
  if ne.enabled ~= false then -- normal mode
    keys.map(buf, ne.accept, "next edit accept", function()
      return next_edit.accept(buf)
    end, "n")
    keys.map(buf, ne.dismiss, "next edit dismiss", function()
      -- <Esc> keeps its own meaning (a :nohlsearch mapping) after dismissing
      return next_edit.dismiss(buf) and ne.dismiss:lower() ~= "<esc>"
    end, "n")
    keys.map(buf, ne.request, "next edit request", always(M.next_edit), "n")
  end
end

-- Typing, keys and cleanup for `buf`; safe to run again (:e! re-attaches).
local function setup_buffer(buf)
  local group = api.nvim_create_augroup("groundspec_buf_" .. buf, { clear = true })
  local function on(events, callback)
    api.nvim_create_autocmd(events, { group = group, buffer = buf, callback = callback })
  end
  on({ "InsertEnter", "TextChangedI", "CursorMovedI" }, function()
    suggest.on_change(buf)
  end)
  on({ "InsertLeave", "BufLeave", "CompleteChanged" }, function()
    suggest.dismiss(buf)
  end)
  -- Next edits are proposed in normal mode (as sidekick.nvim does): dropped
  -- on entering insert mode, asked for after leaving it and after changes.
  on("InsertEnter", function()
    next_edit.dismiss(buf)
  end)
  on("InsertLeave", function()
    next_edit.schedule(buf)
  end)
  on("TextChanged", function()
    next_edit.on_text_changed(buf)
  end)
  -- Turning to another file: a rename made in the last one may apply here.
  on("BufEnter", function()
    next_edit.on_enter(buf)
  end)
  on("LspDetach", function(ev)
    local client = vim.lsp.get_client_by_id(ev.data.client_id)
    if client and client.name == "groundspec" then
      suggest.forget(buf)
      next_edit.forget(buf)
    end
  end)
  on("BufWipeout", function()
    suggest.forget(buf)
    next_edit.forget(buf)
    refactor.forget(buf)
    keys.forget(buf)
    native.disable(buf)
    api.nvim_del_augroup_by_id(group)
  end)
  native.enable(buf, config.options)
  map_keys(buf)
end

-- A groundspec client attached to a buffer (started by this plugin or by
-- vim.lsp.enable): wire the buffer, and ask at once when the user is typing.
local function on_attach(ev)
  local client = vim.lsp.get_client_by_id(ev.data.client_id)
  if not client or client.name ~= "groundspec" then
    return
  end
  setup_buffer(ev.buf)
  if suggest.in_insert() and api.nvim_get_current_buf() == ev.buf then
    suggest.ask_soon(ev.buf)
  end
end

--- Start the server for `buf`, or attach `buf` to the running one: one
--- server per Neovim whatever the project root (the models load once).
--- Safe to call again: after :e! Neovim detaches the client, and the
--- FileType event that follows attaches it again.
function M.attach(buf)
  buf = (buf == nil or buf == 0) and api.nvim_get_current_buf() or buf
  if vim.bo[buf].buftype ~= "" or suggest.get_client(buf) then
    return
  end
  local client_config = config.client_config(config.options)
  client_config.root_dir = vim.fs.root(buf, config.options.root_markers) or vim.fn.getcwd()
  return vim.lsp.start(client_config, { bufnr = buf, reuse_client = config.reuse_client })
end

--- Attach every loaded buffer of a served filetype (after the server was
--- started again, recover.lua): their text goes to the new server with didOpen.
function M.reattach()
  for _, buf in ipairs(api.nvim_list_bufs()) do
    if api.nvim_buf_is_loaded(buf) and vim.tbl_contains(config.options.filetypes, vim.bo[buf].filetype) then
      M.attach(buf)
    end
  end
end

-- $/progress from groundspec: shown as the state; after the models loaded,
-- ask for the suggestion the user has been waiting for.
local function on_progress(ev)
  local client = vim.lsp.get_client_by_id(ev.data.client_id)
  local params = ev.data.params
  if not client or client.name ~= "groundspec" or not params then
    return
  end
  status.on_progress(params.token, params.value)
  local buf = api.nvim_get_current_buf()
  local loaded = params.token == LOAD_PROGRESS and params.value.kind == "end"
  if loaded and suggest.in_insert() and suggest.get_client(buf) then
    suggest.ask_soon(buf)
  end
end

function M.setup(opts)
  M.config = config.set(opts)
  api.nvim_set_hl(0, "GroundspecGhost", { link = "Comment", default = true })
  api.nvim_set_hl(0, "GroundspecStatus", { link = "NonText", default = true })
  next_edit_view.define_highlights()
  local group = api.nvim_create_augroup("groundspec", { clear = true })
  api.nvim_create_autocmd("LspProgress", { group = group, callback = on_progress })
  api.nvim_create_autocmd("LspAttach", { group = group, callback = on_attach })
  api.nvim_create_autocmd("FileType", {
    group = group,
    pattern = M.config.filetypes,
    callback = function(ev)
      M.attach(ev.buf)
    end,
  })
  for _, buf in ipairs(api.nvim_list_bufs()) do
    if suggest.get_client(buf) then
      setup_buffer(buf) -- attached before setup (vim.lsp.enable)
    elseif api.nvim_buf_is_loaded(buf) and vim.tbl_contains(M.config.filetypes, vim.bo[buf].filetype) then
      M.attach(buf)
    end
  end
end

return M
