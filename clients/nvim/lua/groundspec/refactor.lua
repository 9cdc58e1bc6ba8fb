-- :GroundspecRefactor: rewrite a selection following an instruction. With a
-- preview (the default) the server's rewrite (groundspec/refactor) is shown
-- as a diff to accept or reject; without, the server applies it
-- (groundspec.refactor command, workspace/applyEdit).
local util = require("groundspec.util")
local status = require("groundspec.status")
local config = require("groundspec.config")
local preview = require("groundspec.preview")

local api = vim.api

local M = {}

local running = {} -- buf -> { client, id, cancelled }

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

-- The request for `instruction` on `range`: previewed or applied by the server.
local function request(buf, range, instruction, with_preview)
  local args = { uri = vim.uri_from_bufnr(buf), range = range, instruction = instruction }
  if with_preview then
    return "groundspec/refactor", { textDocument = { uri = args.uri }, range = range, instruction = instruction }
  end
  return "workspace/executeCommand", { command = "groundspec.refactor", arguments = { args } }
end

local function on_answer(buf, client, with_preview, err, result)
  if err then
    return util.notify("refactor failed: " .. status.strip(err.message or vim.inspect(err)), vim.log.levels.ERROR)
  elseif not with_preview then
    return util.notify("refactor applied")
  elseif not api.nvim_buf_is_valid(buf) then
    return
  end
  local keys = config.options.refactor or {}
  preview.open(buf, result.range, client.offset_encoding or "utf-16", result.newText, keys)
  util.notify(("refactor ready: %s accepts, %s rejects"):format(keys.accept or "-", keys.reject or "-"))
end

local function run(buf, client, range, instruction)
  local with_preview = (config.options.refactor or {}).preview ~= false
  local first, last = line_span(range)
  util.notify(("refactoring lines %d-%d... (:GroundspecCancel stops it)"):format(first, last))
  local method, params = request(buf, range, instruction, with_preview)
  local job, answered = { client = client }, false
  local ok, id = util.call(client, "request", method, params, function(err, result)
    answered = true
    if running[buf] == job then
      running[buf] = nil
    end
    if not job.cancelled then
      on_answer(buf, client, with_preview, err, result)
    end
  end, buf)
  if ok and not answered then
    job.id = id
    running[buf] = job
  end
end

--- Rewrite the selected lines following an instruction. `opts`: line1,
--- line2, range (from a user command) and instruction (asked with
--- vim.ui.input when missing).
function M.refactor(opts)
  opts = opts or {}
  local buf = api.nvim_get_current_buf()
  local client = vim.lsp.get_clients({ bufnr = buf, name = "groundspec" })[1]
  if not client then
    return util.notify("no groundspec server for this buffer", vim.log.levels.WARN)
  end
  local range = command_range(buf, opts, client.offset_encoding or "utf-16")
  local function go(instruction)
    if instruction and vim.trim(instruction) ~= "" then
      run(buf, client, range, instruction)
    end
  end
  if opts.instruction and opts.instruction ~= "" then
    go(opts.instruction)
  else
    vim.ui.input({ prompt = "Refactor instruction: " }, go)
  end
end

--- Stop the running refactor of the current buffer (of every buffer when
--- it has none). Returns how many were stopped.
function M.cancel()
  local buf = api.nvim_get_current_buf()
  local bufs = running[buf] and { buf } or vim.tbl_keys(running)
  for _, b in ipairs(bufs) do
    local job = running[b]
    running[b] = nil
    job.cancelled = true
    pcall(util.call, job.client, "cancel_request", job.id)
  end
  util.notify(#bufs > 0 and "refactor cancelled" or "no refactor is running")
  return #bufs
end

function M.forget(buf)
  running[buf] = nil
end

return M
