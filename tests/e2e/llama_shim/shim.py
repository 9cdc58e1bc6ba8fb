#!/usr/bin/env python3
"""A stand-in for the llama-server binary, for llama.cpp's own server tests.

llama.cpp's tools/server/tests/utils.py starts the binary named by
LLAMA_SERVER_BIN_PATH with llama-server's flags. This script reads them and runs
either `groundspec serve --http HOST:PORT` on the default models (the default),
or, with GROUNDSPEC_SHIM_SERVER=/path/to/llama-server, that llama-server on the
same default target model, so both are measured through one harness:

- the model flags (--hf-repo, --hf-file, --model, --model-url, --offline) become
  the default target model (GROUNDSPEC_SHIM_MODEL): the tests' tiny models are
  not downloaded; llama-server gets it as -m, groundspec uses it anyway;
- for groundspec: --host/--port make --http; --api-key, --parallel and
  --no-slots pass on; --ctx-size becomes --n-ctx; --temp, --n-predict, --seed
  and --cors-origins become the options temperature, maxTokens, seed and
  httpCorsOrigins (a config file in GROUNDSPEC_SHIM_CONFIG_DIR, by default the
  temporary folder); the other flags
  (batches, aliases, UI, tools) have no groundspec counterpart and are dropped.

Only the standard library: it runs before any server does. It replaces itself
with the server (exec), so the tests' terminate() reaches the server.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
from pathlib import Path

# llama-server flags utils.py passes without a value.
SWITCHES = {
    "--offline", "--cont-batching", "--embedding", "--reranking", "--metrics",
    "--kv-unified", "--swa-full", "--slots", "--no-slots", "--verbose",
    "--context-shift", "--no-ui", "--no-models-autoload", "--jinja", "--no-jinja",
    "--no-mmproj", "--no-cache-idle-slots", "--ui-mcp-proxy", "--backend_sampling",
}  # fmt: skip
MODEL_FLAGS = {"--hf-repo", "--hf-file", "--model", "-m", "--model-url"}


def parse(argv: list[str]) -> list[tuple[str, str | None]]:
    """The flags in order, each with its value (None for a switch)."""
    flags: list[tuple[str, str | None]] = []
    i = 0
    while i < len(argv):
        flag = argv[i]
        if flag in SWITCHES or i + 1 >= len(argv):
            flags.append((flag, None))
            i += 1
        else:
            flags.append((flag, argv[i + 1]))
            i += 2
    return flags


def llama_server_command(binary: str, flags: list[tuple[str, str | None]], model: str) -> list[str]:
    command = [binary, "-m", model]
    for flag, value in flags:
        if flag in MODEL_FLAGS or flag == "--offline":
            continue
        command += [flag] if value is None else [flag, value]
    return command


def groundspec_command(
    python: str, flags: list[tuple[str, str | None]], config: Path
) -> tuple[list[str], dict[str, str]]:
    values = {flag: value for flag, value in flags}
    host = values.get("--host") or "127.0.0.1"
    command = [python, "-m", "lsp_server.cli", "serve", "--http", f"{host}:{values['--port']}"]
    if values.get("--api-key"):
        command += ["--api-key", values["--api-key"] or ""]
    for flag, ours in (
        ("--parallel", "--parallel"),
        ("-np", "--parallel"),
        ("--ctx-size", "--n-ctx"),
    ):
        if values.get(flag):
            command += [ours, values[flag] or ""]
    if "--no-slots" in values:
        command.append("--no-slots")
    lines = []
    if values.get("--temp") is not None:
        lines.append(f"temperature = {float(values['--temp'] or 0)}")
    # llama-server limits CORS to loopback pages when its server tools are on and no
    # --cors-origins is given; groundspec has no such tools, only the CORS setting.
    origins = values.get("--cors-origins") or ("localhost" if "--tools" in values else None)
    if origins:
        lines.append(f"httpCorsOrigins = {json.dumps(origins)}")
    if values.get("--seed") is not None:
        lines.append(f"seed = {max(-1, int(values['--seed'] or 0))}")
    n_predict = int(values.get("--n-predict") or 0)
    if n_predict > 0:
        lines.append(f"maxTokens = {n_predict}")
    config.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return [*command, "--config", str(config)], {}


def main() -> None:
    flags = parse(sys.argv[1:])
    server = os.environ.get("GROUNDSPEC_SHIM_SERVER", "groundspec")
    if server != "groundspec":
        command = llama_server_command(server, flags, os.environ["GROUNDSPEC_SHIM_MODEL"])
        os.execv(command[0], command)
    python = os.environ.get("GROUNDSPEC_SHIM_PYTHON", sys.executable)
    port = dict(flags).get("--port")
    config_dir = os.environ.get("GROUNDSPEC_SHIM_CONFIG_DIR") or tempfile.gettempdir()
    config = Path(config_dir) / f"groundspec-shim-{port}.toml"
    command, env = groundspec_command(python, flags, config)
    os.environ.update(env)
    os.execv(command[0], command)


if __name__ == "__main__":
    main()
