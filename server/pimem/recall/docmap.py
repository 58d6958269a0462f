"""The word index's docs kept per process: each doc's session and lengths, each session's docs.

Free-text ranking (:mod:`pimem.recall.ranking`) looks up the session of every doc the question's
postings hold (up to ~60,000 a question) and the docs of its candidate sessions (~7,000 at a million
turns). Read from ``pimem_word_docs`` for every question, those joins are the largest part of a
question at a million turns (docs/benchmarks.md, "Round 10"). A long-lived process (``pimem serve``,
``pimem mcp``: :func:`enable`) keeps the table in memory instead, compactly:

* per UTC day of the doc keys (``(day << 20) | slot``, :mod:`pimem.index`), an ``array('q')`` of the
  session by slot (``MISSING`` where the table has no such doc): a doc's session is a few C calls
  (``map``), no Python per doc;
* per session, an ``array('q')`` of its docs in ascending order (the order of the table's
  ``(session, doc_key)`` index), each as its key and its two texts' lengths.

**Staying equal to the table.** Every write of ``pimem_word_docs`` but two is made by
:func:`pimem.index.build_pending`, in the transaction that appends the doc to ``pimem_index_log``. So a
map records the log position it is current to and the entry there (a write's random mark, as
:mod:`pimem.recall.dense` does), and before each use reads the docs logged since, whose rows are read
again (a doc logged and gone from the table is dropped), all in one read transaction (the position
checked, the docs logged since, their rows: of one state of the store). It is read again whole when the log no longer
reaches back to it (trimmed, :data:`pimem.index.LOG_KEEP`), when the entry at its position is another
or none (another history under the same store id: a store rolled back, or replaced by a copy), or when
more than :data:`REFRESH_MAX` docs were logged since. The two other writers: a rebuild empties the table
(:func:`pimem.words.delete_all`, not logged) and gives the store a new id, so a map is kept for the
store's file and id (``store_key`` of :mod:`pimem.recall.ranking`) and read again under another; the word index of docs
indexed before it existed (``pimem_words_pending``, after the migration to layout 6) is written
without the log, so while that table holds a doc no map is used or kept. A write to the table
by anything else (SQL by hand) is not seen. A connection in a transaction (its own snapshot) does not
use the map. Ranking asks for the map after reading the postings, so the map is at least as new as
they are (as the join read after them was).
"""

from __future__ import annotations

import contextlib
import sqlite3
import threading
from array import array
from collections import OrderedDict
from collections.abc import Collection, Iterable, Iterator, Sequence
from itertools import repeat
from operator import and_, getitem, rshift

from pimem import index
from pimem.store.batches import chunks, placeholders

MISSING = -(1 << 63)     # in a day's session array: no doc at that slot
SHIFT = index.KEY_SHIFT
MASK = index.SLOT_MASK
REFRESH_MAX = 50_000     # docs logged since the map was read that are read again one by one, at most
MAX_STORES = 2           # stores kept per process (least recently used out)
# rows of the table read per statement when the map is read whole (100,000: +30 MB of RSS at 1M turns, no faster)
LOAD_BATCH = 10_000


