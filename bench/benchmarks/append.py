"""Appended-turn latency: one turn appended to each huge session file, as its agent writes it, then a
sync of that file and a recall of the turn's unique word (timed from the sync's start)."""

from __future__ import annotations

import os
import sqlite3
import statistics
import time
from typing import Any

import generate
from pimem.paths import source_roots
from pimem.recall import RecallQuery, make_query, recall
from pimem.store import connect
from pimem.sync import SyncRequest, run_sync

from .context import Bench
from .report import ms


def run(bench: Bench, huge: list[dict[str, Any]]) -> dict[str, Any]:
    say = bench.report.say
    pool = generate.TextPool(bench.manifest["seed"])
    roots = source_roots({"HOME": str(bench.home)})
    reader = connect(bench.db)
    out: dict[str, Any] = {}
    rows = []
    try:
        for entry in huge:
            path = bench.corpus / entry["path"]
            original = path.stat().st_size
            latencies: list[float] = []
            sync_only: list[float] = []
            try:
                for run in range(bench.args.runs):
                    word = f"appendprobe{entry['agent']}{run}q{os.getpid()}"
                    ts = int(entry["end_ms"]) + 60_000 * (run + 1)
                    generate.append_turn(path, entry["agent"], entry["session_id"], entry["cwd"],
                                         f"Where did we leave {word}?", f"We left {word} in the cache layer.",
                                         ts, pool)
                    query = make_query([word], 1)
                    started = time.perf_counter()
                    stats = run_sync(SyncRequest(db_path=str(bench.db), roots=roots, paths=[str(path)]))
                    synced = time.perf_counter()
                    found = _found(reader, query, word)
                    done = time.perf_counter()
                    if not found:
                        bench.fail("append", f"{entry['agent']}: the appended turn is not found after the sync "
                                            f"({stats.turns} turns changed)")
                    latencies.append(done - started)
                    sync_only.append(synced - started)
            finally:
                with open(path, "r+b") as handle:
                    handle.truncate(original)
                # Bring the store back in line with the (restored) file, untimed.
                run_sync(SyncRequest(db_path=str(bench.db), roots=roots, paths=[str(path)]))
            rows.append([entry["agent"], f"{entry['bytes'] / 2**20:.0f} MiB", ms(statistics.median(latencies)),
                         ms(max(latencies)), ms(statistics.median(sync_only)),
                         ", ".join(ms(value) for value in latencies)])
            out[entry["agent"]] = {"file_bytes": entry["bytes"], "searchable_s": latencies, "sync_s": sync_only}
    finally:
        reader.close()
    say("One turn appended to a huge session file, then `run_sync(SyncRequest(..., paths=[file]))` and a recall "
        "of the turn's unique word (latency = sync start -> recall returned it):")
    say()
    bench.report.table(["agent", "file", "searchable median ms", "max ms", "sync part median ms", "all runs (ms)"],
                      rows)
    return out


def _found(conn: sqlite3.Connection, query: RecallQuery, word: str) -> bool:
    rows = recall(conn, query)
    return bool(rows) and word in rows[0].user_text
