"""Recall paging (the editor's sidebar): ``offset`` and ``withTotal``. A page is the oracle's order
from ``offset`` on; the total counts matching turns once per exchange, exactly up to TOTAL_CAP."""

from __future__ import annotations

import random
import sqlite3
from dataclasses import replace
from pathlib import Path

import pytest

from pimem import index, wire
from pimem.recall import (
    MAX_PAGE_END,
    TOTAL_CAP,
    RecallError,
    RecallQuery,
    make_query,
    recall_page,
    recall_scan,
    recall_scan_page,
)
from pimem.store import SessionRow, connect, transaction, upsert_session

from .corpus import CWDS, build_store, random_entities


@pytest.fixture
def conn(db_path: Path) -> sqlite3.Connection:
    return connect(db_path)


def _page(page: object) -> tuple[list[dict[str, object]], object, object]:
    return ([wire.recall_row(row) for row in page.rows], page.total, page.total_capped)  # type: ignore[attr-defined]


def test_pages_and_totals_match_the_oracle(conn: sqlite3.Connection) -> None:
    rng = random.Random(1202)
    build_store(conn, rng, 1200, copies=80, unindexed=30)
    counted = 0
    for _ in range(120):
        limit = rng.choice([1, 5, 20, 50])
        query = RecallQuery(tuple(random_entities(rng, conn)), limit,
                            frozenset(rng.sample(["pi", "claude", "codex"], 2)) if rng.random() < 0.2 else None,
                            rng.choice(CWDS) if rng.random() < 0.2 else None,
                            offset=rng.choice([0, 1, 7, 30, 200, MAX_PAGE_END - limit]),
                            with_total=rng.random() < 0.6)
        fast, oracle = recall_page(conn, query), recall_scan_page(conn, query)
        assert _page(fast) == _page(oracle), query
        counted += bool(oracle.total)
    assert counted > 30


def test_pages_are_slices_of_one_order(conn: sqlite3.Connection) -> None:
    """Consecutive pages put together are the best rows of one long query (no row twice, none lost)."""
    rng = random.Random(5)
    build_store(conn, rng, 800, copies=60)
    for entities in (["flamingo"], ["cache", "the"], ["a", "缓存"], ["bug", "def", "return"]):
        whole = recall_scan(conn, make_query(entities, 50))
        paged = []
        for offset in range(0, 50, 7):
            paged += recall_page(conn, make_query(entities, 7, offset=offset)).rows
        assert [wire.recall_row(row) for row in paged[:50]] == [wire.recall_row(row) for row in whole]


def _add_many(conn: sqlite3.Connection, count: int, copies: int) -> None:
    """``count`` distinct turns holding "quokka", and ``copies`` exact copies of some of them."""
    with transaction(conn):
        upsert_session(conn, SessionRow("pi:s", "pi", "/w", 0, None, "/x.jsonl"))
        upsert_session(conn, SessionRow("claude:c", "claude", "/w", 0, None, "/y.jsonl"))
        for number in range(count + copies):
            source = number % count
            session, ts = ("pi:s", 1_700_000_000_000 + source * 60_000) if number < count else \
                ("claude:c", 1_700_000_000_000 + source * 60_000)
            turn_id = f"{session}:{number}"
            user, reply = f"quokka {source}", "a reply"
            conn.execute(
                "INSERT INTO turns (turn_id, session_id, turn_index, ts, user_text, reply_text, tool_names, "
                "user_message_id) VALUES (?, ?, ?, ?, ?, ?, NULL, ?)", (turn_id, session, number, ts, user, reply,
                                                                       turn_id))
            index.put(conn, turn_id, ts, user, reply, None, None, fts=True)
        index.catch_up(conn)
    index.build_pending(conn)


@pytest.mark.parametrize(("count", "total", "capped"), [(40, 40, False), (TOTAL_CAP, TOTAL_CAP, False),
                                                        (TOTAL_CAP + 1, TOTAL_CAP, True)])
def test_total_counts_copies_once_up_to_the_cap(conn: sqlite3.Connection, count: int, total: int,
                                                capped: bool) -> None:
    _add_many(conn, count, copies=25)
    query = make_query(["quokka"], 10, with_total=True)
    page = recall_page(conn, query)
    assert (page.total, page.total_capped) == (total, capped)
    assert _page(page) == _page(recall_scan_page(conn, query))
    last = recall_page(conn, replace(query, offset=count - 3))   # the end of the list: fewer rows
    assert len(last.rows) == 3 and last.total == total
    assert recall_page(conn, make_query(["quokka"], 10)).total is None   # not counted unless asked


@pytest.mark.parametrize(("params", "field"), [
    ({"offset": -1}, "offset"), ({"offset": "3"}, "offset"), ({"offset": True}, "offset"), ({"offset": 1.5}, "offset"),
    ({"offset": MAX_PAGE_END - 4, "limit": 5}, "offset"), ({"with_total": "yes"}, "withTotal"),
    ({"with_total": 1}, "withTotal"),
])
def test_bad_paging_params_name_the_field(params: dict[str, object], field: str) -> None:
    with pytest.raises(RecallError) as error:
        make_query(["x"], **params)  # type: ignore[arg-type]
    assert error.value.field == field
    assert make_query(["x"], 5, offset=MAX_PAGE_END - 5).offset == MAX_PAGE_END - 5
