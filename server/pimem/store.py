"""The SQLite store shared with the Pi extension *pi-session-memory* (``~/.pi/agent/memory.db``).

Compatibility contract (see ARCHITECTURE.md):

* ``sessions``, ``turns`` and ``source_files`` keep the extension's names, columns, types and keys.
  The DDL below is the extension's own (0.1.0 ``db.ts`` and the 0.1.4 ``source_files`` table), so the
  extension's ``CREATE TABLE IF NOT EXISTS`` statements are no-ops on a store pimem created.
* pimem only adds tables whose names start with ``pimem_`` and nullable columns; it never adds a
  trigger on ``turns``; it never deletes a row of the extension's tables.
* WAL mode, a busy timeout, and short write transactions, because the extension writes the same file.

What pimem opens (:func:`connect`):

* Only its own store: a new or empty file, a store the extension made (its ``sessions`` and ``turns``
  tables), or one pimem made (``pimem_meta``). Any other file, SQLite or not, is refused with a
  StoreError and left byte for byte as it was: it is inspected as an immutable file, or through a
  read-only connection, so not even SQLite's journal recovery or checkpoint touches it. A damaged
  store is refused the same way and never deleted or created anew.
* Commands that only read (``pimem recall``, ``pimem status``) pass ``create=False``: a missing or
  empty file is an error, never a new store.
* The store path may be a symbolic link: SQLite follows it (and keeps ``-wal``/``-shm`` beside the
  target), and so does pimem for reading and writing, like the extension. But pimem never changes
  permissions through a link, and never creates a store at the far end of a dangling one.

Layouts (the shape of the ``pimem_*`` tables), in ``pimem_meta``:

* ``layout``: an integer; ``layout_written_by``: the pimem version that gave the store that layout;
  ``min_reader_layout``: the oldest layout whose pimem still reads the store right.
* An older layout is migrated forward in place, in one transaction, by the steps in
  :data:`MIGRATIONS` (N → N+1): nothing is dropped, nothing re-parsed. A new store is created at
  :data:`BASE_LAYOUT` and goes through the same steps, so new and upgraded stores cannot differ.
* A newer layout is never written: a writer gets a StoreError asking for an upgrade (also when a
  newer pimem migrates the store while a sync is under way: :func:`transaction` re-checks). A reader
  still answers: normally if ``min_reader_layout`` allows, else from the extension's tables alone
  (recall scans them, as the oracle does; see :func:`_hide_pimem_tables`).
* To change the layout: write a step ``_layout_N_to_N1(conn)``, register it as ``MIGRATIONS[N]``,
  set ``LAYOUT = N + 1``, and raise ``MIN_READER_LAYOUT`` only if an older pimem would misread the
  new layout (a new table does not; a changed meaning of ``pimem_docs`` does).
* ``schema_version`` is the key pimem 0.1.0 reads: it drops every ``pimem_*`` table unless it finds
  "3" there. It stays "3" for ever, so 0.1.0 never drops a newer layout (it does write into it as
  if it were layout 3: a step that cannot live with that must say so).

Failures of a store in use (locked past the busy timeout, disk full, read-only, damaged) become one
actionable line through :func:`store_failure`; SQLite's transactions keep what was committed.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import sqlite3
import stat
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote

from pimem import __version__
from pimem.paths import make_private_dirs

BUSY_TIMEOUT_MS = 15_000
BUSY_TIMEOUT_ENV = "PIMEM_BUSY_TIMEOUT_MS"

BASE_LAYOUT = 3            # the tables below; what pimem 0.1.0 called schema_version "3"
LAYOUT = 3                 # the layout this pimem writes
MIN_READER_LAYOUT = 3      # the oldest layout whose pimem can read what this one writes
LEGACY_SCHEMA_VERSION = "3"

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
    """The store cannot be opened or used. The message is one line saying why and what to do."""


def busy_timeout_ms() -> int:
    """How long a write waits for another program's lock: ``$PIMEM_BUSY_TIMEOUT_MS``, else 15 s."""
    value = os.environ.get(BUSY_TIMEOUT_ENV, "")
    return int(value) if value.isdigit() else BUSY_TIMEOUT_MS


