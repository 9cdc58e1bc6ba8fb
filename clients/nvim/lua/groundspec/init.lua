-- groundspec for Neovim: inline completions (ghost text) and refactors from
-- `groundspec serve`, over standard LSP (textDocument/inlineCompletion,
-- workspace/executeCommand).
local util = require("groundspec.util")
local ghost = require("groundspec.ghost")

local api = vim.api
local uv = vim.uv or vim.loop

local M = {}

local INVOKED, AUTOMATIC = 1, 2 -- LSP InlineCompletionTriggerKind
local LOAD_PROGRESS = "groundspec/load" -- the server's $/progress token while models load

local defaults = {
  cmd = { "groundspec", "serve" },
  filetypes = { "python", "javascript", "typescript", "go", "rust" },
  root_markers = { ".git", "pyproject.toml", "package.json", "go.mod", "Cargo.toml" },
  debounce_ms = 150,
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

-- Per buffer: the suggestion list on screen and the request in flight.
local shown = {} -- buf -> { list, index, client_id, tick }
local pending = {} -- buf -> { client, id }
local timer = nil
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
  end
end

function M.dismiss(buf)
  buf = buf or api.nvim_get_current_buf()
  cancel_pending(buf)
  shown[buf] = nil
  ghost.clear(buf)
end

local function render(buf)
  local s = current(buf)
  local state = shown[buf]
  ghost.show(buf, s.row, s.col, s.text, M.config.ghost_text)
  state.tick = api.nvim_buf_get_changedtick(buf)
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

--- Ask the server for inline completions at the cursor and show the first.
function M.suggest(buf, trigger_kind)
  buf = buf or api.nvim_get_current_buf()
  local client = get_client(buf)
  if not client or not enabled then
    return
  end
  cancel_pending(buf)
  local win = api.nvim_get_current_win()
  local cursor = api.nvim_win_get_cursor(win)
  local tick = api.nvim_buf_get_changedtick(buf)
  local encoding = client.offset_encoding or "utf-16"
  local params = vim.lsp.util.make_position_params(win, encoding)
  params.context = { triggerKind = trigger_kind or INVOKED }

  local ok, id = util.call(client, "request", "textDocument/inlineCompletion", params, function(err, result)
    if pending[buf] and pending[buf].id == id then
      pending[buf] = nil
    end
    local now = api.nvim_win_get_cursor(0)
    local stale = api.nvim_get_current_buf() ~= buf
      or api.nvim_buf_get_changedtick(buf) ~= tick
      or now[1] ~= cursor[1]
      or now[2] ~= cursor[2]
      or not in_insert()
    if err then
      -- e.g. the models are still loading; we ask again when they are ready.
      return vim.notify_once("groundspec: " .. (err.message or "request failed"), vim.log.levels.WARN)
    end
    if stale or not result then
      return
    end
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
    shown[buf] = { list = list, index = 1, client_id = client.id }
    render(buf)
  end, buf)
  if ok then
    pending[buf] = { client = client, id = id }
  end
end

local function debounce(buf)
  timer = timer or uv.new_timer()
  timer:stop()
  timer:start(
    M.config.debounce_ms,
    0,
    vim.schedule_wrap(function()
      if api.nvim_get_current_buf() == buf and in_insert() then
        M.suggest(buf, AUTOMATIC)
      end
    end)
  )
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
  debounce(buf)
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

--- Show the next (step 1) or previous (step -1) suggestion.
function M.cycle(step)
  local buf = api.nvim_get_current_buf()
  local state = shown[buf]
  if not state then
    return false
  end
  state.index = (state.index - 1 + (step or 1)) % #state.list + 1
  render(buf)
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
    util.notify(("refactoring lines %d-%d..."):format(range.start.line + 1, range["end"].line + 1))
    local args = { { uri = vim.uri_from_bufnr(buf), range = range, instruction = instruction } }
    local params = { command = "groundspec.refactor", arguments = args }
    util.call(client, "request", "workspace/executeCommand", params, function(err)
      if err then
        util.notify("refactor failed: " .. (err.message or vim.inspect(err)), vim.log.levels.ERROR)
      else
        util.notify("refactor applied")
      end
    end, buf)
  end
  if opts.instruction and opts.instruction ~= "" then
    run(opts.instruction)
  else
    vim.ui.input({ prompt = "Refactor instruction: " }, run)
  end
end

--- groundspec/stats of the server attached to the current buffer (blocking), or nil, err.
function M.stats(timeout_ms)
  local buf = api.nvim_get_current_buf()
  local client = get_client(buf) or vim.lsp.get_clients({ name = "groundspec" })[1]
  if not client then
    return nil, "groundspec is not running"
  end
  local res, err = util.call(client, "request_sync", "groundspec/stats", {}, timeout_ms or 2000, buf)
  if not res then
    return nil, err or "no answer"
  end
  if res.err then
    return nil, res.err.message
  end
  return res.result
end

local function map(buf, lhs, action)
  if not lhs then
    return
  end
  vim.keymap.set("i", lhs, function()
    if current(buf) or (action == "suggest") then
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

--- Start (or reuse) the server for `buf` and set up typing, keys and cleanup.
function M.attach(buf)
  buf = (buf == nil or buf == 0) and api.nvim_get_current_buf() or buf
  if vim.b[buf].groundspec_attached or vim.bo[buf].buftype ~= "" then
    return
  end
  local root = vim.fs.root(buf, M.config.root_markers) or vim.fn.getcwd()
  local client_id = vim.lsp.start({
    name = "groundspec",
    cmd = M.config.cmd,
    root_dir = root,
    -- An empty Lua table would be sent as a JSON array.
    init_options = next(M.config.init_options or {}) and M.config.init_options or vim.empty_dict(),
    capabilities = capabilities(),
  }, { bufnr = buf })
  if not client_id then
    return
  end
  vim.b[buf].groundspec_attached = true

  local group = api.nvim_create_augroup("groundspec_buf_" .. buf, { clear = true })
  api.nvim_create_autocmd({ "InsertEnter", "TextChangedI", "CursorMovedI" }, {
    group = group,
    buffer = buf,
    callback = function()
      on_change(buf)
    end,
  })
  local function ask_again(client_id)
    local client = vim.lsp.get_client_by_id(client_id)
    if client and client.name == "groundspec" and in_insert() and api.nvim_get_current_buf() == buf then
      debounce(buf)
    end
  end
  -- Typing started before the server was up, or while the models loaded: ask now.
  api.nvim_create_autocmd("LspAttach", {
    group = group,
    buffer = buf,
    callback = function(ev)
      ask_again(ev.data.client_id)
    end,
  })
  api.nvim_create_autocmd("LspProgress", {
    group = group,
    pattern = "end",
    callback = function(ev)
      local params = ev.data and ev.data.params
      if params and params.token == LOAD_PROGRESS then
        ask_again(ev.data.client_id)
      end
    end,
  })
  api.nvim_create_autocmd({ "InsertLeave", "BufLeave" }, {
    group = group,
    buffer = buf,
    callback = function()
      if timer then
        timer:stop()
      end
      M.dismiss(buf)
    end,
  })
  api.nvim_create_autocmd("BufWipeout", {
    group = group,
    buffer = buf,
    callback = function()
      shown[buf], pending[buf] = nil, nil
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

function M.next()
  return M.cycle(1)
end

function M.prev()
  return M.cycle(-1)
end

function M.setup(opts)
  M.config = vim.tbl_deep_extend("force", vim.deepcopy(defaults), opts or {})
  api.nvim_set_hl(0, "GroundspecGhost", { link = "Comment", default = true })
  local group = api.nvim_create_augroup("groundspec", { clear = true })
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
