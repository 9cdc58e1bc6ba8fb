// Extension settings and what the server gets from them. No `vscode` import:
// unit tested with node.

export const SPECULATION_MODES = ["auto", "off", "lookup", "draft", "both"] as const;
export type Speculation = (typeof SPECULATION_MODES)[number];

/** The languages the server has a grammar for: served unless `groundspec.languages` says otherwise. */
export const DEFAULT_LANGUAGES = [
  "python",
  "javascript",
  "javascriptreact",
  "typescript",
  "typescriptreact",
  "go",
  "rust",
];

/** `groundspec.languages: ["*"]` serves every file. */
export const ALL_LANGUAGES = "*";

export interface Settings {
  serverPath: string;
  serverArgs: string[];
  languages: string[];
  targetModel: string | null;
  draftModel: string | null;
  nGpuLayers: number | null;
  debounceMs: number;
  speculation: Speculation;
  maxTokens: number;
  statsIntervalMs: number;
  /** Next-edit suggestions (the server's `nextEdit` option). */
  nextEdit: boolean;
  /** The pause in typing before a next edit is asked for (the server's `nextEditDebounceMs`). */
  nextEditDebounceMs: number;
}

export const DEFAULT_SETTINGS: Settings = {
  serverPath: "groundspec",
  serverArgs: [],
  languages: DEFAULT_LANGUAGES,
  targetModel: null,
  draftModel: null,
  nGpuLayers: null,
  debounceMs: 120,
  speculation: "auto",
  maxTokens: 64,
  statsIntervalMs: 5000,
  nextEdit: true,
  nextEditDebounceMs: 300,
};

/** The `initializationOptions` the server reads (lsp_server/options.py). */
export interface InitializationOptions {
  engine: { targetModel?: string; draftModel?: string; nGpuLayers?: number };
  debounceMs: number;
  speculation: Speculation;
  maxTokens: number;
  nextEdit: boolean;
  nextEditDebounceMs: number;
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

/** Trimmed, distinct, non-empty language ids; null when there are none. */
function languageIds(value: unknown): string[] | null {
  const ids = strings(value)?.map((id) => id.trim()).filter((id) => id !== "");
  return ids && ids.length > 0 ? [...new Set(ids)] : null;
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
    languages: languageIds(get("languages")) ?? DEFAULT_SETTINGS.languages,
    targetModel: text(get("targetModel")),
    draftModel: text(get("draftModel")),
    nGpuLayers: integer(get("nGpuLayers"), 0, 100_000),
    debounceMs: integer(get("debounceMs"), 0, 5000) ?? DEFAULT_SETTINGS.debounceMs,
    speculation: SPECULATION_MODES.includes(speculation as Speculation)
      ? (speculation as Speculation)
      : DEFAULT_SETTINGS.speculation,
    maxTokens: integer(get("maxTokens"), 1, 4096) ?? DEFAULT_SETTINGS.maxTokens,
    statsIntervalMs: integer(get("statsIntervalMs"), 0, 3_600_000) ?? DEFAULT_SETTINGS.statsIntervalMs,
    nextEdit: typeof get("nextEdit") === "boolean" ? (get("nextEdit") as boolean) : DEFAULT_SETTINGS.nextEdit,
    nextEditDebounceMs: integer(get("nextEditDebounceMs"), 0, 5000) ?? DEFAULT_SETTINGS.nextEditDebounceMs,
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
    before.languages.join("\0") !== after.languages.join("\0") ||
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
    nextEdit: settings.nextEdit,
    nextEditDebounceMs: settings.nextEditDebounceMs,
  };
}

/** How to start the server: `<serverPath> serve <serverArgs…>`, with `~/` expanded in the path. */
export function serverCommand(settings: Settings, home: string): { command: string; args: string[] } {
  const path = settings.serverPath.startsWith("~/") ? home + settings.serverPath.slice(1) : settings.serverPath;
  return { command: path, args: ["serve", ...settings.serverArgs] };
}

/** A document filter (vscode-languageclient's DocumentSelector entries). */
export interface DocumentFilter {
  scheme: string;
  language?: string;
}

/** Saved and unsaved documents of `languages` ("*": every language). */
export function documentSelector(languages: string[]): DocumentFilter[] {
  const schemes = ["file", "untitled"];
  if (languages.includes(ALL_LANGUAGES)) return schemes.map((scheme) => ({ scheme }));
  return languages.flatMap((language) => schemes.map((scheme) => ({ scheme, language })));
}

/** Whether `languageId` is one of `languages`. */
export function servesLanguage(languages: string[], languageId: string): boolean {
  return languages.includes(ALL_LANGUAGES) || languages.includes(languageId);
}

/** Why no automatic or invoked request goes out for a document, or null when it may. */
export function suggestionBlock(
  document: { enable: unknown; autoTrigger: unknown },
  invoked: boolean,
): "disabled" | "manual" | null {
  if (document.enable === false) return "disabled";
  if (!invoked && document.autoTrigger === false) return "manual";
  return null;
}

/**
 * Why no next edit is asked for in a document, or null when one may be: the language is
 * turned off (`groundspec.enable`), or next edits are (`groundspec.nextEdit`), or only
 * asked for on request (`groundspec.nextEditAutoTrigger`) and this ask is automatic.
 */
export function nextEditBlock(
  document: { enable: unknown; nextEdit: unknown; nextEditAutoTrigger: unknown },
  invoked: boolean,
): "disabled" | "off" | "manual" | null {
  if (document.enable === false) return "disabled";
  if (document.nextEdit === false) return "off";
  if (!invoked && document.nextEditAutoTrigger === false) return "manual";
  return null;
}
