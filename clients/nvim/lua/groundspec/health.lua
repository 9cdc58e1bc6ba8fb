-- :checkhealth groundspec
local M = {}

local health = vim.health

local function stats_line(stats)
  local lat = stats.latencyMs or {}
  return ("%s tok/s, %d requests, %d accepted suggestions, latency p50 %s ms / p95 %s ms"):format(
    stats.tokensPerSecond or 0,
    stats.requests or 0,
    stats.acceptedItems or 0,
    lat.p50 or "?",
    lat.p95 or "?"
  )
end

function M.check()
  local gs = require("groundspec")
  local cmd = gs.config.cmd

  health.start("groundspec server")
  if type(cmd) == "function" then
    health.info("cmd is a Lua function (in-process server)")
    return
  end
  local exe = cmd[1]
  if vim.fn.executable(exe) == 1 then
    health.ok(("`%s` found: %s"):format(exe, vim.fn.exepath(exe)))
  else
    health.error(
      ("`%s` not found"):format(exe),
      { "pip install groundspec (or the repository with pip install -e .)", "or set cmd in setup{}" }
    )
  end

  local clients = vim.lsp.get_clients({ name = "groundspec" })
  if #clients > 0 then
    health.ok(("running (client id %d, root %s)"):format(clients[1].id, clients[1].root_dir or "?"))
  else
    health.info("not running: it starts when you open a buffer of type " .. table.concat(gs.config.filetypes, ", "))
  end

  health.start("groundspec models")
  if vim.fn.executable(exe) == 1 then
    local out = vim.fn.system({ exe, "models", "path" })
    local text = vim.trim(out)
    if vim.v.shell_error == 0 then
      for _, line in ipairs(vim.split(text, "\n", { plain = true })) do
        health.ok(line)
      end
    else
      health.warn(text ~= "" and text or "`groundspec models path` failed", { "run `groundspec models fetch`" })
    end
  end

  health.start("groundspec speed")
  if #clients == 0 then
    health.info("no statistics: the server is not running")
    return
  end
  local stats, err = gs.stats(3000)
  if stats then
    health.ok(stats_line(stats))
  else
    health.warn("groundspec/stats failed: " .. tostring(err))
  end
end

return M
