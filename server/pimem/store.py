"""The SQLite store shared with the Pi extension *pi-session-memory* (``~/.pi/agent/memory.db``).

Compatibility contract (see ARCHITECTURE.md):

* ``sessions``, ``turns`` and ``source_files`` keep the extension's names, columns, types and keys.
  The DDL below is the extension's own (0.1.0 ``db.ts`` and the 0.1.4 ``source_files`` table), so the
  extension's ``CREATE TABLE IF NOT EXISTS`` statements are no-ops on a store pimem created.
* pimem only adds tables whose names start with ``pimem_`` and nullable columns; it never adds a
  trigger on ``turns``; it never deletes a row of the extension's tables.
* WAL mode, a busy timeout, and short write transactions, because the extension writes the same file.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import stat
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

BUSY_TIMEOUT_MS = 15_000
SCHEMA_VERSION = "3"

# The extension's schema, verbatim (pi-session-memory 0.1.0 src/db.ts).
SEED_SCHEMA = """
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

# The 0.1.4 table of per-file sync state (spec: jsonl_path PK, source, size, mtime_ms, sha256).
# pimem creates it so the extension finds it, but keeps its own richer state in pimem_files.
SEED_SOURCE_FILES_SCHEMA = """
CREATE TABLE IF NOT EXISTS source_files (
  jsonl_path TEXT PRIMARY KEY,
  source     TEXT NOT NULL,
  size       INTEGER NOT NULL,
  mtime_ms   REAL NOT NULL,
  sha256     TEXT NOT NULL
);
"""

PIMEM_SCHEMA = """
CREATE TABLE IF NOT EXISTS pimem_meta (
  key   TEXT PRIMARY KEY,
  value TEXT NOT NULL
);

-- Per transcript file: how far pimem has parsed it and the parser state needed to continue.
CREATE TABLE IF NOT EXISTS pimem_files (
  file_id      INTEGER PRIMARY KEY,
  jsonl_path   TEXT NOT NULL UNIQUE,
  source       TEXT NOT NULL,
  size         INTEGER NOT NULL,
  mtime_ns     INTEGER NOT NULL,
  inode        INTEGER NOT NULL,
  parsed_bytes INTEGER NOT NULL,
  parsed_lines INTEGER NOT NULL,
  fingerprint  TEXT NOT NULL,
  session_id   TEXT,
  state        TEXT NOT NULL,
  revision     INTEGER NOT NULL DEFAULT 0  -- bumped by every commit; a sync that finds it moved stops
);

-- Pi session trees: for every entry, the id of its nearest user-message ancestor (NULL if none),
-- so that an appended reply on any branch finds its turn without re-reading the file.
CREATE TABLE IF NOT EXISTS pimem_pi_nodes (
  file_id  INTEGER NOT NULL,
  entry_id TEXT NOT NULL,
  anchor   TEXT,
  PRIMARY KEY (file_id, entry_id)
) WITHOUT ROWID;

-- One row per indexed turn. doc_key is the recall index's rowid: (UTC day << 20) | n, so that index
-- lists run newest day first; ts orders turns within a day; line is where the user message sits in
-- its transcript.
CREATE TABLE IF NOT EXISTS pimem_docs (
  doc_key INTEGER PRIMARY KEY,
  turn_id TEXT NOT NULL UNIQUE,
  line    INTEGER,
  ts      INTEGER NOT NULL
);

-- Docs whose index postings are not written yet (recall scans them); see pimem/index.py.
CREATE TABLE IF NOT EXISTS pimem_pending (
  doc_key INTEGER PRIMARY KEY
);
"""

# Contentless trigram indexes over the lowercased texts (see pimem/index.py). Lowercasing is done in
# Python (str.lower), so the tokenizer must not fold case itself. columnsize=0: no per-row size table,
# so a doc can be indexed again (after an update) without removing its old postings first.
FTS_SCHEMA = """
CREATE VIRTUAL TABLE IF NOT EXISTS pimem_fts_user USING fts5(
  text, tokenize = 'trigram case_sensitive 1', detail = none, content = '', columnsize = 0
);
CREATE VIRTUAL TABLE IF NOT EXISTS pimem_fts_reply USING fts5(
  text, tokenize = 'trigram case_sensitive 1', detail = none, content = '', columnsize = 0
);
"""


class StoreError(Exception):
    """The store cannot be opened or used (bad path, not a database, permissions)."""


def _secure_directory(directory: Path) -> None:
    if not directory.exists():
        directory.mkdir(mode=0o700, parents=True, exist_ok=True)
        # mkdir's mode is filtered by the umask; set it explicitly.
        with contextlib.suppress(OSError):
            os.chmod(directory, 0o700)


def _secure_file(path: Path) -> None:
    """Create the store file owner-only before SQLite opens it (SQLite would use the umask)."""
    if not path.exists():
        fd = os.open(path, os.O_CREAT | os.O_RDWR, 0o600)
        os.close(fd)
    _owner_only(path)


