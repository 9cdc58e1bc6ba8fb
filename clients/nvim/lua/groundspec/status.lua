-- What the server is doing, visible without any statusline setup: a hint at
-- the end of the cursor line (loading models 40%, generating, refactoring)
-- and each failure once, as one message that names the fix. `text()` gives
-- the same state to statusline users.
local api = vim.api

local M = {}

M.ns = api.nvim_create_namespace("groundspec_status")

local FIX = "run `groundspec models fetch` (see :checkhealth groundspec)"

local progress = {} -- $/progress token -> text, while it runs
local progress_order = {} -- tokens, oldest first
local generating = false
local failed = nil -- the load failure, once known
local cycle = nil -- "2/3" while a list of suggestions is on screen
local notified = {} -- messages already shown
local hint = nil -- { buf, id } of the end-of-line extmark

--- Messages from the server come as "groundspec: ..."; we add the prefix once.
function M.strip(message)
  message = tostring(message or "")
  while message:sub(1, 12) == "groundspec: " do
    message = message:sub(13)
  end
  return message
end

--- vim.notify once per distinct message, with one "groundspec: " prefix.
function M.notify(message, level)
  message = "groundspec: " .. M.strip(message)
  if notified[message] then
    return
  end
  notified[message] = true
  vim.notify(message, level or vim.log.levels.WARN)
end

--- The current state in a few words ("" when idle), for a statusline.
function M.text()
  if failed then
    return "groundspec: models not loaded"
  end
  local token = progress_order[#progress_order]
  if token then
    return progress[token]
  end
  if generating then
    return "groundspec: generating…"
  end
  return cycle and ("groundspec: suggestion " .. cycle) or ""
end

local function clear_hint()
  if hint and api.nvim_buf_is_valid(hint.buf) then
    pcall(api.nvim_buf_del_extmark, hint.buf, M.ns, hint.id)
  end
  hint = nil
end

--- Draw the state at the end of the cursor line of `buf` (the current buffer
--- by default), or clear it when there is nothing to say.
function M.refresh(buf)
  buf = buf or api.nvim_get_current_buf()
  clear_hint()
  local text = failed and "" or M.text()
  if text == "" or not vim.lsp.get_clients({ bufnr = buf, name = "groundspec" })[1] then
    return
  end
  local row = api.nvim_win_get_cursor(0)[1] - 1
  local id = api.nvim_buf_set_extmark(buf, M.ns, row, 0, {
    virt_text = { { "  " .. text, "GroundspecStatus" } },
    virt_text_pos = "eol",
    hl_mode = "combine",
  })
  hint = { buf = buf, id = id }
end

function M.set_generating(on)
  if generating ~= on then
    generating = on
    M.refresh()
  end
end

function M.set_cycle(index, count)
  cycle = count > 1 and ("%d/%d"):format(index, count) or nil
  M.refresh()
end

-- $/progress value -> the words shown: "groundspec: Loading models 40%".
local function progress_text(title, value)
  local text = M.strip(title or "groundspec")
  if value.message and value.message ~= "" then
    text = text .. ": " .. M.strip(value.message)
  end
  if value.percentage then
    text = text .. " " .. value.percentage .. "%"
  end
  return text:sub(1, 10) == "groundspec" and text or ("groundspec: " .. text)
end

local titles = {} -- token -> title from the begin message

--- One $/progress notification from the groundspec server.
function M.on_progress(token, value)
  if value.kind == "begin" then
    titles[token] = value.title
  end
  if value.kind == "end" then
    progress[token], titles[token] = nil, nil
    progress_order = vim.tbl_filter(function(t)
      return t ~= token
    end, progress_order)
  else
    if not progress[token] then
      table.insert(progress_order, token)
    end
    progress[token] = progress_text(titles[token], value)
  end
  M.refresh()
end

--- The models could not be loaded: say so once, with the fix.
function M.fail(message)
  if failed then
    return -- shown already (the server's message and each request say it)
  end
  failed = M.strip(message)
  local text = failed
  if not text:find("groundspec models fetch", 1, true) then
    text = text .. ". Fix: " .. FIX
  end
  M.notify(text, vim.log.levels.ERROR)
  M.refresh()
end

function M.failed()
  return failed
end

--- window/showMessage from the server: once each, one prefix; a load failure
--- becomes the failed state.
function M.on_show_message(params)
  local message = M.strip(params.message)
  if message:find("could not load the models", 1, true) then
    return M.fail(message)
  end
  local levels = { vim.log.levels.ERROR, vim.log.levels.WARN, vim.log.levels.INFO, vim.log.levels.DEBUG }
  M.notify(message, levels[params.type] or vim.log.levels.INFO)
end

--- A request failed with `message`: shown once unless the state already says it.
function M.on_request_error(message)
  message = M.strip(message)
  if message:find("failed to load", 1, true) then
    return M.fail(message)
  elseif failed or message:find("still loading", 1, true) then
    return -- the load failure was shown once; loading is on screen
  end
  M.notify(message, vim.log.levels.WARN)
end

--- Forget everything (the server stopped).
function M.reset()
  progress, progress_order, titles = {}, {}, {}
  generating, failed, cycle = false, nil, nil
  notified = {}
  clear_hint()
end

return M
