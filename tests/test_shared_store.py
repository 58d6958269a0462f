"""The Pi extension writes memory.db while pimem syncs and recalls.

A separate process inserts turns the way the extension does (one INSERT OR IGNORE per statement, in
autocommit, on its own connection) in a tight loop, while pimem runs full and incremental syncs and
recalls. Nothing reports "database is locked", no row is lost, both finish.
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from pimem import wire
from pimem.recall import make_query, recall, recall_scan
from pimem.store import connect
from pimem.sync import SyncRequest, run_sync
from support.history import copy_samples, grow_history, roots_under

INSERTER = r"""
import json, sqlite3, sys, time, os
db, stop, timeout_ms = sys.argv[1], sys.argv[2], int(sys.argv[3])
conn = sqlite3.connect(db, timeout=timeout_ms / 1000, isolation_level=None)
conn.execute("PRAGMA journal_mode = WAL")
ok, busy, n = [], 0, 0
while not os.path.exists(stop):
    n += 1
    turn = f"pi:ext-session:ext{n:06d}"
    try:
        conn.execute("INSERT OR IGNORE INTO sessions (session_id, source, cwd, started_at, model_id, jsonl_path) "
                     "VALUES ('pi:ext-session', 'pi', '/tmp/ext', 1, NULL, '/tmp/ext.jsonl')")
        conn.execute("INSERT OR IGNORE INTO turns (turn_id, session_id, turn_index, ts, user_text, reply_text, "
                     "tool_names, user_message_id) VALUES (?, 'pi:ext-session', ?, ?, ?, 'extension reply', NULL, ?)",
                     (turn, n, 1_800_000_000_000 + n, f"extension marmoset turn {n}", f"ext{n:06d}"))
        ok.append(turn)
    except sqlite3.OperationalError as error:
        if "locked" not in str(error) and "busy" not in str(error):
            raise
        busy += 1
    time.sleep(0.002)
print(json.dumps({"ok": ok, "busy": busy, "tried": n}))
"""


def _pimem_rows(db: Path) -> list[tuple[object, ...]]:
    return connect(db).execute(
        "SELECT turn_id, user_text, reply_text, tool_names FROM turns WHERE session_id != 'pi:ext-session' "
        "ORDER BY turn_id").fetchall()


def run_race(base: Path, db: Path, timeout_ms: int) -> dict[str, object]:
    stop = base / "stop"
    connect(db).close()  # the store exists before the extension opens it
    inserter = subprocess.Popen([sys.executable, "-c", INSERTER, str(db), str(stop), str(timeout_ms)],
                                stdout=subprocess.PIPE, text=True)
    errors: list[str] = []
    recalls = [0]
    done = threading.Event()

    def keep_recalling() -> None:
        conn = connect(db)
        while not done.is_set():
            try:
                for entity in ("flamingo", "marmoset", "锁"):
                    query = make_query([entity], 5)
                    conn.execute("BEGIN")  # compare both answers on one snapshot
                    try:
                        fast, oracle = recall(conn, query), recall_scan(conn, query)
                    finally:
                        conn.execute("COMMIT")
                    assert [wire.recall_row(r) for r in fast] == [wire.recall_row(r) for r in oracle]
                recalls[0] += 1
            except Exception as error:  # recorded, asserted below
                errors.append(f"recall: {type(error).__name__}: {error}")
                return

    reader = threading.Thread(target=keep_recalling)
    reader.start()
    syncs = []
    try:
        for force in (True, False, True, False):
            stats = run_sync(SyncRequest(db_path=str(db), roots=roots_under(base), force=force))
            syncs.append(stats)
            errors += [issue.error for issue in stats.issues]
    finally:
        done.set()
        reader.join()
        stop.touch()
    out, _ = inserter.communicate(timeout=60)
    assert inserter.returncode == 0
    result = json.loads(out)
    result.update(errors=errors, recalls=recalls[0], syncs=syncs)
    return result


@pytest.mark.slow
def test_extension_writes_during_syncs_and_recalls(tmp_path: Path) -> None:
    base = copy_samples(tmp_path / "h")
    grow_history(base, 40)
    db = tmp_path / "memory.db"
    result = run_race(base, db, timeout_ms=5000)
    assert result["errors"] == []
    assert result["busy"] == 0 and len(result["ok"]) > 100  # type: ignore[arg-type]
    assert result["recalls"] > 0  # type: ignore[operator]
    print(f"\nextension with a 5 s timeout: {len(result['ok'])} inserts, 0 failed; "  # type: ignore[arg-type]
          f"{result['recalls']} oracle-checked recall rounds; 4 syncs (2 full)")
    # No row lost: every extension row is there, and pimem's rows equal one clean import of the files.
    conn = connect(db)
    stored = {row[0] for row in conn.execute("SELECT turn_id FROM turns WHERE session_id = 'pi:ext-session'")}
    assert stored == set(result["ok"])  # type: ignore[arg-type]
    reference = tmp_path / "reference.db"
    run_sync(SyncRequest(db_path=str(reference), roots=roots_under(base)))
    assert _pimem_rows(db) == _pimem_rows(reference)
    # The extension's rows are recalled (indexed by pimem's syncs, or scanned before that).
    last = sorted(result["ok"])[-1]  # type: ignore[arg-type]
    assert recall(conn, make_query([f"marmoset turn {int(last[-6:])}"], 1))[0].turn_id == last
    assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"


@pytest.mark.slow
def test_extension_default_timeout_figure(tmp_path: Path) -> None:
    """The extension opens the store without a busy timeout (node:sqlite's default is 0 ms). Record
    how often its inserts meet pimem's write lock during full imports; whatever it did insert is kept."""
    base = copy_samples(tmp_path / "h")
    grow_history(base, 20)
    db = tmp_path / "memory.db"
    started = time.monotonic()
    result = run_race(base, db, timeout_ms=0)
    elapsed = time.monotonic() - started
    assert result["errors"] == []
    stored = {row[0] for row in connect(db).execute("SELECT turn_id FROM turns WHERE session_id = 'pi:ext-session'")}
    assert stored == set(result["ok"])  # type: ignore[arg-type]
    share = result["busy"] / max(1, result["tried"])  # type: ignore[operator]
    print(f"\nextension with a 0 ms timeout: {result['busy']} of {result['tried']} inserts met the lock "
          f"({share:.1%}) during 4 syncs in {elapsed:.1f} s")
