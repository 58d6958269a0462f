"""Indexed execution of a recall query: the same results as the oracle
(:func:`pimem.recall.semantics.recall_scan`), fast.

Each entity gives two candidate lists (:mod:`pimem.recall.candidates`: user text, weight 2w; reply,
weight w; w = 1 unless the query weighs its entities). Every candidate is verified against the stored
text with the oracle's scoring, so the index never decides a result.

The lists run newest day first. Once ``limit`` results are held, ``θ`` is the worst of them; a turn can
only enter with a higher score, or the same score and a later time. So, day by day:

* candidates come only from a set S of lists chosen so that a turn in none of them cannot beat ``θ``
  (the lists left out weigh ≤ θ's score; the longest lists are left out first);
* a candidate's upper bound is the weight of the lists known to hold it (short lists are followed
  exactly, long ones left out of S are assumed to) — no text is read unless it could beat ``θ``;
* a long list L that is not read still tightens the bounds through joint lists: for a list S read that
  day in the same table, FTS5 intersects the two expressions (``S AND L``, in C, cheap), and a key of
  S that is not in the intersection is not in L (for ``flamingo cache`` at 1M turns, 296 turns are
  verified instead of 4,408);
* the search stops when the lists not yet exhausted cannot reach ``θ``.

That is MaxScore with a better choice of the lists to iterate; its cost follows what the top results
need, not how many turns match. Except when no rare list can pivot: with two or more common entities (or
lists that are cheap to read whole), a process that keeps lists answers from them instead
(:mod:`pimem.recall.dense`: every doc bounded at once, verified highest bound first).

Turns not in the index yet (pending docs, rows written behind pimem's back) are scanned exactly first
(:data:`PENDING_ROWS_SQL`, :data:`ORPHAN_ROWS_SQL`).
"""

from __future__ import annotations

import bisect
import itertools
import sqlite3
from collections.abc import Callable, Iterator, Sequence

from pimem import index
from pimem.recall import dense
from pimem.recall.candidates import CandidateList, ListBuilder
from pimem.recall.query import RecallQuery
from pimem.recall.rows import ROW_COLUMNS, RecallRow
from pimem.recall.semantics import ALL_ROWS_SQL, admit, score, top_rows
from pimem.store.batches import chunks, placeholders

_BATCH = 64
_SEED_BUDGET = 256      # candidates of the rarest lists a weighted query verifies before its walk

# The two sets of turns the index cannot answer yet. Both must cost nothing when they are empty, which
# is almost always: CROSS JOIN pins pimem_pending as the outer loop (with a plain JOIN SQLite scanned
# every doc on each query, 90 ms at 100k turns), and the watermark bounds the orphan search by rowid.
PENDING_ROWS_SQL = (
    f"SELECT {ROW_COLUMNS} FROM pimem_pending p CROSS JOIN pimem_docs d ON d.doc_key = p.doc_key "
    "JOIN turns t ON t.turn_id = d.turn_id JOIN sessions s ON s.session_id = t.session_id")
ORPHAN_ROWS_SQL = (
    f"SELECT {ROW_COLUMNS} FROM turns t JOIN sessions s ON s.session_id = t.session_id "
    "LEFT JOIN pimem_docs d ON d.turn_id = t.turn_id WHERE t.rowid > ? AND d.turn_id IS NULL")


def index_cannot_answer(entities_lower: Sequence[str]) -> bool:
    """Control characters that the index uses itself (sentinels) or cannot store are answered exactly
    by the scan; no real entity contains them."""
    return any("\x00" in entity or "\x01" in entity for entity in entities_lower)


def recall_with_index(conn: sqlite3.Connection, query: RecallQuery, entities_lower: list[str]) -> list[RecallRow]:
    """:func:`recall_indexed` on one snapshot of the store (the caller's, when it holds one), the turns
    not in the index yet included."""

    def unindexed() -> Iterator[Sequence[object]]:
        """Turns not in the index yet, scanned exactly: docs whose postings are pending, and rows
        written behind pimem's back that have no doc yet."""
        pending = conn.execute(PENDING_ROWS_SQL)
        orphans = conn.execute(ORPHAN_ROWS_SQL, (index.watermark(conn),))
        return itertools.chain(pending, orphans)

    if conn.in_transaction:  # the caller holds the snapshot
        return recall_indexed(conn, query, entities_lower, unindexed)
    conn.execute("BEGIN")  # one snapshot for the whole query
    try:
        return recall_indexed(conn, query, entities_lower, unindexed)
    finally:
        conn.execute("COMMIT")


