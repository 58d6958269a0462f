"""Stored text that is not valid UTF-8.

SQLite keeps whatever bytes a program writes into a TEXT column (``CAST(x'ff41' AS TEXT)``); Python's
sqlite3 then fails the whole query on that row, with an error that quotes it. pimem writes only valid
UTF-8 (:func:`pimem.textutil.clean_text`), so such a row comes from another program. A query that
meets one is run again with :func:`tolerant_text`: the value then comes back as :class:`Undecodable`
(replacement characters), the caller leaves that row out (:func:`holds_undecodable`), and the
process says so once (:func:`report_undecodable`), never quoting it. Reading tolerantly costs a Python
call per text value, so it is only done for a query that met such a row.
"""

from __future__ import annotations

import contextlib
import logging
import sqlite3
import threading
from collections.abc import Callable, Iterator, Sequence
from typing import TypeVar

log = logging.getLogger("pimem.store")
T = TypeVar("T")

_reported = threading.Event()


class Undecodable(str):
    """A stored text value that is not valid UTF-8, with its bad bytes replaced (U+FFFD)."""

    __slots__ = ()


def is_undecodable(error: BaseException) -> bool:
    """Python's sqlite3 could not decode a TEXT value of a row as UTF-8 (its message quotes the row)."""
    return isinstance(error, sqlite3.OperationalError) and str(error).startswith("Could not decode to UTF-8")


def _tolerant(data: bytes) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return Undecodable(data.decode("utf-8", "replace"))


@contextlib.contextmanager
def tolerant_text(conn: sqlite3.Connection) -> Iterator[None]:
    """Text read on ``conn`` meanwhile never fails to decode: a bad value is an :class:`Undecodable`."""
    previous = conn.text_factory
    conn.text_factory = _tolerant
    try:
        yield
    finally:
        conn.text_factory = previous


def tolerating(conn: sqlite3.Connection, work: Callable[[], T]) -> T:
    """``work()``, run again with :func:`tolerant_text` when it met a value that is not valid UTF-8."""
    try:
        return work()
    except sqlite3.OperationalError as error:
        if not is_undecodable(error):
            raise
    with tolerant_text(conn):
        return work()


def holds_undecodable(values: Sequence[object]) -> bool:
    """Whether a row read with :func:`tolerant_text` holds a value that is not valid UTF-8 (then it is
    left out, and reported once)."""
    if any(isinstance(value, Undecodable) for value in values):
        report_undecodable()
        return True
    return False


def shown_text(value: object) -> str:
    """A text value to show, or "" when it is not valid UTF-8 (left out, reported once)."""
    if isinstance(value, Undecodable):
        report_undecodable()
        return ""
    return str(value or "")


def report_undecodable() -> None:
    """Say once per process that rows were left out (which, or what they hold, is never logged)."""
    if not _reported.is_set():
        _reported.set()
        log.warning("the store holds text that is not valid UTF-8 (written by another program): "
                    "the turns holding it are left out")
