-- groundspec for Neovim: inline completions (ghost text) and refactors from
-- `groundspec serve`, over standard LSP (textDocument/inlineCompletion,
-- workspace/executeCommand).
local util = require("groundspec.util")
local ghost = require("groundspec.ghost")
local status = require("groundspec.status")

local api = vim.api

local M = {}

local INVOKED, AUTOMATIC = 1, 2 -- LSP InlineCompletionTriggerKind
local LOAD_PROGRESS = "groundspec/load" -- the server's $/progress token while models load

local defaults = {
  cmd = { "groundspec", "serve" },
  filetypes = { "python", "javascript", "typescript", "go", "rust" },
  root_markers = { ".git", "pyproject.toml", "package.json", "go.mod", "Cargo.toml" },
  -- The server debounces typing (its `debounceMs`, 120 ms by default) and
  -- answers a typed-ahead suggestion from its cache at once, so the client
  -- asks on every change and pays one pause, not two. A number here is sent
  -- to the server as `debounceMs`.
  debounce_ms = nil,
  -- Sent as initializationOptions (model paths, speculation, ...).
  init_options = {},
  ghost_text = { hl = "GroundspecGhost", pos = "inline" },
  -- Insert-mode keys; set one to false to leave it unmapped. Without a
  -- suggestion on screen each key does what it did before.
  keymaps = {
    accept = "<Tab>",
    accept_word = "<M-w>",
    accept_line = "<M-l>",
    dismiss = "<C-]>",
    next = "<M-n>",
    prev = "<M-p>",
    suggest = "<M-Space>",
  },
}

M.config = vim.deepcopy(defaults)

-- Per buffer: the suggestion list on screen, the request in flight, a
-- request waiting for the end of this main-loop turn, the running refactor.
local shown = {} -- buf -> { list, index, client_id, tick, trigger }
local pending = {} -- buf -> { client, id, tick, row, col, trigger }
local asking = {} -- buf -> true
local refactors = {} -- buf -> { client, id, cancelled }
local enabled = true

local function get_client(buf)
  return vim.lsp.get_clients({ bufnr = buf, name = "groundspec" })[1]
end

local function in_insert()
  return api.nvim_get_mode().mode:sub(1, 1) == "i"
end

local function current(buf)
  local state = shown[buf]
  return state and state.list[state.index]
end

local function cancel_pending(buf)
  local p = pending[buf]
  pending[buf] = nil
  if p then
    pcall(util.call, p.client, "cancel_request", p.id)
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

local function render(buf)
  local s = current(buf)
  local state = shown[buf]
  ghost.show(buf, s.row, s.col, s.text, M.config.ghost_text)
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
  if #list == 0 then
    return M.dismiss(buf)
  end
  local before = current(buf)
  local index = 1
  if step and #list > 1 and before and before.text == list[1].text then
    index = step % #list + 1
  end
  shown[buf] = { list = list, index = index, client_id = client.id, trigger = trigger }
  render(buf)
end

--- Ask the server for inline completions at the cursor and show the first.
--- `trigger_kind`: LSP's Invoked (1, the default: the user asked) or
--- Automatic (2, typing). `step`: see show_result.
function M.suggest(buf, trigger_kind, step)
  buf = (buf == nil or buf == 0) and api.nvim_get_current_buf() or buf
  local client = get_client(buf)
  if not client or not enabled then
    return
  end
  trigger_kind = trigger_kind or INVOKED
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
    local now = api.nvim_win_get_cursor(0)
    local stale = api.nvim_get_current_buf() ~= buf
      or api.nvim_buf_get_changedtick(buf) ~= tick
      or now[1] ~= cursor[1]
      or now[2] ~= cursor[2]
      or not in_insert()
    if not stale and result then
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
local function ask_soon(buf)
  if asking[buf] then
    return
  end
  asking[buf] = true
  vim.schedule(function()
    asking[buf] = nil
    if api.nvim_buf_is_valid(buf) and api.nvim_get_current_buf() == buf and in_insert() then
      M.suggest(buf, AUTOMATIC)
    end
  end)
