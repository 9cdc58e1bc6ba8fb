-- User commands. The server starts only after require("groundspec").setup{}.
if vim.g.loaded_groundspec then
  return
end
vim.g.loaded_groundspec = true

vim.api.nvim_create_user_command("GroundspecRefactor", function(opts)
  require("groundspec").refactor({
    line1 = opts.line1,
    line2 = opts.line2,
    range = opts.range,
    instruction = opts.args,
  })
end, { range = true, nargs = "?", desc = "groundspec: rewrite the selection following an instruction" })

vim.api.nvim_create_user_command("GroundspecStats", function()
  require("groundspec").stats(function(stats, err)
    if stats then
      print(vim.inspect(stats))
    else
      vim.notify("groundspec: " .. tostring(err), vim.log.levels.WARN)
    end
  end)
end, { desc = "groundspec: show server statistics" })

vim.api.nvim_create_user_command("GroundspecCancel", function()
  require("groundspec").cancel()
end, { desc = "groundspec: stop the running refactor" })

vim.api.nvim_create_user_command("GroundspecToggle", function()
  require("groundspec").toggle()
end, { desc = "groundspec: turn suggestions on or off" })

vim.api.nvim_create_user_command("GroundspecSuggest", function()
  require("groundspec").suggest()
end, { desc = "groundspec: ask for a suggestion now" })
