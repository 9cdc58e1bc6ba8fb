"""groundspec's engine: KV-cached sessions, drafters and the speculative decode loop."""
