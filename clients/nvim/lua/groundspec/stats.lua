-- groundspec/stats as a few readable lines (:GroundspecStats).
local M = {}

local function num(value, decimals)
  value = tonumber(value) or 0
  if decimals and decimals > 0 then
    return ("%." .. decimals .. "f"):format(value)
  end
  return tostring(math.floor(value + 0.5))
end

local function percent(rate)
  return num((tonumber(rate) or 0) * 100) .. "%"
end

-- "ngram 72% of 120, model 60% of 40", drafters by name.
local function acceptance(by_drafter)
  local parts = {}
  for _, name in ipairs(vim.tbl_keys(by_drafter or {})) do
    local a = by_drafter[name]
    table.insert(parts, ("%s %s of %s drafted tokens"):format(name, percent(a.rate), num(a.drafted)))
  end
  table.sort(parts)
  return #parts > 0 and table.concat(parts, ", ") or "no drafted tokens yet"
end

--- The lines shown for one groundspec/stats answer.
function M.lines(stats)
  local lat = stats.latencyMs or {}
  local server = stats.server or {}
  local rows = {
    { "requests", ("%s (%s cancelled), %s accepted"):format(
      num(stats.requests),
      num(stats.cancelled),
      num(stats.acceptedItems)
    ) },
    { "speed", ("%s tok/s, %s tokens generated"):format(num(stats.tokensPerSecond, 1), num(stats.generatedTokens)) },
    { "latency", ("p50 %s ms, p95 %s ms"):format(num(lat.p50), num(lat.p95)) },
    { "prompt tokens", ("%s (%s reused from the cache, %s evaluated)"):format(
      num(stats.promptTokens),
      num(stats.reusedPromptTokens),
      num(stats.evaluatedPromptTokens)
    ) },
    { "draft acceptance", acceptance(stats.acceptance) },
    { "server", ("models %s, %s open documents, %s cache hits, peak memory %s MB"):format(
      server.engineState or "?",
      num(server.openDocuments),
      num(server.cacheHits),
      num(server.peakRssMb)
    ) },
  }
  local lines = { "groundspec statistics" }
  for _, row in ipairs(rows) do
    table.insert(lines, ("  %-17s %s"):format(row[1], row[2]))
  end
  return lines
end

--- Echo the lines (kept in :messages).
function M.echo(stats)
  local chunks = {}
  for i, line in ipairs(M.lines(stats)) do
    table.insert(chunks, { line .. "\n", i == 1 and "Title" or "Normal" })
  end
  chunks[#chunks][1] = chunks[#chunks][1]:sub(1, -2)
  vim.api.nvim_echo(chunks, true, {})
end

return M
