"""What free-text ranking keeps per process between questions, and when the store may have changed.

A person (the sidebar, the day-zero protocol) asks the next page of the same question: ranking every
candidate conversation again for it would cost as much as the first page. So :mod:`pimem.recall.ranking`
keeps its ranked conversation lists (:class:`RankedLists`, a few dozen, bounded in bytes), and uses
them only while nothing was written to the store since they were read.

**Has the store changed?** (:class:`StoreChanges`.) Each connection's ``PRAGMA data_version`` changes
when another connection or process commits, and its ``total_changes`` when it writes itself. Those
values are the connection's own, so they are remembered per connection (weakly: a closed connection is
forgotten), and every *look* (a query reading them) gets a number from one clock. A look that finds its
connection's values changed, or a connection never seen, marks the clock: whatever was read before
that mark may be stale. Something read after look *m* is used at a later look only if no change was
marked after *m*, and a value is kept only if its connection saw no change while it was made. That is
safe (a kept value is never stale; at worst it is made again): a commit after *m* is seen by the next
look of every connection that had looked before it (or by a connection's first look), so the look that
would use the kept value, or an earlier one, has marked it. A connection in an explicit transaction
(its own snapshot, maybe uncommitted writes) neither uses nor fills the caches; nor does a connection
that cannot be weakly referenced (a plain ``sqlite3.Connection``; pimem's own are
:class:`pimem.store.connection.StoreConnection`).
"""

from __future__ import annotations

import sqlite3
import threading
import weakref
from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Generic, TypeVar

V = TypeVar("V")


class StoreChanges:
    """One clock for a process's connections: whether anything may have been written since a look."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._clock = 0
        self._changed_at = 0
        self._seen: weakref.WeakKeyDictionary[sqlite3.Connection, tuple[int, int]] = weakref.WeakKeyDictionary()

    def look(self, conn: sqlite3.Connection) -> int | None:
        """A moment of the clock, after noting whether ``conn`` sees a change since its last look; None
        when ``conn`` cannot be followed (in a transaction, or not weakly referable)."""
        if conn.in_transaction:
            return None
        try:
            token = (int(conn.execute("PRAGMA data_version").fetchone()[0]), conn.total_changes)
        except sqlite3.Error:
            return None
        with self._lock:
            try:
                before = self._seen.get(conn)
                if before != token:
                    self._seen[conn] = token
            except TypeError:          # not weakly referable: its changes could not be followed
                return None
            self._clock += 1
            if before != token:
                self._changed_at = self._clock
            return self._clock

    def unchanged_since(self, moment: int | None) -> bool:
        """Whether no change was marked after the look ``moment`` (what was read then is still current)."""
        if moment is None:
            return False
        with self._lock:
            return moment >= self._changed_at


class RankedLists(Generic[V]):
    """Values computed from the store at a moment (ranked conversation lists), least recently used
    first out beyond ``entries`` or ``max_bytes`` (the caller's estimate of each value's size)."""

    def __init__(self, changes: StoreChanges, entries: int, max_bytes: int) -> None:
        self.changes = changes
        self.entries = entries
        self.max_bytes = max_bytes
        self._lock = threading.Lock()
        self._kept: OrderedDict[Hashable, tuple[int, int, V]] = OrderedDict()   # key -> (moment, bytes, value)
        self._bytes = 0

    def get_or_make(self, conn: sqlite3.Connection, key: Hashable, make: Callable[[], V],
                    size: Callable[[V], int]) -> V:
        """The value kept under ``key`` if nothing changed since it was made, else ``make()`` (kept when
        nothing changed while it was made)."""
        moment = self.changes.look(conn)
        if moment is not None:
            with self._lock:
                kept = self._kept.get(key)
                if kept is not None:
                    self._kept.move_to_end(key)
            if kept is not None and self.changes.unchanged_since(kept[0]):
                return kept[2]
        value = make()
        if moment is not None and self.changes.look(conn) is not None and self.changes.unchanged_since(moment):
            self._keep(key, moment, value, size(value))
        return value

    def _keep(self, key: Hashable, moment: int, value: V, nbytes: int) -> None:
        if nbytes > self.max_bytes:
            return
        with self._lock:
            old = self._kept.pop(key, None)
            if old is not None:
                self._bytes -= old[1]
            self._kept[key] = (moment, nbytes, value)
            self._bytes += nbytes
            while len(self._kept) > self.entries or self._bytes > self.max_bytes:
                _key, (_moment, dropped, _value) = self._kept.popitem(last=False)
                self._bytes -= dropped

    def clear(self) -> None:
        with self._lock:
            self._kept.clear()
            self._bytes = 0

    def __len__(self) -> int:
        return len(self._kept)
