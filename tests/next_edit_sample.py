"""The next-edit tests' sample, shared by the unit, protocol, CLI, client and editor
tests: a loop over a plugin's names, in which the user renames `name` to
`attr_name` on the getattr line (RENAMED); the next edit carries the rename to the
lines above (CARRIED)."""

PLUGINS = """def register(plugin):
    for name in dir(plugin):
        opts = parse(plugin, name)
        if opts is None:
            continue
        method = getattr(plugin, name)
"""
RENAMED = PLUGINS.replace("getattr(plugin, name)", "getattr(plugin, attr_name)")
CARRIED = PLUGINS.replace("name", "attr_name")
