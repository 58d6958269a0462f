"""Shared entity recall's paths for large stores (issue 24), on a real PostgreSQL: the page found
without reading every matching row (selective entities listed, the rest bounded and read newest first,
the whole query past a budget) equal to the plain oracle on every path, ties at the bound included."""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import replace
from typing import Any

import psycopg
import pytest

from pimem.recall import make_query, ranking
from pimem.recall.freetext import _shortlist, candidates
from pimem.share import recall as shared
from share.conftest import ShareDb
from share.test_recall import FOLDERS, Row, put

# Entities with no trigram (CJK of 1-2 characters, a_b, io, q), LIKE's own characters, and a common word.
VOCAB = ["锁", "缓存", "缓存层", "加锁", "a_b", "a_b_c", "A_B", "100%", "50%", "x%y", "back\\slash", "io", "q",
         "flamingo", "payroll", "slugify_title", "the", "retry", "ǅemal", "ΟΔΟΣ"]
QUERIES = [["锁"], ["缓存"], ["a_b"], ["100%"], ["io", "q"], ["flamingo", "锁"], ["payroll", "缓存", "a_b"],
           ["cache", "100%"], ["cache"], ["cache", "锁", "a_b", "flamingo"], ["x%y", "back\\slash", "50%"],
           ["flamingo", "payroll", "slugify_title", "100%", "缓存", "a_b", "cache", "锁"], ["ǆemal", "οδος"]]


