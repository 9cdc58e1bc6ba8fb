-- Options, their defaults, and the LSP client configuration built from them
-- (used by setup() and by lsp/groundspec.lua for vim.lsp.config).
local M = {}

-- Every filetype the server has a tree-sitter grammar for (speculator/languages.py).
M.FILETYPES = { "python", "javascript", "javascriptreact", "typescript", "typescriptreact", "go", "rust" }

M.defaults = {
  cmd = { "groundspec", "serve" },
  filetypes = M.FILETYPES,
  root_markers = { ".git", "pyproject.toml", "package.json", "go.mod", "Cargo.toml" },
  -- The server debounces typing (its `debounceMs`, 120 ms by default) and
  -- answers a typed-ahead suggestion from its cache at once, so the client
  -- asks on every change and pays one pause, not two. A number here is sent
  -- to the server as `debounceMs`.
  debounce_ms = nil,
  -- Sent as initializationOptions (model paths, speculation, ...).
  init_options = {},
  -- false: suggestions only when asked (keymaps.suggest/next, :GroundspecSuggest).
  auto_trigger = true,
  -- Neovim 0.12+: draw suggestions with the built-in vim.lsp.inline_completion.
  native = true,
  -- LSP completion items too (nvim-cmp, blink.cmp, omnifunc list the suggestion again).
  completion_items = false,
  ghost_text = { hl = "GroundspecGhost", pos = "inline" },
  -- Next-edit suggestions (groundspec/nextEdit), shown as a diff in the buffer
  -- in normal mode. `enabled` is sent as the server's `nextEdit` option.
  -- Normal-mode keys; a key falls through when no proposal is shown.
  next_edit = {
    enabled = true,
    auto_trigger = true, -- ask after a pause in editing (false: only when asked)
    debounce_ms = 300,
    accept = "<M-l>",
    dismiss = "<Esc>",
    request = "<M-Space>",
  },
  -- A refactor is shown as a diff to accept or reject; preview = false applies it at once.
  refactor = { preview = true, accept = "a", reject = "q" },
  -- Insert-mode keys; set one to false to leave it unmapped. Without a
  -- suggestion on screen each key does what it did before (its previous
  -- mapping, or the key itself). `tab = true` also accepts on <Tab>.
  keymaps = {
    accept = "<M-l>",
    accept_word = "<M-w>",
    accept_line = "<M-j>",
    dismiss = "<C-]>",
    next = "<M-n>",
    prev = "<M-p>",
    suggest = "<M-Space>",
    tab = false,
  },
}

M.options = vim.deepcopy(M.defaults)

function M.set(opts)
  M.options = vim.tbl_deep_extend("force", vim.deepcopy(M.defaults), opts or {})
  -- A list given by the user replaces the default list (no index-wise merge).
  for _, key in ipairs({ "cmd", "filetypes", "root_markers" }) do
    if opts and opts[key] then
      M.options[key] = opts[key]
    end
  end
  return M.options
end

--- The next_edit options of `opts` (`next_edit = false` turns them off).
function M.next_edit(opts)
  local ne = (opts or M.options).next_edit
  if ne == false then
    return { enabled = false }
  end
  return ne or {}
end

function M.capabilities()
  local caps = vim.lsp.protocol.make_client_capabilities()
  caps.textDocument.inlineCompletion = { dynamicRegistration = false }
  -- UTF-16 is LSP's baseline and what VS Code speaks: the encoding the server
  -- is tested with. (Neovim would also offer utf-8 and utf-32.)
  caps.general = vim.tbl_extend("force", caps.general or {}, { positionEncodings = { "utf-16" } })
  return caps
end

function M.init_options(opts)
  local init = vim.deepcopy(opts.init_options or {})
  if opts.debounce_ms then
    init.debounceMs = opts.debounce_ms
  end
  init.completion = vim.tbl_extend("keep", init.completion or {}, { lspItems = opts.completion_items == true })
  if init.nextEdit == nil then -- a nextEdit given in init_options wins
    init.nextEdit = M.next_edit(opts).enabled ~= false
  end
  return init
end

--- One server per Neovim: a running groundspec client serves every project
--- root (the models are loaded once).
function M.reuse_client(client, config)
  if client.name ~= config.name then
    return false
  end
  local stopped = vim.fn.has("nvim-0.11") == 1 and client:is_stopped() or client.is_stopped()
  return not stopped
end

--- The vim.lsp.ClientConfig (and vim.lsp.Config) for `opts`.
function M.client_config(opts)
  local status = require("groundspec.status")
  return {
    name = "groundspec",
    cmd = opts.cmd,
    filetypes = opts.filetypes,
    root_markers = opts.root_markers,
    init_options = M.init_options(opts),
    capabilities = M.capabilities(),
    reuse_client = M.reuse_client,
    handlers = {
      ["window/showMessage"] = function(_, params)
        status.on_show_message(params)
      end,
    },
    on_exit = function(code, signal)
      vim.schedule(function()
        status.reset()
        -- A crash or a kill: start it again for the buffers (recover.lua).
        require("groundspec.recover").on_exit(code, signal, require("groundspec").reattach)
      end)
    end,
  }
end

return M
