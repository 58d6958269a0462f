"""Recall of several common entities from whole index lists held in memory as bitmaps.

The walk of :mod:`pimem.recall.indexed` follows the top results when a rare list can pivot. When two
or more entities each match thousands of turns it cannot: presence scores are small integers with
many ties, so proving that no older turn scores higher means bounding every turn of the history, and
reading common lists through FTS5 costs about a microsecond per posting, day after day. Here each
list becomes one bitmap over the docs (read once, then kept by the process), the bound of every doc
is summed over the bitmaps at once (bit-sliced integers: a handful of big-int operations per list),
and docs are verified level by level, highest bound first, newest day first within a level, with the
oracle's scoring, until the k-th result cannot be beaten. Results are exactly the oracle's: a list's
bitmap holds every doc its FTS5 expression matches (a superset of the true matches), so a bound is
never below a doc's score, and every result is verified against the stored text.

**Coordinates.** A doc's bit is ``base[day] + slot`` (:data:`pimem.index.KEY_SHIFT`): days are laid
end to end in order, each as long as its highest slot, so mapping a key is one dict lookup, and a higher
coordinate is a later day (the order recall breaks ties by). Reading them takes two b-tree lookups a day.

**Staying exact as the index grows.** A :class:`Snapshot` records the position of
``pimem_index_log`` when it read the docs. Every doc indexed after that (new, grown, re-keyed) is in
the log: those docs form the *delta*, scored exactly from their rows before the bitmaps are used,
and their bits, stale or missing, can only add verified candidates. Pending docs and rows written
behind pimem's back are scanned exactly by the caller as before. When the delta grows past
:data:`MAX_DELTA`, the log was trimmed past the snapshot or the index rebuilt (:func:`pimem.index.epoch`),
the snapshot and its lists are dropped and read again; a transaction that sees an older index than the
snapshot gets the walk.

**The same store.** The path and inode of the file say nothing of its content: a backup restored in
place, a store created anew that got the same inode, or the store rolled back to an older copy of
itself and synced on can show the same epoch and log position with other docs behind them. So each use
first checks the store's id (:func:`pimem.index.store_id`, new at creation and at every rebuild) and
the log entry at the position the delta was read up to (a write's random mark, :func:`pimem.index.log_entry`):
another id, or another entry there, is another history, and everything is read again from the
caller's transaction. A transaction whose log ends before that position (an older view, or a store
rolled back and not yet written past it) gets the walk.

Only processes that answer many queries keep lists (:func:`enable`: ``pimem serve``, ``pimem mcp``);
the memory is bounded (:data:`DEFAULT_MAX_BYTES`, least recently used lists go first). Without it the
walk answers, as for every query of fewer than two common entities.
"""

from __future__ import annotations

import bisect
import re
import sqlite3
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from pimem import index
from pimem.recall.candidates import EVERY_TURN, CandidateList

DEFAULT_MAX_BYTES = 16 << 20   # bitmaps kept per store (1M turns: 125 KB per list, 128 lists)
MAX_DELTA = 5000               # docs indexed since the snapshot, scored exactly each query, at most
MIN_COMMON_ENTITIES = 2        # fewer common entities: the walk is cheaper (a rare list pivots)...
AFFORDABLE = 30_000            # ... unless its one long list is this short (read whole in a few ms)

_NONZERO = re.compile(rb"[^\x00]")
_BITS_OF = tuple(tuple(bit for bit in range(8) if value >> bit & 1) for value in range(256))


