#!/usr/bin/env bash
# Install the pinned real Claude Code and Codex CLI for the agent tests of `pimem mcp`
# (tests/agents/, see its README.md).
#
#   scripts/setup-agents.sh        # install if needed, print where
#
# What it does: copies tests/agents/package.json + package-lock.json into the ignored cache
# folder .cache/agents/ of this repo and runs `npm ci` there. The lock pins
# @anthropic-ai/claude-code 2.1.332 and @openai/codex 0.171.0; npm installs only the linux-x64
# build of each (their other platforms are optional dependencies). Both agents are native
# binaries: the tests run Claude Code's binary directly (what its postinstall would copy over
# the `claude` stub) and Codex through its npm launcher `codex` (a Node script, any Node >= 16,
# that starts the binary). Needs only bash, npm (Node >= 18) and the npm registry.
#
# Idempotent: a stamp file records the SHA-256 of package.json + lock; when it matches and both
# binaries report their pinned versions, the script only prints the paths (fast). Safe to run
# concurrently (flock). Override the folder with AGENTS_CACHE_DIR.
set -euo pipefail

REPO_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
SRC_DIR="$REPO_ROOT/tests/agents"
CACHE_DIR="${AGENTS_CACHE_DIR:-$REPO_ROOT/.cache/agents}"
CLAUDE_PKG="@anthropic-ai/claude-code"
CODEX_PKG="@openai/codex"

log() { printf 'setup-agents: %s\n' "$*" >&2; }
die() { printf 'setup-agents: ERROR: %s\n' "$*" >&2; exit 1; }

case "$(uname -s)-$(uname -m)" in
  Linux-x86_64|Linux-amd64) ;;
  *) die "only linux x86_64 is supported (the tests run the linux-x64 agent binaries); this is $(uname -s)-$(uname -m)" ;;
esac
if ! command -v npm >/dev/null 2>&1 || ! command -v node >/dev/null 2>&1; then
  die "node/npm not found on PATH (install Node.js >= 18 with npm, e.g. apt-get install nodejs npm)"
fi
if [ ! -f "$SRC_DIR/package.json" ] || [ ! -f "$SRC_DIR/package-lock.json" ]; then
  die "missing $SRC_DIR/package.json or package-lock.json"
fi

lock_version() {  # $1 = package name -> its version in package-lock.json
  node -e 'const l = require(process.argv[1]); process.stdout.write(l.packages["node_modules/" + process.argv[2]].version)' \
    "$SRC_DIR/package-lock.json" "$1"
}
WANT_CLAUDE="$(lock_version "$CLAUDE_PKG")"
WANT_CODEX="$(lock_version "$CODEX_PKG")"
[ -n "$WANT_CLAUDE" ] && [ -n "$WANT_CODEX" ] || die "could not read pinned versions from package-lock.json"

STAMP_WANT="$(cat "$SRC_DIR/package.json" "$SRC_DIR/package-lock.json" | sha256sum | cut -d' ' -f1)"
# The platform packages hold the real binaries (the main packages' postinstall, not run here,
# would only copy or wrap them).
CLAUDE_BIN="$CACHE_DIR/node_modules/$CLAUDE_PKG-linux-x64/claude"
CODEX_BIN="$CACHE_DIR/node_modules/.bin/codex"

installed_ok() {
  [ -f "$CACHE_DIR/.installed" ] && [ "$(cat "$CACHE_DIR/.installed")" = "$STAMP_WANT" ] || return 1
  [ -x "$CLAUDE_BIN" ] && [ -x "$CODEX_BIN" ] || return 1
}

report() {
  echo "agents installed in: $CACHE_DIR"
  echo "  claude: $CLAUDE_BIN ($WANT_CLAUDE)"
  echo "  codex:  $CODEX_BIN ($WANT_CODEX)"
}

if installed_ok; then report; exit 0; fi   # fast path, no lock needed

mkdir -p "$CACHE_DIR"
exec 9>"$CACHE_DIR/.setup.lock"
if command -v flock >/dev/null 2>&1; then flock 9; fi
if installed_ok; then report; exit 0; fi   # someone else installed it while we waited

log "installing $CLAUDE_PKG@$WANT_CLAUDE and $CODEX_PKG@$WANT_CODEX into $CACHE_DIR (npm ci, about 650 MB) ..."
start=$(date +%s)
rm -f "$CACHE_DIR/.installed"
cp "$SRC_DIR/package.json" "$SRC_DIR/package-lock.json" "$CACHE_DIR/"
# --ignore-scripts: Claude Code's postinstall only moves its platform binary over a stub; the
# tests run the platform binary where npm put it. EBADENGINE warnings (Claude Code declares
# Node >= 22) are expected and harmless: no Node runs Claude Code here.
( cd "$CACHE_DIR" && npm ci --ignore-scripts --no-audit --no-fund --engine-strict=false --loglevel=error >&2 ) \
  || die "npm ci failed in $CACHE_DIR (network access to the npm registry needed)"
[ -x "$CLAUDE_BIN" ] || die "Claude Code binary missing after install: $CLAUDE_BIN"
[ -x "$CODEX_BIN" ] || die "Codex binary missing after install: $CODEX_BIN"
"$CLAUDE_BIN" --version 2>/dev/null | grep -q "$WANT_CLAUDE" || die "claude --version is not $WANT_CLAUDE"
"$CODEX_BIN" --version 2>/dev/null | grep -q "$WANT_CODEX" || die "codex --version is not $WANT_CODEX"
echo "$STAMP_WANT" > "$CACHE_DIR/.installed"
log "done in $(( $(date +%s) - start ))s"
report
