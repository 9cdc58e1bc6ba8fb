import assert from "node:assert/strict";
import { test } from "node:test";

import { draftAcceptance, formatStats, ServerStats, statusText } from "../stats";

const stats: ServerStats = {
  requests: 12,
  cancelled: 3,
  acceptedItems: 4,
  generatedTokens: 300,
  tokensPerSecond: 31.24,
  acceptance: {
    lookup: { drafted: 80, accepted: 60, rate: 0.75 },
    draft: { drafted: 20, accepted: 10, rate: 0.5 },
  },
  promptTokens: 1000,
  reusedPromptTokens: 900,
  latencyMs: { p50: 85.2, p95: 240.1 },
};

test("draft acceptance is pooled over drafters", () => {
  assert.equal(draftAcceptance(stats), 0.7);
  assert.equal(draftAcceptance({}), null);
  assert.equal(draftAcceptance({ acceptance: { lookup: { drafted: 0, accepted: 0, rate: 0 } } }), null);
});

test("status text shows tokens/s and acceptance", () => {
  assert.equal(statusText(stats), "$(zap) 31.2 tok/s · 70% drafts");
  assert.equal(statusText({}), "$(zap) 0.0 tok/s");
});

test("the report has one line per fact", () => {
  assert.equal(
    formatStats(stats),
    [
      "requests: 12 (cancelled 3)",
      "accepted suggestions: 4",
      "decoding: 31.2 tok/s over 300 tokens",
      "lookup drafts: 60/80 accepted (75%)",
      "draft drafts: 10/20 accepted (50%)",
      "prompt tokens: 1000, 90% reused from the KV cache",
      "latency: p50 85.2 ms, p95 240.1 ms",
    ].join("\n"),
  );
});

test("the report of a fresh server is short", () => {
  assert.equal(formatStats({ requests: 0 }).split("\n").length, 3);
});