class _Best:
    """The best ``limit`` rows so far, one per exchange (copies collapse onto their best row)."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.rows: list[RecallRow] = []
        self._keys: list[tuple[int, int, str]] = []
        self._by_copy: dict[tuple[str, str, int], RecallRow] = {}

    def _remove(self, row: RecallRow) -> None:
        position = bisect.bisect_left(self._keys, row.sort_key)
        del self._keys[position], self.rows[position]
        del self._by_copy[row.copy_key]

    def _insert(self, row: RecallRow) -> None:
        position = bisect.bisect_left(self._keys, row.sort_key)
        self._keys.insert(position, row.sort_key)
        self.rows.insert(position, row)
        self._by_copy[row.copy_key] = row

    def consider(self, row: RecallRow | None) -> None:
        if row is None:
            return
        kept = self._by_copy.get(row.copy_key)
        if kept is not None:
            if row.sort_key < kept.sort_key:
                self._remove(kept)
                self._insert(row)
            return
        if len(self.rows) < self.limit:
            self._insert(row)
        elif row.sort_key < self._keys[-1]:
            self._remove(self.rows[-1])
            self._insert(row)

    @property
    def threshold(self) -> RecallRow | None:
        return self.rows[-1] if len(self.rows) == self.limit else None


_UNKNOWN_LENGTH = 10**12


def _lists_to_follow(open_lists: Sequence[CandidateList], budget: int) -> list[CandidateList]:
    """The lists a turn that can still enter must appear in: leave out the longest lists whose weights
    add up to at most ``budget`` (a turn only in those scores ≤ budget). Exact for up to 8 lists,
    greedy beyond."""
    if budget <= 0:
        return list(open_lists)

    def length(candidate: CandidateList) -> int:
        return candidate.size if candidate.size is not None else _UNKNOWN_LENGTH

    if len(open_lists) > 8:
        left_out: set[int] = set()
        spent = 0
        for i in sorted(range(len(open_lists)), key=lambda i: -length(open_lists[i])):
            if spent + open_lists[i].weight <= budget:
                left_out.add(i)
                spent += open_lists[i].weight
        return [candidate for i, candidate in enumerate(open_lists) if i not in left_out]
    best_left_out: tuple[int, ...] = ()
    best_length = -1
    for size in range(len(open_lists), 0, -1):
        for choice in itertools.combinations(range(len(open_lists)), size):
            if sum(open_lists[i].weight for i in choice) > budget:
                continue
            total = sum(length(open_lists[i]) for i in choice)
            if total > best_length:
                best_left_out, best_length = choice, total
    return [candidate for i, candidate in enumerate(open_lists) if i not in best_left_out]


_THRESHOLD_CAP = 600        # necessary-condition sets larger than this are not read (the walk goes on)
_THRESHOLD_SUBSETS = 16     # at most this many conjunctions in one FTS5 expression
_THRESHOLD_TRIES = 3        # attempts per query (each one that fails costs FTS5 work)


def _at_least(lists: Sequence[CandidateList], need: int) -> str | None:
    """An FTS5 expression (over the table of ``lists``) matching every doc whose weight over ``lists``
    is at least ``need``: the OR of the minimal sets of lists that weigh ``need``. "" when no doc can
    (the lists weigh less), None when no useful expression exists (``need`` ≤ 0, or too many sets:
    then the longest lists are assumed to hold every doc and left out, which only weakens it)."""
    usable = sorted((candidate for candidate in lists if candidate.core is not None),
                    key=lambda candidate: candidate.size if candidate.size is not None else _UNKNOWN_LENGTH)
    need -= sum(candidate.weight for candidate in lists if candidate.core is None)
    while usable and need > 0:
        if sum(candidate.weight for candidate in usable) < need:
            return ""
        minimal: list[tuple[CandidateList, ...]] = []
        for size in range(1, len(usable) + 1):
            for choice in itertools.combinations(usable, size):
                total = sum(candidate.weight for candidate in choice)
                if total >= need and total - min(candidate.weight for candidate in choice) < need:
                    minimal.append(choice)
            if len(minimal) > _THRESHOLD_SUBSETS:
                break
        if len(minimal) <= _THRESHOLD_SUBSETS:
            return " OR ".join("(" + " AND ".join(f"({candidate.core})" for candidate in choice) + ")"
                               for choice in minimal)
        need -= usable.pop().weight   # the longest list: assumed to hold every doc
    return None


def _threshold_candidates(conn: sqlite3.Connection, open_lists: Sequence[CandidateList], theta_hits: int,
                          high: int, large: set[tuple[int, tuple[int, ...]]]) -> set[int] | None:
    """Every doc key ≤ ``high`` that can score above ``theta_hits``, as a small superset, or None when
    the index cannot give one cheaply.

    A doc's score is at most u + r, the weights of the user lists and of the reply lists that hold it,
    and r is at most the weight R of all reply lists. So a doc scoring above θ has u ≥ θ + 1 − R: when
    that is positive, it is one FTS5 expression over the user table (the OR of the smallest sets of
    entities weighing that much, each an AND), which FTS5 evaluates in C, skipping through the longer
    lists; user texts are short, so these lists are a fraction of the reply lists. None when the set is
    larger than ``_THRESHOLD_CAP`` (remembered in ``large``: it is not read again for this query)."""
    user = [candidate for candidate in open_lists if candidate.table == "pimem_fts_user"]
    need = theta_hits + 1 - sum(candidate.weight for candidate in open_lists if candidate.table == "pimem_fts_reply")
    known = (need, tuple(id(candidate) for candidate in user))
    if need <= 0 or known in large:
        return None
    expression = _at_least(user, need)
    if expression is None:
        return None
    if expression == "":
        return set()
    keys = {key for (key,) in conn.execute(
        f"SELECT rowid FROM pimem_fts_user WHERE pimem_fts_user MATCH ? AND rowid <= ? ORDER BY rowid DESC "
        f"LIMIT {_THRESHOLD_CAP + 1}", (expression, high))}
    if len(keys) > _THRESHOLD_CAP:
        large.add(known)
        return None
    return keys


def _common_entities(lists: Sequence[CandidateList]) -> int:
    """How many entities have a list longer than the walk follows exactly (lists come in pairs:
    user text, reply)."""
    return sum(1 for user, reply in zip(lists[::2], lists[1::2], strict=True) if not (user.short and reply.short))


def _read_for_bounds(candidate: CandidateList) -> bool:
    """A long list of the user table is read along anyway (user texts are short, so its lists are a
    fraction of the reply lists): its exact membership keeps candidates that hold a common entity
    only in the reply from being verified. A list of every turn is not (it holds every candidate)."""
    return candidate.table == "pimem_fts_user" and candidate.expression is not None


def recall_indexed(conn: sqlite3.Connection, query: RecallQuery, entities_lower: list[str],
                   unindexed: Callable[[], Iterator[Sequence[object]]]) -> list[RecallRow]:
    best = _Best(query.limit)
    for values in unindexed():
        best.consider(admit(values, query, entities_lower))

    builder = ListBuilder(conn)
    # An entity's lists weigh 2w (user text) and w (reply); an entity given twice weighs the sum.
    weight_of: dict[str, int] = {}
    for entity, weight in zip(entities_lower, query.weights or [1] * len(entities_lower), strict=True):
        weight_of[entity] = weight_of.get(entity, 0) + weight
    # One list per entity and field: user text (weight 2w) and reply (w).
    specs = [(table, entity, list_weight) for entity, weight in weight_of.items()
             for table, list_weight in (("pimem_fts_user", 2 * weight), ("pimem_fts_reply", weight))]
    cache = dense.cache_for(conn) if len(weight_of) >= dense.MIN_COMMON_ENTITIES else None
    snapshot = cache.snapshot(conn) if cache is not None else None
    # A list kept by this process (pimem.recall.dense) needs no FTS5 work; a placeholder of its length
    # class stands in for it until the way to answer is chosen.
    kept = [cache.known(snapshot, table, entity) if cache is not None and snapshot is not None else None
            for table, entity, _ in specs]
    lists: list[CandidateList] = []
    for (table, entity, list_weight), known in zip(specs, kept, strict=True):
        if known is not None:
            lists.append(CandidateList(iter(()), list_weight, 0 if known[1] else None))
            continue
        lists.append(builder.build(table, entity, list_weight))
        if cache is not None and snapshot is not None:
            cache.remember(snapshot, table, entity, lists[-1])

    def verify(keys: list[int]) -> None:
        theta = best.threshold   # only rises: a row scoring below it now can never enter
        for values in conn.execute(
            f"SELECT {ROW_COLUMNS} FROM pimem_docs d JOIN turns t ON t.turn_id = d.turn_id "
            f"JOIN sessions s ON s.session_id = t.session_id WHERE d.doc_key IN ({','.join('?' * len(keys))})",
            keys,
        ):
            if theta is not None and score(str(values[5] or "").lower(), str(values[6] or "").lower(),
                                           entities_lower, query.weights) < theta.hits:
                continue
            best.consider(admit(values, query, entities_lower))

    if cache is not None and snapshot is not None and (
            _common_entities(lists) >= dense.MIN_COMMON_ENTITIES
            or all(known is not None or dense.affordable(conn, candidate)
                   for candidate, known in zip(lists, kept, strict=True))):
        # Several common entities (no rare list can pivot), or lists that are cheap to read whole:
        # bound every doc at once (pimem.recall.dense).
        changed = sorted(snapshot.delta)
        for start in range(0, len(changed), _BATCH):
            verify(changed[start:start + _BATCH])
        bitmaps = [known[0] if known is not None else cache.bitmap(snapshot, candidate)
                   for candidate, known in zip(lists, kept, strict=True)]
        dense.walk_levels(snapshot, [(bits, candidate.weight) for bits, candidate in zip(bitmaps, lists, strict=True)],
                          lambda: best.threshold, verify)
        return top_rows(best.rows, query.limit)
    # The walk reads lists lazily: the placeholders become real lists.
    lists = [candidate if known is None else builder.build(table, entity, list_weight)
             for candidate, known, (table, entity, list_weight) in zip(lists, kept, specs, strict=True)]

    # A weighted (free-text) query mixes rare terms of high weight with common ones of low weight. Its
    # rarest lists are verified first, whole: the turns holding the rare terms then set θ from the
    # start, and the walk below leaves the long lists of the common terms out from its first day
    # (instead of reading them day by day until θ rises above their weight). Any θ taken from real
    # rows is a valid bound, so this changes no result. Entity queries walk as before.
    verified: set[int] = set()
    if query.weights is not None:
        budget = _SEED_BUDGET
        for seed in sorted((c for c in lists if c.expression is not None and c.table is not None
                            and c.size is not None and c.size <= _SEED_BUDGET), key=lambda c: (c.size or 0, -c.weight)):
            if (seed.size or 0) > budget:
                break
            rows = conn.execute(f"SELECT rowid FROM {seed.table} WHERE {seed.table} MATCH ?", (seed.expression,))
            keys = [key for (key,) in rows if key not in verified]
            budget -= len(keys)
            verified.update(keys)
            for start in range(0, len(keys), _BATCH):
                verify(keys[start:start + _BATCH])

    # Joint lists: S ∩ L for a list S read on a day and a long list L that is not (same table, so the
    # AND of their expressions yields exactly the keys in both). A key of S not in S ∩ L is not in L:
    # its bound loses L's weight without L being read.
    joints: dict[tuple[int, int], CandidateList | None] = {}

    def joint(read: CandidateList, unread: CandidateList) -> CandidateList | None:
        pair = (id(read), id(unread))
        if pair not in joints:
            joints[pair] = None
            if (read.table is not None and read.table == unread.table and read.expression is not None
                    and unread.expression is not None):
                joints[pair] = builder.matching(read.table, f"{read.expression} AND {unread.expression}", 0,
                                                read.size)
        return joints[pair]

    follow_memo: dict[tuple[int, tuple[int, ...]], list[CandidateList]] = {}

    def follow_for(open_lists: list[CandidateList], budget: int) -> list[CandidateList]:
        memo_key = (budget, tuple(id(candidate) for candidate in open_lists))
        if memo_key not in follow_memo:
            follow_memo[memo_key] = _lists_to_follow(open_lists, budget)
        return follow_memo[memo_key]

    def newest_day(candidates: Sequence[CandidateList]) -> int:
        return index.key_day(max(candidate.head for candidate in candidates if candidate.head is not None))

    threshold_tried: int | None = None
    threshold_tries = 0
    large_sets: set[tuple[int, tuple[int, ...]]] = set()
    while True:
        theta = best.threshold
        open_lists = [candidate for candidate in lists if not candidate.exhausted]
        if not open_lists:
            break
        if theta is None:
            follow = open_lists
        else:
            # A turn enters only with a score above θ's, or equal and newer. Newer is still possible
            # on θ's day and after; before it, only a higher score will do, which leaves out more lists.
            follow = follow_for(open_lists, theta.hits - 1)
            if follow and (newest_day(follow) + 1) * index.DAY_MS - 1 < theta.ts:
                follow = follow_for(open_lists, theta.hits)
        if not follow:
            break
        day = newest_day(follow)
        low, high = index.day_bounds(day)
        if (theta is not None and len(weight_of) > 1 and theta.hits != threshold_tried
                and threshold_tries < _THRESHOLD_TRIES
                and high < index.day_bounds(index.day_of(theta.ts))[0]
                and any(not candidate.short for candidate in open_lists)
                and theta.hits >= sum(candidate.weight for candidate in open_lists
                                      if candidate.table == "pimem_fts_reply")):
            # Every key left is older than θ's day, so it enters only with a higher score: the
            # necessary conditions of _threshold_candidates may then hold few docs over the whole
            # rest of the history (long lists are intersected in C instead of read day by day).
            threshold_tried = theta.hits
            threshold_tries += 1
            rest = _threshold_candidates(conn, open_lists, theta.hits, high, large_sets)
            if rest is not None:
                keys = [key for key, _ in _newest_first(conn, rest.difference(verified))]
                for start in range(0, len(keys), _BATCH):
                    verify(keys[start:start + _BATCH])
                break
        followed = {id(candidate) for candidate in follow}
        # Long user lists are read along only when the candidates come from long lists too; with a rare
        # pivot the joint lists bound them for far less than reading a common list.
        along = any(not candidate.short for candidate in follow)
        bounds: dict[int, int] = {}
        candidates: set[int] = set()
        read_today: list[tuple[CandidateList, list[int]]] = []
        unread: list[CandidateList] = []
        for candidate in open_lists:
            if id(candidate) in followed or candidate.short or (along and _read_for_bounds(candidate)):
                taken = candidate.take(low, high)
                read_today.append((candidate, taken))
                for key in taken:
                    bounds[key] = bounds.get(key, 0) + candidate.weight
                    if id(candidate) in followed:
                        candidates.add(key)
            else:
                unread.append(candidate)
        # A long list that is not read is assumed to hold every candidate, except the keys that a joint
        # list shows it does not hold.
        assumed = sum(candidate.weight for candidate in unread)
        if unread and best.threshold is not None:
            for long_list in unread:
                not_in_long: set[int] = set()
                for read_list, read_keys in read_today:
                    both = joint(read_list, long_list)
                    if both is not None and read_keys:
                        not_in_long.update(set(read_keys).difference(both.take(low, high)))
                for key in not_in_long:
                    bounds[key] -= long_list.weight
        pending = _newest_first(conn, candidates)
        position = 0
        while position < len(pending):
            theta = best.threshold
            batch: list[int] = []
            while position < len(pending) and len(batch) < _BATCH:
                key, ts = pending[position]
                position += 1
                upper = bounds[key] + assumed
                if key not in verified and (theta is None or upper > theta.hits
                                            or (upper == theta.hits and ts >= theta.ts)):
                    batch.append(key)
            if batch:
                verify(batch)
    return top_rows(best.rows, query.limit)


def recall_by_scan(conn: sqlite3.Connection, query: RecallQuery, entities_lower: list[str]) -> list[RecallRow]:
    """Every turn scored, keeping only the best ``limit`` (memory stays small on a million turns).
    Used when there is no index (SQLite without FTS5 trigram) or for entities the index cannot take."""
    best = _Best(query.limit)
    for values in conn.execute(ALL_ROWS_SQL):
        best.consider(admit(values, query, entities_lower))
    return top_rows(best.rows, query.limit)


def _newest_first(conn: sqlite3.Connection, keys: set[int]) -> list[tuple[int, int]]:
    pairs: list[tuple[int, int]] = []
    for batch in chunks(list(keys)):
        pairs.extend(conn.execute(f"SELECT doc_key, ts FROM pimem_docs WHERE doc_key IN ({placeholders(len(batch))})",
                                  batch))
    pairs.sort(key=lambda pair: (-pair[1], pair[0]))
    return pairs
