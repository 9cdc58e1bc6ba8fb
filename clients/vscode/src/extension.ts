// groundspec for VS Code: starts `groundspec serve` and gets inline
// completions through LSP 3.18 textDocument/inlineCompletion (built into
// vscode-languageclient 10); each item carries the server's groundspec.accepted
// command, which VS Code runs on accept. Adds a refactor command, a statistics
// command and a status bar item: model loading progress, a failed load with its
// fix, "generating" while a suggestion is computed, then tokens/s and draft
// acceptance. All the server's items reach VS Code, so its "next suggestion"
// (Alt+]) cycles through the alternatives the server returns. Suggestions can
// be turned off per language (`groundspec.enable`) or asked for only on request
// (`groundspec.autoTrigger`, `groundspec.trigger`); a refactor is previewed in the
// diff editor and applied only when accepted (refactorPreview.ts); after a pause in
// typing the edit that follows the user's last one is proposed (nextEdit.ts).
import * as os from "os";
import * as vscode from "vscode";
import {
  CloseAction,
  DidChangeConfigurationNotification,
  ErrorAction,
  ErrorHandler,
  ExecuteCommandRequest,
  LanguageClient,
  LanguageClientOptions,
  MessageType,
  Middleware,
  RevealOutputChannelOn,
  ServerOptions,
  ShowMessageNotification,
  ShowMessageParams,
  State,
} from "vscode-languageclient/node";

import { NextEdits } from "./nextEdit";
import { describeLines, Range, refactorArguments, refactorRange } from "./positions";
import { RestartPolicy } from "./recovery";
import { RefactorPreview } from "./refactorPreview";
import {
  documentSelector,
  needsRestart,
  nextEditBlock,
  readSettings,
  servesLanguage,
  serverCommand,
  Settings,
  suggestionBlock,
  toInitializationOptions,
} from "./settings";
import { formatStats, ServerStats } from "./stats";
import { FIX_COMMAND, fixAdvice, LOAD_TOKEN, ProgressValue, ServerStatus } from "./status";

/** The `groundspec/refactor` result (the public contract). */
interface RefactorResult {
  newText: string;
  range: Range;
}

class Groundspec implements vscode.Disposable {
  private client: LanguageClient | undefined;
  private settings: Settings = currentSettings();
  /** A document of a served language was opened: the server runs from then on. */
  private wanted = false;
  private readonly output = vscode.window.createOutputChannel("groundspec", { log: true });
  private readonly status = vscode.window.createStatusBarItem(vscode.StatusBarAlignment.Right, 100);
  private poll: NodeJS.Timeout | undefined;
  private state = new ServerStatus();
  private failureShown = false;
  private readonly restarts = new RestartPolicy();
  private starting: Promise<void> = Promise.resolve();
  readonly preview = new RefactorPreview();
  readonly nextEdits = new NextEdits({
    client: (report) => this.runningClient(report),
    block: (document, invoked) => this.nextEditBlock(document, invoked),
    debounceMs: () => this.settings.nextEditDebounceMs,
    log: (message) => this.output.debug(message),
  });

  constructor() {
    this.status.command = "groundspec.showStats";
    this.status.name = "groundspec";
  }

  async start(): Promise<void> {
    this.wanted = true;
    this.settings = currentSettings();
    const { command, args } = serverCommand(this.settings, os.homedir());
    const serverOptions: ServerOptions = { command, args };
    const clientOptions: LanguageClientOptions = {
      documentSelector: documentSelector(this.settings.languages),
      initializationOptions: toInitializationOptions(this.settings),
      outputChannel: this.output,
      // Failed requests (e.g. while the models load) go to the output channel;
      // the status bar item says what is wrong, one notification says how to fix it.
      revealOutputChannelOn: RevealOutputChannelOn.Never,
      middleware: this.middleware(),
      errorHandler: this.errorHandler(),
    };
    const client = new LanguageClient("groundspec", "groundspec", serverOptions, clientOptions);
    client.onDidChangeState((event) => this.onState(event.newState));
    client.onNotification(ShowMessageNotification.type, (message) => void this.onServerMessage(message));
    this.client = client;
    this.state = new ServerStatus();
    this.failureShown = false;
    this.editorChanged();
    this.starting = client.start();
    try {
      await this.starting;
    } catch (error) {
      this.state.failed(`could not start "${command} serve": ${messageOf(error)}`);
      this.render();
      void vscode.window.showErrorMessage(
        `groundspec: could not start "${command} serve" (${messageOf(error)}). Set groundspec.serverPath.`,
      );
    }
  }

  /** A server that exits unexpectedly is started again after a pause, a few times
   *  (recovery.ts); the user is told once, with the log one click away. */
  private errorHandler(): ErrorHandler {
    return {
      error: (_error, _message, count) => ({
        action: (count ?? 0) <= 3 ? ErrorAction.Continue : ErrorAction.Shutdown,
      }),
      closed: async () => {
        const decision = this.restarts.closed();
        if (decision.message !== null) {
          const show = decision.restart ? vscode.window.showWarningMessage : vscode.window.showErrorMessage;
          void show(decision.message, "Open log").then((choice) => choice && this.output.show());
        }
        if (!decision.restart) return { action: CloseAction.DoNotRestart, handled: true };
        await new Promise((resolve) => setTimeout(resolve, decision.delayMs));
        return { action: CloseAction.Restart, handled: true };
      },
    };
  }

