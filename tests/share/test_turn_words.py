"""Free text's narrow postings (layout 3, ``pimem.turn_words``: each turn's keys, place, time, lengths and
its words as ``word_docs`` ids), on a real PostgreSQL: kept equal to ``pimem.turns`` by the database's
triggers through pushes, changed texts pushed again, forgets and an admin's delete; backfilled by the
migration from layout 2 (whose stores are still read from ``turns``); readable and not writable by
members; read by free text instead of ``turns``' word indexes, with the same answers."""

from __future__ import annotations

import random
from dataclasses import replace
from pathlib import Path

import psycopg
import pytest

from pimem.recall import make_query, ranking
from pimem.recall.freetext import _shortlist, candidates
from pimem.share import recall as shared
from pimem.share import schema
from pimem.share.db import apply_init, read_layout
from pimem.share.push import apply_forget, push
from pimem.words import IRREGULAR_VERBS
from share.conftest import MEMBERS, ShareDb, share_db_at_layout
from share.local import write
from share.pgserver import PgServer
from share.test_recall import Row, put
from share.test_word_docs import pushed_history

Conn = psycopg.Connection[tuple[object, ...]]


def _from_turns(conn: Conn) -> set[tuple[object, ...]]:
    """What turn_words must hold, computed from turns (the words, not their ids)."""
    return {(*values[:9], frozenset(values[9]), frozenset(values[10])) for values in conn.execute(
        "SELECT author, machine, doc_key, session_id, source, cwd, ts, user_chars, reply_chars, user_words, "
        "reply_words FROM pimem.turns")}


def _kept(conn: Conn) -> set[tuple[object, ...]]:
    words = {int(i): str(w) for w, i in conn.execute("SELECT word, id FROM pimem.word_docs")}
    return {(*values[:9], frozenset(words[int(i)] for i in values[9]),
             frozenset(words[int(i)] for i in values[10])) for values in conn.execute(
        "SELECT author, machine, doc_key, session_id, source, cwd, ts, user_chars, reply_chars, user_ids, "
        "reply_ids FROM pimem.turn_words")}


def _same(db: ShareDb) -> int:
    with psycopg.connect(db.admin, autocommit=True) as conn:
        expected = _from_turns(conn)
        assert _kept(conn) == expected
        # and as arrays: each row's distinct ids in order (layout 5 inserts them from one join per statement)
        assert conn.execute(
            "SELECT count(*) FROM pimem.turns t JOIN pimem.turn_words w USING (author, machine, doc_key) WHERE "
            "w.user_ids = ARRAY(SELECT d.id FROM pimem.word_docs d WHERE d.word = ANY(t.user_words) ORDER BY d.id) "
            "AND w.reply_ids = ARRAY(SELECT d.id FROM pimem.word_docs d WHERE d.word = ANY(t.reply_words) "
            "ORDER BY d.id)").fetchone() == (len(expected),)
        return len(expected)


def test_a_statements_rows_get_their_distinct_ids_in_order(share_db: ShareDb) -> None:
    """Rows of one statement sharing words, repeating a word, or with none: as the per-row lookup gives them."""
    with psycopg.connect(share_db.conninfo("alice")) as conn:
        conn.execute("INSERT INTO pimem.turns (machine, doc_key, session_id, turn_index, source, cwd, ts, user_text, "
                     "reply_text, user_lower, reply_lower, user_words, reply_words, user_chars, reply_chars, "
                     "content_hash) SELECT 'm', 'k' || n, 's', 0, 'pi', '/w', now(), '', '', '', '', "
                     "ARRAY['zeta', 'alpha', 'w' || (n % 7), 'alpha'], CASE WHEN n % 5 = 0 THEN '{}'::text[] "
                     "ELSE ARRAY['w' || n, 'beta', 'zeta'] END, 0, 0, 'h' FROM generate_series(1, 40) n")
        conn.commit()
    assert _same(share_db) == 40
    with psycopg.connect(share_db.admin, autocommit=True) as conn:
        user_ids, reply_ids = conn.execute("SELECT user_ids, reply_ids FROM pimem.turn_words "
                                           "WHERE doc_key = 'k5'").fetchone() or ([], [])
        assert len(user_ids) == 3 and user_ids == sorted(set(user_ids)) and reply_ids == []   # alpha once


