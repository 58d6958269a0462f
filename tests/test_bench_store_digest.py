"""bench/store_digest.py, the check that a change of the import leaves every row as it was: a synced
store's digest is stable across what a sync makes anew (its time, the store's random id, the index
build's random marks), and any other change of a row is seen."""

from __future__ import annotations

import shutil
import sqlite3
import sys
from pathlib import Path

from pimem.sync import SyncRequest, run_sync
from support.history import roots_under

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "bench"))

import store_digest


def test_the_digest_ignores_what_a_sync_makes_anew_and_sees_any_other_change(history: Path, tmp_path: Path) -> None:
    first, second = tmp_path / "first.db", tmp_path / "second.db"
    for db in (first, second):
        run_sync(SyncRequest(db_path=str(db), roots=roots_under(history), workers=1))
    # Two syncs of the same files, one process each: their own times, ids and marks differ, the rest not.
    assert store_digest.main([str(first), str(second)]) == 0
    changed = tmp_path / "changed.db"
    shutil.copy(first, changed)
    conn = sqlite3.connect(changed)
    try:
        conn.execute("UPDATE pimem_meta SET value = 'x' WHERE key = 'store_id'")   # ignored
        conn.execute("UPDATE pimem_index_log SET doc_key = -7 WHERE doc_key < 0")   # ignored
        conn.commit()
        assert store_digest.table_digests(str(changed)) == store_digest.table_digests(str(first))
        conn.execute("UPDATE turns SET ts = ts + 1 WHERE rowid = (SELECT min(rowid) FROM turns)")
        conn.commit()
    finally:
        conn.close()
    differ = {name for name, value in store_digest.table_digests(str(changed)).items()
              if store_digest.table_digests(str(first))[name] != value}
    assert differ == {"turns"}
    assert store_digest.main([str(first), str(changed)]) == 1
