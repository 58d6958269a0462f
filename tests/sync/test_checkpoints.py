"""A sync checkpoints the write-ahead log less often while it writes (issue 21, import cost): the rows
are those of a sync with SQLite's default, and the connection's own setting comes back afterwards,
also when the sync fails."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from pimem.store import bulk_checkpoints, connect
from pimem.store.connection import BULK_CHECKPOINT_PAGES
from pimem.sync import SyncRequest, run_sync
from support.history import roots_under


def _autocheckpoint(conn: sqlite3.Connection) -> int:
    return int(conn.execute("PRAGMA wal_autocheckpoint").fetchone()[0])


def _rows(db: Path) -> dict[str, list[tuple[object, ...]]]:
    conn = connect(db)
    try:
        return {table: conn.execute(f"SELECT * FROM {table} ORDER BY 1, 2").fetchall()
                for table in ("turns", "sessions", "pimem_docs", "pimem_word_docs", "pimem_touches", "pimem_pi_nodes")}
    finally:
        conn.close()


def test_bulk_checkpoints_raises_the_threshold_and_restores_it(db_path: Path) -> None:
    conn = connect(db_path)
    try:
        conn.execute("PRAGMA wal_autocheckpoint = 1234")
        with bulk_checkpoints(conn):
            assert _autocheckpoint(conn) == BULK_CHECKPOINT_PAGES
        assert _autocheckpoint(conn) == 1234
        with pytest.raises(RuntimeError), bulk_checkpoints(conn):
            raise RuntimeError("a failed sync")
        assert _autocheckpoint(conn) == 1234
        conn.execute(f"PRAGMA wal_autocheckpoint = {BULK_CHECKPOINT_PAGES * 2}")   # never lowered
        with bulk_checkpoints(conn):
            assert _autocheckpoint(conn) == BULK_CHECKPOINT_PAGES * 2
    finally:
        conn.close()


def test_a_sync_restores_its_connections_setting_and_stores_the_same_rows(history: Path, tmp_path: Path,
                                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    roots = roots_under(history)
    conn = connect(tmp_path / "bulk.db")
    try:
        seen: list[int] = []
        original = run_sync.__globals__["_run_files"]

        def spy(*args: object, **kwargs: object) -> object:
            seen.append(_autocheckpoint(conn))
            return original(*args, **kwargs)

        monkeypatch.setitem(run_sync.__globals__, "_run_files", spy)
        run_sync(SyncRequest(db_path=str(tmp_path / "bulk.db"), roots=roots, workers=1), conn=conn)
        assert seen == [BULK_CHECKPOINT_PAGES]
        assert _autocheckpoint(conn) == 1000   # SQLite's default, as the connection had it
    finally:
        conn.close()
    monkeypatch.undo()
    # The same history synced with SQLite's default checkpoints throughout: the same rows.
    monkeypatch.setattr("pimem.store.connection.BULK_CHECKPOINT_PAGES", 1000)
    run_sync(SyncRequest(db_path=str(tmp_path / "default.db"), roots=roots, workers=1))
    assert _rows(tmp_path / "bulk.db") == _rows(tmp_path / "default.db")