def test_turn_words_follow_pushes_changes_and_forgets(share_db: ShareDb, db_path: Path) -> None:
    turns, config = pushed_history(share_db, db_path)
    assert _same(share_db) == 31
    # Changed texts pushed again: the upsert's updated rows get their new words.
    write(db_path, [replace(t, user=f"retry the kubernetes deploy {n}") for n, t in enumerate(turns[:10])])
    push(db_path, config)
    assert _same(share_db) == 31
    with psycopg.connect(share_db.conninfo("alice")) as conn:
        apply_forget(conn, "session", "s1")
        conn.commit()
    assert _same(share_db) == 21      # the forgotten rows' postings are gone with them
    with psycopg.connect(share_db.admin, autocommit=True) as conn:
        conn.execute("DELETE FROM pimem.turns WHERE author = 'bob'")
    assert _same(share_db) == 20
    # Members read the postings (free text) and cannot write them, their own included.
    with psycopg.connect(share_db.conninfo("alice")) as conn:
        assert conn.execute("SELECT count(*) FROM pimem.turn_words").fetchone() == (20,)
        for statement in ("INSERT INTO pimem.turn_words SELECT * FROM pimem.turn_words LIMIT 1",
                          "UPDATE pimem.turn_words SET user_ids = '{}'", "DELETE FROM pimem.turn_words",
                          "UPDATE pimem.word_docs SET id = 1"):
            with pytest.raises((psycopg.errors.InsufficientPrivilege, psycopg.errors.GeneratedAlways)):
                conn.execute(statement)
            conn.rollback()


def test_free_text_reads_the_narrow_postings_with_the_same_answers(pg_server: PgServer) -> None:
    """A store set up at layout 2, read (from turns), migrated to 3 (the postings backfilled), read
    again (from turn_words, not turns' word indexes): the same pages, equal to the oracle."""
    dbname = pg_server.new_database()
    db = ShareDb(pg_server, dbname)
    with psycopg.connect(db.admin, autocommit=True) as conn:   # a store set up by a layout-2 pimem
        conn.execute((schema.MIGRATIONS[0]() + schema.MIGRATIONS[1]() + "INSERT INTO pimem.pimem_share_meta VALUES "
                      "('layout', '2'), ('min_reader_layout', '1');").encode())
        conn.execute(schema.roles_sql(members=MEMBERS).replace(
            "GRANT SELECT ON pimem.turn_words TO \"pimem_team\";\n", "").encode())
    rng = random.Random(5)
    words = ["flamingo", "cache", "retry", "deploy", "the", "emily", "boston", "lag", "postgres", "invalidation"]
    for author, machine in (("alice", "laptop"), ("bob", "box")):
        put(db, author, [Row(machine, f"{machine}{n}", f"s{n // 4}", rng.choice(["/work/proj", "/home/a"]),
                             " ".join(rng.choices(words, k=rng.randint(1, 6))),
                             " ".join(rng.choices(words, k=rng.randint(0, 14))), 1_750_000_000_000 + n * 1000,
                             rng.choice(["pi", "claude"])) for n in range(90)])
    questions = ["flamingo deploy lag", "postgres cache invalidation", "where does emily live in boston", "retry"]
    queries = [make_query(["x"], 10), make_query(["x"], 10, None, "/work/proj")]
    whos = [shared.Who(), shared.Who(mine=True), shared.Who(skip_machine="laptop")]

    def pages(key: str) -> list[list[tuple[object, ...]]]:
        found = []
        with psycopg.connect(db.conninfo("alice"), autocommit=True) as conn:
            for question in questions:
                qwords = ranking.query_words(_shortlist(candidates(question)))
                for query in queries:
                    for who in whos:
                        page = shared.text_page(conn, qwords, query, who, key)
                        got = [(r.author, r.machine, r.turn_id, r.hits, tuple(r.matched)) for r in page.rows]
                        oracle = shared.text_oracle(conn, qwords, query, who, key, budgeted=True)
                        assert got == [(r.author, r.machine, r.turn_id, r.hits, tuple(r.matched))
                                       for r in oracle.rows], (question, query.cwd, who)
                        found.append(got)
        return found

    with psycopg.connect(db.conninfo("alice"), autocommit=True) as conn:
        assert not shared.store_stats(conn, f"l2-{dbname}").turn_words
    before = pages(f"l2-{dbname}")
    assert sum(map(len, before)) > 40
    layout = apply_init(db.admin, members=MEMBERS)
    assert (layout.layout, layout.min_reader_layout) == (schema.LAYOUT, 1)   # through layout 3 (and on)
    with psycopg.connect(db.admin, autocommit=True) as conn:
        assert read_layout(conn).layout == schema.LAYOUT
    assert _same(db) == 180
    with psycopg.connect(db.conninfo("carol"), autocommit=True) as conn:
        assert shared.store_stats(conn, f"l3-{dbname}").turn_words
    after = pages(f"l3-{dbname}")
    assert after == before
    # Free text never reads turns' words now: a reader who may read every column of turns but those
    # gets the same pages (the layout-2 statement is refused: permission denied for user_words).
    columns = [str(c) for c, in psycopg.connect(db.admin, autocommit=True).execute(
        "SELECT column_name FROM information_schema.columns WHERE table_schema = 'pimem' AND table_name = 'turns' "
        "AND column_name NOT IN ('user_words', 'reply_words')")]
    with psycopg.connect(db.admin, autocommit=True) as conn:
        conn.execute(f"DROP ROLE IF EXISTS narrow_{dbname}")
        conn.execute(f"CREATE ROLE narrow_{dbname} LOGIN")
        conn.execute(f"GRANT USAGE ON SCHEMA pimem TO narrow_{dbname}")
        conn.execute(f"GRANT SELECT ON pimem.pimem_share_meta, pimem.word_docs, pimem.turn_words TO narrow_{dbname}")
        conn.execute(f"GRANT SELECT ({', '.join(columns)}) ON pimem.turns TO narrow_{dbname}")
        conn.execute(f"CREATE POLICY narrow_read ON pimem.turns FOR SELECT TO narrow_{dbname} USING (true)")
    with psycopg.connect(db.conninfo(f"narrow_{dbname}"), autocommit=True) as conn:
        position = 0
        for question in questions:
            qwords = ranking.query_words(_shortlist(candidates(question)))
            for query in queries:
                for who in whos:
                    if who == shared.Who():     # the others name the reader
                        page = shared.text_page(conn, qwords, query, who, f"n-{dbname}")
                        assert [(r.author, r.machine, r.turn_id, r.hits, tuple(r.matched))
                                for r in page.rows] == after[position]
                    position += 1
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            conn.execute("SELECT user_words FROM pimem.turns LIMIT 1")


