// A next edit as the editor draws it, on plain LSP-shaped objects (no `vscode`
// import: unit tested with node). The server proposes one edit {range, newText};
// it is drawn as the pieces that change: each struck through, its new text after it.
import { Position, Range } from "./positions";

/** One edit of the `groundspec/nextEdit` result (the public contract). */
export interface ProposedEdit {
  range: Range;
  newText: string;
}

/** A piece of a proposal as drawn: `range` struck through (may be empty), `insert` after it. */
export interface Hunk {
  range: Range;
  insert: string;
}

/** The longest new text drawn after a piece; the hover shows all of it. */
export const MAX_INLINE = 80;

function isPosition(value: unknown): value is Position {
  const p = value as Position;
  return typeof p === "object" && p !== null && Number.isInteger(p.line) && Number.isInteger(p.character);
}

function isEdit(value: unknown): value is ProposedEdit {
  const e = value as ProposedEdit;
  return (
    typeof e === "object" &&
    e !== null &&
    typeof e.newText === "string" &&
    typeof e.range === "object" &&
    e.range !== null &&
    isPosition(e.range.start) &&
    isPosition(e.range.end)
  );
}

/**
 * The edit to propose from a `groundspec/nextEdit` result: the first well-formed one
 * that changes the text (`textIn(range)` is the document's text there), or null.
 */
export function firstEdit(result: unknown, textIn: (range: Range) => string): ProposedEdit | null {
  const edits = (result as { edits?: unknown } | null)?.edits;
  if (!Array.isArray(edits)) return null;
  for (const edit of edits) {
    if (isEdit(edit) && textIn(edit.range) !== edit.newText) {
      const { start, end } = edit.range;
      // Plain copies, whatever else the server sent along.
      const range = {
        start: { line: start.line, character: start.character },
        end: { line: end.line, character: end.character },
      };
      return { range, newText: edit.newText };
    }
  }
  return null;
}

function splitLines(text: string): string[] {
  return text.split(/\r?\n/);
}

const isWord = (char: string | undefined) => char !== undefined && /\w/.test(char);

/**
 * Lengths of the common prefix and suffix of `a` and `b`, not overlapping in either and
 * never splitting a word: `name` -> `attr_name` is that word replaced, not `attr_` put before it.
 */
function commonEnds(a: string, b: string): [number, number] {
  let prefix = 0;
  while (prefix < a.length && prefix < b.length && a[prefix] === b[prefix]) prefix++;
  while (prefix > 0 && isWord(a[prefix - 1]) && (isWord(a[prefix]) || isWord(b[prefix]))) prefix--;
  let suffix = 0;
  while (
    suffix < a.length - prefix &&
    suffix < b.length - prefix &&
    a[a.length - 1 - suffix] === b[b.length - 1 - suffix]
  ) {
    suffix++;
  }
  while (
    suffix > 0 &&
    isWord(a[a.length - suffix]) &&
    (isWord(a[a.length - suffix - 1]) || isWord(b[b.length - suffix - 1]))
  ) {
    suffix--;
  }
  return [prefix, suffix];
}

/**
 * The pieces that change when `edit` is applied to a document whose line `n` is
 * `lineAt(n)`. The lines it touches are compared whole (the server trims its edit to the
 * characters that change, which can split a word): with as many lines before as after,
 * each changed line is one piece, trimmed to the words that change (a rename carried to
 * two lines: two words); otherwise the edit is one piece.
 */
export function hunks(edit: ProposedEdit, lineAt: (line: number) => string): Hunk[] {
  const { before, after } = wholeLines(edit, lineAt);
  if (before.length !== after.length) return [{ range: edit.range, insert: edit.newText }];
  const { start } = edit.range;
  const pieces: Hunk[] = [];
  before.forEach((old, i) => {
    const now = after[i];
    if (old === now) return;
    const [prefix, suffix] = commonEnds(old, now);
    const line = start.line + i;
    pieces.push({
      range: { start: { line, character: prefix }, end: { line, character: old.length - suffix } },
      insert: now.slice(prefix, now.length - suffix),
    });
  });
  return pieces;
}

export interface WholeLines {
  before: string[];
  after: string[];
}

/** The lines `edit` touches, before and after it (for the pieces and the hover's diff). */
export function wholeLines(edit: ProposedEdit, lineAt: (line: number) => string): WholeLines {
  const { start, end } = edit.range;
  const before: string[] = [];
  for (let line = start.line; line <= end.line; line++) before.push(lineAt(line));
  const head = before[0].slice(0, start.character);
  const tail = before[before.length - 1].slice(end.character);
  return { before, after: splitLines(head + edit.newText + tail) };
}

/** New text as one line for an after-text decoration: new lines as ⏎, cut at `max`. */
export function inlineText(text: string, max = MAX_INLINE): string {
  const flat = text.replace(/\r?\n/g, "⏎");
  return flat.length > max ? `${flat.slice(0, max - 1)}…` : flat;
}

/** Where the cursor goes after `newText` is put at `start`. */
export function positionAfter(start: Position, newText: string): Position {
  const lines = splitLines(newText);
  const last = lines[lines.length - 1];
  if (lines.length === 1) return { line: start.line, character: start.character + last.length };
  return { line: start.line + lines.length - 1, character: last.length };
}

/**
 * The hint at the cursor when the proposal is on other lines (maybe off screen):
 * which way and which line; null when it touches the cursor's line.
 */
export function awayHint(cursorLine: number, range: Range, keys = "Tab accepts, Esc dismisses"): string | null {
  if (cursorLine >= range.start.line && cursorLine <= range.end.line) return null;
  const arrow = range.start.line < cursorLine ? "↑" : "↓";
  return `${arrow} groundspec: next edit at line ${range.start.line + 1} (${keys})`;
}

/** The proposal as a Markdown diff of the lines it touches, for the hover. */
export function diffMarkdown(before: string[], after: string[]): string {
  const longestTicks = Math.max(2, ...[...[...before, ...after].join("\n").matchAll(/`+/g)].map((m) => m[0].length));
  const fence = "`".repeat(longestTicks + 1);
  const lines = [...before.map((line) => `- ${line}`), ...after.map((line) => `+ ${line}`)];
  return `**groundspec: next edit**\n\n${fence}diff\n${lines.join("\n")}\n${fence}`;
}
