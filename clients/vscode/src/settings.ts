// Extension settings and what the server gets from them. No `vscode` import:
// unit tested with node.

export const SPECULATION_MODES = ["auto", "off", "lookup", "draft", "both"] as const;
export type Speculation = (typeof SPECULATION_MODES)[number];

export interface Settings {
  serverPath: string;
  serverArgs: string[];
  targetModel: string | null;
  draftModel: string | null;
  nGpuLayers: number | null;
  debounceMs: number;
  speculation: Speculation;
  maxTokens: number;
  statsIntervalMs: number;
}

export const DEFAULT_SETTINGS: Settings = {
  serverPath: "groundspec",
  serverArgs: [],
  targetModel: null,
  draftModel: null,
  nGpuLayers: null,
  debounceMs: 120,
  speculation: "auto",
  maxTokens: 64,
  statsIntervalMs: 5000,
};

/** The `initializationOptions` the server reads (lsp_server/options.py). */
export interface InitializationOptions {
  engine: { targetModel?: string; draftModel?: string; nGpuLayers?: number };
  debounceMs: number;
  speculation: Speculation;
  maxTokens: number;
}

function text(value: unknown): string | null {
  return typeof value === "string" && value.trim() !== "" ? value.trim() : null;
}

function strings(value: unknown): string[] | null {
  return Array.isArray(value) && value.every((item) => typeof item === "string") ? [...value] : null;
}

function integer(value: unknown, min: number, max: number): number | null {
  return typeof value === "number" && Number.isInteger(value) && value >= min && value <= max
    ? value
    : null;
}

/**
 * Settings from a getter such as `workspace.getConfiguration("groundspec").get`;
 * missing or invalid values fall back to the defaults.
 */
export function readSettings(get: (key: string) => unknown): Settings {
  const speculation = get("speculation");
  return {
    serverPath: text(get("serverPath")) ?? DEFAULT_SETTINGS.serverPath,
    serverArgs: strings(get("serverArgs")) ?? DEFAULT_SETTINGS.serverArgs,
    targetModel: text(get("targetModel")),
    draftModel: text(get("draftModel")),
    nGpuLayers: integer(get("nGpuLayers"), 0, 100_000),
    debounceMs: integer(get("debounceMs"), 0, 5000) ?? DEFAULT_SETTINGS.debounceMs,
    speculation: SPECULATION_MODES.includes(speculation as Speculation)
      ? (speculation as Speculation)
      : DEFAULT_SETTINGS.speculation,
    maxTokens: integer(get("maxTokens"), 1, 4096) ?? DEFAULT_SETTINGS.maxTokens,
    statsIntervalMs: integer(get("statsIntervalMs"), 0, 3_600_000) ?? DEFAULT_SETTINGS.statsIntervalMs,
  };
}

/**
 * Whether a settings change needs a new server: the server binary and the
 * models are fixed for its lifetime; everything else is sent to the running
 * server with workspace/didChangeConfiguration.
 */
export function needsRestart(before: Settings, after: Settings): boolean {
  return (
    before.serverPath !== after.serverPath ||
    before.serverArgs.join("\0") !== after.serverArgs.join("\0") ||
    before.targetModel !== after.targetModel ||
    before.draftModel !== after.draftModel ||
    before.nGpuLayers !== after.nGpuLayers
  );
}

/** Settings as initializationOptions; unset model settings are left to the server. */
export function toInitializationOptions(settings: Settings): InitializationOptions {
  const engine: InitializationOptions["engine"] = {};
  if (settings.targetModel !== null) engine.targetModel = settings.targetModel;
  if (settings.draftModel !== null) engine.draftModel = settings.draftModel;
  if (settings.nGpuLayers !== null) engine.nGpuLayers = settings.nGpuLayers;
  return {
    engine,
    debounceMs: settings.debounceMs,
    speculation: settings.speculation,
    maxTokens: settings.maxTokens,
  };
}

/** How to start the server: `<serverPath> serve <serverArgs…>`, with `~/` expanded in the path. */
export function serverCommand(settings: Settings, home: string): { command: string; args: string[] } {
  const path = settings.serverPath.startsWith("~/") ? home + settings.serverPath.slice(1) : settings.serverPath;
  return { command: path, args: ["serve", ...settings.serverArgs] };
}