class DocMap:
    """``pimem_word_docs`` of one store, at a position of ``pimem_index_log``."""

    def __init__(self, store_key: str, seq: int, mark: int | None) -> None:
        # the store's file and id, "file\0id" (ranking._store_key; a rebuild gives another id)
        self.store_key = store_key
        self.seq = seq                  # pimem_index_log position the map is current to
        self.mark = mark                # the log entry there (None: no entry)
        self.lock = threading.Lock()    # held while changing it and while reading it
        self.session: dict[int, array[int]] = {}   # day -> session per slot (MISSING: no doc)
        # session -> its docs, ascending, each as three values: key, user_chars, reply_chars (one array
        # per session: a session's docs are then one zip in C)
        self.docs: dict[int, array[int]] = {}

    # -- reading ----------------------------------------------------------------------------------

    def sessions(self, docs: Collection[int]) -> list[int]:
        """The session of each of ``docs`` (in their iteration order), MISSING for a doc not in the table."""
        with self.lock:
            try:   # every doc of a posting is in the map (written in the posting's transaction): C only
                return list(map(getitem, map(self.session.__getitem__, map(rshift, docs, repeat(SHIFT))),
                                map(and_, docs, repeat(MASK))))
            except (KeyError, IndexError):
                return [self._session_of(doc) for doc in docs]

    def _session_of(self, doc: int) -> int:
        slots = self.session.get(doc >> SHIFT)
        slot = doc & MASK
        return slots[slot] if slots is not None and slot < len(slots) else MISSING

    def session_docs(self, sessions: Sequence[int]) -> dict[int, list[tuple[int, int, int]]]:
        """Every doc of ``sessions`` with its lengths, (doc, user_chars, reply_chars), ascending keys."""
        found: dict[int, list[tuple[int, int, int]]] = {}
        with self.lock:
            for session in sessions:
                values = iter(self.docs.get(session, ()))
                found[session] = list(zip(values, values, values, strict=True))
        return found

    def nbytes(self) -> int:
        """The memory the arrays hold (their buffers, and ~100 bytes of overhead per array)."""
        with self.lock:
            arrays = [*self.session.values(), *self.docs.values()]
        return sum(len(values) * values.itemsize + 100 for values in arrays)

    # -- writing (the caller holds the lock) --------------------------------------------------------

    def _load(self, rows: Iterable[tuple[int, int, int, int]]) -> None:
        """Rows in ascending key order, all after the map's last key."""
        session_of, docs = self.session, self.docs
        day_now, sessions = -1, array("q")
        for key, session, uc, rc in rows:
            day, slot = key >> SHIFT, key & MASK
            if day != day_now:
                day_now = day
                sessions = session_of.get(day) or session_of.setdefault(day, array("q"))
            gap = slot - len(sessions)
            if gap:
                sessions.extend(repeat(MISSING, gap))
            sessions.append(session)
            held = docs.get(session)
            if held is None:
                held = docs[session] = array("q")
            held.extend((key, uc, rc))

    def _put(self, key: int, session: int, uc: int, rc: int) -> None:
        day, slot = key >> SHIFT, key & MASK
        sessions = self.session.get(day)
        if sessions is None:
            sessions = self.session[day] = array("q")
        if slot >= len(sessions):
            sessions.extend(repeat(MISSING, slot + 1 - len(sessions)))
        before = sessions[slot]
        if before != MISSING and before != session:
            self._unlist(before, key)
        sessions[slot] = session
        held = self.docs.get(session)
        if held is None:
            held = self.docs[session] = array("q")
        at = _find(held, key)
        if at < len(held) and held[at] == key:
            held[at + 1], held[at + 2] = uc, rc
        else:
            held[at:at] = array("q", (key, uc, rc))

    def _drop(self, key: int) -> None:
        sessions = self.session.get(key >> SHIFT)
        slot = key & MASK
        if sessions is None or slot >= len(sessions) or sessions[slot] == MISSING:
            return
        self._unlist(sessions[slot], key)
        sessions[slot] = MISSING

    def _unlist(self, session: int, key: int) -> None:
        held = self.docs.get(session)
        if held is None:
            return
        at = _find(held, key)
        if at < len(held) and held[at] == key:
            del held[at:at + 3]
        if not held:
            del self.docs[session]


def _find(held: array[int], key: int) -> int:
    """Where ``key`` is (or goes) among a session's docs (three values each, ascending keys)."""
    low, high = 0, len(held) // 3
    while low < high:
        middle = (low + high) // 2
        if held[middle * 3] < key:
            low = middle + 1
        else:
            high = middle
    return low * 3


@contextlib.contextmanager
def _snapshot(conn: sqlite3.Connection) -> Iterator[None]:
    """One read transaction: what is read in it is of one state of the store (a write or a copy restored
    over the file meanwhile is either wholly before it or wholly after). The caller is in none."""
    conn.execute("BEGIN")
    try:
        yield
    finally:
        if conn.in_transaction:   # (a statement interrupted by a cancelled request may have ended it)
            conn.execute("COMMIT")


def read(conn: sqlite3.Connection, store_key: str) -> DocMap:
    """The whole table, current to the log position read before it (the docs logged after that are read
    again by :func:`_refresh`, which the caller runs next: a write between is not missed)."""
    with _snapshot(conn):
        seq = index.log_position(conn)[1]
        found = DocMap(store_key, seq, index.log_entry(conn, seq))
    after = -(1 << 63)
    while True:   # in batches by key: one statement would hold a read snapshot for a second, and its rows at once
        rows = conn.execute("SELECT doc_key, session, user_chars, reply_chars FROM pimem_word_docs "
                            f"WHERE doc_key > ? ORDER BY doc_key LIMIT {LOAD_BATCH}", (after,)).fetchall()
        if not rows:
            break
        found._load(rows)
        after = int(rows[-1][0])
    # Rows of a later batch may be newer than the log position: their docs are logged after it, and
    # read again by the refresh.
    return found


