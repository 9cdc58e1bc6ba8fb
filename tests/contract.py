"""The public contract of DESIGN.md that tests check against, written out once."""

# The `--json` / JSON-RPC stats keys, exactly.
STATS_KEYS = {
    "generatedTokens",
    "draftedTokens",
    "acceptedTokens",
    "promptTokens",
    "reusedPromptTokens",
    "promptMs",
    "decodeMs",
    "totalMs",
    "speculation",
}