# ---------------------------------------------------------------------------------------------
# Layouts and migrations
# ---------------------------------------------------------------------------------------------

# MIGRATIONS[n] brings a store from layout n to n + 1, inside the caller's transaction.
MIGRATIONS: dict[int, Callable[[sqlite3.Connection], None]] = {}


@dataclass(frozen=True)
class StoreLayout:
    layout: int | None          # None: no pimem tables yet (a new store, or one only the extension wrote)
    min_reader_layout: int
    written_by: str | None

    @property
    def newer(self) -> bool:
        return self.layout is not None and self.layout > LAYOUT

    @property
    def readable(self) -> bool:
        """Whether this pimem may read the pimem_* tables (else only the extension's)."""
        return self.min_reader_layout <= LAYOUT


def read_layout(conn: sqlite3.Connection) -> StoreLayout:
    has_meta = conn.execute(
        "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'pimem_meta'").fetchone() is not None
    if not has_meta:
        return StoreLayout(None, 0, None)
    meta = dict(conn.execute("SELECT key, value FROM pimem_meta WHERE key IN "
                             "('layout', 'min_reader_layout', 'layout_written_by', 'schema_version')").fetchall())
    raw = meta.get("layout", meta.get("schema_version"))   # pimem 0.1.0 wrote only schema_version
    if raw is None:
        return StoreLayout(None, 0, None)
    try:
        layout = int(raw)
        min_reader = int(meta.get("min_reader_layout", layout))
    except ValueError:
        raise StoreError(f"the layout recorded in this store is unreadable ({raw!r}): pimem leaves it as it is; "
                         "a newer pimem may understand it") from None
    return StoreLayout(layout, min_reader, meta.get("layout_written_by"))


def newer_layout_message(layout: StoreLayout, path: object) -> str:
    by = f"pimem {layout.written_by}" if layout.written_by else "a newer pimem"
    return (f"this store ({path}) was written by {by} (layout {layout.layout}); this pimem ({__version__}) "
            f"understands up to layout {LAYOUT}: please upgrade")


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
    """Only for the layouts before the migration scheme (1 and 2, never released): everything pimem
    adds is derived from the transcripts and the turn rows, so it is built again."""
    names = [row[0] for row in conn.execute(
        "SELECT name FROM sqlite_master WHERE type = 'table' AND name LIKE 'pimem!_%' ESCAPE '!' "
        "AND sql LIKE 'CREATE VIRTUAL TABLE%'")]
    for name in names:
        conn.execute(f'DROP TABLE IF EXISTS "{name}"')  # also drops the FTS5 shadow tables
    names = [row[0] for row in conn.execute(
        "SELECT name FROM sqlite_master WHERE type = 'table' AND name LIKE 'pimem!_%' ESCAPE '!'")]
    for name in names:
        conn.execute(f'DROP TABLE IF EXISTS "{name}"')


def _create_base_layout(conn: sqlite3.Connection) -> None:
    """The extension's tables (kept as they are if present) and pimem's tables of BASE_LAYOUT."""
    for statement in _split_sql(SEED_SCHEMA + SEED_SOURCE_FILES_SCHEMA + PIMEM_SCHEMA):
        conn.execute(statement)
    _upgrade_seed_layout(conn)
    index_state = "trigram" if fts_available(conn) else "unavailable"
    if index_state == "trigram":
        for statement in _split_sql(FTS_SCHEMA):
            conn.execute(statement)
    set_meta(conn, "index", index_state)
    set_meta(conn, "schema_version", LEGACY_SCHEMA_VERSION)


def _migrate(conn: sqlite3.Connection, *, for_writing: bool, path: object) -> StoreLayout:
    """Bring the store to LAYOUT in one write transaction (a no-op if another process just did)."""
    with transaction(conn):
        found = read_layout(conn)   # again, under the write lock
        if found.newer:             # a newer pimem got there first
            if for_writing:
                raise StoreError(newer_layout_message(found, path))
            return found
        if found.layout == LAYOUT:
            return found
        start = found.layout
        if start is None or start < BASE_LAYOUT:
            if start is not None:
                _drop_pimem_tables(conn)
            _create_base_layout(conn)
            start = BASE_LAYOUT
        for layout in range(start, LAYOUT):
            MIGRATIONS[layout](conn)
        set_meta(conn, "layout", str(LAYOUT))
        set_meta(conn, "min_reader_layout", str(MIN_READER_LAYOUT))
        set_meta(conn, "layout_written_by", __version__)
    return StoreLayout(LAYOUT, MIN_READER_LAYOUT, __version__)


