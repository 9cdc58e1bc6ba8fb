import assert from "node:assert/strict";
import { test } from "node:test";

import {
  DEFAULT_LANGUAGES,
  DEFAULT_SETTINGS,
  documentSelector,
  needsRestart,
  nextEditBlock,
  readSettings,
  servesLanguage,
  serverCommand,
  suggestionBlock,
  toInitializationOptions,
} from "../settings";

const from = (values: Record<string, unknown>) => (key: string) => values[key];

test("missing settings give the defaults", () => {
  assert.deepEqual(readSettings(from({})), DEFAULT_SETTINGS);
});

test("valid settings are read, model paths trimmed", () => {
  const settings = readSettings(
    from({
      serverPath: "/opt/gs/bin/groundspec",
      targetModel: " /models/target.gguf ",
      draftModel: "/models/draft.gguf",
      nGpuLayers: 99,
      debounceMs: 50,
      speculation: "lookup",
      maxTokens: 128,
    }),
  );
  assert.equal(settings.serverPath, "/opt/gs/bin/groundspec");
  assert.equal(settings.targetModel, "/models/target.gguf");
  assert.equal(settings.nGpuLayers, 99);
  assert.equal(settings.debounceMs, 50);
  assert.equal(settings.speculation, "lookup");
  assert.equal(settings.maxTokens, 128);
});

test("invalid settings fall back one by one", () => {
  const settings = readSettings(
    from({
      serverPath: "  ",
      targetModel: "",
      nGpuLayers: -1,
      debounceMs: 1.5,
      speculation: "fast",
      maxTokens: 0,
      nextEdit: "no",
      nextEditDebounceMs: 9000,
    }),
  );
  assert.deepEqual(settings, DEFAULT_SETTINGS);
});

test("initializationOptions leave unset model settings to the server", () => {
  assert.deepEqual(toInitializationOptions(DEFAULT_SETTINGS), {
    engine: {},
    debounceMs: 120,
    speculation: "auto",
    maxTokens: 64,
    nextEdit: true,
    nextEditDebounceMs: 300,
  });
});

test("initializationOptions carry the engine settings in the server's camelCase", () => {
  const settings = readSettings(from({ targetModel: "/t.gguf", draftModel: "/d.gguf", nGpuLayers: 0 }));
  assert.deepEqual(toInitializationOptions(settings).engine, {
    targetModel: "/t.gguf",
    draftModel: "/d.gguf",
    nGpuLayers: 0,
  });
});

test("the server command is <serverPath> serve with ~ expanded", () => {
  const settings = readSettings(from({ serverPath: "~/.venv/bin/groundspec" }));
  assert.deepEqual(serverCommand(settings, "/home/me"), {
    command: "/home/me/.venv/bin/groundspec",
    args: ["serve"],
  });
  assert.deepEqual(serverCommand(DEFAULT_SETTINGS, "/home/me").command, "groundspec");
});

test("serverArgs are passed after serve, in order", () => {
  const settings = readSettings(from({ serverArgs: ["--fake", "--log-file", "/tmp/gs.log"] }));
  assert.deepEqual(serverCommand(settings, "/home/me").args, ["serve", "--fake", "--log-file", "/tmp/gs.log"]);
});

test("serverArgs that are not a list of strings fall back to none", () => {
  for (const serverArgs of ["--fake", ["--fake", 1], { fake: true }, null]) {
    assert.deepEqual(readSettings(from({ serverArgs })).serverArgs, [], JSON.stringify(serverArgs));
  }
});