def _count_words_def(conninfo: str) -> str:
    with psycopg.connect(conninfo, autocommit=True) as conn:
        row = conn.execute("SELECT pg_get_functiondef('pimem.count_words()'::regprocedure)").fetchone()
    assert row is not None
    return str(row[0])


def test_migration_from_layout_5_keeps_the_postings_and_numbers_new_rows_alike(pg_server: PgServer,
                                                                               share_db: ShareDb) -> None:
    """Layout 6 replaces the insert trigger's body only: the rows a layout-5 store holds stay as they are,
    and the migrated store's trigger is a fresh store's (rows inserted after it get the same arrays)."""
    db = share_db_at_layout(pg_server, 5)   # a store set up by a layout-5 pimem
    rng = random.Random(6)
    words = ["flamingo", "cache", "retry", "deploy", "the", "emily", "boston", "lag", "postgres", "invalidation"]

    def rows(machine: str, count: int) -> list[Row]:
        return [Row(machine, f"{machine}{n}", f"s{n // 4}", "/work/proj",
                    " ".join(rng.choices(words, k=rng.randint(0, 5))),
                    " ".join(rng.choices(words, k=rng.randint(0, 12))), 1_750_000_000_000 + n * 1000)
                for n in range(count)]

    put(db, "alice", rows("laptop", 60))
    with psycopg.connect(db.admin, autocommit=True) as conn:
        kept = conn.execute("SELECT * FROM pimem.turn_words ORDER BY doc_key").fetchall()
    assert _count_words_def(db.admin) != _count_words_def(share_db.admin)     # layout 5's body
    layout = apply_init(db.admin, members=MEMBERS)
    assert (layout.layout, layout.min_reader_layout) == (schema.LAYOUT, 1)
    assert _count_words_def(db.admin) == _count_words_def(share_db.admin)     # a fresh layout-6 store's
    with psycopg.connect(db.admin, autocommit=True) as conn:
        assert conn.execute("SELECT * FROM pimem.turn_words ORDER BY doc_key").fetchall() == kept
    put(db, "bob", rows("desk", 60))
    assert _same(db) == 120


