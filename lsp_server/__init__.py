"""groundspec's protocol layer: the LSP daemon and the command line."""
