"""The store stays shared with the Pi extension pi-session-memory (0.1.0 to 0.2.0).

The SQL below is copied verbatim from the extension's sources (seeds/000: src/db.ts, src/retriever.ts;
seeds/003: the 0.1.4 source_files table), and run with a plain connection without a busy timeout,
as the extension's ``node:sqlite`` DatabaseSync does.
"""

from __future__ import annotations

import os
import sqlite3
import stat
from pathlib import Path

import pytest

from pimem.recall import make_query, recall, recall_scan
from pimem.store import connect
from pimem.sync import SyncRequest, run_sync
from support.history import roots_under

EXTENSION_SCHEMA = """
CREATE TABLE IF NOT EXISTS sessions (
  session_id  TEXT PRIMARY KEY,
  source      TEXT NOT NULL DEFAULT 'pi',
  cwd         TEXT NOT NULL,
  started_at  INTEGER NOT NULL,
  model_id    TEXT,
  jsonl_path  TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS idx_sessions_time ON sessions(started_at DESC);
CREATE TABLE IF NOT EXISTS turns (
  turn_id     TEXT PRIMARY KEY,
  session_id  TEXT NOT NULL REFERENCES sessions(session_id),
  turn_index  INTEGER NOT NULL,
  ts          INTEGER NOT NULL,
  user_text   TEXT NOT NULL,
  reply_text  TEXT NOT NULL,
  tool_names  TEXT,
  user_message_id TEXT
);
CREATE INDEX IF NOT EXISTS idx_turns_session ON turns(session_id, turn_index);
CREATE INDEX IF NOT EXISTS idx_turns_ts      ON turns(ts DESC);
"""
SOURCE_FILES_0_1_4 = """
CREATE TABLE IF NOT EXISTS source_files (
  jsonl_path TEXT PRIMARY KEY,
  source     TEXT NOT NULL,
  size       INTEGER NOT NULL,
  mtime_ms   REAL NOT NULL,
  sha256     TEXT NOT NULL
);
"""
UPSERT_SESSION = """
    INSERT OR IGNORE INTO sessions (session_id, source, cwd, started_at, model_id, jsonl_path)
    VALUES (?, ?, ?, ?, ?, ?)
"""
INSERT_TURN = """
    INSERT OR IGNORE INTO turns
      (turn_id, session_id, turn_index, ts, user_text, reply_text, tool_names, user_message_id)
    VALUES (?, ?, ?, ?, ?, ?, ?, ?)
"""
UPSERT_SOURCE_FILE = """
    INSERT INTO source_files (jsonl_path, source, size, mtime_ms, sha256) VALUES (?, ?, ?, ?, ?)
    ON CONFLICT(jsonl_path) DO UPDATE SET source = excluded.source, size = excluded.size,
      mtime_ms = excluded.mtime_ms, sha256 = excluded.sha256
"""


def extension_recall(conn: sqlite3.Connection, entities: list[str], top_k: int = 5) -> list[tuple[object, ...]]:
    """retriever.ts recallTurns(), verbatim SQL."""
    score = " + ".join(["""(
    CASE WHEN LOWER(turns.user_text) LIKE ? ESCAPE '\\' THEN 2 ELSE 0 END +
    CASE WHEN LOWER(turns.reply_text) LIKE ? ESCAPE '\\' THEN 1 ELSE 0 END
  )"""] * len(entities))
    where = " OR ".join(["""(
    LOWER(turns.user_text) LIKE ? ESCAPE '\\' OR
    LOWER(turns.reply_text) LIKE ? ESCAPE '\\'
  )"""] * len(entities))
    patterns = []
    for entity in entities:
        escaped = entity.lower().replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
        patterns += [f"%{escaped}%", f"%{escaped}%"]
    return conn.execute(
        f"""SELECT turns.turn_id, sessions.source, turns.ts, turns.user_text, turns.reply_text, ({score}) AS hits
        FROM turns JOIN sessions ON sessions.session_id = turns.session_id WHERE {where}
        ORDER BY hits DESC, turns.ts DESC LIMIT ?""",
        [*patterns, *patterns, top_k],
    ).fetchall()


def extension_open(path: Path) -> sqlite3.Connection:
    """db.ts getDb(): WAL, synchronous NORMAL, schema, _migrate(). No busy timeout."""
    conn = sqlite3.connect(str(path), timeout=0, isolation_level=None)
    conn.execute("PRAGMA journal_mode = WAL")
    conn.execute("PRAGMA synchronous = NORMAL")
    conn.executescript(EXTENSION_SCHEMA)
    session_columns = {row[1] for row in conn.execute("PRAGMA table_info(sessions)")}
    if "source" not in session_columns:
        conn.execute("ALTER TABLE sessions ADD COLUMN source TEXT NOT NULL DEFAULT 'pi'")
    turn_columns = {row[1] for row in conn.execute("PRAGMA table_info(turns)")}
    if "user_message_id" not in turn_columns:
        conn.execute("ALTER TABLE turns ADD COLUMN user_message_id TEXT")
        conn.execute("DELETE FROM turns WHERE user_message_id IS NULL")
        conn.execute("DELETE FROM sessions WHERE session_id NOT IN (SELECT DISTINCT session_id FROM turns)")
    return conn


