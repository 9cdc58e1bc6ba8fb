import assert from "node:assert/strict";
import { test } from "node:test";

import { describeLines, isEmpty, refactorArguments, refactorRange } from "../positions";

const lengths = [10, 0, 25];
const lineLength = (line: number) => lengths[line];
const range = (l1: number, c1: number, l2: number, c2: number) => ({
  start: { line: l1, character: c1 },
  end: { line: l2, character: c2 },
});

test("an empty selection refactors the whole line", () => {
  assert.ok(isEmpty(range(2, 4, 2, 4)));
  assert.deepEqual(refactorRange(range(2, 4, 2, 4), lineLength), range(2, 0, 2, 25));
  assert.deepEqual(refactorRange(range(1, 0, 1, 0), lineLength), range(1, 0, 1, 0));
});

test("a selection is kept, as a plain copy", () => {
  class Pos {
    constructor(
      readonly line: number,
      readonly character: number,
    ) {}
    toJSON() {
      return "not plain";
    }
  }
  const selection = { start: new Pos(0, 3), end: new Pos(2, 5) };
  const result = refactorRange(selection, lineLength);
  assert.deepEqual(result, range(0, 3, 2, 5));
  assert.equal(JSON.stringify(result), '{"start":{"line":0,"character":3},"end":{"line":2,"character":5}}');
});

test("refactor arguments follow the server's {uri, range, instruction}", () => {
  assert.deepEqual(refactorArguments("file:///a.py", range(0, 0, 1, 0), "  add types "), [
    { uri: "file:///a.py", range: range(0, 0, 1, 0), instruction: "add types" },
  ]);
});

test("line descriptions are 1-based and skip an empty last line", () => {
  assert.equal(describeLines(range(4, 0, 4, 7)), "line 5");
  assert.equal(describeLines(range(2, 0, 6, 0)), "lines 3-6");
  assert.equal(describeLines(range(2, 3, 6, 1)), "lines 3-7");
});
