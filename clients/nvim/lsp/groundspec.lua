-- The server for vim.lsp.config / vim.lsp.enable (Neovim 0.11+):
--   vim.lsp.config("groundspec", { cmd = { "/path/to/groundspec", "serve" } })  -- optional
--   vim.lsp.enable("groundspec")
-- One server for every project root (reuse_client). Suggestions are drawn by
-- Neovim 0.12's vim.lsp.inline_completion, or by require("groundspec").setup{}.
local config = require("groundspec.config")

local server = config.client_config(config.defaults)
server.name = nil -- vim.lsp.config names it after this file
return server
