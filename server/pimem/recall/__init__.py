"""Recall past turns from a few entity words (or free text: :mod:`pimem.recall.freetext`).

One module per concern, imported in this order (no module imports one above it):

* :mod:`~pimem.recall.query`: the request (:class:`RecallQuery`, :func:`make_query`), its validation and
  every limit;
* :mod:`~pimem.recall.rows`: a result row (:class:`RecallRow`), the columns it is read from, :func:`get_turn`;
* :mod:`~pimem.recall.semantics`: **the semantics**: scoring, filters, order, copies, and the oracle
  :func:`recall_scan` that defines them;
* :mod:`~pimem.recall.candidates`, :mod:`~pimem.recall.dense` and :mod:`~pimem.recall.indexed`: the fast
  path (trigram-index candidate lists; a MaxScore-style walk, or, in long-lived processes, whole lists
  kept as bitmaps for several common entities; both verified with the oracle's scoring: identical results);
* :mod:`~pimem.recall.format`: rows as text and Markdown;
* :mod:`~pimem.recall.termstats` and :mod:`~pimem.recall.freetext`: free text to weighted terms,
  recalled with :func:`recall`.

This module is :func:`recall`, which picks the way to answer a query, and the names callers use.
"""

from __future__ import annotations

import sqlite3
from dataclasses import replace

from pimem import index
from pimem.recall.indexed import index_cannot_answer, recall_by_scan, recall_with_index
from pimem.recall.query import (
    DEFAULT_LIMIT,
    MAX_ENTITIES,
    MAX_ENTITY_CHARS,
    MAX_LIMIT,
    MAX_PAGE_END,
    MAX_PATH_CHARS,
    MAX_TEXT_CHARS,
    MAX_TURN_ID_CHARS,
    TEXT_CUT_CHARS,
    TOOL_NAME_CUT_CHARS,
    TOOL_NAMES_CUT,
    TOTAL_CAP,
    RecallError,
    RecallQuery,
    check_turn_id,
    make_query,
)
from pimem.recall.rows import RecallRow, get_turn
from pimem.recall.semantics import RecallPage, page_of, ranked_limit, recall_scan, recall_scan_page, with_matches
from pimem.store.text import tolerating

__all__ = [
    "DEFAULT_LIMIT", "MAX_ENTITIES", "MAX_ENTITY_CHARS", "MAX_LIMIT", "MAX_PAGE_END", "MAX_PATH_CHARS",
    "MAX_TEXT_CHARS", "MAX_TURN_ID_CHARS", "TEXT_CUT_CHARS", "TOOL_NAMES_CUT", "TOOL_NAME_CUT_CHARS", "TOTAL_CAP",
    "RecallError", "RecallPage", "RecallQuery", "RecallRow", "check_turn_id", "get_turn", "make_query", "recall",
    "recall_page", "recall_scan", "recall_scan_page",
]


def recall(conn: sqlite3.Connection, query: RecallQuery) -> list[RecallRow]:
    """The ``query.limit`` best rows from ``query.offset`` on: with the index when the store has one
    (the same results as :func:`recall_scan`), else by a scan that keeps only the best rows."""
    return recall_page(conn, query).rows


def recall_page(conn: sqlite3.Connection, query: RecallQuery) -> RecallPage:
    """:func:`recall` with the count of matching turns when ``query.with_total`` (the same page and
    count as :func:`recall_scan_page`). A page and its count are one top-k search: the best
    ``offset + limit`` rows, or TOTAL_CAP + 1 of them when counting (fewer are all the matches)."""
    entities_lower = [entity.lower() for entity in query.entities]
    ranked = replace(query, limit=ranked_limit(query), offset=0, with_total=False)
    if not index.fts_enabled(conn) or index_cannot_answer(entities_lower):
        rows = tolerating(conn, lambda: recall_by_scan(conn, ranked, entities_lower))
    else:
        rows = tolerating(conn, lambda: recall_with_index(conn, ranked, entities_lower))
    page = page_of(rows, query)
    with_matches(page.rows, query)
    return page
