#!/usr/bin/env bash
# Build, unit-test and package the VS Code extension (called by .ci/test-deps.sh after
# .ci/code-server.sh, which installs Node 24 and vsce):
#   npm ci (skipped when node_modules already holds this package-lock.json's versions),
#   tsc (type check, unit tests into out/) + esbuild (one bundled dist/extension.js),
#   node --test, then vsce packages clients/vscode/groundspec-VERSION.vsix and its size
#   is printed and checked (no node_modules inside, under 1 MiB).
# The Neovim plugin and the Python client are tested by pytest: tests/e2e/test_nvim*.py,
# tests/clients/, tests/unit/test_python_client*.py; the built extension in code-server by
# tests/e2e/test_vscode*.py.
set -euo pipefail
cd "$(dirname "$0")/vscode"
say() { echo "clients/ci.sh: $*" >&2; }
# Node 24 and vsce from .ci/code-server.sh when the machine has none of its own.
ci_bin="${GROUNDSPEC_CI_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/groundspec-ci}/bin"
if [ -d "$ci_bin" ]; then
    PATH="$PATH:$ci_bin"
    command -v npm >/dev/null || PATH="$ci_bin:$PATH"
fi
if ! command -v npm >/dev/null; then
    say "npm not found (Node.js 20 or newer is needed)"
    exit 1
fi

# The dependencies, esbuild included, are pinned by package-lock.json: install them
# again only when it changed.
lock_sum="$(sha256sum package-lock.json | cut -d' ' -f1)"
stamp=node_modules/.groundspec-lock
if [ "$(cat "$stamp" 2>/dev/null)" != "$lock_sum" ]; then
    npm ci --no-audit --no-fund --prefer-offline
    echo "$lock_sum" >"$stamp"
else
    say "node_modules matches package-lock.json"
fi
npm run compile
npm test

if ! command -v vsce >/dev/null; then
    say "vsce not found: no .vsix (bash .ci/code-server.sh installs it)"
    exit 0
fi
version="$(node -p 'require("./package.json").version')"
vsix="groundspec-$version.vsix"
vsce package --no-dependencies --allow-missing-repository --out "$vsix" >&2
python3 - "$vsix" <<'PY'
import sys, zipfile

path = sys.argv[1]
names = zipfile.ZipFile(path).namelist()
size = len(open(path, "rb").read())
print(f"clients/ci.sh: {path}: {size / 1024:.0f} KiB, {len(names)} files", file=sys.stderr)
for name in names:
    print(f"  {name}", file=sys.stderr)
if any("node_modules/" in name for name in names):
    sys.exit("clients/ci.sh: node_modules is in the .vsix: check .vscodeignore")
if size > 1024 * 1024:
    sys.exit(f"clients/ci.sh: the .vsix is {size} bytes, over 1 MiB: is something unbundled?")
PY