@dataclass
class Snapshot:
    """The docs of one index state, laid out as bit coordinates, and the lists read on it."""

    store: str | None                 # index.store_id: the identity of the store's content
    epoch: int                        # index.epoch: postings are only ever added within one epoch
    seq: int                          # pimem_index_log position when the docs were read
    base: dict[int, int]              # day -> its first coordinate
    slots: dict[int, int]             # day -> its number of slots (highest slot + 1)
    days: list[int]                   # the days, in coordinate order, and ...
    starts: list[int]                 # ... their first coordinates (to map a coordinate back to its key)
    width: int                        # coordinates in all
    present: int                      # every coordinate (a free slot is verified to nothing)
    delta: frozenset[int] = frozenset()   # docs indexed since (replaced whole: reader threads share it)
    delta_seq: int = 0
    delta_mark: int | None = None     # the log entry at delta_seq (the same history up to it)
    lists: OrderedDict[tuple[str, ...], int] = field(default_factory=OrderedDict)
    list_bytes: int = 0
    # (table, entity) -> (source of its list, whether the walk follows it exactly): a known entity
    # needs no FTS5 work at all
    entities: dict[tuple[str, str], tuple[tuple[str, ...] | None, bool]] = field(default_factory=dict)

    def first_of_day(self, day: int) -> int:
        """The first coordinate of ``day`` or of the first later day in the snapshot (width if none)."""
        position = bisect.bisect_left(self.days, day)
        return self.starts[position] if position < len(self.days) else self.width

    def key_at(self, where: int) -> int:
        position = bisect.bisect_right(self.starts, where) - 1
        return (self.days[position] << index.KEY_SHIFT) | (where - self.starts[position])

    def bitmap(self, keys: Iterable[int]) -> int:
        """The bitmap of doc keys (keys outside the snapshot, i.e. in the delta, are left out)."""
        bits = bytearray((self.width + 7) >> 3)
        base, slots, shift, mask = self.base, self.slots, index.KEY_SHIFT, index.SLOT_MASK
        for key in keys:
            day = key >> shift
            start = base.get(day)
            if start is None:
                continue
            slot = key & mask
            if slot < slots[day]:
                where = start + slot
                bits[where >> 3] |= 1 << (where & 7)
        return int.from_bytes(bits, "little")


def read_snapshot(conn: sqlite3.Connection) -> Snapshot:
    """The docs' coordinates, at the current log position (inside the caller's snapshot): per day, its
    first and highest key, two lookups at the ends of a b-tree range (a million turns: 900 days, 30 ms).
    Every slot up to a day's highest counts as a doc: a slot left free (a turn moved or went away) only
    ever gets stale postings' bits, and verifying it finds no row."""
    store, epoch, seq = index.store_id(conn), index.epoch(conn), index.log_position(conn)[1]
    base: dict[int, int] = {}
    slots: dict[int, int] = {}
    days: list[int] = []
    starts: list[int] = []
    width = 0
    after = -1
    while (first := conn.execute("SELECT min(doc_key) FROM pimem_docs WHERE doc_key > ?", (after,)).fetchone()[0]) \
            is not None:
        day = int(first) >> index.KEY_SHIFT
        low, high = index.day_bounds(day)
        top = int(conn.execute("SELECT max(doc_key) FROM pimem_docs WHERE doc_key BETWEEN ? AND ?",
                               (low, high)).fetchone()[0])
        base[day], slots[day] = width, (top & index.SLOT_MASK) + 1
        days.append(day)
        starts.append(width)
        width += slots[day]
        after = high
    return Snapshot(store, epoch, seq, base, slots, days, starts, width, (1 << width) - 1, delta_seq=seq,
                    delta_mark=index.log_entry(conn, seq))