def store_rows(rng: random.Random, count: int, machine: str) -> list[Row]:
    rows: list[Row] = []
    for n in range(count):
        def text() -> str:
            words = [rng.choice(VOCAB) for _ in range(rng.randint(0, 4))]
            if rng.random() < 0.5:      # a common entity: the listed path gives up on it
                words.append("cache")
            return " ".join(words)
        user, reply = text(), text()
        ts = 1_750_000_000_000 + rng.randint(0, 300) * 1000      # equal times: ties broken by id
        if rows and rng.random() < 0.1:                            # a copy of an exchange
            other = rng.choice(rows)
            user, reply, ts = other.user, other.reply, other.ts
        rows.append(Row(machine, f"{machine}-{n:04d}", f"s{n // 5}", FOLDERS[(n // 5) % len(FOLDERS)], user, reply,
                        ts, rng.choice(["pi", "claude"])))
    return rows


def _key(rows: list[Any]) -> list[tuple[object, ...]]:
    return [(r.author, r.machine, r.turn_id, r.hits, r.ts, r.user_text) for r in rows]


@pytest.mark.parametrize(("selective", "scan", "batch", "path"), [
    (3_000, 30_000, 1_000, "pruned"),     # as shipped: the small entities listed, the rest read newest first
    (5, 30_000, 7, "pruned"),             # most entities too common to list; the scan stops early
    (5, 14, 7, "rest"),                   # the scan's budget spent: every row of the rest read
])
def test_entity_paths_equal_the_oracle(share_db: ShareDb, monkeypatch: pytest.MonkeyPatch, selective: int,
                                       scan: int, batch: int, path: str) -> None:
    rng = random.Random(selective + scan)
    put(share_db, "alice", store_rows(rng, 200, "laptop"))
    put(share_db, "bob", store_rows(rng, 200, "desk"))
    monkeypatch.setattr(shared, "SELECTIVE_ROWS", selective)
    monkeypatch.setattr(shared, "SCAN_ROWS", scan)
    monkeypatch.setattr(shared, "INDEXED_SCAN_ROWS", scan)
    monkeypatch.setattr(shared, "_SCAN_BATCH", batch)
    taken = {"pruned": 0, "rest": 0}
    real: Callable[..., Any] = shared._rest_rows

    def rest_rows(*args: Any) -> Any:
        taken["rest"] += 1
        return real(*args)
    monkeypatch.setattr(shared, "_rest_rows", rest_rows)
    checked = 0
    with psycopg.connect(share_db.conninfo("carol"), autocommit=True) as conn:
        for entities in QUERIES:
            for limit, sources, cwd, weighted in ((1, None, None, False), (5, None, None, True),
                                                  (20, ["pi"], "/work/proj", False)):
                query = make_query(entities, limit, sources, cwd)
                if weighted:
                    query = replace(query, weights=tuple(rng.randint(1, 5) for _ in entities))
                for who in (shared.Who(), shared.Who(mine=True), shared.Who(skip_machine="desk")):
                    before = taken["rest"]
                    got = shared.entity_rows(conn, query, who, limit)
                    taken["pruned"] += taken["rest"] == before
                    assert _key(got) == _key(shared.scan_oracle(conn, query, who, limit)), (entities, who)
                    checked += len(got)
    assert checked > 500
    # The path under test was the one taken (for most queries: the others may finish either way).
    assert taken[path] > 40, taken


def test_ties_at_the_bound_go_to_the_newer_row(share_db: ShareDb, monkeypatch: pytest.MonkeyPatch) -> None:
    """A row holding only the bounded entities can tie the listed page at the bound and win on time:
    neither the bound check nor the newest-first scan may stop before it."""
    monkeypatch.setattr(shared, "_SCAN_BATCH", 2)
    t = 1_750_000_000_000
    put(share_db, "alice", [
        Row("box", "listed", "s1", "/w", "flamingo", "flamingo", t + 5_000),          # 3: flamingo (listed)
        Row("box", "new1", "s2", "/w", "x", "锁 a_b", t + 9_000),                       # 1 + 1
        Row("box", "new2", "s2", "/w", "x", "锁", t + 8_000),                           # 1
        Row("box", "new3", "s2", "/w", "x", "锁", t + 7_500),                           # 1
        Row("box", "tie", "s3", "/w", "锁", "锁", t + 6_000),                           # 3 = the bound, newer
        Row("box", "old", "s4", "/w", "锁 a_b", "锁 a_b", t + 1_000),                   # 6: the best
    ])
    with psycopg.connect(share_db.conninfo("bob"), autocommit=True) as conn:
        for entities, limit, expected in ((["flamingo", "锁"], 1, ["tie"]),
                                          (["flamingo", "锁"], 3, ["tie", "listed", "old"]),
                                          (["flamingo", "锁", "a_b"], 2, ["old", "tie"]),
                                          (["flamingo", "缓存"], 1, ["listed"])):
            query = make_query(entities, limit)
            got = shared.entity_rows(conn, query, shared.Who(), limit)
            assert [r.turn_id for r in got] == expected, entities
            assert _key(got) == _key(shared.scan_oracle(conn, query, shared.Who(), limit))


def test_free_text_past_its_budgets_equals_the_budgeted_oracle(share_db: ShareDb,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    """Past the read budget (the rarest words read first, a word past it by its newest postings) and the
    checked conversations, text_page equals the oracle that applies the same budgets to a plain scan."""
    rng = random.Random(3)
    words = ["flamingo", "cache", "invalidation", "postgres", "replica", "lag", "deploy", "retry", "timeout",
             "emily", "boston", "crashed"]
    for author, machine in (("alice", "laptop"), ("bob", "box")):
        put(share_db, author, [Row(machine, f"{machine}{n}", f"s{n // 4}", "/work/proj",
                                   " ".join(rng.choices(words, k=rng.randint(1, 8))),
                                   " ".join(rng.choices(words, k=rng.randint(0, 20))),
                                   1_750_000_000_000 + n * 1000 + (machine == "box")) for n in range(150)])
    questions = ["postgres replica lag after deploy", "flamingo cache crashed", "emily boston retry timeout",
                 "cache"]
    differs = 0
    with psycopg.connect(share_db.conninfo("carol"), autocommit=True) as conn:
        for budget, checked_sessions in ((40, 3), (150, 5), (10_000, 1)):
            monkeypatch.setattr(ranking, "READ_BUDGET", budget)
            monkeypatch.setattr(ranking, "CHECKED_SESSIONS", checked_sessions)
            for question in questions:
                qwords = ranking.query_words(_shortlist(candidates(question)))
                query = make_query(["x"], 10)
                got = shared.text_page(conn, qwords, query, shared.Who(), "budget")
                expected = shared.text_oracle(conn, qwords, query, shared.Who(), "budget", budgeted=True)
                assert got.rows and [(r.author, r.turn_id, r.hits, tuple(r.matched)) for r in got.rows] == [
                    (r.author, r.turn_id, r.hits, tuple(r.matched)) for r in expected.rows], (question, budget)
                unbudgeted = shared.text_oracle(conn, qwords, query, shared.Who(), "budget")
                differs += [r.turn_id for r in unbudgeted.rows] != [r.turn_id for r in got.rows]
    assert differs >= 3    # the budgets changed the answers: the comparison is not the unbudgeted one's


def test_rows_read_on_the_rest_keep_their_whole_score(share_db: ShareDb, monkeypatch: pytest.MonkeyPatch) -> None:
    """A listed row is read again by the rest's scan, scored there on the rest only: its whole score stays."""
    monkeypatch.setattr(shared, "_SCAN_BATCH", 2)
    monkeypatch.setattr(shared, "SCAN_ROWS", 2)
    monkeypatch.setattr(shared, "INDEXED_SCAN_ROWS", 2)
    t = 1_750_000_000_000
    put(share_db, "alice", [Row("box", "listed", "s1", "/w", "flamingo 锁", "flamingo", t),            # 5 (锁: 2)
                            *(Row("box", f"r{n}", "s2", "/w", "x", "锁", t + 10_000 + n) for n in range(6)),  # 1
                            Row("box", "user", "s3", "/w", "锁", "x", t + 5_000)])                       # 2
    with psycopg.connect(share_db.conninfo("bob"), autocommit=True) as conn:
        query = make_query(["flamingo", "锁"], 2)
        got = shared.entity_rows(conn, query, shared.Who(), 2)
        assert [(r.turn_id, r.hits) for r in got] == [("listed", 5), ("user", 2)]
        assert _key(got) == _key(shared.scan_oracle(conn, query, shared.Who(), 2))


def test_the_rest_read_through_conjunctions_finds_a_tie(share_db: ShareDb, monkeypatch: pytest.MonkeyPatch) -> None:
    """No single entity of the rest reaches the page's last score, two together do: the row holding both,
    tied with the page and newer, is found through their conjunction."""
    monkeypatch.setattr(shared, "SELECTIVE_ROWS", 1)
    monkeypatch.setattr(shared, "SCAN_ROWS", 2)
    monkeypatch.setattr(shared, "INDEXED_SCAN_ROWS", 2)
    monkeypatch.setattr(shared, "_SCAN_BATCH", 2)
    t = 1_750_000_000_000
    put(share_db, "alice", [Row("box", "zq", "s1", "/w", "zq_rare", "zq_rare", t),                  # 2 x 3 = 6
                            Row("box", "both", "s2", "/w", "flamingo payroll", "flamingo payroll", t + 100),  # 6
                            *(Row("box", f"f{n}", "s3", "/w", "x", "flamingo" if n % 2 else "payroll", t + 1_000 + n)
                              for n in range(6))])                                                   # 1 each
    with psycopg.connect(share_db.conninfo("bob"), autocommit=True) as conn:
        query = replace(make_query(["zq_rare", "flamingo", "payroll"], 1), weights=(2, 1, 1))
        got = shared.entity_rows(conn, query, shared.Who(), 1)
        assert [(r.turn_id, r.hits) for r in got] == [("both", 6)]
        assert _key(got) == _key(shared.scan_oracle(conn, query, shared.Who(), 1))


def test_free_text_equal_scores_are_cut_as_the_oracle_cuts_them(share_db: ShareDb,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """Many turns with equal scores and equal times, the cuts (the best CANDIDATE_TURNS turns, the
    conversations by best turn and by typed words, the checked ones) inside the ties: text_page (its
    first pass in SQL) keeps the turns and conversations the oracle keeps (ties to the newer turn, then
    author, machine, turn id in code point order; conversations by key)."""
    monkeypatch.setattr(ranking, "CANDIDATE_TURNS", 7)
    monkeypatch.setattr(ranking, "CANDIDATE_SESSIONS", 5)
    monkeypatch.setattr(ranking, "CHECKED_SESSIONS", 2)
    rng = random.Random(11)
    machines = ["box", "Box", "bÖx", "box-2", "Ärger", "zeta", "ß", "b", "B"]
    texts = [("flamingo cache deploy", "cache retry"), ("flamingo cache", "deploy"), ("cache", "flamingo"),
             ("retry timeout cache", "flamingo deploy cache")]
    for author in ("alice", "bob"):
        rows = []
        for n in range(60):
            user, reply = texts[n % len(texts)]
            machine = machines[n % len(machines)]
            rows.append(Row(machine, rng.choice(["t", "T", "ţ", "t-"]) + str(n % 7) + machine,
                            rng.choice(["s", "S", "ś"]) + str(n % 5), "/work/proj", user, reply,
                            1_750_000_000_000 + (n % 3) * 1000))
        put(share_db, author, rows)
    with psycopg.connect(share_db.conninfo("carol"), autocommit=True) as conn:
        for question in ["flamingo cache deploy", "cache retry", "flamingo", "timeout deploy"]:
            for budget in (ranking.READ_BUDGET, 50):
                monkeypatch.setattr(ranking, "READ_BUDGET", budget)
                qwords = ranking.query_words(_shortlist(candidates(question)))
                query = make_query(["x"], 8)
                got = shared.text_page(conn, qwords, query, shared.Who(), "ties")
                expected = shared.text_oracle(conn, qwords, query, shared.Who(), "ties", budgeted=True)
                assert got.rows and [(r.author, r.machine, r.turn_id, r.hits, tuple(r.matched)) for r in got.rows] == [
                    (r.author, r.machine, r.turn_id, r.hits, tuple(r.matched)) for r in expected.rows], question
                assert got.total == expected.total


def test_the_probe_leaves_a_common_entity_out_and_finds_the_oracles_page(share_db: ShareDb,
                                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    """Several entities past the listed budget: the page comes from the rows holding two or three of
    them (the probe), with the commonest (by its words' counts) left out of the conjunctions and
    tested on the rows read; equal to the oracle with and without weights, folders and sources."""
    rng = random.Random(11)
    entities = ["flamingo", "payroll", "slugify_title", "100%", "缓存", "a_b", "cache"]
    rows: list[Row] = []
    for n in range(400):
        def text() -> str:
            held = [e for e in entities[:-1] if rng.random() < 0.15]
            return " ".join(["cache"] * (rng.random() < 0.7) + held + ["x"])
        rows.append(Row("box", f"r{n:04d}", f"s{n // 7}", FOLDERS[n % len(FOLDERS)], text(), text(),
                        1_750_000_000_000 + rng.randint(0, 500) * 1000, rng.choice(["pi", "claude"])))
    put(share_db, "alice", rows)
    monkeypatch.setattr(shared, "SELECTIVE_ROWS", 20)
    monkeypatch.setattr(shared, "COMMON_ESTIMATE", 150)      # cache (~280 rows) is known common, the others not
    drops: list[tuple[str, ...]] = []
    real: Callable[..., Any] = shared._rest_rows

    def rest_rows(conn: Any, sql: Any, rest: Any, threshold: int, drop: Any = ()) -> Any:
        drops.append(tuple(sql.entities[i] for i in drop))
        return real(conn, sql, rest, threshold, drop)
    monkeypatch.setattr(shared, "_rest_rows", rest_rows)
    with psycopg.connect(share_db.conninfo("bob"), autocommit=True) as conn:
        for chosen in (entities, entities[1:], [*entities[:3], "cache"]):
            for limit, sources, cwd, weighted in ((5, None, None, False), (3, None, None, True),
                                                  (10, ["pi"], "/work/proj", False)):
                query = make_query(chosen, limit, sources, cwd)
                if weighted:
                    query = replace(query, weights=tuple(rng.randint(1, 3) for _ in chosen))
                got = shared.entity_rows(conn, query, shared.Who(), limit)
                assert got and _key(got) == _key(shared.scan_oracle(conn, query, shared.Who(), limit)), chosen
    assert ("cache",) in drops, drops


def test_rows_of_the_rest_found_with_an_entity_left_out_are_those_found_with_it(share_db: ShareDb) -> None:
    """_rest_rows with ``drop``: every row reaching the threshold, as without it (the sets are those of
    the others reaching the threshold less the dropped one's bound); a drop that alone reaches the
    threshold is refused (no set would be needed)."""
    rng = random.Random(5)
    put(share_db, "alice", store_rows(rng, 300, "laptop"))
    with psycopg.connect(share_db.conninfo("bob"), autocommit=True) as conn:
        query = make_query(["cache", "flamingo", "payroll", "缓存", "a_b"], 5)
        sql = shared._EntitySql.of(query, shared.Who(), shared.has_grams(conn))
        rest = list(range(5))
        for threshold in (4, 5, 7):
            full = {tuple(r) for r in shared._rest_rows(conn, sql, rest, threshold)}
            left_out = {tuple(r) for r in shared._rest_rows(conn, sql, rest, threshold, [0])}
            assert full == left_out and (threshold > 5 or full), threshold
        with pytest.raises(ValueError):
            shared._rest_rows(conn, sql, rest, 3, [0])


def test_an_entity_whose_words_are_common_is_not_counted(share_db: ShareDb, monkeypatch: pytest.MonkeyPatch) -> None:
    """The guess from the words' counts (word_docs): a single word's count, none for a piece of a word;
    an entity guessed past COMMON_ESTIMATE is not counted and the page is still the oracle's."""
    put(share_db, "alice", [Row("box", f"k{n}", "s", "/w", "cache flamingo" if n < 3 else "cache", "x",
                                1_750_000_000_000 + n) for n in range(40)])
    counted: list[list[str]] = []
    real: Callable[..., Any] = shared._selective

    def selective(conn: Any, sql: Any, indexable: Any) -> Any:
        counted.append([sql.entities[i] for i in indexable])
        return real(conn, sql, indexable)
    monkeypatch.setattr(shared, "_selective", selective)
    monkeypatch.setattr(shared, "COMMON_ESTIMATE", 10)
    with psycopg.connect(share_db.conninfo("bob"), autocommit=True) as conn:
        query = make_query(["cache", "flamingo", "lamin"], 5)
        sql = shared._EntitySql.of(query, shared.Who(), shared.has_grams(conn))
        assert shared._estimates(conn, sql, [0, 1, 2]) == {0: 40, 1: 3, 2: -1}
        got = shared.entity_rows(conn, query, shared.Who(), 5)
        assert _key(got) == _key(shared.scan_oracle(conn, query, shared.Who(), 5))
    assert counted == [["flamingo", "lamin"]]


def test_entities_narrowed_by_their_rare_trigrams_answer_as_the_oracle(share_db: ShareDb,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """_narrow_trigrams: pg_trgm reads an entity's rare trigrams only (not ``ing``, in every row), and
    strpos tests the entity on each row: a row holding its rare trigrams but not the entity (``mango
    salami``, ``ayr payroll-free``...) is no match, on every path (conjunctions; listed and counted with
    the tight rule)."""
    rng = random.Random(11)
    common = ["timing", "loading", "mango", "salami", "amid", "slugs", "gifts", "payday", "rolling", "titles"]
    rare = ["flamingo", "flaming", "payroll", "payrolls", "slugify_title", "slugify", "zq_4417_x", "441 417"]

    def text() -> str:
        words = [rng.choice(common) for _ in range(rng.randint(1, 5))] + ["thing"]
        return " ".join(words + [word for word in rare if rng.random() < 0.04])
    rows = [Row("box", f"k{n:03d}", f"s{n // 4}", "/w", text(), text(), 1_750_000_000_000 + n * 1000)
            for n in range(240)]
    put(share_db, "alice", rows)
    with psycopg.connect(share_db.conninfo("bob"), autocommit=True) as conn:
        query = make_query(["flamingo", "payroll", "slugify_title", "zq_4417_x"], 5)
        sql = shared._EntitySql.of(query, shared.Who(), shared.has_grams(conn))
        monkeypatch.setattr(shared, "RARE_TRIGRAM_SHARE", 0.2)     # fla: flamingo and flaming, ~15 % of rows
        shared._narrow_trigrams(conn, sql)
        assert sql.trigrams[0] is not None and "ing" not in sql.trigrams[0], sql.trigrams
        condition, values = sql.match(0, conjunct=True)
        assert "strpos" in condition and "%ing%" not in values
        for settings in ({}, {"RARE_TRIGRAM_SHARE": 1.0, "TIGHT_COUNT": 1_000, "SELECTIVE_ROWS": 80,
                              "COMMON_ESTIMATE": 10_000},
                         {"RARE_TRIGRAM_SHARE": 1.0, "RARE_TRIGRAMS": 1, "TIGHT_TRIGRAMS": 1, "TIGHT_COUNT": 1_000}):
            for name, value in settings.items():
                monkeypatch.setattr(shared, name, value)
            for chosen in (query.entities, query.entities[:3], ["payroll", "flamingo"], ["zq_4417_x", "mango"]):
                for limit in (3, 20):
                    asked = make_query(list(chosen), limit)
                    got = shared.entity_rows(conn, asked, shared.Who(), limit)
                    assert _key(got) == _key(shared.scan_oracle(conn, asked, shared.Who(), limit)), (chosen, settings)
