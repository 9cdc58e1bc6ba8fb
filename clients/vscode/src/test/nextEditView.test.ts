import assert from "node:assert/strict";
import { test } from "node:test";

import { Range } from "../positions";
import {
  awayHint,
  diffMarkdown,
  firstEdit,
  hunks,
  inlineText,
  MAX_INLINE,
  positionAfter,
  wholeLines,
} from "../nextEditView";

const range = (l1: number, c1: number, l2: number, c2: number): Range => ({
  start: { line: l1, character: c1 },
  end: { line: l2, character: c2 },
});

// The fake engine's proposal after `name` -> `attr_name` on a later line
// (tests/e2e/test_next_edit_protocol.py): one edit over two lines.
const DOCUMENT = ["def register(plugin):", "    for name in dir(plugin):", "        opts = parse(plugin, name)"];
const OLD = "name in dir(plugin):\n        opts = parse(plugin, name";
const NEW = "attr_name in dir(plugin):\n        opts = parse(plugin, attr_name";
const EDIT = { range: range(1, 8, 2, 33), newText: NEW };

const lineAt = (line: number) => DOCUMENT[line];

/** The document's text in `r` (lines joined with \n). */
function textIn(r: Range): string {
  const text = DOCUMENT.join("\n");
  const offset = (line: number, character: number) =>
    DOCUMENT.slice(0, line).reduce((sum, l) => sum + l.length + 1, 0) + character;
  return text.slice(offset(r.start.line, r.start.character), offset(r.end.line, r.end.character));
}

test("the edit proposed is the first well-formed one that changes the text", () => {
  assert.equal(textIn(EDIT.range), OLD);
  assert.deepEqual(firstEdit({ edits: [EDIT], stats: {} }, textIn), EDIT);
  const noop = { range: range(0, 4, 0, 12), newText: "register" };
  const broken = { range: { start: { line: 0 } }, newText: "x" };
  assert.deepEqual(firstEdit({ edits: [broken, noop, EDIT] }, textIn), EDIT);
});

test("no edits, an empty list or a malformed result propose nothing", () => {
  for (const result of [null, undefined, {}, { edits: [] }, { edits: "x" }, { edits: [{ newText: "x" }] }]) {
    assert.equal(firstEdit(result, textIn), null, JSON.stringify(result));
  }
});

test("a rename carried to two lines is drawn as the two words that change", () => {
  assert.deepEqual(hunks(EDIT, lineAt), [
    { range: range(1, 8, 1, 12), insert: "attr_name" },
    { range: range(2, 29, 2, 33), insert: "attr_name" },
  ]);
  assert.equal(DOCUMENT[2].slice(29, 33), "name");
});

test("an edit trimmed inside a word is drawn as the whole word replaced", () => {
  // The server trims the common `name` at the end: `parse(plugin, ` -> `parse(plugin, attr_`.
  const newText = "attr_name in dir(plugin):\n        opts = parse(plugin, attr_";
  const trimmed = { range: range(1, 8, 2, 29), newText };
  assert.deepEqual(hunks(trimmed, lineAt), hunks(EDIT, lineAt));
});

test("an insertion is an empty range with text; a deletion a range with none", () => {
  const lines = ["        return cache[key]"];
  const at = (line: number) => lines[line];
  assert.deepEqual(hunks({ range: range(0, 15, 0, 15), newText: "self." }, at), [
    { range: range(0, 15, 0, 15), insert: "self." },
  ]);
  assert.deepEqual(hunks({ range: range(0, 15, 0, 20), newText: "" }, at), [
    { range: range(0, 15, 0, 20), insert: "" },
  ]);
  // A changed word is drawn whole; outside words, only what changes.
  const one = (text: string) => (_line: number) => text;
  assert.deepEqual(hunks({ range: range(0, 2, 0, 2), newText: "a" }, one("aa")), [
    { range: range(0, 0, 0, 2), insert: "aaa" },
  ]);
  assert.deepEqual(hunks({ range: range(0, 6, 0, 6), newText: "=1" }, one("f(a, b)")), [
    { range: range(0, 6, 0, 6), insert: "=1" },
  ]);
  assert.deepEqual(hunks({ range: range(0, 6, 0, 6), newText: "+" }, one("total = x")), [
    { range: range(0, 6, 0, 6), insert: "+" },
  ]);
});

test("lines added or removed make the edit one piece", () => {
  const edit = { range: range(0, 0, 0, 0), newText: "import os\n" };
  assert.deepEqual(hunks(edit, lineAt), [{ range: range(0, 0, 0, 0), insert: "import os\n" }]);
  assert.equal(inlineText("import os\n"), "import os⏎");
});

test("long new text is cut for the line and shown whole in the hover", () => {
  const long = "x".repeat(200);
  assert.equal(inlineText(long).length, MAX_INLINE);
  assert.ok(inlineText(long).endsWith("…"));
  const hover = diffMarkdown(["name"], [long]);
  assert.ok(hover.includes(`+ ${long}`) && hover.includes("- name"));
});

test("the hover shows the whole lines touched, before and after", () => {
  const trimmed = { range: range(2, 29, 2, 29), newText: "attr_" };
  assert.deepEqual(wholeLines(trimmed, lineAt), {
    before: ["        opts = parse(plugin, name)"],
    after: ["        opts = parse(plugin, attr_name)"],
  });
});

test("the hover's fence is longer than any backticks in the code", () => {
  const hover = diffMarkdown(["s = ```"], ["s = ````"]);
  assert.ok(hover.includes("`````diff\n- s = ```\n+ s = ````\n`````"), hover);
});

test("after accepting, the cursor goes to the end of the new text", () => {
  assert.deepEqual(positionAfter({ line: 1, character: 8 }, "attr_name"), { line: 1, character: 17 });
  assert.deepEqual(positionAfter({ line: 1, character: 8 }, NEW), { line: 2, character: 38 });
  assert.deepEqual(positionAfter({ line: 0, character: 0 }, "import os\n"), { line: 1, character: 0 });
});

test("the hint says which way a proposal on other lines is; none on the cursor's lines", () => {
  assert.equal(awayHint(5, EDIT.range), "↑ groundspec: next edit at line 2 (Tab accepts, Esc dismisses)");
  assert.equal(awayHint(0, EDIT.range)?.startsWith("↓ groundspec: next edit at line 2"), true);
  assert.equal(awayHint(1, EDIT.range), null);
  assert.equal(awayHint(2, EDIT.range), null);
});
