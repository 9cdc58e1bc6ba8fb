// Next-edit suggestions: after a pause in typing (or on `groundspec.nextEdit`) the
// server is asked with `groundspec/nextEdit` for the edit that follows the user's
// last one. The proposal is drawn where it applies: the text it replaces struck
// through on the diff editor's red, its new text after it on the green, a diff in the
// hover, and a hint at the cursor when it is on other lines. While it shows, the
// context key `groundspec.nextEditVisible` turns on Tab (accept: one WorkspaceEdit,
// one undo step, the cursor after it) and Escape (dismiss). Any change to the
// document drops it: what the user types always wins.
import * as vscode from "vscode";
import { LanguageClient } from "vscode-languageclient/node";

import { Position, Range } from "./positions";
import {
  awayHint,
  diffMarkdown,
  firstEdit,
  Hunk,
  hunks,
  inlineText,
  positionAfter,
  ProposedEdit,
  wholeLines,
} from "./nextEditView";

export const NEXT_EDIT_METHOD = "groundspec/nextEdit";
/** Context key: a proposal is shown (package.json `when` clauses of Tab and Escape). */
export const VISIBLE_CONTEXT = "groundspec.nextEditVisible";

/** What the extension lends: its running client, a document's settings, its log. */
export interface NextEditHost {
  client(report: boolean): LanguageClient | undefined;
  /** Why `document` gets no next edit ("disabled", "off", "not served"; "manual" unless
   * `invoked`, asked on request), or null. */
  block(document: vscode.TextDocument, invoked: boolean): string | null;
  debounceMs(): number;
  log(message: string): void;
}

interface Shown {
  document: vscode.TextDocument;
  version: number;
  range: vscode.Range;
  newText: string;
}

export class NextEdits implements vscode.Disposable {
  private shown: Shown | undefined;
  /** editsKey() when a document was last asked for. */
  private readonly asked = new WeakMap<vscode.TextDocument, number>();
  private timer: NodeJS.Timeout | undefined;
  private inFlight: vscode.CancellationTokenSource | undefined;
  private readonly removed = vscode.window.createTextEditorDecorationType({
    backgroundColor: new vscode.ThemeColor("diffEditor.removedTextBackground"),
    textDecoration: "line-through",
    overviewRulerColor: new vscode.ThemeColor("editorOverviewRuler.modifiedForeground"),
    overviewRulerLane: vscode.OverviewRulerLane.Center,
  });
  private readonly inserted = vscode.window.createTextEditorDecorationType({
    after: {
      backgroundColor: new vscode.ThemeColor("diffEditor.insertedTextBackground"),
      border: "1px solid",
      borderColor: new vscode.ThemeColor("diffEditor.insertedLineBackground"),
    },
    overviewRulerColor: new vscode.ThemeColor("editorOverviewRuler.modifiedForeground"),
    overviewRulerLane: vscode.OverviewRulerLane.Center,
  });
  private readonly hint = vscode.window.createTextEditorDecorationType({
    after: { color: new vscode.ThemeColor("editorCodeLens.foreground"), fontStyle: "italic", margin: "0 0 0 2em" },
  });

  constructor(private readonly host: NextEditHost) {}

  /** `groundspec.nextEdit`: ask now for the active editor, whatever was shown. */
  async ask(): Promise<void> {
    const editor = vscode.window.activeTextEditor;
    if (!editor) return;
    const block = this.host.block(editor.document, true);
    if (block !== null) {
      void vscode.window.showInformationMessage(`groundspec: no next edit here (${block}).`);
      return;
    }
    await this.request(editor, true);
  }

  /** A document changed: a proposal for it is stale; the pause after it may bring one. */
  documentChanged(event: vscode.TextDocumentChangeEvent): void {
    const editor = vscode.window.activeTextEditor;
    // Other documents change too (output channels, files edited in the background).
    const ours = event.document === editor?.document || event.document === this.shown?.document;
    if (event.contentChanges.length === 0 || !ours) return;
    if (this.shown?.document === event.document) this.clear();
    this.cancel();
    if (editor?.document !== event.document) return;
    // Undo and redo walk the user's own history: nothing to propose.
    const { Undo, Redo } = vscode.TextDocumentChangeReason;
    if (event.reason === Undo || event.reason === Redo) return;
    this.schedule(editor);
  }

