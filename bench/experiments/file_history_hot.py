#!/usr/bin/env python3
"""The worst case of a file-history lookup at a million turns (issue 15: "the lookup for one file is
<= 10 ms at 1M turns"), on a synthetic store: 1,000,000 turns in 60,000 sessions, one touch of one of
20,000 files per turn, and one hot file edited by 2,128 turns of 2,128 different sessions (each a
session row to fold and sort). Times ``filehistory.file_history`` warm, 30 calls each, for the hot
file, an ordinary file and a path never touched.

    .venv/bin/python bench/experiments/file_history_hot.py [--db /tmp/fh_probe.db]
"""

from __future__ import annotations

import os
import random
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "server"))

from pimem.filehistory import file_history
from pimem.store import connect, transaction

SESSIONS = 60_000
TURNS = 1_000_000
HOT = "/w/src/hot.py"


def build(db: str) -> None:
    for suffix in ("", "-wal", "-shm"):
        if os.path.exists(db + suffix):
            os.remove(db + suffix)
    rng = random.Random(1)
    conn = connect(db)
    with transaction(conn):
        conn.executemany("INSERT INTO sessions (session_id, source, cwd, started_at, model_id, jsonl_path) "
                         "VALUES (?, ?, ?, ?, ?, ?)",
                         [(f"claude:s{i}", "claude", "/w", i, None, f"/h/s{i}.jsonl") for i in range(SESSIONS)])
        turns, touches = [], []
        for i in range(TURNS):
            session_id = f"claude:s{i % SESSIONS}"
            turn_id = f"{session_id}:u{i}"
            ts = 1_700_000_000_000 + i
            turns.append((turn_id, session_id, i // SESSIONS, ts, f"prompt {i}", "reply", None, f"u{i}"))
            if i % 470 == 0:
                touches.append((HOT, turn_id, "edit", session_id, ts))
            touches.append((f"/w/f{rng.randrange(20_000)}.py", turn_id, rng.choice(["read", "edit"]), session_id, ts))
        conn.executemany("INSERT INTO turns (turn_id, session_id, turn_index, ts, user_text, reply_text, tool_names, "
                         "user_message_id) VALUES (?, ?, ?, ?, ?, ?, ?, ?)", turns)
        conn.executemany("INSERT OR IGNORE INTO pimem_touches (path, turn_id, action, session_id, ts) "
                         "VALUES (?, ?, ?, ?, ?)", touches)
    conn.close()


def main() -> None:
    db = sys.argv[sys.argv.index("--db") + 1] if "--db" in sys.argv else "/tmp/fh_probe.db"
    build(db)
    conn = connect(db, for_writing=False)
    print("| path | sessions | p50 ms | max ms (the first call is cold) |\n|---|---|---|---|")
    for path in (HOT, "/w/f17.py", "/nowhere"):
        samples = []
        for _ in range(30):
            started = time.perf_counter()
            history = file_history(conn, path)
            samples.append((time.perf_counter() - started) * 1000)
        print(f"| {path} | {history.total} | {statistics.median(samples):.2f} | {max(samples):.2f} |")
    conn.close()


if __name__ == "__main__":
    main()