  /** Status from progress and completion requests; every item is passed on. */
  private middleware(): Middleware {
    return {
      handleWorkDoneProgress: (token, params, next) => {
        this.state.progress(token, params as ProgressValue);
        this.render();
        if (token === LOAD_TOKEN) {
          if (params.kind === "end") void this.refreshStatus();
          return; // shown by our item; VS Code's own window progress would repeat it
        }
        next(token, params);
      },
      // The suggestion shows as ghost text; the same text in the suggest widget
      // too would be noise, and a second request per keystroke would supersede
      // the inline one on the server (newest wins per document).
      provideCompletionItem: () => undefined,
      provideInlineCompletionItems: async (document, position, context, token, next) => {
        const invoked = context.triggerKind === vscode.InlineCompletionTriggerKind.Invoke;
        if (suggestionBlock(documentSettings(document), invoked) !== null) return null;
        this.state.generating(true);
        this.render();
        try {
          return await next(document, position, context, token);
        } catch (error) {
          // Logged by the client; loading or a failed load shows in the status bar.
          if (!token.isCancellationRequested && this.state.phase !== "failed") void this.refreshStatus();
          return null;
        } finally {
          this.state.generating(false);
          this.render();
        }
      },
    };
  }

  /** The server's window/showMessage; a failed model load becomes one message with its fix. */
  private async onServerMessage(message: ShowMessageParams): Promise<void> {
    if (message.type === MessageType.Error) {
      await this.starting.catch(() => undefined); // a load can fail before start() resolves
      const stats = await this.fetchStats(false);
      if (stats) this.state.statsArrived(stats);
      if (this.state.phase === "failed") {
        this.loadFailed(message.message.replace(/^groundspec:\s*/, ""));
        return;
      }
    }
    const show = {
      [MessageType.Error]: vscode.window.showErrorMessage,
      [MessageType.Warning]: vscode.window.showWarningMessage,
    }[message.type as number] ?? vscode.window.showInformationMessage;
    void show(message.message);
  }

  private loadFailed(reason: string): void {
    this.state.failed(reason);
    this.render();
    if (this.failureShown) return;
    this.failureShown = true;
    const fetch = `Run "${FIX_COMMAND}"`;
    const restart = "Restart Server";
    void vscode.window
      .showErrorMessage(`groundspec: ${reason}. ${fixAdvice(reason)}`, fetch, restart)
      .then((choice) => {
        if (choice === fetch) this.runModelsFetch();
        if (choice === restart) void this.restart();
      });
  }