  /** The cursor moved: the hint says where the proposal is from there. */
  selectionChanged(editor: vscode.TextEditor): void {
    if (this.shown && editor.document === this.shown.document) this.drawHint(editor);
  }

  /** Another editor (or none) is active: a proposal is shown only where it was asked for.
   * The new one is asked after the pause: a function renamed in the file just left is
   * proposed where this one uses it. */
  editorChanged(): void {
    this.cancel();
    const editor = vscode.window.activeTextEditor;
    if (this.shown && editor?.document !== this.shown.document) this.clear();
    // Nothing edited anywhere since its last ask (back from another tab): not asked
    // again, so a proposal dismissed there stays dismissed.
    if (editor && !this.shown && this.asked.get(editor.document) !== editsKey()) this.schedule(editor);
  }

  /** Ask for `editor` after the pause, if it is still in front then. */
  private schedule(editor: vscode.TextEditor): void {
    if (this.host.block(editor.document, false) !== null) return;
    this.timer = setTimeout(() => {
      this.timer = undefined;
      if (vscode.window.activeTextEditor === editor) void this.request(editor, false);
    }, this.host.debounceMs());
  }

  /** Settings changed: a document now blocked loses its proposal and pending ask; one
   * now in manual mode keeps what is shown but no automatic ask goes out. */
  settingsChanged(): void {
    const editor = vscode.window.activeTextEditor;
    if (!editor) return;
    if (this.host.block(editor.document, false) !== null) this.cancel();
    if (this.host.block(editor.document, true) !== null) this.clear();
  }

  /** Jump to the proposal and apply it as one edit (one undo step); false when none or stale. */
  async accept(): Promise<boolean> {
    const shown = this.shown;
    this.clear();
    this.cancel();
    if (!shown || shown.document.isClosed || shown.document.version !== shown.version) return false;
    const edit = new vscode.WorkspaceEdit();
    edit.replace(shown.document.uri, shown.range, shown.newText);
    if (!(await vscode.workspace.applyEdit(edit))) {
      void vscode.window.showErrorMessage("groundspec: VS Code did not apply the next edit.");
      return false;
    }
    const editor = await vscode.window.showTextDocument(shown.document, { preview: false });
    const end = toVscode(positionAfter(fromVscode(shown.range).start, shown.newText));
    editor.selection = new vscode.Selection(end, end);
    editor.revealRange(new vscode.Range(end, end), vscode.TextEditorRevealType.InCenterIfOutsideViewport);
    return true;
  }

  /** Hide the proposal; the document stays as it is. */
  dismiss(): void {
    this.cancel();
    this.clear();
  }

  dispose(): void {
    this.dismiss();
    this.removed.dispose();
    this.inserted.dispose();
    this.hint.dispose();
  }

  private async request(editor: vscode.TextEditor, explicit: boolean): Promise<void> {
    const client = this.host.client(explicit);
    if (!client) return;
    this.cancel();
    const source = new vscode.CancellationTokenSource();
    this.inFlight = source;
    const document = editor.document;
    const version = document.version;
    this.asked.set(document, editsKey());
    const cursor = editor.selection.active;
    const params = {
      textDocument: { uri: client.code2ProtocolConverter.asUri(document.uri) },
      position: { line: cursor.line, character: cursor.character },
    };
    this.host.log(`next edit asked (${explicit ? "command" : "pause in typing"}) at line ${cursor.line + 1}`);
    try {
      const result = await client.sendRequest<unknown>(NEXT_EDIT_METHOD, params, source.token);
      // An answer for an older text, or for an editor no longer in front, is dropped.
      if (source.token.isCancellationRequested || document.version !== version) return;
      const active = vscode.window.activeTextEditor;
      if (active?.document !== document) return;
      const edit = firstEdit(result, (range) => document.getText(toVscodeRange(range)));
      if (edit === null) {
        if (explicit) vscode.window.setStatusBarMessage("groundspec: no next edit to propose", 3000);
        return;
      }
      this.show(active, version, edit);
    } catch (error) {
      if (source.token.isCancellationRequested) return;
      this.host.log(`next edit failed: ${error instanceof Error ? error.message : String(error)}`);
      if (explicit) void vscode.window.showWarningMessage(`groundspec: next edit failed (${String(error)}).`);
    } finally {
      if (this.inFlight === source) this.inFlight = undefined;
      source.dispose();
    }
  }

