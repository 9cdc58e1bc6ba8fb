import assert from "node:assert/strict";
import { test } from "node:test";

import { FIX_COMMAND, LOAD_TOKEN, ServerStatus } from "../status";

test("a new server says it is starting", () => {
  assert.match(new ServerStatus().view().text, /sync~spin/);
});

test("model loading progress shows its percentage, then ready", () => {
  const status = new ServerStatus();
  status.started();
  status.progress(LOAD_TOKEN, { kind: "begin", title: "groundspec", message: "Loading models", percentage: 0 });
  assert.equal(status.phase, "loading");
  status.progress(LOAD_TOKEN, { kind: "report", message: "target model", percentage: 40 });
  assert.equal(status.view().text, "$(sync~spin) groundspec: loading 40%");
  assert.match(status.view().tooltip, /target model 40%/);
  status.progress(LOAD_TOKEN, { kind: "end", message: "Models ready" });
  assert.equal(status.phase, "loading"); // until the stats say ready or failed
  status.statsArrived({ server: { engineState: "ready" } });
  assert.equal(status.phase, "ready");
  assert.equal(status.view().text, "$(zap) 0.0 tok/s");
});

test("stats saying the engine is loading show loading before any progress arrives", () => {
  const status = new ServerStatus();
  status.statsArrived({ server: { engineState: "loading" } });
  assert.match(status.view().text, /loading/);
});

test("a failed load shows an error with the fix, and stays failed", () => {
  const status = new ServerStatus();
  status.progress(LOAD_TOKEN, { kind: "begin", message: "Loading models", percentage: 0 });
  status.progress(LOAD_TOKEN, { kind: "end", message: "Model loading failed" });
  status.statsArrived({ server: { engineState: "failed" } });
  assert.equal(status.phase, "failed");
  status.failed("the target model is not assembled yet");
  const view = status.view();
  assert.equal(view.text, "$(error) groundspec");
  assert.match(view.tooltip, /not assembled yet/);
  assert.ok(view.tooltip.includes(FIX_COMMAND), view.tooltip);
  status.generating(true);
  assert.equal(status.view().text, "$(error) groundspec");
});

test("the fix is not said twice when the server's reason already names it", () => {
  const status = new ServerStatus();
  status.failed(`the target model is not assembled yet: run \`${FIX_COMMAND}\``);
  const tooltip = status.view().tooltip;
  assert.equal(tooltip.split(FIX_COMMAND).length, 2, tooltip);
  assert.match(tooltip, /Restart Server/);
});

test("generating shows while a completion request is out, then the speed", () => {
  const status = new ServerStatus();
  status.statsArrived({ server: { engineState: "ready" }, tokensPerSecond: 12.5 });
  status.generating(true);
  status.generating(true);
  assert.equal(status.view().text, "$(loading~spin) groundspec: generating");
  status.generating(false);
  assert.match(status.view().text, /generating/);
  status.generating(false);
  assert.equal(status.view().text, "$(zap) 12.5 tok/s");
  status.generating(false); // an answer without a request never goes negative
  status.generating(true);
  assert.match(status.view().text, /generating/);
});

test("other progress (a refactor, warming) shows its title and message until it ends", () => {
  const status = new ServerStatus();
  status.statsArrived({ server: { engineState: "ready" } });
  status.progress("groundspec/refactor/1", { kind: "begin", title: "groundspec refactor", message: "add types" });
  assert.match(status.view().tooltip, /^groundspec: refactor: add types\n/);
  assert.match(status.view().text, /loading~spin/);
  status.progress("groundspec/refactor/1", { kind: "end" });
  assert.equal(status.view().text, "$(zap) 0.0 tok/s");
});

test("the warm-up's progress names groundspec once", () => {
  const status = new ServerStatus();
  status.statsArrived({ server: { engineState: "ready" } });
  status.progress("groundspec/warm/1", { kind: "begin", title: "groundspec", message: "Warming the cache" });
  assert.match(status.view().tooltip, /^groundspec: Warming the cache\n/);
});

test("a stopped server says so", () => {
  const status = new ServerStatus();
  status.generating(true);
  status.stopped();
  assert.match(status.view().text, /circle-slash/);
});

test("a language turned off shows the off icon and which setting did it", () => {
  const status = new ServerStatus();
  status.started();
  status.statsArrived({ server: { engineState: "ready" } });
  status.editor("markdown", "disabled");
  assert.equal(status.view().text, "$(circle-slash) groundspec");
  assert.match(status.view().tooltip, /off for markdown \(groundspec\.enable\)/);
  status.editor("markdown", "manual");
  assert.equal(status.view().text, "$(zap) 0.0 tok/s");
  assert.match(status.view().tooltip, /only on request/);
  status.editor("python", null);
  assert.equal(status.view().tooltip.split("\n")[0], "groundspec: ready");
});

test("a failed load outranks a language turned off", () => {
  const status = new ServerStatus();
  status.editor("python", "disabled");
  status.failed("no model");
  assert.equal(status.view().text, "$(error) groundspec");
});
