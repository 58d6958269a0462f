#!/usr/bin/env python3
"""File-history lookup and the no-change sync's reads, on a generated history (issue 15: "the lookup
for one file is <= 10 ms at 1M turns"; "a no-change sync keeps its figure").

    python bench/generate.py --out /tmp/corpus --turns 100000 --seed 1
    python bench/file_history.py --corpus /tmp/corpus --work /tmp/fh-work [--db EXISTING.db] [--runs 200]

Syncs the corpus's ``home`` into ``WORK/memory.db`` (a copy of ``--db`` first when given: an existing
store is upgraded, which parses every file once more for its touches), then times
``filehistory.file_history`` (what ``pimem/fileHistory`` runs, on a reader connection, warm) for the
most touched path, the path at the median of touch counts, and a path never touched; and a
no-change sync: its time and its statements (the importer-rules meta row read once, ``pimem_files``
once, ``pimem_touches`` never). Prints Markdown; ``--json FILE`` also writes the figures.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "server"))

from pimem.filehistory import file_history  # noqa: E402
from pimem.paths import source_roots  # noqa: E402
from pimem.store import connect  # noqa: E402
from pimem.sync import SyncRequest, run_sync  # noqa: E402
from pimem.sync.rules import META_KEY  # noqa: E402


def timed_ms(function: object, runs: int) -> tuple[float, float]:
    samples = []
    for _ in range(runs):
        started = time.perf_counter()
        function()  # type: ignore[operator]
        samples.append((time.perf_counter() - started) * 1000)
    samples.sort()
    return statistics.median(samples), samples[int(len(samples) * 0.95) - 1]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--corpus", type=Path, required=True, help="a bench/generate.py output directory")
    parser.add_argument("--work", type=Path, required=True, help="where the store is written")
    parser.add_argument("--db", type=Path, help="start from a copy of this store (an upgrade)")
    parser.add_argument("--reuse", action="store_true", help="keep WORK/memory.db from an earlier run")
    parser.add_argument("--runs", type=int, default=200)
    parser.add_argument("--scale", type=int, default=10,
                        help="also time the lookups with every touch copied SCALE-1 times under new turn and "
                             "session ids (the touches of a history SCALE times larger), rolled back after")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    home = args.corpus / "home"
    args.work.mkdir(parents=True, exist_ok=True)
    db = args.work / "memory.db"
    for suffix in ("", "-wal", "-shm") if not args.reuse else ():
        Path(f"{db}{suffix}").unlink(missing_ok=True)
    if args.db is not None and not args.reuse:
        shutil.copyfile(args.db, db)
    roots = source_roots({"HOME": str(home), "CLAUDE_CONFIG_DIR": str(home / ".claude"),
                          "CODEX_HOME": str(home / ".codex"), "PI_CODING_AGENT_DIR": str(home / ".pi" / "agent")})
    started = time.monotonic()
    stats = run_sync(SyncRequest(db_path=str(db), roots=roots))
    sync_s = time.monotonic() - started

    conn = connect(db, for_writing=False)
    turns = conn.execute("SELECT count(*) FROM turns").fetchone()[0]
    touches = conn.execute("SELECT count(*) FROM pimem_touches").fetchone()[0]
    counts = conn.execute("SELECT path, count(*) AS n FROM pimem_touches GROUP BY path "
                          "ORDER BY n DESC, path").fetchall()
    figures: dict[str, object] = {"turns": turns, "touches": touches, "paths": len(counts),
                                  "syncSeconds": round(sync_s, 1), "syncScannedFiles": stats.scanned_files}
    cases = {"most touched": counts[0], "median": counts[len(counts) // 2], "never touched": ("/nowhere/x.py", 0)}
    rows = []
    for label, (path, count) in cases.items():
        history = file_history(conn, path)
        p50, p95 = timed_ms(lambda path=path: file_history(conn, path), args.runs)
        rows.append((label, count, history.total, p50, p95))
        figures[f"lookup {label}"] = {"touches": count, "sessions": history.total, "p50Ms": round(p50, 3),
                                      "p95Ms": round(p95, 3)}
    conn.close()

    if args.scale > 1:
        # The lookup reads one path's rows (and the shown sessions'), so a larger history costs it the
        # touches of that path and a deeper B-tree: both are reproduced by copying every touch.
        scaled = connect(db)
        scaled.execute("BEGIN")
        for copy in range(1, args.scale):
            scaled.execute("INSERT INTO pimem_touches SELECT path, turn_id || ?, action, session_id || ?, ts - ? "
                           "FROM pimem_touches WHERE turn_id NOT LIKE '%#%'", (f"#{copy}", f"#{copy}", copy))
        scaled_touches = scaled.execute("SELECT count(*) FROM pimem_touches").fetchone()[0]
        for label, (path, count) in cases.items():
            history = file_history(scaled, path)
            p50, p95 = timed_ms(lambda path=path: file_history(scaled, path), args.runs)
            rows.append((f"{label}, x{args.scale} ({scaled_touches:,} touches)", count * args.scale, history.total,
                         p50, p95))
            figures[f"lookup {label} x{args.scale}"] = {"touches": count * args.scale, "sessions": history.total,
                                                        "p50Ms": round(p50, 3), "p95Ms": round(p95, 3)}
        scaled.execute("ROLLBACK")
        scaled.close()

    writer = connect(db)
    statements: list[str] = []
    writer.set_trace_callback(statements.append)
    started = time.monotonic()
    again = run_sync(SyncRequest(db_path=str(db), roots=roots), conn=writer)
    no_change_s = time.monotonic() - started
    writer.set_trace_callback(None)
    writer.close()
    change = {"seconds": round(no_change_s, 2), "scannedFiles": again.scanned_files, "statements": len(statements),
              "rulesMetaReads": sum(META_KEY in sql for sql in statements),
              "pimemFilesStatements": sum("pimem_files" in sql for sql in statements),
              "touchesStatements": sum("pimem_touches" in sql for sql in statements)}
    figures["noChangeSync"] = change

    print(f"store: {turns:,} turns, {touches:,} touches of {len(counts):,} paths; sync {sync_s:.1f} s "
          f"({stats.scanned_files:,} files parsed)\n")
    print("| lookup (`file_history`, limit 50) | touches of the path | sessions | p50 ms | p95 ms |")
    print("|---|---|---|---|---|")
    for label, count, sessions, p50, p95 in rows:
        print(f"| {label} | {count:,} | {sessions:,} | {p50:.2f} | {p95:.2f} |")
    print(f"\nno-change sync: {no_change_s:.2f} s, {again.scanned_files} files parsed, {len(statements)} statements, "
          f"importer-rules meta row read {change['rulesMetaReads']}x, "
          f"pimem_files {change['pimemFilesStatements']}x, pimem_touches {change['touchesStatements']}x")
    if args.json is not None:
        args.json.write_text(json.dumps(figures, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
