// A refactor shown before it is applied: the diff editor compares the document
// with a read-only copy that has the server's edit, and the user accepts or
// discards it (editor title buttons, the notification, or the commands). An
// edit computed for an older version of the document is never applied.
import * as vscode from "vscode";

import { describeLines, Range } from "./positions";

export const PREVIEW_SCHEME = "groundspec-preview";
/** Context key: a preview waits for accept or discard (package.json `when` clauses). */
export const PENDING_CONTEXT = "groundspec.refactorPending";

const CHANGED =
  "groundspec: the file changed after the refactor was computed; nothing was applied. Run the refactor again.";

interface Pending {
  document: vscode.TextDocument;
  version: number;
  range: vscode.Range;
  newText: string;
  preview: vscode.Uri;
}

export class RefactorPreview implements vscode.TextDocumentContentProvider, vscode.Disposable {
  private pending: Pending | undefined;
  private readonly contents = new Map<string, string>();
  private readonly changed = new vscode.EventEmitter<vscode.Uri>();
  private readonly registration: vscode.Disposable;
  private count = 0;
  readonly onDidChange = this.changed.event;

  constructor() {
    this.registration = vscode.workspace.registerTextDocumentContentProvider(PREVIEW_SCHEME, this);
  }

  provideTextDocumentContent(uri: vscode.Uri): string {
    return this.contents.get(uri.toString()) ?? "";
  }

  /**
   * Show `document` with `range` replaced by `newText` in the diff editor, and ask.
   * `version` is the document's version the edit was computed for.
   */
  async show(
    document: vscode.TextDocument,
    version: number,
    edit: { range: vscode.Range; newText: string },
    instruction: string,
  ): Promise<void> {
    await this.close();
    if (document.version !== version) {
      void vscode.window.showWarningMessage(CHANGED);
      return;
    }
    const { range, newText } = edit;
    const text = document.getText();
    const proposed = text.slice(0, document.offsetAt(range.start)) + newText + text.slice(document.offsetAt(range.end));
    this.count += 1;
    const preview = vscode.Uri.from({
      scheme: PREVIEW_SCHEME,
      path: document.uri.path,
      query: `refactor=${this.count}`,
    });
    this.contents.set(preview.toString(), proposed);
    this.pending = { document, version: document.version, range, newText, preview };
    await vscode.commands.executeCommand("setContext", PENDING_CONTEXT, true);
    const name = document.uri.path.split("/").pop() ?? "document";
    await vscode.commands.executeCommand("vscode.diff", document.uri, preview, `${name} ↔ groundspec: ${instruction}`);
    const lines = describeLines(plainRange(range));
    void vscode.window
      .showInformationMessage(`groundspec: refactor of ${lines} ready ("${instruction}").`, "Accept", "Discard")
      .then((choice) => {
        if (this.pending?.preview !== preview) return; // answered another way already
        if (choice === "Accept") void this.accept();
        if (choice === "Discard") void this.discard();
      });
  }

  /** Apply the previewed edit, unless the document changed since it was computed. */
  async accept(): Promise<boolean> {
    const pending = this.pending;
    if (!pending) {
      void vscode.window.showInformationMessage("groundspec: no refactor is waiting to be accepted.");
      return false;
    }
    await this.close();
    if (pending.document.isClosed || pending.document.version !== pending.version) {
      void vscode.window.showWarningMessage(CHANGED);
      return false;
    }
    const edit = new vscode.WorkspaceEdit();
    edit.replace(pending.document.uri, pending.range, pending.newText);
    const applied = await vscode.workspace.applyEdit(edit);
    await vscode.window.showTextDocument(pending.document, { preview: false });
    if (!applied) void vscode.window.showErrorMessage("groundspec: VS Code did not apply the refactor.");
    return applied;
  }

  /** Drop the previewed edit; the document stays as it is. */
  async discard(): Promise<void> {
    const pending = this.pending;
    await this.close();
    if (pending && !pending.document.isClosed) {
      await vscode.window.showTextDocument(pending.document, { preview: false });
    }
  }

  dispose(): void {
    void this.close();
    this.registration.dispose();
    this.changed.dispose();
  }

  /** Forget the pending edit and close its diff editors. */
  private async close(): Promise<void> {
    const pending = this.pending;
    this.pending = undefined;
    await vscode.commands.executeCommand("setContext", PENDING_CONTEXT, false);
    if (!pending) return;
    this.contents.delete(pending.preview.toString());
    const tabs = vscode.window.tabGroups.all
      .flatMap((group) => group.tabs)
      .filter(
        (tab) =>
          tab.input instanceof vscode.TabInputTextDiff &&
          tab.input.modified.toString() === pending.preview.toString(),
      );
    if (tabs.length > 0) await vscode.window.tabGroups.close(tabs);
  }
}

function plainRange(range: vscode.Range): Range {
  return {
    start: { line: range.start.line, character: range.start.character },
    end: { line: range.end.line, character: range.end.character },
  };
}
