-- User commands (:help groundspec). The server starts only after
-- require("groundspec").setup{} (or vim.lsp.enable("groundspec")).
if vim.g.loaded_groundspec then
  return
end
vim.g.loaded_groundspec = true

local function command(name, fn, opts)
  vim.api.nvim_create_user_command(name, fn, opts)
end

command("GroundspecRefactor", function(opts)
  require("groundspec").refactor({
    line1 = opts.line1,
    line2 = opts.line2,
    range = opts.range,
    instruction = opts.args,
  })
end, { range = true, nargs = "?", desc = "groundspec: rewrite the selection following an instruction" })

command("GroundspecRefactorAccept", function()
  require("groundspec").refactor_accept()
end, { desc = "groundspec: apply the refactor shown in the preview" })

command("GroundspecRefactorReject", function()
  require("groundspec").refactor_reject()
end, { desc = "groundspec: drop the refactor shown in the preview" })

command("GroundspecCancel", function()
  require("groundspec").cancel()
end, { desc = "groundspec: stop the running refactor" })

command("GroundspecStats", function()
  require("groundspec").stats(function(stats, err)
    if stats then
      require("groundspec.stats").echo(stats)
    else
      vim.notify("groundspec: " .. tostring(err), vim.log.levels.WARN)
    end
  end)
end, { desc = "groundspec: show server statistics" })

command("GroundspecToggle", function()
  require("groundspec").toggle()
end, { desc = "groundspec: turn suggestions on or off" })

command("GroundspecToggleBuffer", function()
  require("groundspec").toggle_buffer()
end, { desc = "groundspec: turn suggestions on or off in this buffer" })

command("GroundspecSuggest", function()
  require("groundspec").suggest()
end, { desc = "groundspec: ask for a suggestion now" })

command("GroundspecNextEdit", function()
  require("groundspec").next_edit()
end, { desc = "groundspec: ask for the next edit at the cursor now" })
