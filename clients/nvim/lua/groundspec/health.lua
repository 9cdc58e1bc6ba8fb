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

local FIX = { "run `groundspec models fetch`", "or give model paths: setup{ init_options = { engine = { targetModel = ... } } }" }

-- groundspec/stats, waiting up to `timeout_ms` (checkhealth is a blocking report).
local function server_stats(timeout_ms)
  local done, stats, err = false, nil, nil
  require("groundspec").stats(function(s, e)
    done, stats, err = true, s, e
  end)
  vim.wait(timeout_ms, function()
    return done
  end, 20)
  return stats, done and err or "no answer"
end

local function uses_fake_engine(cmd)
  return vim.env.GROUNDSPEC_FAKE_ENGINE == "1" or vim.tbl_contains(cmd, "--fake")
end

-- Model paths given by the user (the environment wins, as in the server).
local function explicit_models(config)
  local engine = (config.init_options or {}).engine or {}
  local function pick(env, option)
    local value = vim.env[env]
    return (value and value ~= "") and value or option
  end
  return {
    target = pick("GROUNDSPEC_TARGET_MODEL", engine.targetModel),
    draft = pick("GROUNDSPEC_DRAFT_MODEL", engine.draftModel),
  }
end

local function check_gguf(role, path)
  path = vim.fn.expand(path)
  local file = io.open(path, "rb")
  if not file then
    return health.error(("%s model not found: %s"):format(role, path), FIX)
  end
  local magic = file:read(4)
  file:close()
  if magic ~= "GGUF" then
    return health.error(("%s model is not a GGUF file: %s"):format(role, path), FIX)
  end
  health.ok(("%s model: %s"):format(role, path))
end

-- The default models: `groundspec models verify` checks size and SHA-256 and
-- exits non-zero when one is missing or wrong (`models path` checks only the size).
local function verify_default_models(exe)
  local out = vim.fn.system({ exe, "models", "verify" })
  local lines = vim.tbl_filter(function(line)
    return vim.trim(line) ~= ""
  end, vim.split(out, "[\r\n]+"))
  if vim.v.shell_error == 0 then
    -- stderr's progress lines come mixed in: keep the verdicts ("target: OK /path")
    for _, line in ipairs(lines) do
      if line:find(": OK ", 1, true) then
        health.ok(line)
      end
    end
  else
    health.error(lines[#lines] or "`groundspec models verify` failed", FIX)
  end
end

local function check_models(exe, cmd, config, engine_state)
  health.start("groundspec models")
  if engine_state == "failed" then
    local why = require("groundspec.status").failed()
    health.error("the running server could not load the models" .. (why and (": " .. why) or ""), FIX)
  elseif engine_state == "loading" then
    health.info("the running server is loading the models")
  elseif engine_state == "ready" then
    health.ok("the running server has loaded the models")
  end
  if uses_fake_engine(cmd) then
    return health.info("fake engine (GROUNDSPEC_FAKE_ENGINE=1 or --fake): no model files needed")
  end
  local paths = explicit_models(config)
  if paths.target or paths.draft then
    for _, role in ipairs({ "target", "draft" }) do
      if paths[role] then
        check_gguf(role, paths[role])
      end
    end
  elseif exe and engine_state ~= "ready" then
    verify_default_models(exe) -- hashes 1.6 GB: seconds, so not when the server has them loaded
  end
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
    exe = nil
  end

  local clients = vim.lsp.get_clients({ name = "groundspec" })
  local stats, err
  if #clients > 0 then
    health.ok(("running (client id %d, root %s)"):format(clients[1].id, clients[1].root_dir or "?"))
    stats, err = server_stats(3000)
  else
    health.info("not running: it starts when you open a buffer of type " .. table.concat(gs.config.filetypes, ", "))
  end

  check_models(exe, cmd, gs.config, stats and stats.server and stats.server.engineState)

  health.start("groundspec speed")
  if #clients == 0 then
    health.info("no statistics: the server is not running")
  elseif stats then
    health.ok(stats_line(stats))
  else
    health.warn("groundspec/stats failed: " .. tostring(err))
  end
end

return M
