// What the status bar item says: the server's phase (starting, loading the
// models with progress, ready, failed, stopped) and what it is doing
// (generating a suggestion, refactoring, or what a `$/progress` says). No
// `vscode` import: unit tested with node.
import { formatStats, ServerStats, statusText } from "./stats";

export type Phase = "starting" | "loading" | "ready" | "failed" | "stopped";

/** The `$/progress` token the server loads the models under (lsp_server/server.py). */
export const LOAD_TOKEN = "groundspec/load";

export const FIX_COMMAND = "groundspec models fetch";

/** A `$/progress` value (WorkDoneProgressBegin | Report | End). */
export interface ProgressValue {
  kind: "begin" | "report" | "end";
  title?: string;
  message?: string;
  percentage?: number;
}

export interface StatusView {
  text: string;
  tooltip: string;
}

interface Activity {
  title: string;
  message?: string;
  percentage?: number;
}

export class ServerStatus {
  phase: Phase = "starting";
  /** Why the server could not start or load its models. */
  failure = "";
  private load: Activity | undefined;
  private readonly activities = new Map<string | number, Activity>();
  private inflight = 0;
  private stats: ServerStats | undefined;
  /** The active editor's language when its suggestions are off or manual-only. */
  private blocked: { language: string; why: "disabled" | "manual" } | undefined;

  /** A `$/progress` notification for `token`; the load token drives the phase. */
  progress(token: string | number, value: ProgressValue): void {
    if (token === LOAD_TOKEN) {
      this.loadProgress(value);
    } else if (value.kind === "end") {
      this.activities.delete(token);
    } else {
      const previous = this.activities.get(token);
      this.activities.set(token, {
        title: value.title ?? previous?.title ?? "working",
        message: value.message ?? previous?.message,
        percentage: value.percentage ?? previous?.percentage,
      });
    }
  }

  /** groundspec/stats arrived; its engineState is the server's own word on the phase. */
  statsArrived(stats: ServerStats): void {
    this.stats = stats;
    const state = stats.server?.engineState;
    if (state === "ready" || state === "failed") {
      this.load = undefined;
      this.phase = state;
    } else if (state === "loading" && this.phase !== "loading") {
      this.phase = "loading";
      this.load ??= { title: "loading models" };
    }
  }

  /** The server could not be started or its models failed to load. */
  failed(reason: string): void {
    this.phase = "failed";
    this.failure = reason;
    this.load = undefined;
  }

  started(): void {
    this.phase = this.phase === "starting" ? "ready" : this.phase;
  }

  stopped(): void {
    this.phase = "stopped";
    this.activities.clear();
    this.inflight = 0;
  }

  /** The active editor: suggestions off ("disabled"), only on request ("manual"), or on (null). */
  editor(language: string | undefined, why: "disabled" | "manual" | null): void {
    this.blocked = language !== undefined && why !== null ? { language, why } : undefined;
  }

  /** A completion request was sent (true) or answered (false). */
  generating(active: boolean): void {
    this.inflight = Math.max(0, this.inflight + (active ? 1 : -1));
  }

  view(): StatusView {
    switch (this.phase) {
      case "starting":
        return { text: "$(sync~spin) groundspec", tooltip: "groundspec: starting the server" };
      case "stopped":
        return { text: "$(circle-slash) groundspec", tooltip: "groundspec: the server is stopped" };
      case "failed":
        return {
          text: "$(error) groundspec",
          tooltip: `groundspec: ${this.failure || "the models could not be loaded"}\n${fixAdvice(this.failure)}`,
        };
      case "loading":
        return this.loadingView();
      case "ready":
        return this.readyView();
    }
  }

  private loadProgress(value: ProgressValue): void {
    if (value.kind === "end") {
      // "Models ready" or a failure: groundspec/stats, asked next, says which.
      this.load = { title: value.message ?? "loading models" };
      return;
    }
    this.phase = "loading";
    this.load = {
      title: value.message ?? this.load?.message ?? "loading models",
      percentage: value.percentage ?? this.load?.percentage,
    };
  }

  private loadingView(): StatusView {
    const percentage = this.load?.percentage;
    const detail = percentage === undefined ? "" : ` ${Math.round(percentage)}%`;
    return {
      text: `$(sync~spin) groundspec: loading${detail}`,
      tooltip: `groundspec: ${this.load?.title ?? "loading models"}${detail} (the first suggestion comes once the models are loaded)`,
    };
  }

  private readyView(): StatusView {
    const stats = this.stats ? formatStats(this.stats) : "no requests yet";
    if (this.blocked?.why === "disabled") {
      return {
        text: "$(circle-slash) groundspec",
        tooltip: `groundspec: inline suggestions are off for ${this.blocked.language} (groundspec.enable)\n${stats}`,
      };
    }
    const activity = [...this.activities.values()].at(-1);
    if (activity) {
      return { text: "$(loading~spin) groundspec", tooltip: `groundspec: ${describeActivity(activity)}\n${stats}` };
    }
    if (this.inflight > 0) {
      return { text: "$(loading~spin) groundspec: generating", tooltip: `groundspec: generating a suggestion\n${stats}` };
    }
    const manual = this.blocked?.why === "manual";
    return {
      text: this.stats ? statusText(this.stats) : "$(zap) groundspec",
      tooltip: manual
        ? `groundspec: ready; suggestions for ${this.blocked?.language} only on request (groundspec: Trigger Inline Suggestion, Alt+\\)\n${stats}`
        : `groundspec: ready\n${stats}`,
    };
  }
}

/** How to fix a failed load, unless `reason` already says it. */
export function fixAdvice(reason = ""): string {
  if (reason.includes(FIX_COMMAND)) return `Then "groundspec: Restart Server".`;
  return `Fix: run \`${FIX_COMMAND}\` (or set groundspec.targetModel / groundspec.draftModel), then "groundspec: Restart Server".`;
}

/** "refactor: add types" for the server's "groundspec refactor" progress: the tooltip already starts with "groundspec: ". */
export function describeActivity(activity: { title: string; message?: string }): string {
  const title = activity.title.replace(/^groundspec\b\s*/, "");
  return [title, activity.message].filter((part) => part).join(": ") || "working";
}
