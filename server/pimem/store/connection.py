"""Opening the store and writing to it: what may be opened, connections, transactions.

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
* WAL mode, a busy timeout, and short write transactions (:func:`transaction`), because the
  extension writes the same file. A store at an older layout is migrated forward on opening
  (``store.schema``); one a newer pimem wrote is opened for reading only.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import stat
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import quote

from pimem.paths import make_private_dirs
from pimem.store.failures import StoreError, busy_timeout_ms, store_failure
from pimem.store.schema import (
    LAYOUT,
    StoreLayout,
    hide_pimem_tables,
    migrate,
    newer_layout_message,
    read_layout,
    table_columns,
)


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
    seed = bool(present) and all(_SEED_COLUMNS[table] <= table_columns(conn, table) for table in present)
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
            hide_pimem_tables(conn)
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


def _migrate(conn: sqlite3.Connection, *, for_writing: bool, path: object) -> StoreLayout:
    """Bring the store to LAYOUT in one write transaction (see ``store.schema``)."""
    with transaction(conn):
        return migrate(conn, for_writing=for_writing, path=path)