def _owner_only(path: Path) -> None:
    """Take group and other permissions away (a store the extension created under umask 022 is
    world-readable, and pimem copies every agent's transcripts into it). SQLite gives its -wal and
    -shm files the database file's permissions."""
    for candidate in (path, Path(f"{path}-wal"), Path(f"{path}-shm")):
        with contextlib.suppress(OSError):
            mode = stat.S_IMODE(candidate.stat().st_mode)
            if mode & 0o077:
                os.chmod(candidate, mode & 0o700)


def _columns(conn: sqlite3.Connection, table: str) -> set[str]:
    return {str(row[1]) for row in conn.execute(f"PRAGMA table_info({table})")}


def _upgrade_seed_layout(conn: sqlite3.Connection) -> None:
    """Bring a store written by any pi-session-memory release up to the current layout, in place.

    Unlike the extension's own migration, rows are never deleted: a turn without a
    ``user_message_id`` is kept (it simply stays NULL).
    """
    if "source" not in _columns(conn, "sessions"):
        conn.execute("ALTER TABLE sessions ADD COLUMN source TEXT NOT NULL DEFAULT 'pi'")
    if "user_message_id" not in _columns(conn, "turns"):
        conn.execute("ALTER TABLE turns ADD COLUMN user_message_id TEXT")


def fts_available(conn: sqlite3.Connection) -> bool:
    try:
        conn.execute("CREATE VIRTUAL TABLE temp.pimem_probe USING fts5(x, tokenize = 'trigram')")
        conn.execute("DROP TABLE temp.pimem_probe")
        return True
    except sqlite3.Error:
        return False


def _drop_pimem_tables(conn: sqlite3.Connection) -> None:
    """Everything pimem adds is derived from the transcripts and the turn rows, so a layout change
    drops it and builds it again (the next sync re-parses the files, upserting the same turns)."""
    names = [row[0] for row in conn.execute(
        "SELECT name FROM sqlite_master WHERE type = 'table' AND name LIKE 'pimem!_%' ESCAPE '!' "
        "AND sql LIKE 'CREATE VIRTUAL TABLE%'")]
    for name in names:
        conn.execute(f'DROP TABLE IF EXISTS "{name}"')  # also drops the FTS5 shadow tables
    names = [row[0] for row in conn.execute(
        "SELECT name FROM sqlite_master WHERE type = 'table' AND name LIKE 'pimem!_%' ESCAPE '!'")]
    for name in names:
        conn.execute(f'DROP TABLE IF EXISTS "{name}"')


def ensure_schema(conn: sqlite3.Connection) -> None:
    """Create or upgrade every table pimem and the extension need. Idempotent and cheap when current."""
    row = None
    with contextlib.suppress(sqlite3.Error):
        row = conn.execute("SELECT value FROM pimem_meta WHERE key = 'schema_version'").fetchone()
    if row is not None and row[0] == SCHEMA_VERSION:
        return
    with transaction(conn):
        if row is not None:
            _drop_pimem_tables(conn)
        for statement in _split_sql(SEED_SCHEMA + SEED_SOURCE_FILES_SCHEMA + PIMEM_SCHEMA):
            conn.execute(statement)
        _upgrade_seed_layout(conn)
        index_state = "trigram" if fts_available(conn) else "unavailable"
        if index_state == "trigram":
            for statement in _split_sql(FTS_SCHEMA):
                conn.execute(statement)
        conn.execute(
            "INSERT INTO pimem_meta(key, value) VALUES ('index', ?) "
            "ON CONFLICT(key) DO UPDATE SET value = excluded.value",
            (index_state,),
        )
        conn.execute(
            "INSERT INTO pimem_meta(key, value) VALUES ('schema_version', ?) "
            "ON CONFLICT(key) DO UPDATE SET value = excluded.value",
            (SCHEMA_VERSION,),
        )


def _split_sql(script: str) -> list[str]:
    statements: list[str] = []
    buffer: list[str] = []
    for line in script.splitlines():
        if line.strip().startswith("--"):
            continue
        buffer.append(line)
        if line.rstrip().endswith(";"):
            statement = "\n".join(buffer).strip()
            if statement:
                statements.append(statement)
            buffer = []
    tail = "\n".join(buffer).strip()
    if tail:
        statements.append(tail)
    return statements


