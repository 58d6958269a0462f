"""Recall: the oracle defines the semantics; the indexed fast path must return exactly the same rows."""

from __future__ import annotations

import random
import sqlite3
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pimem import index, wire
from pimem.recall import RecallError, RecallQuery, candidates, make_query, recall, recall_scan
from pimem.store import SessionRow, connect, transaction, upsert_session
from recall_corpus import CWDS, build_store, random_entities


def _rows(rows: list) -> list[dict[str, object]]:
    return [wire.recall_row(row) for row in rows]


def _add(conn: sqlite3.Connection, turn_id: str, user: str, reply: str, ts: int = 1000, session: str = "pi:s",
         cwd: str = "/w", indexed: bool = True) -> None:
    with transaction(conn):
        upsert_session(conn, SessionRow(session, session.split(":")[0], cwd, 0, None, "/x.jsonl"))
        conn.execute(
            "INSERT INTO turns (turn_id, session_id, turn_index, ts, user_text, reply_text, tool_names, "
            "user_message_id) VALUES (?, ?, 0, ?, ?, ?, NULL, ?)", (turn_id, session, ts, user, reply, turn_id))
        if indexed:
            index.put(conn, turn_id, ts, user, reply, None, None, fts=True)
            index.catch_up(conn)
    if indexed:
        index.build_pending(conn)


@pytest.fixture
def conn(db_path: Path) -> sqlite3.Connection:
    return connect(db_path)


def ids(conn: sqlite3.Connection, *entities: str, **kwargs: object) -> list[str]:
    query = make_query(list(entities), **kwargs)  # type: ignore[arg-type]
    fast = recall(conn, query)
    assert _rows(fast) == _rows(recall_scan(conn, query))
    return [row.turn_id for row in fast]


def test_wildcards_are_literal(conn: sqlite3.Connection) -> None:
    _add(conn, "pi:s:1", "literal 100% and a_b", "first reply", ts=1)
    _add(conn, "pi:s:2", "wildcard 100x and acb", "second reply", ts=2)
    _add(conn, "pi:s:3", r"path C:\path\file here", "", ts=3)
    _add(conn, "pi:s:4", r"path C:/path/file here", "", ts=4)
    assert ids(conn, "100%") == ["pi:s:1"]
    assert ids(conn, "a_b") == ["pi:s:1"]
    assert ids(conn, "C:\\path") == ["pi:s:3"]
    assert ids(conn, "%") == ["pi:s:1"]
    assert ids(conn, "_") == ["pi:s:1"]
    assert ids(conn, "\\") == ["pi:s:3"]


def test_scoring_and_order(conn: sqlite3.Connection) -> None:
    _add(conn, "pi:s:reply-only", "nothing here", "the flamingo bug", ts=30)
    _add(conn, "pi:s:user-only", "the flamingo bug", "nothing", ts=10)
    _add(conn, "pi:s:both-old", "flamingo", "flamingo", ts=5)
    _add(conn, "pi:s:both-new", "Flamingo!", "FLAMINGO", ts=20)
    _add(conn, "pi:s:b-tie", "flamingo", "flamingo!", ts=5)  # same score and time: turn_id decides
    assert ids(conn, "flamingo", limit=10) == [
        "pi:s:both-new", "pi:s:b-tie", "pi:s:both-old", "pi:s:user-only", "pi:s:reply-only"]
    rows = recall(conn, make_query(["flamingo", "bug"], limit=10))
    assert [(row.turn_id, row.hits) for row in rows][:2] == [("pi:s:user-only", 4), ("pi:s:both-new", 3)]


def test_cjk_one_and_two_characters_and_unicode_case(conn: sqlite3.Connection) -> None:
    _add(conn, "pi:s:1", "缓存什么时候需要加锁？", "要先拿到锁", ts=1)
    _add(conn, "pi:s:2", "没有", "缓存", ts=2)
    _add(conn, "pi:s:3", "Ärger mit dem ÜBERSCHREIBEN", "ΟΔΟΣ", ts=3)
    assert ids(conn, "锁") == ["pi:s:1"]
    assert ids(conn, "缓存") == ["pi:s:1", "pi:s:2"]
    assert ids(conn, "ärger") == ["pi:s:3"]
    assert ids(conn, "überschreiben") == ["pi:s:3"]
    assert ids(conn, "ΟΔΟΣ") == ["pi:s:3"]


def test_copies_are_returned_once(conn: sqlite3.Connection) -> None:
    _add(conn, "codex:a:1", "migrate me", "ok", ts=7, session="codex:a")
    _add(conn, "pi:b:1", "migrate me", "ok", ts=7, session="pi:b")
    _add(conn, "pi:b:2", "migrate me", "ok", ts=8, session="pi:b")
    assert ids(conn, "migrate", limit=5) == ["pi:b:2", "codex:a:1"]


def test_filters(conn: sqlite3.Connection) -> None:
    _add(conn, "pi:a:1", "flamingo", "", ts=1, session="pi:a", cwd="/tmp/p/webshop")
    _add(conn, "claude:b:1", "flamingo", "", ts=2, session="claude:b", cwd="/tmp/p/webshop/sub")
    _add(conn, "codex:c:1", "flamingo", "", ts=3, session="codex:c", cwd="/tmp/p/webshop2")
    assert ids(conn, "flamingo", cwd="/tmp/p/webshop") == ["claude:b:1", "pi:a:1"]
    assert ids(conn, "flamingo", cwd="/tmp/p/webshop/") == ["claude:b:1", "pi:a:1"]
    assert ids(conn, "flamingo", sources=["codex", "pi"]) == ["codex:c:1", "pi:a:1"]


