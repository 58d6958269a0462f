"""Candidate lists from the trigram index (pimem/index.py): for each entity and field, the doc keys
that may hold it, newest first, read lazily.

For 3+ characters, the AND of the entity's rarest trigrams; for 1-2 characters, every indexed trigram
that starts with it (read in one pass from the index's vocabulary), or, when that is most of the store,
"every turn". Lists are supersets: every candidate is verified against the stored text with the
oracle's scoring (:mod:`pimem.recall.indexed`), so the index never decides a result.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator

TRACK_LIMIT = 5000            # lists at most this long are followed exactly
EVERY_TURN = "*"              # the source of a list assumed to hold every doc
_PROBE = TRACK_LIMIT + 1
_QUICK_PROBE = 256
_TRIGRAMS_USED = 3            # the rarest trigrams of an entity make its list
_COLLECT_LIMIT = 20_000       # a short entity's postings up to this many are collected at once
_OR_TERMS_LIMIT = 200         # beyond this many trigrams, an OR query costs more than walking every turn
_CORE_OR_TERMS = 8            # a short entity's OR of more trigrams is too dear for a necessary condition
# A long entity's list comes from a spread of its trigrams: each one counted costs up to TRACK_LIMIT
# postings read, and the AND of a few already leaves few false candidates (verification decides).
_TRIGRAMS_COUNTED = 24


def fts_phrase(term: str) -> str:
    """``term`` as one FTS5 string (a phrase of its trigrams), whatever characters it holds."""
    return '"' + term.replace('"', '""') + '"'


def prefix_range(term: str) -> tuple[str, tuple[str, ...]]:
    """The condition on an fts5vocab ``term`` column, and its bounds, for every indexed trigram that
    starts with ``term`` (which may end in the highest code point, whose successor does not exist)."""
    if ord(term[-1]) < 0x10FFFF:
        return "term >= ? AND term < ?", (term, term[:-1] + chr(ord(term[-1]) + 1))
    return "term >= ?", (term,)


class CandidateList:
    """The doc keys of one index list, newest first, read lazily."""

    def __init__(self, keys: Iterator[int], weight: int, size: int | None,
                 table: str | None = None, expression: str | None = None, core: str | None = None,
                 source: tuple[str, ...] | None = None) -> None:
        self.weight = weight
        # What the keys are, independent of the weight: the same source gives the same keys on the same
        # index (pimem.recall.dense keeps whole lists by it). None: an empty list.
        self.source = source if source is not None else ((table, expression) if table and expression else None)
        self.size = size              # an upper bound on its length; None when unknown (long)
        self.table = table            # with expression: the FTS query that yields exactly these keys
        self.expression = expression
        # A cheaper FTS query yielding a superset of these keys (an entity's rarest trigrams only), for
        # the necessary condition of indexed._threshold_candidates; None: assume it holds every doc.
        self.core = core
        self._keys = keys
        self.head: int | None = next(self._keys, None)

    @property
    def exhausted(self) -> bool:
        return self.head is None

    @property
    def short(self) -> bool:
        return self.size is not None and self.size <= TRACK_LIMIT

    def remaining(self) -> Iterator[int]:
        """Every key not taken yet, newest first, consuming the list (streamed: a long list is never
        held whole)."""
        while self.head is not None:
            yield self.head
            self.head = next(self._keys, None)

    def take(self, low: int, high: int) -> list[int]:
        """Pop every key ≥ ``low``; return those ≤ ``high`` (newer ones belong to days already done)."""
        taken = []
        while self.head is not None and self.head >= low:
            if self.head <= high:
                taken.append(self.head)
            self.head = next(self._keys, None)
        return taken


def _cursor_keys(cursor: sqlite3.Cursor) -> Iterator[int]:
    while True:
        rows = cursor.fetchmany(512)
        if not rows:
            return
        for row in rows:
            yield row[0]


class ListBuilder:
    """Candidate lists for an entity in one field (one FTS table)."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn
        self._vocab: set[str] = set()

    def every_turn(self, table: str, weight: int) -> CandidateList:
        """Every doc, as the list of ``table`` (no expression: it is assumed to hold every doc)."""
        cursor = self.conn.execute("SELECT doc_key FROM pimem_docs ORDER BY doc_key DESC")
        return CandidateList(_cursor_keys(cursor), weight, None, table, source=(table, EVERY_TURN))

    def build(self, table: str, entity: str, weight: int) -> CandidateList:
        if len(entity) >= 3:
            return self._trigram_list(table, entity, weight)
        return self._prefix_list(table, entity, weight)

    def _count(self, table: str, term: str, limit: int = _PROBE) -> int:
        """The docs holding a trigram, counted up to ``limit`` (the cost grows with the count)."""
        return int(self.conn.execute(
            f"SELECT count(*) FROM (SELECT rowid FROM {table} WHERE {table} MATCH ? LIMIT {limit})",
            (fts_phrase(term),)).fetchone()[0])

    def _rarest_first(self, table: str, grams: list[str]) -> list[tuple[int, int, str]]:
        """(count, position, trigram), rarest first. Counted up to _QUICK_PROBE first: when one of them
        is rarer than that, the others only need to be known as commoner (most entities have such a
        trigram, and a common trigram costs up to _PROBE postings to count)."""
        quick = sorted((self._count(table, gram, _QUICK_PROBE), position, gram) for position, gram in enumerate(grams))
        if quick[0][0] < _QUICK_PROBE:
            return quick
        return sorted((self._count(table, gram), position, gram) for position, gram in enumerate(grams))

    def _trigram_list(self, table: str, entity: str, weight: int) -> CandidateList:
        grams = list(dict.fromkeys(entity[i:i + 3] for i in range(len(entity) - 2)))
        if len(grams) > _TRIGRAMS_COUNTED:
            step = len(grams) / _TRIGRAMS_COUNTED
            grams = [grams[int(number * step)] for number in range(_TRIGRAMS_COUNTED)]
        counted = self._rarest_first(table, grams)
        if counted[0][0] == 0:
            return CandidateList(iter(()), weight, 0)
        if counted[0][0] <= TRACK_LIMIT:
            # A rare trigram decides the list; a few more only trim false candidates.
            chosen = [gram for _, _, gram in counted[:_TRIGRAMS_USED]]
            size: int | None = counted[0][0]
        else:
            # Only common trigrams: all of them (up to 12) keep the candidates close to the matches.
            chosen = [gram for _, _, gram in counted[:12]]
            size = None
        expression = " AND ".join(fts_phrase(gram) for gram in chosen)
        found = self.matching(table, expression, weight, size)
        found.core = " AND ".join(fts_phrase(gram) for gram in chosen[:_TRIGRAMS_USED])
        return found

    def matching(self, table: str, expression: str, weight: int, size: int | None) -> CandidateList:
        """The docs of ``table`` matching an FTS5 expression, newest first."""
        cursor = self.conn.execute(
            f"SELECT rowid FROM {table} WHERE {table} MATCH ? ORDER BY rowid DESC", (expression,))
        return CandidateList(_cursor_keys(cursor), weight, size, table, expression, expression)

    def _prefix_list(self, table: str, entity: str, weight: int) -> CandidateList:
        """Every doc with an indexed trigram starting with ``entity`` (the two sentinel characters
        appended to each text make every occurrence start one)."""
        if len(entity) == 1 and entity.isascii() and entity.isalnum():
            return self.every_turn(table, weight)  # a single letter or digit is in nearly every turn
        instances, terms = f"temp.{table}_instances", f"temp.{table}_terms"
        if table not in self._vocab:
            for name, kind in ((instances, "instance"), (terms, "row")):
                self.conn.execute(f"CREATE VIRTUAL TABLE IF NOT EXISTS {name} USING fts5vocab(main, {table}, {kind})")
            self._vocab.add(table)
        condition, bounds = prefix_range(entity)
        count, postings = self.conn.execute(
            f"SELECT count(*), sum(doc) FROM {terms} WHERE {condition}", bounds).fetchone()
        if not count:
            return CandidateList(iter(()), weight, 0)
        expression = None
        if count <= _OR_TERMS_LIMIT:
            expression = "(" + " OR ".join(fts_phrase(term) for (term,) in self.conn.execute(
                f"SELECT term FROM {terms} WHERE {condition}", bounds)) + ")"
        if postings <= _COLLECT_LIMIT:
            # Few postings: collect them in one pass over the vocabulary.
            keys = {doc for (doc,) in self.conn.execute(f"SELECT doc FROM {instances} WHERE {condition}", bounds)}
            return CandidateList(iter(sorted(keys, reverse=True)), weight, len(keys), table, expression,
                                 expression if count <= _CORE_OR_TERMS else None, source=(table, "prefix", entity))
        if expression is not None:
            # Many postings over few trigrams: let FTS5 merge them lazily, newest first.
            found = self.matching(table, expression, weight, postings if postings <= TRACK_LIMIT else None)
            found.core = expression if count <= _CORE_OR_TERMS else None
            return found
        return self.every_turn(table, weight)  # common and spread over many trigrams: walk every turn