def _hide_pimem_tables(conn: sqlite3.Connection) -> None:
    """Make this connection see a store without pimem's tables, for a layout it cannot read.

    SQLite resolves an unqualified name in the connection's temp schema first, so these empty
    stand-ins (never written to the file) hide the unknown ``pimem_*`` tables from every reader:
    recall finds no index and scans ``turns`` and ``sessions``, the extension's tables, which every
    layout keeps; status counts them. Any reader of a new ``pimem_*`` table needs a stand-in here.
    """
    conn.execute("CREATE TEMP TABLE pimem_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
    conn.execute("CREATE TEMP VIEW pimem_docs AS SELECT NULL AS doc_key, NULL AS turn_id, NULL AS line, "
                 "NULL AS ts WHERE 0")
    conn.execute("CREATE TEMP VIEW pimem_pending AS SELECT NULL AS doc_key WHERE 0")


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


# ---------------------------------------------------------------------------------------------
# Opening the store
# ---------------------------------------------------------------------------------------------

class StoreConnection(sqlite3.Connection):
    """A connection made by :func:`connect`, with what it found out about the store."""

    path: str
    identity: tuple[int, int] | None    # (st_dev, st_ino) of the file it opened
    schema_cookie: int
    layout: StoreLayout
    writable: bool                      # False: a newer pimem's store, opened for reading only


def _no_store(path: Path, why: str) -> StoreError:
    return StoreError(f"no memory store at {path} ({why}): `pimem sync` creates one")


def _refuse_leftover_journals(path: Path) -> None:
    """A ``-wal`` or ``-shm`` without its database belongs to a store that was removed or replaced:
    SQLite would apply the old store's log to the new file. Make the user remove them."""
    leftovers = [name for name in (f"{path}-wal", f"{path}-shm")
                 if os.path.lexists(name) and os.lstat(name).st_size > 0]
    if leftovers:
        raise StoreError(f"{path} is missing or empty but {' and '.join(leftovers)} of a removed store "
                         "are still there: remove them too (they cannot belong to a new store)")


def _create_file(path: Path) -> None:
    """Create the store file owner-only before SQLite opens it (SQLite would use the umask), never
    through a symlink (O_EXCL fails on any existing name, a dangling link included)."""
    make_private_dirs(path.parent)
    try:
        fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY | getattr(os, "O_NOFOLLOW", 0), 0o600)
    except FileExistsError:
        return  # created by another process meanwhile: it is examined like any existing file
    os.close(fd)    # a new file: no SQLite connection of this process holds a lock on it yet


def _owner_only(path: Path) -> None:
    """Take group and other permissions away (a store the extension created under umask 022 is
    world-readable, and pimem copies every agent's transcripts into it). SQLite gives its -wal and
    -shm files the database file's permissions. A symlink is left alone (lstat first), so nothing a
    link points to is chmod-ed; the store's own folder is owner-only, so nobody else can swap a link
    in between.

    By path, never through a descriptor: POSIX locks belong to the process, and closing any
    descriptor of a file drops every lock this process's SQLite connections hold on it."""
    for candidate in (path, Path(f"{path}-wal"), Path(f"{path}-shm")):
        try:
            info = os.lstat(candidate)
            mode = stat.S_IMODE(info.st_mode)
            if stat.S_ISREG(info.st_mode) and mode & 0o077:
                os.chmod(candidate, mode & 0o700)
        except OSError:
            continue    # absent, or not ours to change


_SEED_COLUMNS = {
    "sessions": {"session_id", "cwd", "started_at", "jsonl_path"},
    "turns": {"turn_id", "session_id", "turn_index", "ts", "user_text", "reply_text"},
}