def test_rows_written_by_the_extension_are_found_before_indexing(conn: sqlite3.Connection) -> None:
    _add(conn, "pi:s:1", "indexed flamingo", "", ts=1)
    _add(conn, "pi:s:2", "extension flamingo", "", ts=2, indexed=False)
    assert ids(conn, "flamingo") == ["pi:s:2", "pi:s:1"]
    assert index.unindexed_count(conn) == 1  # what `pimem status` reports as not indexed yet
    with transaction(conn):
        index.catch_up(conn)
    assert index.unindexed_count(conn) == 1  # it has a doc now, its postings are pending
    index.build_pending(conn)
    assert index.unindexed_count(conn) == 0
    assert ids(conn, "flamingo") == ["pi:s:2", "pi:s:1"]


@pytest.mark.parametrize(
    ("params", "field"),
    [
        ({"entities": []}, "entities"),
        ({"entities": ["ok", " "]}, "entities"),
        ({"entities": ["a"] * 9}, "entities"),
        ({"entities": ["ok", 3]}, "entities"),
        ({"entities": ["ok"], "limit": 0}, "limit"),
        ({"entities": ["ok"], "limit": 51}, "limit"),
        ({"entities": ["ok"], "limit": True}, "limit"),
        ({"entities": ["ok"], "sources": ["vim"]}, "sources"),
        ({"entities": ["ok"], "cwd": ""}, "cwd"),
    ],
)
def test_invalid_queries_name_the_field(params: dict[str, object], field: str) -> None:
    with pytest.raises(RecallError) as error:
        make_query(**params)  # type: ignore[arg-type]
    assert error.value.field == field


@pytest.mark.parametrize("track_limit", [candidates.TRACK_LIMIT, 40, 3])
def test_random_store_matches_oracle(conn: sqlite3.Connection, monkeypatch: pytest.MonkeyPatch,
                                     track_limit: int) -> None:
    """With small list limits the lists of this small store are long, as on a million turns: recall then
    leaves lists unread and bounds candidates through joint lists (S ∩ L), which must change nothing."""
    monkeypatch.setattr(candidates, "TRACK_LIMIT", track_limit)
    joint_lists: list[str] = []
    matching = candidates.ListBuilder.matching

    def counting(builder: candidates.ListBuilder, table: str, expression: str, weight: int,
                 size: int | None) -> candidates.CandidateList:
        if weight == 0:  # only joint lists weigh nothing
            joint_lists.append(expression)
        return matching(builder, table, expression, weight, size)

    monkeypatch.setattr(candidates.ListBuilder, "matching", counting)
    rng = random.Random(20261130)
    build_store(conn, rng, 1500, copies=60, unindexed=40)
    checked = 0
    for _ in range(400):
        entities = random_entities(rng, conn)
        query = RecallQuery(
            tuple(entities), rng.choice([1, 2, 5, 10, 50]),
            frozenset(rng.sample(["pi", "claude", "codex"], rng.randint(1, 3))) if rng.random() < 0.2 else None,
            rng.choice(CWDS) if rng.random() < 0.2 else None,
        )
        fast, oracle = recall(conn, query), recall_scan(conn, query)
        assert _rows(fast) == _rows(oracle), query
        checked += bool(oracle)
    assert checked > 250  # most queries really hit something
    if track_limit < 40:
        assert len(joint_lists) > 50  # the joint bounds were really exercised


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(seed=st.integers(0, 2**32 - 1), entities=st.lists(
    st.text(alphabet=st.sampled_from(list("abAB%_\\ß缓存锁Σς ǅ.x")), min_size=1, max_size=5)
    .filter(lambda s: s.strip() != ""), min_size=1, max_size=8))
def test_hypothesis_entities_match_oracle(tmp_path_factory: pytest.TempPathFactory, seed: int,
                                          entities: list[str]) -> None:
    conn = connect(tmp_path_factory.mktemp("h") / "m.db")
    build_store(conn, random.Random(seed), 60, copies=5, unindexed=3)
    for limit in (1, 5, 50):
        query = make_query(entities, limit)
        assert _rows(recall(conn, query)) == _rows(recall_scan(conn, query))


def test_scan_path_without_an_index_equals_the_oracle(conn: sqlite3.Connection) -> None:
    """The path used when SQLite lacks FTS5 trigram (and for control characters) keeps only the best
    rows while scanning; it must still be the oracle's answer."""
    rng = random.Random(11)
    build_store(conn, rng, 400, copies=30, unindexed=10)
    conn.execute("UPDATE pimem_meta SET value = 'unavailable' WHERE key = 'index'")
    for _ in range(60):
        query = make_query(random_entities(rng, conn), rng.choice([1, 3, 10, 50]))
        assert _rows(recall(conn, query)) == _rows(recall_scan(conn, query))
    control = make_query(["a\x01b", "flamingo"], 5)
    conn.execute("UPDATE pimem_meta SET value = 'trigram' WHERE key = 'index'")
    assert _rows(recall(conn, control)) == _rows(recall_scan(conn, control))