def connect(db_path: Path | str, *, create: bool = True) -> sqlite3.Connection:
    """Open the store (creating it owner-only when asked), in WAL mode, with a busy timeout.

    The connection is in autocommit mode; write with :func:`transaction`. SQLite connections are
    per thread: open one per thread (or per unit of work) and never share it across threads.
    """
    path = Path(db_path)
    if str(db_path) != ":memory:":
        try:
            if not path.exists():
                if not create:
                    raise StoreError(f"no memory store at {path}")
                _secure_directory(path.parent)
                _secure_file(path)
            elif path.is_dir():
                raise StoreError(f"{path} is a directory, not a memory store")
            else:
                _owner_only(path)
        except OSError as error:
            raise StoreError(f"cannot create the memory store at {path}: {error.strerror or error}") from None
    try:
        conn = sqlite3.connect(str(path), timeout=BUSY_TIMEOUT_MS / 1000, isolation_level=None,
                               check_same_thread=True)
        conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
        conn.execute("PRAGMA journal_mode = WAL")
        conn.execute("PRAGMA synchronous = NORMAL")
        conn.execute("PRAGMA cache_size = -16000")
        ensure_schema(conn)
    except sqlite3.DatabaseError as error:
        raise StoreError(f"cannot open the memory store at {path}: {error}") from None
    return conn


@contextlib.contextmanager
def transaction(conn: sqlite3.Connection) -> Iterator[sqlite3.Connection]:
    """A short write transaction that takes the write lock up front (no deadlock on upgrade)."""
    conn.execute("BEGIN IMMEDIATE")
    try:
        yield conn
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    else:
        conn.execute("COMMIT")


def get_meta(conn: sqlite3.Connection, key: str) -> str | None:
    row = conn.execute("SELECT value FROM pimem_meta WHERE key = ?", (key,)).fetchone()
    return None if row is None else str(row[0])


def set_meta(conn: sqlite3.Connection, key: str, value: str) -> None:
    conn.execute(
        "INSERT INTO pimem_meta(key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value",
        (key, value),
    )


@dataclass
class SessionRow:
    session_id: str
    source: str
    cwd: str
    started_at: int
    model_id: str | None
    jsonl_path: str


def upsert_session(conn: sqlite3.Connection, row: SessionRow) -> None:
    """Insert a session; on a known one, fill in what was missing (cwd, model) and nothing else."""
    conn.execute(
        """
        INSERT INTO sessions (session_id, source, cwd, started_at, model_id, jsonl_path)
        VALUES (?, ?, ?, ?, ?, ?)
        ON CONFLICT(session_id) DO UPDATE SET
          cwd = CASE WHEN sessions.cwd = '' THEN excluded.cwd ELSE sessions.cwd END,
          model_id = COALESCE(sessions.model_id, excluded.model_id),
          jsonl_path = CASE WHEN sessions.jsonl_path = '' THEN excluded.jsonl_path ELSE sessions.jsonl_path END
        """,
        (row.session_id, row.source, row.cwd, row.started_at, row.model_id, row.jsonl_path),
    )


@dataclass
class StoredTurn:
    turn_id: str
    session_id: str
    turn_index: int
    ts: int
    user_text: str
    reply_text: str
    tool_names: list[str]


def get_turn(conn: sqlite3.Connection, turn_id: str) -> StoredTurn | None:
    row = conn.execute(
        "SELECT turn_id, session_id, turn_index, ts, user_text, reply_text, tool_names FROM turns WHERE turn_id = ?",
        (turn_id,),
    ).fetchone()
    if row is None:
        return None
    return StoredTurn(
        turn_id=row[0], session_id=row[1], turn_index=row[2], ts=row[3], user_text=row[4], reply_text=row[5],
        tool_names=parse_tool_names(row[6]),
    )


def get_turns(conn: sqlite3.Connection, turn_ids: list[str]) -> dict[str, StoredTurn]:
    """The stored rows among ``turn_ids`` (one query per 500 ids)."""
    found: dict[str, StoredTurn] = {}
    for start in range(0, len(turn_ids), 500):
        batch = turn_ids[start:start + 500]
        for row in conn.execute(
            "SELECT turn_id, session_id, turn_index, ts, user_text, reply_text, tool_names FROM turns "
            f"WHERE turn_id IN ({','.join('?' * len(batch))})", batch,
        ):
            found[row[0]] = StoredTurn(row[0], row[1], row[2], row[3], row[4], row[5], parse_tool_names(row[6]))
    return found


def parse_tool_names(value: object) -> list[str]:
    """``turns.tool_names`` is a JSON array or NULL; tolerate anything else a writer may have left."""
    import json

    if not isinstance(value, str) or not value:
        return []
    try:
        names = json.loads(value)
    except ValueError:
        return []
    return [name for name in names if isinstance(name, str)] if isinstance(names, list) else []


def encode_tool_names(names: list[str]) -> str | None:
    import json

    return json.dumps(names, ensure_ascii=False) if names else None


def count_turns_by_source(conn: sqlite3.Connection) -> dict[str, int]:
    counts = {"pi": 0, "claude": 0, "codex": 0}
    for source, count in conn.execute(
        "SELECT s.source, count(*) FROM turns t JOIN sessions s ON s.session_id = t.session_id GROUP BY s.source"
    ):
        if source in counts:
            counts[source] = int(count)
    return counts