class ListCache:
    """The snapshot and lists of one store, shared by a process's reader threads."""

    def __init__(self, max_bytes: int = DEFAULT_MAX_BYTES) -> None:
        self.max_bytes = max_bytes
        self._lock = threading.Lock()
        self._snapshot: Snapshot | None = None
        self._reading = False

    def snapshot(self, conn: sqlite3.Connection) -> Snapshot | None:
        """The snapshot, its delta brought up to the caller's transaction; read again when the store is
        another (another id, or another log entry where the delta was read up to), the index was
        rebuilt, the delta grew past MAX_DELTA or the log no longer reaches back to it. None when the
        caller's transaction sees an older index than the kept lists (another reader thread read them
        later, or the store was rolled back and not yet written past them), or while another thread
        reads them: the walk answers it."""
        store, epoch = index.store_id(conn), index.epoch(conn)
        low, high = index.log_position(conn)
        with self._lock:
            current = self._snapshot
            seen, mark = (current.delta_seq, current.delta_mark) if current is not None else (0, None)
        if current is not None and store == current.store:
            if (epoch, high) < (current.epoch, seen):
                return None
            if epoch == current.epoch and low <= current.seq + 1 and index.log_entry(conn, seen) == mark:
                if high > seen:
                    changed = frozenset(index.logged_since(conn, seen))
                    newest = index.log_entry(conn, high)
                    with self._lock:
                        current.delta = current.delta | changed
                        if high > current.delta_seq:
                            current.delta_seq, current.delta_mark = high, newest
                if len(current.delta) <= MAX_DELTA:
                    return current
        with self._lock:
            if self._reading:      # another thread reads them (a second at a million turns): walk meanwhile
                return None
            self._reading = True
        try:
            fresh = read_snapshot(conn)
        finally:
            with self._lock:
                self._reading = False
        with self._lock:
            kept = self._snapshot
            # Kept lists of another history are replaced; of the same one, only by newer ones.
            if kept is None or kept is current or kept.store != fresh.store \
                    or (fresh.epoch, fresh.seq) >= (kept.epoch, kept.seq):
                self._snapshot = fresh
        return fresh

    def known(self, snapshot: Snapshot, table: str, entity: str) -> tuple[int, bool] | None:
        """The bitmap of an entity's list in ``table`` and whether it is short, when kept."""
        with self._lock:
            entry = snapshot.entities.get((table, entity))
            if entry is None:
                return None
            source, short = entry
            if source is None:
                return 0, short
            if source[-1] == EVERY_TURN:
                return snapshot.present, short
            bits = snapshot.lists.get(source)
            if bits is None:
                return None
            snapshot.lists.move_to_end(source)
            return bits, short

    def remember(self, snapshot: Snapshot, table: str, entity: str, candidate: CandidateList) -> None:
        with self._lock:
            snapshot.entities[(table, entity)] = (candidate.source if candidate.size != 0 else None,
                                                  candidate.short)

    def bitmap(self, snapshot: Snapshot, candidate: CandidateList) -> int:
        """The bitmap of a fresh candidate list: kept, or read whole and kept."""
        if candidate.size == 0 or candidate.source is None:
            return snapshot.bitmap(candidate.remaining())
        if candidate.source[-1] == EVERY_TURN:
            return snapshot.present
        with self._lock:
            kept = snapshot.lists.get(candidate.source)
            if kept is not None:
                snapshot.lists.move_to_end(candidate.source)
                return kept
        bits = snapshot.bitmap(candidate.remaining())
        size = (snapshot.width + 7) >> 3
        with self._lock:
            if candidate.source not in snapshot.lists and size <= self.max_bytes:
                snapshot.lists[candidate.source] = bits
                snapshot.list_bytes += size
                while snapshot.list_bytes > self.max_bytes:
                    snapshot.lists.popitem(last=False)
                    snapshot.list_bytes -= size
        return bits


_caches: dict[object, ListCache] = {}
_caches_lock = threading.Lock()
_enabled_bytes: int | None = None


def enable(max_bytes: int = DEFAULT_MAX_BYTES) -> None:
    """Keep index lists in this process (a long-lived server: ``pimem serve``, ``pimem mcp``)."""
    global _enabled_bytes
    _enabled_bytes = max_bytes


def disable() -> None:
    """Keep nothing from now on and forget what was kept (tests that built a server in process)."""
    global _enabled_bytes
    _enabled_bytes = None
    with _caches_lock:
        _caches.clear()