  private runModelsFetch(): void {
    const { command } = serverCommand(this.settings, os.homedir());
    const terminal = vscode.window.createTerminal("groundspec models fetch");
    terminal.show();
    terminal.sendText(`${shellQuote(command)} models fetch`);
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

  /**
   * Start the server once one of `documents` is in a served language: a window with
   * only other files (activated by the generic onLanguage event) loads no models.
   */
  async startWhenServed(documents: readonly vscode.TextDocument[]): Promise<void> {
    const served = (document: vscode.TextDocument) =>
      ["file", "untitled"].includes(document.uri.scheme) &&
      servesLanguage(this.settings.languages, document.languageId);
    if (!this.wanted && documents.some(served)) await this.start();
  }

  /** The active editor or its settings changed: the status bar says whether it gets suggestions. */
  editorChanged(): void {
    if (!this.wanted) return; // no server, no status item yet
    const document = vscode.window.activeTextEditor?.document;
    if (document && servesLanguage(this.settings.languages, document.languageId)) {
      this.state.editor(document.languageId, suggestionBlock(documentSettings(document), false));
    } else {
      this.state.editor(undefined, null);
    }
    this.render();
  }

  /** Why `document` gets no next edit (`invoked`: asked on request), or null when it may. */
  private nextEditBlock(document: vscode.TextDocument, invoked: boolean): string | null {
    const scheme = ["file", "untitled"].includes(document.uri.scheme);
    if (!scheme || !servesLanguage(this.settings.languages, document.languageId)) return "its language is not served";
    const config = vscode.workspace.getConfiguration("groundspec", document);
    const block = nextEditBlock(
      { enable: config.get("enable"), nextEdit: config.get("nextEdit"), nextEditAutoTrigger: config.get("nextEditAutoTrigger") },
      invoked,
    );
    if (block === "disabled") return `groundspec.enable is off for ${document.languageId}`;
    if (block === "manual") return "groundspec.nextEditAutoTrigger is off";
    return block === "off" ? "groundspec.nextEdit is off" : null;
  }

  /** New settings: restart for a new server or models, else tell the running server. */
  async settingsChanged(): Promise<void> {
    const settings = currentSettings();
    if (!this.wanted) {
      this.settings = settings; // `languages` may now include an open document's
      await this.startWhenServed(vscode.workspace.textDocuments);
      return;
    }
    this.editorChanged();
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
    const previewFirst = vscode.workspace.getConfiguration("groundspec", document).get("refactorPreview") !== false;
    await vscode.window.withProgress(
      { location: vscode.ProgressLocation.Notification, title: "groundspec: refactoring…", cancellable: true },
      async (_progress, token) => {
        try {
          if (previewFirst) {
            await this.previewRefactor(client, document, range, instruction.trim(), token);
          } else {
            // The server applies the edit with workspace/applyEdit before it answers.
            const uri = client.code2ProtocolConverter.asUri(document.uri);
            const params = { command: "groundspec.refactor", arguments: refactorArguments(uri, range, instruction) };
            await client.sendRequest(ExecuteCommandRequest.type, params, token);
          }
        } catch (error) {
          if (!token.isCancellationRequested) {
            void vscode.window.showErrorMessage(`groundspec: refactor failed: ${messageOf(error)}`);
          }
        }
      },
    );
  }

  /** groundspec/refactor computes the edit; the diff editor shows it until accepted or discarded. */
  private async previewRefactor(
    client: LanguageClient,
    document: vscode.TextDocument,
    range: Range,
    instruction: string,
    token: vscode.CancellationToken,
  ): Promise<void> {
    const version = document.version;
    const params = { textDocument: { uri: client.code2ProtocolConverter.asUri(document.uri) }, range, instruction };
    const result = await client.sendRequest<RefactorResult>("groundspec/refactor", params, token);
    if (token.isCancellationRequested) return;
    const edit = { range: client.protocol2CodeConverter.asRange(result.range), newText: result.newText };
    await this.preview.show(document, version, edit, instruction);
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
    this.preview.dispose();
    this.nextEdits.dispose();
    this.status.dispose();
    this.output.dispose();
  }

  private onState(state: State): void {
    if (state === State.Running) {
      this.state.started();
      this.startPolling();
      void this.refreshStatus();
    } else if (state === State.Stopped) {
      this.stopPolling();
      if (this.state.phase !== "failed") this.state.stopped();
      this.render();
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
      this.state.statsArrived(stats);
      this.render();
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

  private render(): void {
    const view = this.state.view();
    this.status.text = view.text;
    this.status.tooltip = view.tooltip;
    this.status.backgroundColor =
      this.state.phase === "failed" ? new vscode.ThemeColor("statusBarItem.errorBackground") : undefined;
    this.status.show();
  }
}

/** The settings that decide whether `document` gets suggestions (`[language]` overrides apply). */
function documentSettings(document: vscode.TextDocument): { enable: unknown; autoTrigger: unknown } {
  const config = vscode.workspace.getConfiguration("groundspec", document);
  return { enable: config.get("enable"), autoTrigger: config.get("autoTrigger") };
}

function currentSettings(): Settings {
  return readSettings((key) => vscode.workspace.getConfiguration("groundspec").get(key));
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

function shellQuote(word: string): string {
  return /^[\w@%+=:,./~-]+$/.test(word) ? word : `'${word.replace(/'/g, "'\\''")}'`;
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
    // VS Code's own request, so the answer is an "invoked" one (no automatic-trigger checks).
    vscode.commands.registerCommand("groundspec.trigger", () =>
      vscode.commands.executeCommand("editor.action.inlineSuggest.trigger"),
    ),
    vscode.commands.registerCommand("groundspec.acceptRefactor", () => extension.preview.accept()),
    vscode.commands.registerCommand("groundspec.discardRefactor", () => extension.preview.discard()),
    vscode.commands.registerCommand("groundspec.nextEdit", () => extension.nextEdits.ask()),
    vscode.commands.registerCommand("groundspec.acceptNextEdit", () => extension.nextEdits.accept()),
    vscode.commands.registerCommand("groundspec.dismissNextEdit", () => extension.nextEdits.dismiss()),
    vscode.workspace.onDidChangeTextDocument((event) => extension.nextEdits.documentChanged(event)),
    vscode.window.onDidChangeTextEditorSelection((event) => extension.nextEdits.selectionChanged(event.textEditor)),
    vscode.window.onDidChangeActiveTextEditor(() => {
      extension.editorChanged();
      extension.nextEdits.editorChanged();
    }),
    vscode.workspace.onDidChangeConfiguration((event) => {
      if (event.affectsConfiguration("groundspec")) {
        void extension.settingsChanged();
        extension.nextEdits.settingsChanged();
      }
    }),
    vscode.workspace.onDidOpenTextDocument((document) => void extension.startWhenServed([document])),
  );
  await extension.startWhenServed(vscode.workspace.textDocuments);
}

export async function deactivate(): Promise<void> {
  await groundspec?.stop();
  groundspec = undefined;
}
