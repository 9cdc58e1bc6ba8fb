// What to do when the server exits without being asked to (a crash, a kill):
// start it again after a growing pause, at most MAX_RESTARTS times a session,
// telling the user once (with the log one click away) and again if it gives up.
// Pure logic: extension.ts wires it into the language client's error handler.

export const MAX_RESTARTS = 3;
export const BACKOFF_MS = [500, 2000, 5000];

export interface Decision {
  /** Start the server again (after `delayMs`), or leave it stopped. */
  restart: boolean;
  delayMs: number;
  /** A message for the user, or null (said once already). */
  message: string | null;
}

export class RestartPolicy {
  private restarts = 0;
  private told = false;

  constructor(
    private readonly maxRestarts = MAX_RESTARTS,
    private readonly backoffMs = BACKOFF_MS,
  ) {}

  /** The server's connection closed while it was wanted. */
  closed(): Decision {
    this.restarts += 1;
    if (this.restarts > this.maxRestarts) {
      return {
        restart: false,
        delayMs: 0,
        message:
          `groundspec: the server exited unexpectedly again; not restarting it after ` +
          `${this.maxRestarts} restarts. Its log is in the groundspec output channel.`,
      };
    }
    const delayMs = this.backoffMs[Math.min(this.restarts, this.backoffMs.length) - 1];
    const message = this.told
      ? null
      : "groundspec: the server exited unexpectedly; restarting it. " +
        "Its log (please attach it to a bug report) is one click away.";
    this.told = true;
    return { restart: true, delayMs, message };
  }
}