def _classify(conn: sqlite3.Connection) -> str:
    names = {str(row[0]) for row in conn.execute("SELECT name FROM sqlite_master")}
    if not names:
        return "empty"
    if "pimem_meta" in names:
        return "store"
    present = [table for table in _SEED_COLUMNS if table in names]
    # One seed table without the other: the extension creates them one statement at a time.
    seed = bool(present) and all(_SEED_COLUMNS[table] <= _columns(conn, table) for table in present)
    return "store" if seed else "foreign"


def _contents(path: Path) -> str:
    """"empty", "store" (the extension's or pimem's tables), "foreign" or "not sqlite", read without
    changing anything: first as an immutable file (no lock, no journal, no -wal/-shm created next to
    another program's database), then, when that shows no table (they may be in the -wal yet) or
    the file changed under the read, through an ordinary read-only connection (which recovers no
    journal and checkpoints nothing). Only through SQLite, which keeps the process's locks intact."""
    uri = f"file:{quote(str(path))}?mode=ro"
    with contextlib.suppress(sqlite3.Error):
        snapshot = sqlite3.connect(f"{uri}&immutable=1", uri=True)
        try:
            found = _classify(snapshot)
        finally:
            snapshot.close()
        if found != "empty":
            return found
    reader = sqlite3.connect(uri, uri=True, timeout=busy_timeout_ms() / 1000)
    try:
        return _classify(reader)
    except sqlite3.DatabaseError as error:
        if getattr(error, "sqlite_errorcode", None) == sqlite3.SQLITE_NOTADB:
            return "not sqlite"
        raise
    finally:
        reader.close()


def _examine(path: Path, *, create: bool) -> bool:
    """Check that ``path`` is pimem's to open, creating it when asked. Returns whether it is a symlink."""
    try:
        link = stat.S_ISLNK(os.lstat(path).st_mode)
        info = os.stat(path)
    except FileNotFoundError:
        if os.path.islink(path):
            raise StoreError(f"{path} is a symbolic link to a missing file: pimem does not create a store "
                             "through a link") from None
        if not create:
            raise _no_store(path, "the file does not exist") from None
        _refuse_leftover_journals(path)
        _create_file(path)
        return False
    if stat.S_ISDIR(info.st_mode):
        raise StoreError(f"{path} is a directory, not a memory store")
    if not stat.S_ISREG(info.st_mode):
        raise StoreError(f"{path} is not a regular file, not a memory store: pimem leaves it alone")
    if info.st_size == 0:
        if not create:
            raise _no_store(path, "the file is empty")
        _refuse_leftover_journals(path)
        return link
    contents = _contents(path)
    if contents == "not sqlite":
        raise StoreError(f"{path} is not an SQLite database (a damaged store, or another program's file): "
                         "pimem leaves it as it is; restore it from a backup or choose another store path")
    if contents == "foreign":
        raise StoreError(f"{path} is another program's SQLite database (it has neither pi-session-memory's "
                         "nor pimem's tables): pimem leaves it untouched; choose another store path")
    if contents == "empty" and not create:
        raise _no_store(path, "the database is empty")
    return link


