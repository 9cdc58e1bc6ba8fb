-- Neovim 0.12's built-in inline completion (vim.lsp.inline_completion), used
-- when present: Neovim asks while typing, draws the suggestion and accepts it;
-- the plugin's own keys call into it.
local M = {}

local active = {} -- buf -> true while the built-in serves the buffer

--- The built-in module when this Neovim has it and the user did not opt out.
function M.available(opts)
  local builtin = vim.lsp.inline_completion
  return opts.native ~= false and opts.auto_trigger ~= false and type(builtin) == "table" and builtin or nil
end

--- Let the built-in serve `buf`; true when it does.
function M.enable(buf, opts)
  local builtin = M.available(opts)
  if not builtin then
    return false
  end
  builtin.enable(true, { bufnr = buf })
  active[buf] = true
  return true
end

function M.active(buf)
  return active[buf] == true
end

function M.disable(buf)
  if active[buf] then
    active[buf] = nil
    pcall(vim.lsp.inline_completion.enable, false, { bufnr = buf })
  end
end

--- Accept the built-in's suggestion in `buf`; false when it shows none.
function M.accept(buf)
  return active[buf] == true and vim.lsp.inline_completion.get({ bufnr = buf }) == true
end

--- Show the built-in's next (1) or previous (-1) candidate.
function M.select(buf, count)
  vim.lsp.inline_completion.select({ bufnr = buf, count = count })
  return true
end

return M
