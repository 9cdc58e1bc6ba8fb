// groundspec/stats results as status bar text and a report. No `vscode` import.

export interface DrafterAcceptance {
  drafted: number;
  accepted: number;
  rate: number;
}

/** The parts of the groundspec/stats result the extension shows. */
export interface ServerStats {
  requests?: number;
  cancelled?: number;
  acceptedItems?: number;
  generatedTokens?: number;
  tokensPerSecond?: number;
  acceptance?: Record<string, DrafterAcceptance>;
  promptTokens?: number;
  reusedPromptTokens?: number;
  latencyMs?: { p50?: number; p95?: number };
  server?: {
    /** "not started", "loading", "ready" or "failed" (lsp_server/scheduler.py). */
    engineState?: string;
  };
}

/** Accepted / drafted tokens over all drafters, or null before any draft. */
export function draftAcceptance(stats: ServerStats): number | null {
  let drafted = 0;
  let accepted = 0;
  for (const entry of Object.values(stats.acceptance ?? {})) {
    drafted += entry.drafted;
    accepted += entry.accepted;
  }
  return drafted > 0 ? accepted / drafted : null;
}

function percent(ratio: number): string {
  return `${Math.round(ratio * 100)}%`;
}

/** Status bar text: tokens/s and draft acceptance, e.g. "$(zap) 31.2 tok/s · 74% drafts". */
export function statusText(stats: ServerStats): string {
  const speed = `${(stats.tokensPerSecond ?? 0).toFixed(1)} tok/s`;
  const acceptance = draftAcceptance(stats);
  return acceptance === null ? `$(zap) ${speed}` : `$(zap) ${speed} · ${percent(acceptance)} drafts`;
}

/** A few lines for the status bar tooltip and the "Show Statistics" command. */
export function formatStats(stats: ServerStats): string {
  const lines = [
    `requests: ${stats.requests ?? 0} (cancelled ${stats.cancelled ?? 0})`,
    `accepted suggestions: ${stats.acceptedItems ?? 0}`,
    `decoding: ${(stats.tokensPerSecond ?? 0).toFixed(1)} tok/s over ${stats.generatedTokens ?? 0} tokens`,
  ];
  for (const [name, entry] of Object.entries(stats.acceptance ?? {})) {
    lines.push(`${name} drafts: ${entry.accepted}/${entry.drafted} accepted (${percent(entry.rate)})`);
  }
  if (stats.promptTokens) {
    const reused = (stats.reusedPromptTokens ?? 0) / stats.promptTokens;
    lines.push(`prompt tokens: ${stats.promptTokens}, ${percent(reused)} reused from the KV cache`);
  }
  if (stats.latencyMs) {
    lines.push(`latency: p50 ${stats.latencyMs.p50 ?? 0} ms, p95 ${stats.latencyMs.p95 ?? 0} ms`);
  }
  return lines.join("\n");
}
