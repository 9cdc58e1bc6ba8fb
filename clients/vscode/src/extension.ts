// groundspec for VS Code: starts `groundspec serve` and gets inline
// completions through LSP 3.18 textDocument/inlineCompletion (built into
// vscode-languageclient 10); each item carries the server's groundspec.accepted
// command, which VS Code runs on accept. Adds a refactor command, a statistics
// command and a status bar item with tokens/s and draft acceptance.
import * as os from "os";
import * as vscode from "vscode";
import {
  DidChangeConfigurationNotification,
  ExecuteCommandRequest,
  LanguageClient,
  LanguageClientOptions,
  ServerOptions,
  State,
} from "vscode-languageclient/node";

import { describeLines, refactorArguments, refactorRange } from "./positions";
import {
  needsRestart,
  readSettings,
  serverCommand,
  Settings,
  toInitializationOptions,
} from "./settings";
import { formatStats, ServerStats, statusText } from "./stats";

const LANGUAGES = ["python", "javascript", "typescript", "go", "rust"];

class Groundspec implements vscode.Disposable {
  private client: LanguageClient | undefined;
  private settings: Settings = readSettings(() => undefined);
  private readonly output = vscode.window.createOutputChannel("groundspec", { log: true });
  private readonly status = vscode.window.createStatusBarItem(vscode.StatusBarAlignment.Right, 100);
  private poll: NodeJS.Timeout | undefined;

  constructor() {
    this.status.command = "groundspec.showStats";
    this.status.name = "groundspec";
  }

  async start(): Promise<void> {
    this.settings = readSettings((key) => vscode.workspace.getConfiguration("groundspec").get(key));
    const { command, args } = serverCommand(this.settings, os.homedir());
    const serverOptions: ServerOptions = { command, args };
    const clientOptions: LanguageClientOptions = {
      documentSelector: LANGUAGES.flatMap((language) => [
        { scheme: "file", language },
        { scheme: "untitled", language },
      ]),
      initializationOptions: toInitializationOptions(this.settings),
      outputChannel: this.output,
    };
    const client = new LanguageClient("groundspec", "groundspec", serverOptions, clientOptions);
    client.onDidChangeState((event) => this.onState(event.newState));
    this.client = client;
    this.showStatus("$(sync~spin) groundspec", "starting groundspec serve");
    try {
      await client.start();
    } catch (error) {
      this.showStatus("$(error) groundspec", `could not start ${command}: ${error}`);
      void vscode.window.showErrorMessage(
        `groundspec: could not start "${command} serve" (${error}). Set groundspec.serverPath.`,
      );
    }
  }

  async stop(): Promise<void> {
    this.stopPolling();
    const client = this.client;
    this.client = undefined;
    if (client?.isRunning()) {
      await client.stop();
    }
  }

  async restart(): Promise<void> {
    await this.stop();
    await this.start();
  }

  /** New settings: restart for a new server or models, else tell the running server. */
  async settingsChanged(): Promise<void> {
    const settings = readSettings((key) => vscode.workspace.getConfiguration("groundspec").get(key));
    if (!this.client?.isRunning() || needsRestart(this.settings, settings)) {
      await this.restart();
      return;
    }
    this.settings = settings;
    this.startPolling();
    await this.client.sendNotification(DidChangeConfigurationNotification.type, {
      settings: { groundspec: toInitializationOptions(settings) },
    });
  }

  async refactorSelection(): Promise<void> {
    const editor = vscode.window.activeTextEditor;
    const client = this.runningClient();
    if (!editor || !client) {
      return;
    }
    const document = editor.document;
    const range = refactorRange(editor.selection, (line) => document.lineAt(line).text.length);
    const instruction = await vscode.window.showInputBox({
      title: `groundspec: refactor ${describeLines(range)}`,
      prompt: "How should the selection be rewritten?",
      placeHolder: "e.g. add type hints",
      ignoreFocusOut: true,
    });
    if (!instruction?.trim()) {
      return;
    }
    const params = {
      command: "groundspec.refactor",
      arguments: refactorArguments(client.code2ProtocolConverter.asUri(document.uri), range, instruction),
    };
    // The server applies the edit with workspace/applyEdit before it answers.
    await vscode.window.withProgress(
      { location: vscode.ProgressLocation.Notification, title: "groundspec: refactoring…", cancellable: true },
      async (_progress, token) => {
        try {
          await client.sendRequest(ExecuteCommandRequest.type, params, token);
        } catch (error) {
          if (!token.isCancellationRequested) {
            void vscode.window.showErrorMessage(`groundspec: refactor failed: ${messageOf(error)}`);
          }
        }
      },
    );
  }

  async showStats(): Promise<void> {
    const stats = await this.fetchStats();
    if (stats) {
      this.output.info(`statistics\n${formatStats(stats)}`);
      this.output.show(true);
    }
  }

  dispose(): void {
    void this.stop();
    this.status.dispose();
    this.output.dispose();
  }

  private onState(state: State): void {
    if (state === State.Running) {
      this.showStatus("$(zap) groundspec", "groundspec is running");
      this.startPolling();
    } else if (state === State.Stopped) {
      this.stopPolling();
      this.showStatus("$(circle-slash) groundspec", "groundspec is stopped");
    }
  }

  private startPolling(): void {
    this.stopPolling();
    if (this.settings.statsIntervalMs > 0) {
      this.poll = setInterval(() => void this.refreshStatus(), this.settings.statsIntervalMs);
    }
  }

  private stopPolling(): void {
    if (this.poll) {
      clearInterval(this.poll);
      this.poll = undefined;
    }
  }

  private async refreshStatus(): Promise<void> {
    const stats = await this.fetchStats(false);
    if (stats) {
      this.showStatus(statusText(stats), formatStats(stats));
    }
  }

  private async fetchStats(report = true): Promise<ServerStats | undefined> {
    const client = this.runningClient(report);
    if (!client) {
      return undefined;
    }
    try {
      return await client.sendRequest<ServerStats>("groundspec/stats", {});
    } catch (error) {
      if (report) {
        void vscode.window.showErrorMessage(`groundspec: stats failed: ${messageOf(error)}`);
      }
      return undefined;
    }
  }

  private runningClient(report = true): LanguageClient | undefined {
    if (this.client?.isRunning()) {
      return this.client;
    }
    if (report) {
      void vscode.window.showWarningMessage("groundspec is not running (see the groundspec output).");
    }
    return undefined;
  }

  private showStatus(text: string, tooltip: string): void {
    this.status.text = text;
    this.status.tooltip = tooltip;
    this.status.show();
  }
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

let groundspec: Groundspec | undefined;

export async function activate(context: vscode.ExtensionContext): Promise<void> {
  const extension = new Groundspec();
  groundspec = extension;
  context.subscriptions.push(
    extension,
    vscode.commands.registerCommand("groundspec.refactorSelection", () => extension.refactorSelection()),
    vscode.commands.registerCommand("groundspec.showStats", () => extension.showStats()),
    vscode.commands.registerCommand("groundspec.restartServer", () => extension.restart()),
    vscode.workspace.onDidChangeConfiguration((event) => {
      if (event.affectsConfiguration("groundspec")) {
        void extension.settingsChanged();
      }
    }),
  );
  await extension.start();
}

export async function deactivate(): Promise<void> {
  await groundspec?.stop();
  groundspec = undefined;
}