  private show(editor: vscode.TextEditor, version: number, edit: ProposedEdit): void {
    this.clear();
    const range = toVscodeRange(edit.range);
    const lineAt = (line: number) => editor.document.lineAt(line).text;
    const { before, after } = wholeLines(edit, lineAt);
    const hover = new vscode.MarkdownString(diffMarkdown(before, after));
    hover.appendMarkdown("\n\nTab accepts, Esc dismisses (**groundspec: Accept Next Edit**).");
    const pieces = hunks(edit, lineAt);
    const struck = pieces.filter((piece) => !isEmptyRange(piece.range));
    editor.setDecorations(
      this.removed,
      struck.map((piece) => ({ range: toVscodeRange(piece.range), hoverMessage: hover })),
    );
    const added = pieces.filter((piece) => piece.insert !== "");
    editor.setDecorations(this.inserted, added.map((piece) => insertion(piece, hover)));
    this.shown = { document: editor.document, version, range, newText: edit.newText };
    this.drawHint(editor);
    void vscode.commands.executeCommand("setContext", VISIBLE_CONTEXT, true);
    this.host.log(`next edit shown at line ${edit.range.start.line + 1}: ${pieces.length} piece(s)`);
  }

  private drawHint(editor: vscode.TextEditor): void {
    const shown = this.shown;
    const line = editor.selection.active.line;
    const text = shown ? awayHint(line, fromVscode(shown.range)) : null;
    if (text === null) {
      editor.setDecorations(this.hint, []);
      return;
    }
    const end = editor.document.lineAt(line).range.end;
    editor.setDecorations(this.hint, [
      { range: new vscode.Range(end, end), renderOptions: { after: { contentText: text } } },
    ]);
  }

  private clear(): void {
    const shown = this.shown;
    if (!shown) return;
    this.shown = undefined;
    for (const editor of vscode.window.visibleTextEditors) {
      if (editor.document !== shown.document) continue;
      for (const type of [this.removed, this.inserted, this.hint]) editor.setDecorations(type, []);
    }
    void vscode.commands.executeCommand("setContext", VISIBLE_CONTEXT, false);
  }

  /** Stop a pending pause and an unanswered request ($/cancelRequest reaches the server). */
  private cancel(): void {
    if (this.timer) {
      clearTimeout(this.timer);
      this.timer = undefined;
    }
    this.inFlight?.cancel();
    this.inFlight = undefined;
  }
}

function insertion(piece: Hunk, hover: vscode.MarkdownString): vscode.DecorationOptions {
  return {
    range: toVscodeRange(piece.range),
    hoverMessage: hover,
    renderOptions: { after: { contentText: inlineText(piece.insert) } },
  };
}

function isEmptyRange(range: Range): boolean {
  return range.start.line === range.end.line && range.start.character === range.end.character;
}

/** Grows with every edit to an open file: the edits the server has seen. */
function editsKey(): number {
  const files = vscode.workspace.textDocuments.filter((d) => ["file", "untitled"].includes(d.uri.scheme));
  return files.reduce((sum, document) => sum + document.version, 0);
}

function toVscode(position: Position): vscode.Position {
  return new vscode.Position(position.line, position.character);
}

function toVscodeRange(range: Range): vscode.Range {
  return new vscode.Range(toVscode(range.start), toVscode(range.end));
}

function fromVscode(range: vscode.Range): Range {
  return {
    start: { line: range.start.line, character: range.start.character },
    end: { line: range.end.line, character: range.end.character },
  };
}
