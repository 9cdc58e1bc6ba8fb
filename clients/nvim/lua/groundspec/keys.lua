-- Insert-mode keys (and the normal-mode keys of next edits). A key acts on the
-- suggestion when one is shown; otherwise it falls through to what it did
-- before: the mapping it had when groundspec mapped it (a completion menu, a
-- snippet jump, ...), or the key itself.
local api = vim.api

local M = {}

local DESC = "groundspec " -- prefix of our mappings' desc: how we recognise them
local previous = {} -- buf -> mode .. lhs -> the maparg() dict of the mapping we shadow, or false

local function termcodes(keys)
  return api.nvim_replace_termcodes(keys, true, false, true)
end

-- Keys run next, before anything still in the typeahead, as if typed (undo,
-- abbreviations, an unmapped <M-x> as <Esc>x).
local function feed(keys, remap)
  api.nvim_feedkeys(keys, (remap and "m" or "n") .. "it", false)
end

-- The `mode` mapping of `lhs` in `buf` before ours (buffer-local first).
local function capture(buf, lhs, mode)
  previous[buf] = previous[buf] or {}
  local map = api.nvim_buf_call(buf, function()
    return vim.fn.maparg(lhs, mode, false, true)
  end)
  if vim.tbl_isempty(map) then
    previous[buf][mode .. lhs] = false
  elseif not (map.desc or ""):find(DESC, 1, true) then
    previous[buf][mode .. lhs] = map
  end -- our own mapping (set up again after :e!): keep what we saved the first time
end

-- The keys a mapping produces, already in internal form, or nil (it acted itself).
local function mapping_keys(map)
  if map.callback then
    local keys = map.callback()
    if map.expr ~= 1 or type(keys) ~= "string" then
      return nil
    end
    return map.replace_keycodes == 1 and termcodes(keys) or keys
  elseif map.expr == 1 then
    local rhs = map.rhs:gsub("<[Ss][Ii][Dd]>", "<SNR>" .. (map.sid or 0) .. "_")
    return vim.fn.eval(rhs)
  end
  return termcodes(map.rhs)
end

--- Do what `lhs` did before groundspec mapped it in `buf` (mode "i" by default).
function M.fall_through(buf, lhs, mode)
  local map = (previous[buf] or {})[(mode or "i") .. lhs]
  if not map then
    return feed(termcodes(lhs), false)
  end
  local keys = mapping_keys(map)
  if keys and keys ~= "" then
    feed(keys, map.noremap ~= 1)
  end
end

--- Map `lhs` in `mode` ("i" by default) in `buf`: `action()` returns true
--- when it acted (a suggestion was shown), else the key falls through.
function M.map(buf, lhs, name, action, mode)
  if not lhs or lhs == "" then
    return
  end
  mode = mode or "i"
  capture(buf, lhs, mode)
  vim.keymap.set(mode, lhs, function()
    if not action() then
      M.fall_through(buf, lhs, mode)
    end
  end, { buffer = buf, silent = true, desc = DESC .. name })
end

function M.forget(buf)
  previous[buf] = nil
end

return M