def test_the_words_read_in_full_share_one_scan_and_a_common_word_keeps_its_own() -> None:
    """The postings' time is their heap visits: the words read in full (every posting) are read by one
    scan of the rows holding any of them in either column, so a row holding several is visited once; a
    word past READ_BUDGET keeps a branch per column (its newest postings there). Only when turn_words
    is larger than the shared buffers: a store they hold keeps a branch per (word, column)."""
    stats = shared.Stats(1_000_000, 40.0, 300.0, 10_000, True, True, True)
    ids = {"slugifi": 7, "titl": 8, "cach": 9}
    query = make_query(["x"], 5)

    def scans(read: list[str], df: dict[str, int]) -> int:
        sql, params = shared._text_sql(read, [], df, stats, query, shared.Who(), [], ids)
        assert sql.count("%s") == len(params)
        return sql.split(" post AS ")[0].count("FROM pimem.turn_words WHERE")

    assert scans(["slugifi", "titl"], {"slugifi": 20_000, "titl": 20_000}) == 1
    assert scans(["slugifi", "cach"], {"slugifi": 20_000, "cach": ranking.READ_BUDGET + 1}) == 3
    assert scans(["cach"], {"cach": ranking.READ_BUDGET + 1}) == 2
    stats = replace(stats, beyond_buffers=False)
    assert scans(["slugifi", "titl"], {"slugifi": 20_000, "titl": 20_000}) == 4


