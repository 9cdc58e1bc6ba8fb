-- Drives a headless Neovim through a test scenario, one step at a time, so
-- that the main loop (typing, insert-mode autocommands, LSP messages) runs
-- between steps. Started by run_nvim in tests/e2e/nvim_helpers.py:
--   nvim --headless -u NONE --clean --cmd "set rtp^=clients/nvim" -c "luafile nvim_harness.lua"
-- with GS_SCENARIO (a Lua file returning function(H)) and GS_RESULT (where the
-- JSON result goes). The scenario stores what it saw in H.out; the Python test
-- asserts on it.
local H = { out = {} }
local co

local function finish(result)
  local file = assert(io.open(os.getenv("GS_RESULT"), "w"))
  file:write(vim.json.encode(result))
  file:close()
  vim.cmd("qall!")
end

local function step(...)
  local ok, err = coroutine.resume(co, ...)
  if not ok then
    finish({ ok = false, error = debug.traceback(co, tostring(err)), out = H.out })
  elseif coroutine.status(co) == "dead" then
    finish({ ok = true, out = H.out })
  end
end

local function now_ms()
  return vim.uv.hrtime() / 1e6
end

--- Let the main loop run for `ms` milliseconds.
function H.sleep(ms)
  vim.defer_fn(step, ms)
  coroutine.yield()
end

--- Poll `cond` until it returns a true value (returned), or fail after timeout_ms.
function H.wait(cond, timeout_ms, what)
  local deadline = now_ms() + (timeout_ms or 10000)
  while true do
    local ok, value = pcall(cond)
    if ok and value then
      return value
    end
    if now_ms() > deadline then
      error(("timed out waiting for %s%s"):format(what or "condition", ok and "" or (": " .. tostring(value))), 2)
    end
    H.sleep(20)
  end
end

--- The groundspec LSP client, once it has attached (fails after 20 s: the
--- server starts slowly on a busy machine).
function H.client()
  return H.wait(function()
    return vim.lsp.get_clients({ name = "groundspec" })[1]
  end, 20000, "the groundspec client")
end

--- Type keys as a user would, and let Neovim process them.
function H.input(keys)
  vim.api.nvim_input(keys)
  H.sleep(30)
end

--- Load the plugin as a user would, with the server command from GS_SERVER_CMD.
function H.setup(opts)
  vim.cmd.runtime("plugin/groundspec.lua")
  local cmd = vim.json.decode(os.getenv("GS_SERVER_CMD"))
  require("groundspec").setup(vim.tbl_deep_extend("force", { cmd = cmd, debounce_ms = 30 }, opts or {}))
end

--- An in-process LSP server for `cmd` (Neovim runs a Lua function as the
--- server): `on_inline(params)` answers textDocument/inlineCompletion; the
--- executeCommand params it receives are appended to the returned list.
function H.fake_server(on_inline)
  local executed = {}
  local cmd = function(dispatchers)
    local closing, next_id = false, 0
    local results = {
      initialize = {
        capabilities = {
          textDocumentSync = 1,
          inlineCompletionProvider = {},
          executeCommandProvider = { commands = { "groundspec.accepted" } },
        },
      },
    }
    return {
      request = function(method, params, callback)
        next_id = next_id + 1
        if method == "textDocument/inlineCompletion" then
          callback(nil, on_inline(params))
        else
          if method == "workspace/executeCommand" then
            table.insert(executed, params)
          end
          callback(nil, results[method] or vim.NIL)
        end
        return true, next_id
      end,
      notify = function(method)
        if method == "exit" then
          dispatchers.on_exit(0, 15)
        end
        return true
      end,
      is_closing = function()
        return closing
      end,
      terminate = function()
        closing = true
      end,
    }
  end
  return cmd, executed
end

--- Open a scratch file buffer with `lines`, filetype from the name.
function H.open(name, lines, filetype)
  vim.cmd.edit(vim.fn.fnameescape(name))
  vim.api.nvim_buf_set_lines(0, 0, -1, false, lines)
  vim.bo.filetype = filetype or "python"
end

