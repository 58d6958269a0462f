"""Reading another program's SQLite database (OpenCode's ``opencode.db``, Cursor's ``state.vscdb``) while
that program runs: never a lock that could block its writer or its checkpoints, never a changed byte,
no ``-wal``/``-shm`` left behind where there was none.

How it is opened depends on what is beside the database (measured in tests/importers/test_foreign_db.py
with a writer committing in a loop in WAL mode, as OpenCode does):

* ``-shm`` present: the database is in WAL mode and (probably) open. ``mode=ro``: a WAL reader takes
  only a read mark in the shared memory, which never blocks a writer; a passive checkpoint stops at the
  mark until the read ends, so every read is one short transaction. SQLite creates nothing new.
* neither ``-wal`` nor ``-shm``: nobody has it open in WAL mode (it was closed cleanly, or it is in
  rollback mode). ``immutable=1``: no lock at all and no file created; a writer that starts meanwhile
  may make the read fail (an issue, retried next sync), never wait.
* ``-wal`` without ``-shm`` (its program crashed): a reader would have to rebuild the shared memory,
  which needs a write lock and creates the ``-shm``. The database and its ``-wal`` are copied to a
  private temporary folder and the copy is read.

Errors come out as :class:`ForeignDatabaseError` (an OSError: the file cannot be read now), never as
``sqlite3.Error``, which the sync takes for a failure of its own store.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import sqlite3
import tempfile
from collections.abc import Iterator
from pathlib import Path

BUSY_TIMEOUT_MS = 2000


class ForeignDatabaseError(OSError):
    """Another program's database could not be read now (locked by a recovery, damaged, replaced)."""


def _uri(path: str, query: str) -> str:
    return f"{Path(os.path.abspath(path)).as_uri()}?{query}"


def _connect(uri: str) -> sqlite3.Connection:
    conn = sqlite3.connect(uri, uri=True, timeout=BUSY_TIMEOUT_MS / 1000, isolation_level=None,
                           check_same_thread=False)
    conn.execute("PRAGMA query_only = 1")
    return conn


@contextlib.contextmanager
def open_foreign(path: str) -> Iterator[sqlite3.Connection]:
    """A read-only connection to another program's database (see the module's docstring), in autocommit
    mode: each statement is its own short read transaction unless the caller opens one with BEGIN."""
    wal, shm = os.path.exists(path + "-wal"), os.path.exists(path + "-shm")
    copy_dir: str | None = None
    try:
        try:
            if shm:
                conn = _connect(_uri(path, "mode=ro"))
            elif not wal:
                conn = _connect(_uri(path, "mode=ro&immutable=1"))
            else:
                copy_dir = tempfile.mkdtemp(prefix="pimem-db-")
                copy = os.path.join(copy_dir, "copy.db")
                shutil.copyfile(path, copy)
                with contextlib.suppress(FileNotFoundError):  # checkpointed and removed meanwhile
                    shutil.copyfile(path + "-wal", copy + "-wal")
                conn = _connect(_uri(copy, "mode=rw"))
        except sqlite3.Error as error:
            raise ForeignDatabaseError(f"cannot open the database ({error})") from None
        try:
            yield conn
        except sqlite3.Error as error:
            raise ForeignDatabaseError(f"cannot read the database ({error})") from None
        finally:
            conn.close()
    finally:
        if copy_dir is not None:
            shutil.rmtree(copy_dir, ignore_errors=True)


def table_names(conn: sqlite3.Connection) -> set[str]:
    return {str(name) for (name,) in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
