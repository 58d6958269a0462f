"""Weighted recall (what free-text recall runs): the oracle ``recall_scan`` defines the weighted score
(2w per term in the user text, w in the reply); the indexed path must return exactly its rows, also
where the weighted walk verifies the rarest lists first. Entity recall is the special case w = 1."""

from __future__ import annotations

import random
import sqlite3
from dataclasses import replace
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pimem import wire
from pimem.recall import RecallQuery, candidates, indexed, make_query, recall, recall_scan
from pimem.recall.semantics import score
from pimem.store import connect
from recall_corpus import CWDS, build_store, random_entities


def _rows(rows: list) -> list[dict[str, object]]:
    return [wire.recall_row(row) for row in rows]


@pytest.fixture
def conn(db_path: Path) -> sqlite3.Connection:
    return connect(db_path)


def test_weighted_score_definition() -> None:
    assert score("a flamingo", "cache", ["flamingo", "cache"], [5, 3]) == 2 * 5 + 3
    assert score("a flamingo", "cache", ["flamingo", "cache"], None) == score("a flamingo", "cache",
                                                                              ["flamingo", "cache"], [1, 1]) == 3


@pytest.mark.parametrize("track_limit", [candidates.TRACK_LIMIT, 40, 3])
def test_weighted_random_store_matches_oracle(conn: sqlite3.Connection, monkeypatch: pytest.MonkeyPatch,
                                              track_limit: int) -> None:
    monkeypatch.setattr(candidates, "TRACK_LIMIT", track_limit)
    rng = random.Random(20261201)
    build_store(conn, rng, 1500, copies=60, unindexed=40)
    checked = 0
    for number in range(200):
        entities = random_entities(rng, conn)
        weights = tuple(rng.choice([1, 1, 2, 3, 7, 12, 20]) for _ in entities)
        query = RecallQuery(
            tuple(entities), rng.choice([1, 2, 5, 10, 50]),
            frozenset(rng.sample(["pi", "claude", "codex"], rng.randint(1, 3))) if rng.random() < 0.2 else None,
            rng.choice(CWDS) if rng.random() < 0.2 else None, weights)
        fast, oracle = recall(conn, query), recall_scan(conn, query)
        assert _rows(fast) == _rows(oracle), query
        checked += bool(oracle)
        if number == 100:
            monkeypatch.setattr(indexed, "_SEED_BUDGET", 5)   # seeds only the shortest lists, or none
    assert checked > 120


def test_unit_weights_equal_entity_recall(conn: sqlite3.Connection) -> None:
    rng = random.Random(7)
    build_store(conn, rng, 400, copies=20, unindexed=10)
    for _ in range(60):
        query = make_query(random_entities(rng, conn), rng.choice([1, 5, 20]))
        weighted = replace(query, weights=(1,) * len(query.entities))
        assert _rows(recall(conn, weighted)) == _rows(recall(conn, query)) == _rows(recall_scan(conn, query))


def test_matched_terms_are_reported(conn: sqlite3.Connection) -> None:
    rng = random.Random(3)
    build_store(conn, rng, 300)
    query = replace(make_query(["flamingo", "cache", "xylophonequartz"], 10), weights=(9, 2, 20))
    rows = recall(conn, query)
    assert rows
    for row in rows:
        text = (row.user_text + " " + row.reply_text).lower()
        assert row.matched == [term for term in query.entities if term.lower() in text]
        assert row.hits == score(row.user_text.lower(), row.reply_text.lower(), query.entities, query.weights)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(seed=st.integers(0, 2**32 - 1), terms=st.lists(st.tuples(
    st.text(alphabet=st.sampled_from(list("abAB%_\\ß缓存锁Σς ǅ.x")), min_size=1, max_size=5)
    .filter(lambda s: s.strip()), st.integers(1, 25)), min_size=1, max_size=8))
def test_hypothesis_weighted_terms_match_oracle(tmp_path_factory: pytest.TempPathFactory, seed: int,
                                                terms: list[tuple[str, int]]) -> None:
    conn = connect(tmp_path_factory.mktemp("w") / "m.db")
    build_store(conn, random.Random(seed), 60, copies=5, unindexed=3)
    for limit in (1, 5, 50):
        query = replace(make_query([term for term, _ in terms], limit), weights=tuple(w for _, w in terms))
        assert _rows(recall(conn, query)) == _rows(recall_scan(conn, query))