def _extension_rows(conn: sqlite3.Connection) -> None:
    conn.execute(UPSERT_SESSION, ("pi:old", "pi", "/tmp/old", 1, None, "/tmp/old.jsonl"))
    conn.execute(INSERT_TURN, ("pi:old:u1", "pi:old", 0, 5, "old flamingo prompt", "old reply", None, "u1"))
    conn.execute(INSERT_TURN, ("pi:old:u2", "pi:old", 1, 6, "literal 100% and a_b", "reply", '["bash"]', "u2"))


@pytest.mark.parametrize("layout", ["0.1.0", "0.1.4"])
def test_extension_store_is_upgraded_in_place_without_loss(tmp_path: Path, layout: str) -> None:
    path = tmp_path / "memory.db"
    conn = extension_open(path)
    if layout == "0.1.4":
        conn.executescript(SOURCE_FILES_0_1_4)
        conn.execute(UPSERT_SOURCE_FILE, ("/tmp/old.jsonl", "pi", 10, 1.5, "ab" * 32))
    _extension_rows(conn)
    before = {t: conn.execute(f"SELECT * FROM {t} ORDER BY 1").fetchall() for t in ("sessions", "turns")}
    if layout == "0.1.4":
        before["source_files"] = conn.execute("SELECT * FROM source_files").fetchall()
    conn.close()

    store = connect(path)
    for table, rows in before.items():
        assert store.execute(f"SELECT * FROM {table} ORDER BY 1").fetchall() == rows
    # Found before any pimem sync (scanned), and after one (indexed).
    query = make_query(["flamingo"])
    assert [r.turn_id for r in recall(store, query)] == ["pi:old:u1"]
    run_sync(SyncRequest(db_path=str(path), roots=roots_under(tmp_path / "nothing")))
    assert store.execute("SELECT count(*) FROM pimem_docs").fetchone()[0] == 2
    assert [r.turn_id for r in recall(store, make_query(["100%"]))] == ["pi:old:u2"]


def test_extension_keeps_working_on_a_pimem_store(history: Path, db_path: Path) -> None:
    run_sync(SyncRequest(db_path=str(db_path), roots=roots_under(history)))
    store = connect(db_path)
    before = store.execute("SELECT count(*) FROM turns").fetchone()[0]
    assert store.execute("SELECT count(*) FROM turns WHERE user_message_id IS NULL").fetchone()[0] == 0

    ext = extension_open(db_path)  # its _migrate() must find nothing to delete
    ext.executescript(SOURCE_FILES_0_1_4)
    ext.execute(UPSERT_SOURCE_FILE, ("/x.jsonl", "pi", 1, 1.0, "0" * 64))
    _extension_rows(ext)
    assert ext.execute("SELECT count(*) FROM turns").fetchone()[0] == before + 2
    assert [row[0] for row in extension_recall(ext, ["old flamingo"])] == ["pi:old:u1"]
    # The extension's own LIKE recall and pimem agree on a pimem-imported turn.
    top = extension_recall(ext, ["zeta_ratelimit"], 50)
    assert {row[0] for row in top} == {r.turn_id for r in recall_scan(store, make_query(["zeta_ratelimit"], 50))}
    ext.close()
    # pimem finds the rows the extension wrote behind its back.
    assert [r.turn_id for r in recall(store, make_query(["old flamingo"]))] == ["pi:old:u1"]


def test_no_trigger_and_only_prefixed_additions(db_path: Path) -> None:
    store = connect(db_path)
    assert store.execute("SELECT count(*) FROM sqlite_master WHERE type = 'trigger'").fetchone()[0] == 0
    names = {row[0] for row in store.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    assert {name for name in names if not name.startswith("pimem_")} == {"sessions", "turns", "source_files"}


def test_store_is_owner_only(tmp_path: Path) -> None:
    old = os.umask(0o022)
    try:
        path = tmp_path / "fresh" / "agent" / "memory.db"
        connect(path).close()
    finally:
        os.umask(old)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700


def test_a_layout_from_before_the_migration_scheme_is_rebuilt_without_touching_turns(
        history: Path, db_path: Path) -> None:
    run_sync(SyncRequest(db_path=str(db_path), roots=roots_under(history)))
    store = connect(db_path)
    turns = store.execute("SELECT * FROM turns ORDER BY turn_id").fetchall()
    # What a development layout (schema_version 1 or 2, never released, no layout key) looks like:
    # an older table shape. It has no migration steps, so its pimem_* tables are built again.
    store.execute("DELETE FROM pimem_meta WHERE key IN ('layout', 'min_reader_layout', 'layout_written_by')")
    store.execute("UPDATE pimem_meta SET value = '1' WHERE key = 'schema_version'")
    store.execute("DROP TABLE pimem_pending")
    store.close()
    store = connect(db_path)
    assert store.execute("SELECT * FROM turns ORDER BY turn_id").fetchall() == turns
    assert store.execute("SELECT count(*) FROM pimem_docs").fetchone()[0] == 0
    stats = run_sync(SyncRequest(db_path=str(db_path), roots=roots_under(history)))
    assert stats.scanned_files > 0 and stats.turns == 0  # re-parsed, nothing changed
    assert store.execute("SELECT * FROM turns ORDER BY turn_id").fetchall() == turns
    assert [r.turn_id for r in recall(store, make_query(["zeta_ratelimit"], 50))] == \
        [r.turn_id for r in recall_scan(store, make_query(["zeta_ratelimit"], 50))]
    assert store.execute("SELECT count(*) FROM pimem_pending").fetchone()[0] == 0