def _refresh(conn: sqlite3.Connection, kept: DocMap) -> bool:
    """Brings ``kept`` to the store's present log position (the docs logged since its own, read again).
    False, ``kept`` unchanged, when it cannot be: the store has another id, the log no longer reaches
    back to it or holds another entry there (another history), or more than REFRESH_MAX docs were logged
    since. One thread at a time (the lock held throughout: rows read earlier never overwrite rows read
    later), and everything in one read transaction: the position checked, the docs logged after it, their
    rows and the new position's entry are of one state of the store (read in several, a copy restored
    over the file between two reads gave a map of one history's log and the other's rows, and the copy's
    entry at the new position, which every later check accepted)."""
    with kept.lock:
        with _snapshot(conn):
            if kept.store_key.rpartition("\0")[2] != (index.store_id(conn) or ""):
                return False
            low, high = index.log_position(conn)
            if low > kept.seq + 1 or index.log_entry(conn, kept.seq) != kept.mark:
                return False
            if high == kept.seq:
                return True
            changed = sorted({int(key) for (key,) in conn.execute(
                "SELECT doc_key FROM pimem_index_log WHERE seq > ? AND seq <= ? AND doc_key >= 0", (kept.seq, high))})
            if len(changed) > REFRESH_MAX:
                return False
            rows: list[tuple[int, int, int, int]] = []
            for batch in chunks(changed):
                rows.extend(conn.execute("SELECT doc_key, session, user_chars, reply_chars FROM pimem_word_docs "
                                         f"WHERE doc_key IN ({placeholders(len(batch))})", batch).fetchall())
            mark = index.log_entry(conn, high)
        present = {int(row[0]) for row in rows}
        for key, session, uc, rc in rows:
            kept._put(int(key), int(session), int(uc), int(rc))
        for key in changed:
            if key not in present:
                kept._drop(key)
        kept.seq, kept.mark = high, mark
    return True


class DocMaps:
    """The maps of a process's stores (at most MAX_STORES), shared by its threads."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.maps: OrderedDict[str, DocMap] = OrderedDict()   # by the store's file
        self.reading: set[str] = set()
        self.enabled = False

    def current(self, conn: sqlite3.Connection, store_key: str) -> DocMap | None:
        """The map of ``conn``'s store, brought up to the store's present state; None when it is not
        kept (not enabled, a connection in a transaction, words-only docs pending, or another thread
        reading it): the caller reads the table."""
        if not self.enabled or conn.in_transaction:
            return None
        if conn.execute("SELECT 1 FROM pimem_words_pending LIMIT 1").fetchone() is not None:
            with self.lock:
                self.maps.pop(str(getattr(conn, "path", None) or store_key), None)
            return None
        # Kept by the file (a store replaced or rebuilt under it replaces its map, whose identity differs).
        place = str(getattr(conn, "path", None) or store_key)
        with self.lock:
            kept = self.maps.get(place)
            if kept is not None:
                self.maps.move_to_end(place)
        if kept is not None and kept.store_key == store_key and _refresh(conn, kept):
            return kept
        with self.lock:
            if place in self.reading:   # another thread reads it (a second at a million turns)
                return None
            self.reading.add(place)
            self.maps.pop(place, None)   # not kept beside the new one
        try:
            fresh = read(conn, store_key)
            if not _refresh(conn, fresh):   # the store replaced or rebuilt while it was read: the table
                return None
        finally:
            with self.lock:
                self.reading.discard(place)
        with self.lock:
            self.maps[place] = fresh
            self.maps.move_to_end(place)
            while len(self.maps) > MAX_STORES:
                self.maps.popitem(last=False)
        return fresh


_MAPS = DocMaps()


def enable() -> None:
    """Keep the maps in this process (a long-lived server: ``pimem serve``, ``pimem mcp``)."""
    _MAPS.enabled = True


def disable() -> None:
    """Keep nothing from now on and forget what was kept."""
    _MAPS.enabled = False
    with _MAPS.lock:
        _MAPS.maps.clear()


def current(conn: sqlite3.Connection, store_key: str) -> DocMap | None:
    """This process's map of ``conn``'s store (:meth:`DocMaps.current`)."""
    return _MAPS.current(conn, store_key)