test("only server or model changes need a restart; the rest is sent to the running server", () => {
  const base = readSettings(() => undefined);
  assert.equal(needsRestart(base, { ...base, maxTokens: 32, debounceMs: 50, speculation: "off" }), false);
  assert.equal(needsRestart(base, { ...base, targetModel: "/m/other.gguf" }), true);
  assert.equal(needsRestart(base, { ...base, serverPath: "/opt/groundspec" }), true);
  assert.equal(needsRestart(base, { ...base, serverArgs: ["--fake"] }), true);
  assert.equal(needsRestart({ ...base, serverArgs: ["--fake"] }, { ...base, serverArgs: ["--fake"] }), false);
  assert.equal(needsRestart(base, { ...base, nGpuLayers: 0 }), true);
  assert.equal(needsRestart(base, { ...base, languages: ["python"] }), true);
});

test("the languages served default to those the server has a grammar for, React included", () => {
  assert.deepEqual(readSettings(from({})).languages, DEFAULT_LANGUAGES);
  assert.ok(DEFAULT_LANGUAGES.includes("typescriptreact") && DEFAULT_LANGUAGES.includes("javascriptreact"));
  assert.deepEqual(readSettings(from({ languages: [" lua ", "lua", "python"] })).languages, ["lua", "python"]);
  for (const languages of [[], [" "], "python", [1]]) {
    assert.deepEqual(readSettings(from({ languages })).languages, DEFAULT_LANGUAGES, JSON.stringify(languages));
  }
});

test("the document selector names each language for saved and unsaved files; * names none", () => {
  assert.deepEqual(documentSelector(["python", "lua"]), [
    { scheme: "file", language: "python" },
    { scheme: "untitled", language: "python" },
    { scheme: "file", language: "lua" },
    { scheme: "untitled", language: "lua" },
  ]);
  assert.deepEqual(documentSelector(["python", "*"]), [{ scheme: "file" }, { scheme: "untitled" }]);
  assert.equal(servesLanguage(["python"], "python"), true);
  assert.equal(servesLanguage(["python"], "markdown"), false);
  assert.equal(servesLanguage(["*"], "markdown"), true);
});

test("enable off blocks every request; autoTrigger off blocks only automatic ones", () => {
  assert.equal(suggestionBlock({ enable: undefined, autoTrigger: undefined }, false), null);
  assert.equal(suggestionBlock({ enable: true, autoTrigger: true }, false), null);
  assert.equal(suggestionBlock({ enable: false, autoTrigger: true }, false), "disabled");
  assert.equal(suggestionBlock({ enable: false, autoTrigger: true }, true), "disabled");
  assert.equal(suggestionBlock({ enable: true, autoTrigger: false }, false), "manual");
  assert.equal(suggestionBlock({ enable: true, autoTrigger: false }, true), null);
});

test("next edits: on by default, mirrored to the server's nextEdit and nextEditDebounceMs", () => {
  const off = readSettings(from({ nextEdit: false, nextEditDebounceMs: 800 }));
  assert.equal(off.nextEdit, false);
  assert.equal(off.nextEditDebounceMs, 800);
  const sent = toInitializationOptions(off);
  assert.equal(sent.nextEdit, false);
  assert.equal(sent.nextEditDebounceMs, 800);
  assert.equal(needsRestart(DEFAULT_SETTINGS, off), false); // told to the running server
});

test("next edits are blocked by the language's enable or by nextEdit, not by autoTrigger", () => {
  const unset = { enable: undefined, nextEdit: undefined, nextEditAutoTrigger: undefined };
  assert.equal(nextEditBlock(unset, false), null);
  assert.equal(nextEditBlock({ ...unset, enable: true, nextEdit: true }, false), null);
  assert.equal(nextEditBlock({ ...unset, enable: false, nextEdit: true }, true), "disabled");
  assert.equal(nextEditBlock({ ...unset, enable: true, nextEdit: false }, true), "off");
  // Manual mode: only an ask on request goes out.
  const manual = { ...unset, nextEditAutoTrigger: false };
  assert.equal(nextEditBlock(manual, false), "manual");
  assert.equal(nextEditBlock(manual, true), null);
  assert.equal(nextEditBlock({ ...manual, nextEdit: false }, true), "off");
});