def cache_for(conn: sqlite3.Connection) -> ListCache | None:
    """This process's cache for the store of ``conn``, when :func:`enable` was called."""
    if _enabled_bytes is None:
        return None
    identity = (getattr(conn, "path", None), getattr(conn, "identity", None))
    with _caches_lock:
        cache = _caches.get(identity)
        if cache is None:
            cache = _caches[identity] = ListCache(_enabled_bytes)
        return cache


def affordable(conn: sqlite3.Connection, candidate: CandidateList) -> bool:
    """Whether a list is cheap to read whole: short, every doc (or none), or at most AFFORDABLE long."""
    if candidate.short or candidate.size == 0 or (candidate.source is not None and candidate.source[-1] == EVERY_TURN):
        return True
    if candidate.table is None or candidate.expression is None:
        return False
    table = candidate.table
    counted = conn.execute(f"SELECT count(*) FROM (SELECT rowid FROM {table} WHERE {table} MATCH ? "
                           f"LIMIT {AFFORDABLE + 1})", (candidate.expression,)).fetchone()[0]
    return int(counted) <= AFFORDABLE


def positions(mask: int) -> list[int]:
    """The set bits of ``mask``, lowest first."""
    data = mask.to_bytes((mask.bit_length() + 7) >> 3, "little")
    found: list[int] = []
    for match in _NONZERO.finditer(data):
        start = match.start()
        found.extend((start << 3) + bit for bit in _BITS_OF[data[start]])
    return found


def add_weighted(planes: list[int], bits: int, weight: int) -> None:
    """planes (a bit-sliced integer per doc, lowest plane first) += weight × bits."""
    plane = 0
    while weight:
        if weight & 1:
            carry, level = bits, plane
            while carry:
                if level >= len(planes):
                    planes.extend([0] * (level - len(planes)))
                    planes.append(carry)
                    break
                current = planes[level]
                planes[level] = current ^ carry
                carry &= current
                level += 1
        weight >>= 1
        plane += 1


def highest_level(planes: Sequence[int], among: int) -> tuple[int, int]:
    """The highest value the planes give a doc of ``among``, and the docs that have it."""
    chosen, level = among, 0
    for plane in range(len(planes) - 1, -1, -1):
        narrowed = chosen & planes[plane]
        if narrowed:
            chosen = narrowed
            level |= 1 << plane
    return level, chosen


class Threshold(Protocol):
    """The k-th result so far (a RecallRow)."""

    @property
    def hits(self) -> int: ...

    @property
    def ts(self) -> int: ...


def walk_levels(snapshot: Snapshot, lists: Sequence[tuple[int, int]],
                threshold: Callable[[], Threshold | None], verify: Callable[[list[int]], None],
                batch: int = 64) -> None:
    """Verify docs highest bound first (newest day first within a bound) until none left can enter:
    a doc enters with a score above the k-th result's, or equal to it and at least as new. ``lists``
    are (bitmap, weight)."""
    planes: list[int] = []
    for bits, weight in lists:
        if bits and weight:
            add_weighted(planes, bits, weight)
    remaining = snapshot.present
    while remaining:
        level, docs = highest_level(planes, remaining)
        if level == 0:
            break
        theta = threshold()
        if theta is not None and level < theta.hits:
            break
        remaining ^= docs
        order = positions(docs)
        order.reverse()          # newest day first (a day's coordinates follow the older days')
        for start in range(0, len(order), batch):
            theta = threshold()
            chunk = order[start:start + batch]
            if theta is not None:
                if level < theta.hits:
                    break
                if level == theta.hits:
                    # Only as new as the k-th result or newer can still enter: not a doc of an older day
                    # (a doc's key is the day of its ts; verify decides within the k-th result's day).
                    oldest = snapshot.first_of_day(index.day_of(theta.ts))
                    chunk = [where for where in chunk if where >= oldest]
                    if not chunk:
                        break
            verify([snapshot.key_at(where) for where in chunk])