def connect(db_path: Path | str, *, create: bool = True, for_writing: bool = True) -> StoreConnection:
    """Open the store, in WAL mode, with a busy timeout, migrated to this pimem's layout.

    ``create``: make a new store when the path does not exist or is empty (else StoreError).
    ``for_writing``: refuse a store a newer pimem wrote (StoreError asking for an upgrade); without
    it such a store is opened for reading (``conn.writable`` is False). An older layout is migrated
    forward either way. See the module docstring for what is refused.

    The connection is in autocommit mode; write with :func:`transaction`. SQLite connections are
    per thread: open one per thread (or per unit of work) and never share it across threads.
    """
    path = Path(db_path)
    memory = str(db_path) == ":memory:"
    identity = None
    try:
        if not memory:
            link = _examine(path, create=create)
            if not link:
                _owner_only(path)
            # Taken before SQLite opens the file: if it is replaced in between, the connection
            # looks stale at once (see connection_is_stale), never the other way round.
            info = os.stat(path)
            identity = (info.st_dev, info.st_ino)
        conn = _open(path)
    except OSError as error:
        raise StoreError(f"cannot open the memory store at {path}: {error.strerror or error}") from None
    except sqlite3.Error as error:
        raise store_failure(error, path) from None
    try:
        frozen = False
        try:
            layout = read_layout(conn)
        except sqlite3.OperationalError as error:
            if for_writing or memory or not _in_read_only_folder(error, path):
                raise
            conn.close()
            conn, frozen = _open(path, immutable=True), True
            layout = read_layout(conn)
        if layout.newer and for_writing:
            raise StoreError(newer_layout_message(layout, path))
        if not layout.newer and not frozen:
            conn.execute("PRAGMA journal_mode = WAL")
            if layout.layout != LAYOUT:
                layout = _migrate(conn, for_writing=for_writing, path=path)
        if frozen and not layout.newer and layout.layout != LAYOUT:
            raise StoreError(f"the memory store at {path} is read-only, and this pimem must first bring it to "
                             f"layout {LAYOUT}: make it and its folder writable once")
        if not layout.readable:
            _hide_pimem_tables(conn)
        conn.execute("PRAGMA synchronous = NORMAL")
        conn.execute("PRAGMA cache_size = -16000")
        conn.path, conn.identity, conn.layout, conn.writable = str(path), identity, layout, not layout.newer
        conn.schema_cookie = int(conn.execute("PRAGMA schema_version").fetchone()[0])
    except StoreError:
        conn.close()
        raise
    except sqlite3.Error as error:
        conn.close()
        raise store_failure(error, path) from None
    return conn


def _open(path: Path, *, immutable: bool = False) -> StoreConnection:
    timeout = busy_timeout_ms()
    target, uri = str(path), False
    if immutable:
        target, uri = f"file:{quote(str(path))}?mode=ro&immutable=1", True
    conn = sqlite3.connect(target, timeout=timeout / 1000, isolation_level=None, check_same_thread=True,
                           factory=StoreConnection, uri=uri)
    conn.execute(f"PRAGMA busy_timeout = {timeout}")
    return conn


def _in_read_only_folder(error: sqlite3.Error, path: Path) -> bool:
    """A WAL store in a folder nobody may write, with no -wal file: nothing can be writing it, so a
    reader may read it as an immutable file (SQLite cannot create its -shm file there)."""
    return (getattr(error, "sqlite_errorcode", None) == sqlite3.SQLITE_READONLY_DIRECTORY
            and not os.path.exists(f"{path}-wal"))


def connection_is_stale(conn: sqlite3.Connection) -> bool:
    """True when a long-lived connection must be closed and opened again: the file at its path was
    removed or replaced (a reset, a restore) since it was opened, or another pimem changed the
    store's layout. Cheap (one stat, one pragma), for use before every request."""
    if not isinstance(conn, StoreConnection) or conn.identity is None:
        return False
    try:
        info = os.stat(conn.path)
        if (info.st_dev, info.st_ino) != conn.identity:
            return True
        return int(conn.execute("PRAGMA schema_version").fetchone()[0]) != conn.schema_cookie
    except (OSError, sqlite3.Error):
        return True


def _check_layout_unchanged(conn: sqlite3.Connection) -> None:
    """Under the write lock: if another program changed the schema since this connection read the
    layout (a newer pimem migrating the store during a long sync), write only if it is still ours."""
    cookie = getattr(conn, "schema_cookie", None)
    if not isinstance(conn, StoreConnection) or cookie is None:
        return
    current = int(conn.execute("PRAGMA schema_version").fetchone()[0])
    if current == cookie:
        return
    layout = read_layout(conn)
    if layout.newer:
        raise StoreError(newer_layout_message(layout, conn.path))
    conn.schema_cookie = current


def upgrade_notice(conn: sqlite3.Connection) -> str | None:
    """For a store a newer pimem wrote: the one line asking for an upgrade (reading works)."""
    if isinstance(conn, StoreConnection) and not conn.writable:
        return newer_layout_message(conn.layout, conn.path)
    return None