def test_one_scan_of_the_words_read_in_full_gives_the_oracles_pages(share_db: ShareDb,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """The one-scan statement (turn_words beyond the shared buffers, forced here) and the per-(word,
    column) one give the budgeted oracle's pages: rows holding several read words, in either or both
    columns, with folders and filters."""
    rng = random.Random(24)
    words = ["flamingo", "cache", "retry", "deploy", "emily", "boston", "lag", "postgres", "invalidation"]
    for author, machine in (("alice", "laptop"), ("bob", "box")):
        put(share_db, author, [Row(machine, f"{machine}{n}", f"s{n // 4}", rng.choice(["/work/proj", "/home/a"]),
                                   " ".join(rng.choices(words, k=rng.randint(1, 6))),
                                   " ".join(rng.choices(words, k=rng.randint(0, 12))), 1_750_000_000_000 + n * 1000,
                                   rng.choice(["pi", "claude"])) for n in range(120)])
    stats_of = shared.store_stats
    for beyond in (True, False):
        monkeypatch.setattr(shared, "store_stats", lambda conn, key, b=beyond: replace(stats_of(conn, key),
                                                                                      beyond_buffers=b))
        with psycopg.connect(share_db.conninfo("alice"), autocommit=True) as conn:
            assert shared.store_stats(conn, "one-scan").turn_words
            for question in ["flamingo deploy lag", "postgres cache invalidation", "emily boston retry"]:
                qwords = ranking.query_words(_shortlist(candidates(question)))
                for query in (make_query(["x"], 10), make_query(["x"], 10, None, "/work/proj")):
                    for who in (shared.Who(), shared.Who(mine=True)):
                        got = shared.text_page(conn, qwords, query, who, "one-scan")
                        want = shared.text_oracle(conn, qwords, query, who, "one-scan", budgeted=True)
                        assert got.rows and [(r.author, r.machine, r.turn_id, r.hits, tuple(r.matched))
                                             for r in got.rows] == [
                            (r.author, r.machine, r.turn_id, r.hits, tuple(r.matched)) for r in want.rows], question


def test_a_verbs_forms_give_the_oracles_pages_in_either_statement(share_db: ShareDb,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """A query word of an irregular verb (pimem.words.IRREGULAR_VERBS) is held by a row holding any of its
    forms: counted as their union, read with ``&&`` in the one-scan statement and the per-(word, column) one,
    checked likewise; both give the budgeted oracle's pages."""
    rng = random.Random(26)
    words = ["buy", "bought", "buying", "kayak", "met", "meet", "alex", "take", "took", "taken", "train", "the"]
    for author, machine in (("alice", "laptop"), ("bob", "box")):
        put(share_db, author, [Row(machine, f"{machine}{n}", f"s{n // 4}", "/work/proj",
                                   " ".join(rng.choices(words, k=rng.randint(1, 6))),
                                   " ".join(rng.choices(words, k=rng.randint(0, 12))), 1_750_000_000_000 + n * 1000)
                               for n in range(120)])
    stats_of = shared.store_stats
    for beyond in (True, False):
        monkeypatch.setattr(shared, "store_stats", lambda conn, key, b=beyond: replace(stats_of(conn, key),
                                                                                      beyond_buffers=b))
        with psycopg.connect(share_db.conninfo("alice"), autocommit=True) as conn:
            for question in ["when did I buy the kayak", "where did I meet alex", "which train did I take",
                             "bought kayak took train"]:
                qwords = ranking.query_words(_shortlist(candidates(question)))
                assert any(w.forms for w in qwords)
                for who in (shared.Who(), shared.Who(mine=True)):
                    got = shared.text_page(conn, qwords, make_query(["x"], 10), who, "verbs")
                    want = shared.text_oracle(conn, qwords, make_query(["x"], 10), who, "verbs", budgeted=True)
                    assert got.rows and [(r.author, r.machine, r.turn_id, r.hits, tuple(r.matched))
                                         for r in got.rows] == [
                        (r.author, r.machine, r.turn_id, r.hits, tuple(r.matched)) for r in want.rows], question


def test_hostile_questions_of_verb_forms_give_the_oracles_pages_in_every_layouts_path(
        share_db: ShareDb, monkeypatch: pytest.MonkeyPatch) -> None:
    """Round q10: questions made of every form of every irregular verb (32 query words of two or three forms
    each: 32 bits, arrays of up to 96 ids), one form repeated hundreds of times, two forms of one verb, forms
    beside FTS5's syntax and CJK, on rows holding many forms; through the counts of layouts 1 (one GIN count
    per word), 2 (``word_docs``) and 3 (ids; the one-scan statement and the per-(word, column) one) and a
    small read budget: every page the budgeted oracle's, no error."""
    rng = random.Random(10)
    forms = [form for group in IRREGULAR_VERBS for form in group.split()]
    vocabulary = [*forms, "kayak", "train", "alex", "the", "东京", "writing", "buying"]
    for author, machine in (("alice", "laptop"), ("bob", "box")):
        put(share_db, author, [Row(machine, f"{machine}{n}", f"s{n // 3}", "/work/proj",
                                   " ".join(rng.choices(vocabulary, k=rng.randint(1, 12))),
                                   " ".join(rng.choices(vocabulary, k=rng.randint(0, 20))),
                                   1_750_000_000_000 + n * 1000) for n in range(150)])
    questions = [" ".join(forms), " ".join(["bought"] * 300), "buy bought buying the kayak",
                 'did I "buy" NEAR(bought kayak) -took ^taken user: wrote {reply}: 东京 buy* kayak',
                 "How many stories have I written since I started writing?", "left met saw found wound"]
    stats_of = shared.store_stats
    layouts = {"1": {"word_docs": False, "turn_words": False}, "2": {"word_docs": True, "turn_words": False},
               "3": {"beyond_buffers": False}, "3, one scan": {"beyond_buffers": True}}
    for budget in (ranking.READ_BUDGET, 25):
        monkeypatch.setattr(ranking, "READ_BUDGET", budget)
        for name, fields in layouts.items():
            monkeypatch.setattr(shared, "store_stats", lambda conn, key, f=fields: replace(stats_of(conn, key), **f))
            shared._DF.clear()
            with psycopg.connect(share_db.conninfo("alice"), autocommit=True) as conn:
                for question in questions:
                    qwords = ranking.query_words(_shortlist(candidates(question)))
                    assert qwords and len(qwords) <= ranking.MAX_QUERY_WORDS
                    got = shared.text_page(conn, qwords, make_query(["x"], 10), shared.Who(), f"hostile{name}")
                    want = shared.text_oracle(conn, qwords, make_query(["x"], 10), shared.Who(), f"hostile{name}",
                                              budgeted=True)
                    assert [(r.author, r.machine, r.turn_id, r.hits, tuple(r.matched)) for r in got.rows] == [
                        (r.author, r.machine, r.turn_id, r.hits, tuple(r.matched)) for r in want.rows], (
                        name, budget, question[:60])
