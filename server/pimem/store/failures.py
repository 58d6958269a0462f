"""Failures of a store in use: one actionable line each.

A store that is locked past the busy timeout, on a full disk, read-only or damaged becomes one line
through :func:`store_failure` (CLI exit 1, LSP -32803); SQLite's transactions keep what was
committed. :func:`is_store_failure` tells such a failure of the whole store from an error that only
one write's data caused (the sync stops on the first, and names one file for the second).
"""

from __future__ import annotations

import os
import shutil
import sqlite3

BUSY_TIMEOUT_MS = 15_000
BUSY_TIMEOUT_ENV = "PIMEM_BUSY_TIMEOUT_MS"


class StoreError(Exception):
    """The store cannot be opened or used. The message is one line saying why and what to do."""


def busy_timeout_ms() -> int:
    """How long a write waits for another program's lock: ``$PIMEM_BUSY_TIMEOUT_MS``, else 15 s."""
    value = os.environ.get(BUSY_TIMEOUT_ENV, "")
    return int(value) if value.isdigit() else BUSY_TIMEOUT_MS



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
    if str(error).startswith("Could not decode to UTF-8"):   # Python's message quotes the row: never shown
        return StoreError(f"{where} holds text that is not valid UTF-8 (written by another program)")
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

