"""The recall semantics, defined by :func:`recall_scan` (the oracle) and kept exactly by the fast path
(:mod:`pimem.recall.indexed`, which scores and admits with the very functions of this module):

* text and entities are lowercased with Python's ``str.lower``; an entity hits a field when it is a
  literal substring of it (``%``, ``_``, ``\\`` are plain characters);
* score = 2 per entity found in ``user_text`` + 1 per entity found in ``reply_text``; rows with
  score 0 are dropped; order: score desc, ``ts`` desc, ``turn_id`` asc;
* a query may weigh its entities (free-text recall, see pimem/recall/freetext.py): an entity of weight
  ``w`` counts ``2w`` in ``user_text`` and ``w`` in the reply; without weights every entity weighs 1;
* a copy of an exchange (same user text, reply text and ts: forks, clones, migrated sessions) is
  returned once (its first row in that order);
* ``sources`` keeps those agents; ``cwd`` keeps turns whose session cwd is that folder or below it
  (:func:`pimem.paths.in_folder`);
* a page is the ``limit`` rows from ``offset`` on in that order; its total (``with_total``) is the
  number of turns with a score above 0 that the filters keep, copies counted once, exact up to
  ``TOTAL_CAP`` (:class:`RecallPage`).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from pimem.paths import in_folder
from pimem.recall.query import TOTAL_CAP, RecallQuery
from pimem.recall.rows import ROW_COLUMNS, RecallRow, make_row
from pimem.store.text import holds_undecodable, tolerating

# Every stored turn, with the columns of a row (the oracle's scan, and the fast path's without an index).
ALL_ROWS_SQL = (f"SELECT {ROW_COLUMNS} FROM turns t JOIN sessions s ON s.session_id = t.session_id "
                "LEFT JOIN pimem_docs d ON d.turn_id = t.turn_id")


def score(user_lower: str, reply_lower: str, entities_lower: Sequence[str],
          weights: Sequence[int] | None = None) -> int:
    """A turn's score (fields and entities already lowercased; ``weights``: one per entity, None: all 1)."""
    total = 0
    if weights is None:
        for entity in entities_lower:
            if entity in user_lower:
                total += 2
            if entity in reply_lower:
                total += 1
        return total
    for entity, weight in zip(entities_lower, weights, strict=True):
        if entity in user_lower:
            total += 2 * weight
        if entity in reply_lower:
            total += weight
    return total


def matched_entities(row: RecallRow, entities: Sequence[str]) -> list[str]:
    """The entities found in a row's user text or reply (what the row was found by)."""
    user, reply = row.user_text.lower(), row.reply_text.lower()
    return [entity for entity in entities if entity.lower() in user or entity.lower() in reply]


def admit(values: Sequence[object], query: RecallQuery, entities_lower: Sequence[str]) -> RecallRow | None:
    """A stored row (:data:`ROW_COLUMNS`) as a RecallRow when it passes the query's filters and scores."""
    if holds_undecodable(values):      # not valid UTF-8 (read with store.text.tolerant_text): left out
        return None
    if query.sources is not None and values[2] not in query.sources:
        return None
    if query.cwd is not None and not in_folder(str(values[3] or ""), query.cwd):
        return None
    hits = score(str(values[5] or "").lower(), str(values[6] or "").lower(), entities_lower, query.weights)
    return make_row(values, hits) if hits > 0 else None


def top_rows(rows: Iterable[RecallRow], limit: int) -> list[RecallRow]:
    """The best ``limit`` rows in recall's order, one per exchange (a copy keeps its first row)."""
    chosen: list[RecallRow] = []
    seen: set[tuple[str, str, int]] = set()
    for row in sorted(rows, key=lambda r: r.sort_key):
        if row.copy_key in seen:
            continue
        seen.add(row.copy_key)
        chosen.append(row)
        if len(chosen) == limit:
            break
    return chosen


@dataclass
class RecallPage:
    """``query.limit`` rows from ``query.offset`` on; with ``query.with_total``, how many turns match
    (copies counted once), exactly up to TOTAL_CAP, and whether more do."""

    rows: list[RecallRow]
    total: int | None = None
    total_capped: bool | None = None


def page_of(ranked: list[RecallRow], query: RecallQuery) -> RecallPage:
    """The page of ``query`` from the best max(offset + limit, TOTAL_CAP + 1 when counting) rows in
    recall's order (:func:`ranked_limit`): fewer than that many rows are all the matching turns."""
    rows = ranked[query.offset:query.offset + query.limit]
    if not query.with_total:
        return RecallPage(rows)
    return RecallPage(rows, min(len(ranked), TOTAL_CAP), len(ranked) > TOTAL_CAP)


def ranked_limit(query: RecallQuery) -> int:
    """How many of the best rows :func:`page_of` needs."""
    return max(query.offset + query.limit, TOTAL_CAP + 1 if query.with_total else 0)


def recall_scan_page(conn: sqlite3.Connection, query: RecallQuery) -> RecallPage:
    """The reference implementation: score every stored turn. Defines the semantics."""
    entities_lower = [entity.lower() for entity in query.entities]

    def scan() -> list[RecallRow]:
        return [row for values in conn.execute(ALL_ROWS_SQL)
                if (row := admit(values, query, entities_lower)) is not None]

    rows = tolerating(conn, scan)
    page = page_of(top_rows(rows, ranked_limit(query)), query)
    with_matches(page.rows, query)
    return page


def recall_scan(conn: sqlite3.Connection, query: RecallQuery) -> list[RecallRow]:
    """The oracle's rows (:func:`recall_scan_page` without the count)."""
    return recall_scan_page(conn, query).rows


def with_matches(rows: list[RecallRow], query: RecallQuery) -> list[RecallRow]:
    """Each row with the entities it was found by (:func:`matched_entities`)."""
    for row in rows:
        row.matched = matched_entities(row, query.entities)
    return rows
