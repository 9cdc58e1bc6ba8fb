// Position helpers for the refactor command, on plain LSP-shaped objects
// (0-based lines, UTF-16 characters, which is what VS Code uses too).

export interface Position {
  line: number;
  character: number;
}

export interface Range {
  start: Position;
  end: Position;
}

export function isEmpty(range: Range): boolean {
  return range.start.line === range.end.line && range.start.character === range.end.character;
}

/**
 * What to refactor for a selection: the selection itself, or the whole line
 * under the cursor when nothing is selected. `lineLength(line)` gives a
 * line's length in UTF-16 code units. Always returns plain objects.
 */
export function refactorRange(selection: Range, lineLength: (line: number) => number): Range {
  if (!isEmpty(selection)) {
    // Plain copies: editor objects serialize differently (vscode.Range is a JSON array).
    const { start, end } = selection;
    return {
      start: { line: start.line, character: start.character },
      end: { line: end.line, character: end.character },
    };
  }
  const line = selection.start.line;
  return { start: { line, character: 0 }, end: { line, character: lineLength(line) } };
}

/** The arguments of the server's `groundspec.refactor` command. */
export function refactorArguments(uri: string, range: Range, instruction: string): unknown[] {
  return [{ uri, range, instruction: instruction.trim() }];
}

/** "lines 3-7" (1-based) for messages. */
export function describeLines(range: Range): string {
  const first = range.start.line + 1;
  // A selection that ends at the start of a line does not include that line.
  const last = range.end.character === 0 && range.end.line > range.start.line ? range.end.line : range.end.line + 1;
  return first === last ? `line ${first}` : `lines ${first}-${last}`;
}