--- The ghost text drawn by the plugin: {row, col, text, pos}, or nil.
function H.ghost(buf)
  local ns = vim.api.nvim_get_namespaces().groundspec
  local marks = ns and vim.api.nvim_buf_get_extmarks(buf or 0, ns, 0, -1, { details = true }) or {}
  if #marks == 0 then
    return nil
  end
  local mark = marks[1]
  local details = mark[4]
  local function chunks(list)
    return table.concat(vim.tbl_map(function(chunk)
      return chunk[1]
    end, list or {}))
  end
  local lines = { chunks(details.virt_text) }
  for _, virt_line in ipairs(details.virt_lines or {}) do
    table.insert(lines, chunks(virt_line))
  end
  return { row = mark[2], col = mark[3], text = table.concat(lines, "\n"), pos = details.virt_text_pos, count = #marks }
end

--- The proposed next edit drawn by the plugin, or nil: `deleted` (each range
--- highlighted as replaced: row, col, end row, end col, its text, the group),
--- `added` (the virtual lines' text), `added_hl` (the text of their chunks in
--- each group), `hint` (the end-of-line hint: row, text, group).
function H.next_edit(buf)
  buf = buf or 0
  local ns = vim.api.nvim_get_namespaces().groundspec_next_edit
  local marks = ns and vim.api.nvim_buf_get_extmarks(buf, ns, 0, -1, { details = true }) or {}
  if #marks == 0 then
    return nil
  end
  local found = { count = #marks, deleted = {} }
  for _, mark in ipairs(marks) do
    local row, col, d = mark[2], mark[3], mark[4]
    if d.hl_group then
      local text = table.concat(vim.api.nvim_buf_get_text(buf, row, col, d.end_row, d.end_col, {}), "\n")
      table.insert(found.deleted, { row, col, d.end_row, d.end_col, text, d.hl_group })
    elseif d.virt_lines then
      found.added, found.added_row, found.added_hl = {}, row, {}
      for _, line in ipairs(d.virt_lines) do
        local text = ""
        for _, chunk in ipairs(line) do
          text = text .. chunk[1]
          found.added_hl[chunk[2]] = found.added_hl[chunk[2]] or {}
          table.insert(found.added_hl[chunk[2]], chunk[1])
        end
        table.insert(found.added, text)
      end
    elseif d.virt_text then
      found.hint = { row = row, text = d.virt_text[1][1], hl = d.virt_text[1][2] }
    end
  end
  return found
end

function H.lines(buf)
  return vim.api.nvim_buf_get_lines(buf or 0, 0, -1, false)
end

--- One groundspec/stats answer (the plugin's call never blocks: we wait here).
function H.stats_once()
  local box = {}
  require("groundspec").stats(function(stats, err)
    box.done, box.stats, box.err = true, stats, err
  end)
  H.wait(function()
    return box.done
  end, 5000, "a groundspec/stats answer")
  return box.stats, box.err
end

--- groundspec/stats from the server, waiting until `cond(stats)` holds when given.
function H.stats(cond, timeout_ms)
  local deadline = now_ms() + (timeout_ms or 10000)
  while true do
    local stats = H.stats_once()
    if stats and (not cond or cond(stats)) then
      return stats
    end
    if now_ms() > deadline then
      error("timed out waiting for groundspec/stats", 2)
    end
    H.sleep(50)
  end
end

--- Record vim.notify calls in H.out.notes (message and level).
function H.record_notes()
  H.out.notes = {}
  vim.notify = function(msg, level)
    table.insert(H.out.notes, { msg = msg, level = level or vim.log.levels.INFO })
  end
end

--- The status hint drawn at the end of the cursor line, or nil.
function H.status_hint(buf)
  local ns = vim.api.nvim_get_namespaces().groundspec_status
  local marks = ns and vim.api.nvim_buf_get_extmarks(buf or 0, ns, 0, -1, { details = true }) or {}
  local mark = marks[1]
  return mark and { row = mark[2], text = mark[4].virt_text[1][1], count = #marks }
end

vim.schedule(function()
  local scenario = dofile(os.getenv("GS_SCENARIO"))
  co = coroutine.create(function()
    scenario(H)
  end)
  step()
end)