# ---------------------------------------------------------------------------------------------
# Failures
# ---------------------------------------------------------------------------------------------

_NEARLY_FULL_BYTES = 1 << 20


def _disk_nearly_full(path: object) -> bool:
    try:
        return shutil.disk_usage(os.path.dirname(os.path.abspath(str(path)))).free < _NEARLY_FULL_BYTES
    except OSError:
        return False


# SQLite result codes that mean the store as a whole cannot be used right now (not one file's data):
# a sync stops at the first of them, with store_failure()'s line, instead of trying every other file.
_WHOLE_STORE_CODES = frozenset({
    sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED, sqlite3.SQLITE_FULL, sqlite3.SQLITE_READONLY,
    sqlite3.SQLITE_CORRUPT, sqlite3.SQLITE_NOTADB, sqlite3.SQLITE_IOERR, sqlite3.SQLITE_CANTOPEN,
    sqlite3.SQLITE_PERM, sqlite3.SQLITE_AUTH, sqlite3.SQLITE_NOMEM,
})


def is_store_failure(error: BaseException) -> bool:
    """An SQLite error of the whole store (locked past the timeout, disk full, read-only, damaged,
    I/O), as opposed to one that only this write's data caused."""
    code = getattr(error, "sqlite_errorcode", None)
    return isinstance(error, sqlite3.Error) and isinstance(code, int) and (code & 0xFF) in _WHOLE_STORE_CODES


def store_failure(error: sqlite3.Error, path: object = None) -> StoreError:
    """The one actionable line for an SQLite failure of the store (locked, full disk, read-only,
    damaged, …). SQLite never loses a committed transaction to any of them."""
    where = f"the memory store at {path}" if path else "the memory store"
    code = getattr(error, "sqlite_errorcode", None)
    primary = code & 0xFF if isinstance(code, int) else None
    if primary in (sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED):
        message = (f"{where} is locked by another program (waited {busy_timeout_ms() / 1000:g} s): try again "
                   f"when it is done (${BUSY_TIMEOUT_ENV} sets the wait, in milliseconds)")
    elif primary == sqlite3.SQLITE_FULL or (
            primary in (sqlite3.SQLITE_IOERR, sqlite3.SQLITE_CANTOPEN) and path and _disk_nearly_full(path)):
        message = (f"the disk holding {where} is full: free some space and run the command again "
                   "(what is stored is kept)")
    elif primary == sqlite3.SQLITE_READONLY:
        message = (f"{where} is read-only: pimem needs to write the file and its folder (SQLite keeps "
                   "-wal and -shm files beside it)")
    elif primary in (sqlite3.SQLITE_CORRUPT, sqlite3.SQLITE_NOTADB):
        message = (f"{where} is damaged ({error}): pimem leaves it as it is; restore a backup, or move it "
                   "away and run `pimem sync` to build a new one from the transcripts")
    elif primary == sqlite3.SQLITE_CANTOPEN:
        message = f"cannot open {where}: check that its folder exists and that you may write there"
    elif primary in (sqlite3.SQLITE_PERM, sqlite3.SQLITE_AUTH):
        message = f"{where} cannot be used: permission denied"
    elif primary == sqlite3.SQLITE_IOERR:
        message = f"{where} could not be read or written ({error}): check the disk"
    elif primary == sqlite3.SQLITE_NOMEM:
        message = f"{where} failed: out of memory"
    else:
        message = f"{where} failed ({type(error).__name__}: {error})"
    return StoreError(message)


@contextlib.contextmanager
def transaction(conn: sqlite3.Connection) -> Iterator[sqlite3.Connection]:
    """A short write transaction that takes the write lock up front (no deadlock on upgrade).

    When a statement or the commit fails (locked, disk full), SQLite may already have rolled the
    transaction back: roll back only what is left, and let the original error through."""
    conn.execute("BEGIN IMMEDIATE")
    try:
        _check_layout_unchanged(conn)
        yield conn
        conn.execute("COMMIT")
    except BaseException:
        if conn.in_transaction:
            with contextlib.suppress(sqlite3.Error):
                conn.execute("ROLLBACK")
        raise


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
