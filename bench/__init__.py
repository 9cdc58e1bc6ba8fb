"""Benchmarks of the engine: the corpus (dev/test split), the modes benchmark,
the keystroke replay, workspace grounding, the llama-server peer and the
offline replay simulator. Not part of the engine (`speculator/`)."""
