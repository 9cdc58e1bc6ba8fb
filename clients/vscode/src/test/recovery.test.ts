import assert from "node:assert/strict";
import { test } from "node:test";

import { BACKOFF_MS, MAX_RESTARTS, RestartPolicy } from "../recovery";

test("a crashed server restarts with growing pauses, told once", () => {
  const policy = new RestartPolicy();
  const decisions = Array.from({ length: MAX_RESTARTS }, () => policy.closed());
  assert.deepEqual(
    decisions.map((d) => [d.restart, d.delayMs]),
    BACKOFF_MS.map((ms) => [true, ms]),
  );
  assert.match(decisions[0].message ?? "", /exited unexpectedly; restarting it/);
  assert.deepEqual(
    decisions.slice(1).map((d) => d.message),
    [null, null],
  );
});

test("after a few restarts it stays stopped and says so", () => {
  const policy = new RestartPolicy(2, [10]);
  policy.closed();
  assert.equal(policy.closed().delayMs, 10); // the last pause repeats
  const last = policy.closed();
  assert.equal(last.restart, false);
  assert.match(last.message ?? "", /not restarting it after 2 restarts/);
});