end

-- InsertEnter / TextChangedI / CursorMovedI: keep the suggestion while the user types
-- through it, otherwise drop it and ask again after a pause.
local function on_change(buf)
  local s = current(buf)
  local row, col = unpack(api.nvim_win_get_cursor(0))
  row = row - 1
  if s then
    local state = shown[buf]
    local tick = api.nvim_buf_get_changedtick(buf)
    if tick == state.tick and row == s.row and col == s.col then
      return -- nothing changed since we drew it (our own edit, or the other event)
    end
    local typed = row == s.row and col > s.col and util.line(buf, row):sub(s.col + 1, col)
    if typed and s.text:sub(1, #typed) == typed and #typed < #s.text then
      s.text = s.text:sub(#typed + 1)
      if s.end_row == s.row then
        s.end_col = s.end_col + #typed
      end
      s.col = col
      state.list, state.index = { s }, 1
      return render(buf)
    end
    M.dismiss(buf)
  end
  cancel_pending(buf) -- its answer would be stale
  status.refresh(buf) -- keep the hint on the cursor line
  ask_soon(buf)
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

--- Accept the whole suggestion.
function M.accept()
  local buf = api.nvim_get_current_buf()
  local s = current(buf)
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
  local s = current(buf)
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

--- Accept the next word of the suggestion.
function M.accept_word()
  return accept_part(ghost.next_word)
end

--- Accept the rest of the suggestion's current line.
function M.accept_line()
  return accept_part(ghost.next_line)
end

--- Show the next (step 1) or previous (step -1) suggestion. With one
--- suggestion from typing (or none), ask the server explicitly (triggerKind
--- Invoked), which may return several, and show the next of those.
function M.cycle(step)
  step = step or 1
  local buf = api.nvim_get_current_buf()
  local state = shown[buf]
  if state and #state.list > 1 then
    state.index = (state.index - 1 + step) % #state.list + 1
    render(buf)
  elseif not state or state.trigger ~= INVOKED then
    M.suggest(buf, INVOKED, state and step or nil)
  end
  return true
end

--- The suggestion text on screen in the current buffer, or nil.
function M.visible_text()
  local s = current(api.nvim_get_current_buf())
  return s and s.text
end

function M.toggle()
  enabled = not enabled
  if not enabled then
    M.dismiss()
  end
  util.notify(enabled and "enabled" or "disabled")
end

-- Range of a :'<,'>command in LSP positions: charwise for a `v` selection,
-- whole lines otherwise.
local function command_range(buf, opts, encoding)
  local line1 = opts.line1 or api.nvim_win_get_cursor(0)[1]
  local line2 = opts.line2 or line1
  local first, last = api.nvim_buf_get_mark(buf, "<"), api.nvim_buf_get_mark(buf, ">")
  local srow, scol, erow, ecol
  if (opts.range or 0) > 0 and vim.fn.visualmode() == "v" and first[1] == line1 and last[1] == line2 then
    local text = util.line(buf, line2 - 1)
    local last_char = vim.fn.strcharpart(text:sub(last[2] + 1), 0, 1)
    srow, scol = line1 - 1, first[2]
    erow, ecol = line2 - 1, math.min(last[2] + #last_char, #text)
  elseif line2 < api.nvim_buf_line_count(buf) then
    srow, scol, erow, ecol = line1 - 1, 0, line2, 0
  else
    srow, scol, erow, ecol = line1 - 1, 0, line2 - 1, #util.line(buf, line2 - 1)
  end
  return {
    start = util.to_lsp(buf, srow, scol, encoding),
    ["end"] = util.to_lsp(buf, erow, ecol, encoding),
  }
end

-- First and last line (1-based) a range covers: a range that ends at the
-- start of a line (whole lines selected) does not cover that line.
local function line_span(range)
  local finish = range["end"]
  local last = finish.line + 1
  if finish.character == 0 and finish.line > range.start.line then
    last = finish.line
  end
  return range.start.line + 1, last
end

--- Rewrite the selected lines following an instruction; the server applies
--- the edit with workspace/applyEdit. `opts`: line1, line2, range (from a
--- user command) and instruction (asked with vim.ui.input when missing).
function M.refactor(opts)
  opts = opts or {}
  local buf = api.nvim_get_current_buf()
  local client = get_client(buf)
  if not client then
    return util.notify("no groundspec server for this buffer", vim.log.levels.WARN)
  end
  local range = command_range(buf, opts, client.offset_encoding or "utf-16")
  local function run(instruction)
    if not instruction or vim.trim(instruction) == "" then
      return
    end
    local first, last = line_span(range)
    util.notify(("refactoring lines %d-%d... (:GroundspecCancel stops it)"):format(first, last))
    local args = { { uri = vim.uri_from_bufnr(buf), range = range, instruction = instruction } }
    local params = { command = "groundspec.refactor", arguments = args }
    local job, answered = { client = client }, false
    local ok, id = util.call(client, "request", "workspace/executeCommand", params, function(err)
      answered = true
      if refactors[buf] == job then
        refactors[buf] = nil
      end
      if job.cancelled then
        return
      elseif err then
        util.notify("refactor failed: " .. status.strip(err.message or vim.inspect(err)), vim.log.levels.ERROR)
      else
        util.notify("refactor applied")
      end
    end, buf)
    if ok and not answered then
      job.id = id
      refactors[buf] = job
    end
  end
  if opts.instruction and opts.instruction ~= "" then
    run(opts.instruction)
  else
    vim.ui.input({ prompt = "Refactor instruction: " }, run)
  end
end

--- Stop the running refactor of the current buffer (of every buffer when
--- it has none). Returns how many were stopped.
function M.cancel()
  local buf = api.nvim_get_current_buf()
  local bufs = refactors[buf] and { buf } or vim.tbl_keys(refactors)
  for _, b in ipairs(bufs) do
    local job = refactors[b]
    refactors[b] = nil
    job.cancelled = true
    pcall(util.call, job.client, "cancel_request", job.id)
  end
  util.notify(#bufs > 0 and "refactor cancelled" or "no refactor is running")
  return #bufs
end

--- groundspec/stats of the server, without blocking: `callback(stats)` or
--- `callback(nil, error message)`.
function M.stats(callback)
  local buf = api.nvim_get_current_buf()
  local client = get_client(buf) or vim.lsp.get_clients({ name = "groundspec" })[1]
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

local function map(buf, lhs, action)
  if not lhs then
    return
  end
  local always = { suggest = true, next = true, prev = true } -- these ask when nothing is shown
  vim.keymap.set("i", lhs, function()
    if current(buf) or always[action] then
      return ("<Cmd>lua require('groundspec').%s()<CR>"):format(action)
    end
    return lhs
  end, { buffer = buf, expr = true, silent = true, desc = "groundspec " .. action })
end

local function capabilities()
  local caps = vim.lsp.protocol.make_client_capabilities()
  caps.textDocument.inlineCompletion = { dynamicRegistration = false }
  -- UTF-16 is LSP's baseline and what VS Code speaks: the encoding the server
  -- is tested with. (Neovim would also offer utf-8 and utf-32.)
  caps.general = vim.tbl_extend("force", caps.general or {}, { positionEncodings = { "utf-16" } })
  return caps
end

local function init_options()
  local opts = vim.deepcopy(M.config.init_options or {})
  if M.config.debounce_ms then
    opts.debounceMs = M.config.debounce_ms
  end
  -- An empty Lua table would be sent as a JSON array.
  return next(opts) and opts or vim.empty_dict()
end

-- Typing, keys and cleanup for `buf`; safe to run again (:e! re-attaches).
local function setup_buffer(buf)
  local group = api.nvim_create_augroup("groundspec_buf_" .. buf, { clear = true })
  api.nvim_create_autocmd({ "InsertEnter", "TextChangedI", "CursorMovedI" }, {
    group = group,
    buffer = buf,
    callback = function()
      on_change(buf)
    end,
  })
  -- Typing started before the server was up: ask now.
  api.nvim_create_autocmd("LspAttach", {
    group = group,
    buffer = buf,
    callback = function(ev)
      local client = vim.lsp.get_client_by_id(ev.data.client_id)
      if client and client.name == "groundspec" and in_insert() and api.nvim_get_current_buf() == buf then
        ask_soon(buf)
      end
    end,
  })
  api.nvim_create_autocmd("LspDetach", {
    group = group,
    buffer = buf,
    callback = function(ev)
      local client = vim.lsp.get_client_by_id(ev.data.client_id)
      if client and client.name == "groundspec" then
        pending[buf] = nil -- the client is gone: nothing to cancel
        M.dismiss(buf)
      end
    end,
  })
  api.nvim_create_autocmd({ "InsertLeave", "BufLeave" }, {
    group = group,
    buffer = buf,
    callback = function()
      M.dismiss(buf)
    end,
  })
  api.nvim_create_autocmd("BufWipeout", {
    group = group,
    buffer = buf,
    callback = function()
      shown[buf], pending[buf], refactors[buf] = nil, nil, nil
      api.nvim_del_augroup_by_id(group)
    end,
  })

  local keys = M.config.keymaps or {}
  map(buf, keys.accept, "accept")
  map(buf, keys.accept_word, "accept_word")
  map(buf, keys.accept_line, "accept_line")
  map(buf, keys.dismiss, "dismiss")
  map(buf, keys.next, "next")
  map(buf, keys.prev, "prev")
  map(buf, keys.suggest, "suggest")
end

--- Start (or reuse) the server for `buf` and set up typing, keys and cleanup.
--- Safe to call again: after :e! Neovim detaches the client, and the
--- FileType event that follows attaches it again.
function M.attach(buf)
  buf = (buf == nil or buf == 0) and api.nvim_get_current_buf() or buf
  if vim.bo[buf].buftype ~= "" or get_client(buf) then
    return
  end
  local client_id = vim.lsp.start({
    name = "groundspec",
    cmd = M.config.cmd,
    root_dir = vim.fs.root(buf, M.config.root_markers) or vim.fn.getcwd(),
    init_options = init_options(),
    capabilities = capabilities(),
    handlers = {
      ["window/showMessage"] = function(_, params)
        status.on_show_message(params)
      end,
    },
    on_exit = function()
      vim.schedule(status.reset)
    end,
  }, { bufnr = buf })
  if client_id then
    setup_buffer(buf)
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
  if params.token == LOAD_PROGRESS and params.value.kind == "end" and in_insert() and get_client(buf) then
    ask_soon(buf)
  end
end

function M.next()
  return M.cycle(1)
end

function M.prev()
  return M.cycle(-1)
end

function M.setup(opts)
  M.config = vim.tbl_deep_extend("force", vim.deepcopy(defaults), opts or {})
  api.nvim_set_hl(0, "GroundspecGhost", { link = "Comment", default = true })
  api.nvim_set_hl(0, "GroundspecStatus", { link = "NonText", default = true })
  local group = api.nvim_create_augroup("groundspec", { clear = true })
  api.nvim_create_autocmd("LspProgress", { group = group, callback = on_progress })
  api.nvim_create_autocmd("FileType", {
    group = group,
    pattern = M.config.filetypes,
    callback = function(ev)
      M.attach(ev.buf)
    end,
  })
  for _, buf in ipairs(api.nvim_list_bufs()) do
    if api.nvim_buf_is_loaded(buf) and vim.tbl_contains(M.config.filetypes, vim.bo[buf].filetype) then
      M.attach(buf)
    end
  end
end

return M
