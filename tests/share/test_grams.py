"""Layout 4's short grams (``turns.grams``, GIN indexed) on a real PostgreSQL: the database's grams equal
pimem's (hostile characters included) and hold every entity's; entity recall narrowed by them gives the
plain oracle's pages, the same as without them; the migration from layout 3 computes them in place and
keeps the pages; the entities pg_trgm cannot narrow are read from their index. Layout 5: the push writes
them (``schema.row_grams``), the database computes them for a row written without them; a member's
grams touch only their own rows and cannot make a row match; the migration from layout 4 keeps them."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any, cast

import psycopg
import pytest

from pimem.recall import make_query
from pimem.share import recall as shared
from pimem.share import schema
from pimem.share.db import apply_init, read_layout
from pimem.share.push import push
from pimem.share.schema import row_grams, short_grams
from pimem.share.state import ShareConfig
from share.conftest import MEMBERS, ShareDb, share_db_at_layout
from share.local import Turn, write
from share.pgserver import PgServer
from share.test_recall import Row, put

Conn = psycopg.Connection[tuple[Any, ...]]

# Blanks and controls (DEL included), LIKE's characters, punctuation, CJK, combining marks, characters
# whose lower case is longer (İ) or another script's, astral characters, a NUL-free mix of them all.
HOSTILE = ["a_b", "a_b_c", "A_B", "x%y", "50%", "back\\slash", "C:\\path\\file", "锁", "缓存", "清缓存层", "加锁",
           "c#", ".h", "i/o", "io", "q", "the", "a b", "\t_\t", "_", "__", "%", "\x7f", "a\x7fb", "\x01x\x1f",
           "i̇stanbul", "ǅemal", "ΟΔΟΣ", "οδος", "straße", "ﬃ", "𐐀𐐁", "😀a", "a😀", "e\u0301", "\u3000锁\u3000",
           "\u00a0nbsp", "x\ny", "{|}~", "[^\\]", "日本語テキスト", "한국어", "ß_ß"]


def _sql_grams(conn: Conn, user: str, reply: str) -> set[str]:
    row = conn.execute("SELECT pimem.short_grams(%s, %s)", (user, reply)).fetchone()
    assert row is not None
    return set(row[0])


def test_the_database_grams_equal_pimems_and_hold_every_substrings(share_db: ShareDb) -> None:
    rng = random.Random(44)
    alphabet = "".join(HOSTILE) + "abcxyz019 \n\t._-/%\\"
    with psycopg.connect(share_db.admin, autocommit=True) as conn:
        for text in HOSTILE:
            assert _sql_grams(conn, text, "") == short_grams(text + "\n"), text
        for _ in range(300):
            user = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 40)))
            reply = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 40)))
            grams = _sql_grams(conn, user, reply)
            assert grams == short_grams(user + "\n" + reply), (user, reply)
            assert row_grams(user, reply) == sorted(grams)     # what the push sends for the row
            # A text holding an entity holds its grams: what makes ``grams @>`` a safe narrowing.
            for text in (user, reply):
                if len(text) > 1:
                    start = rng.randrange(len(text) - 1)
                    assert short_grams(text[start:rng.randint(start + 1, len(text))]) <= grams
    assert short_grams("a_b") == {"a_", "_b"} and short_grams("缓存") == {"缓", "存", "缓存"}
    assert short_grams("io") == set() and short_grams("a b") == set()


def _mixed_rows(rng: random.Random, count: int, machine: str) -> list[Row]:
    vocab = ["锁", "缓存", "缓存层", "加锁", "a_b", "a_b_c", "A_B", "c#", "io", "cache", "flamingo", "100%", "the",
             "x_y", "b_a", "存", "缓", "锁住"]
    rows = []
    for n in range(count):
        user = " ".join(rng.choice(vocab) for _ in range(rng.randint(0, 5)))
        reply = "".join(rng.choice(vocab) for _ in range(rng.randint(0, 6)))    # glued: substrings span words
        rows.append(Row(machine, f"{machine}-{n:04d}", f"s{n // 6}", rng.choice(["/work/proj", "/home/a"]), user,
                        reply, 1_750_000_000_000 + rng.randint(0, 200) * 1000, rng.choice(["pi", "claude"])))
    return rows


QUERIES = [["锁"], ["缓存"], ["a_b"], ["c#"], ["锁", "缓存"], ["a_b", "cache"], ["缓存", "a_b", "cache", "锁"],
           ["flamingo", "缓存", "a_b", "cache", "锁", "100%"], ["io", "锁"], ["A_B", "存"], ["加锁", "锁住", "缓存层"]]


def _pages(conn: Conn, checked: list[int]) -> list[list[tuple[object, ...]]]:
    pages = []
    for entities in QUERIES:
        for limit in (1, 5, 30):
            query = make_query(entities, limit)
            for who in (shared.Who(), shared.Who(skip_machine="desk")):
                got = shared.entity_rows(conn, query, who, limit)
                page = [(r.author, r.machine, r.turn_id, r.hits) for r in got]
                assert page == [(r.author, r.machine, r.turn_id, r.hits)
                                for r in shared.scan_oracle(conn, query, who, limit)], entities
                checked[0] += len(page)
                pages.append(page)
    return pages


@pytest.mark.parametrize(("selective", "conjunctions"), [(3_000, 28), (4, 28), (4, 2)])
def test_entity_recall_with_grams_equals_the_oracle_and_recall_without_them(
        share_db: ShareDb, monkeypatch: pytest.MonkeyPatch, selective: int, conjunctions: int) -> None:
    """``selective`` 4: every entity past the listed budget, so the page comes from the conjunctions
    (``conjunctions`` 2: those of a lower score, fewer and smaller, as past 28 sets)."""
    rng = random.Random(selective)
    monkeypatch.setattr(shared, "_MAX_CONJUNCTIONS", conjunctions)
    put(share_db, "alice", _mixed_rows(rng, 220, "laptop"))
    put(share_db, "bob", _mixed_rows(rng, 220, "desk"))
    monkeypatch.setattr(shared, "SELECTIVE_ROWS", selective)
    monkeypatch.setattr(shared, "INDEXED_SCAN_ROWS", 10)
    monkeypatch.setattr(shared, "_SCAN_BATCH", 5)
    checked = [0]
    conjunction_sets: list[int] = []
    real_sufficient = shared._sufficient

    def sufficient(*args: Any) -> Any:
        found = real_sufficient(*args)
        conjunction_sets.append(len(found))
        return found
    monkeypatch.setattr(shared, "_sufficient", sufficient)
    with psycopg.connect(share_db.conninfo("carol"), autocommit=True) as conn:
        assert shared.has_grams(conn)
        with_grams = _pages(conn, checked)
        if selective == 4:      # the conjunctions were taken, past their number too when it is 2
            assert conjunction_sets and (conjunctions > 2 or max(conjunction_sets) > conjunctions)
        monkeypatch.setattr(shared, "has_grams", lambda _conn: False)    # what a layout-3 pimem reads
        assert _pages(conn, checked) == with_grams
    assert checked[0] > 500


def _plan(conn: Conn, entities: list[str], grams: bool, conjunct: bool = False) -> Any:
    """The plan of "holds one of ``entities``" (``conjunct``: "holds them all", as the probe's conjunctions
    ask it), as entity recall writes it for this store."""
    sql = shared._EntitySql.of(make_query(entities, 5), shared.Who(), grams)
    store = shared.entity_sql(conn, make_query(entities, 5), shared.Who())
    sql.lowered, sql.table = store.lowered, store.table
    if conjunct:
        shared._narrow_trigrams(conn, sql)
        matches = [sql.match(i, conjunct=True) for i in range(len(entities))]
        where, params = " AND ".join(c for c, _ in matches), [v for _, values in matches for v in values]
    else:
        where, params = sql.matching(range(len(entities)))
    conn.execute("SET enable_seqscan = off")
    row = conn.execute(f"EXPLAIN (FORMAT JSON) SELECT doc_key FROM {sql.table} WHERE {where}", params).fetchone()
    conn.execute("RESET enable_seqscan")
    assert row is not None
    return row[0]


def _index_scans(plan: Any) -> list[tuple[str, str]]:
    """Every (index, condition) an index scan of ``plan`` reads."""
    found: list[tuple[str, str]] = []

    def walk(node: dict[str, Any]) -> None:
        if "Index Name" in node:
            found.append((str(node["Index Name"]), str(node.get("Index Cond", ""))))
        for child in node.get("Plans", []):
            walk(child)
    walk(plan[0]["Plan"])
    return found


def test_entities_without_trigrams_are_read_from_the_grams_index(share_db: ShareDb) -> None:
    put(share_db, "alice", _mixed_rows(random.Random(3), 300, "laptop"))
    with psycopg.connect(share_db.conninfo("bob"), autocommit=True) as conn:
        for entities in (["锁"], ["缓存"], ["a_b"], ["锁", "a_b"]):
            assert any("grams @>" in cond for _, cond in _index_scans(_plan(conn, entities, True))), entities
            assert not any("grams @>" in cond for _, cond in _index_scans(_plan(conn, entities, False)))
        assert not any("grams @>" in cond for _, cond in _index_scans(_plan(conn, ["flamingo"], True)))
        assert not shared._EntitySql.of(make_query(["io"], 5), shared.Who(), True).indexable(0)


def test_a_conjunction_is_one_scan_of_the_lowered_texts_index(share_db: ShareDb) -> None:
    """Layout 7: "holds A and B" (the probe's conjunctions), whichever text each is in and with an
    entity narrowed by its grams, is one scan of the index over both lowered texts: GIN intersects the keys
    itself, skipping through the commoner lists, instead of a bitmap per entity and text intersected after.
    Layout 8: that index is on the narrow table (``turn_lowered_trgm``), which the statements read."""
    put(share_db, "alice", _mixed_rows(random.Random(4), 300, "laptop"))
    with psycopg.connect(share_db.conninfo("bob"), autocommit=True) as conn:
        assert shared._store_indexes(conn) == (True, False, True)
        for entities in (["flamingo", "payroll"], ["flamingo", "a_b"], ["payroll", "缓存", "slugify_title"]):
            scans = _index_scans(_plan(conn, entities, True, conjunct=True))
            assert [name for name, _ in scans] == [schema.NARROW_INDEX], (entities, scans)


def test_behind_its_grams_an_entity_gives_pg_trgm_only_its_rare_trigrams() -> None:
    """Layout 7: an entity narrowed by its grams is never matched by the whole pattern on the lowered texts'
    index (``c:\\path\\file``: pg_trgm's word-boundary trigrams of its pieces, "  p", " fi", are lists of most
    rows, read in full by every conjunction holding it), only by its rare trigrams or by the grams alone;
    an entity without grams keeps its pattern; ``strpos`` decides every row either way."""
    sql = shared._EntitySql.of(make_query(["C:\\path\\file", "flamingo"], 5), shared.Who(), True)
    sql.lowered = True
    assert sql.grams[0] is not None and sql.grams[1] is None
    sql.trigrams, sql.tight = [None, None], [False, False]
    for conjunct in (False, True):
        condition, values = sql.match(0, conjunct)
        assert "LIKE" not in condition and "grams @>" in condition and "strpos" in condition
        assert sql.patterns[0] not in values
    sql.trigrams = [["pat"], None]
    for conjunct in (False, True):
        condition, values = sql.match(0, conjunct)
        assert condition.count("LIKE") == 1 and "%pat%" in values and sql.patterns[0] not in values
    assert sql.patterns[1] in sql.match(1)[1]


def test_behind_its_grams_an_entity_whose_trigrams_are_all_rare_gives_pg_trgm_all_of_them(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Round q10: ``qzx.py``'s one trigram is rare, so all of its trigrams are; :func:`_narrow_trigrams` then
    chose none (its pattern, which behind the grams pg_trgm no longer gets), and the entity was narrowed by its
    grams alone (``x.``, ``.p``: in every row of Python paths), each row of them tested by ``strpos``. Behind
    its grams it now gives pg_trgm its rare trigrams, all of them; without grams, and on a store before layout
    7, the choice is as it was (the whole pattern)."""
    texts = [(f"see src/module_{n}.py and tests/test_{n}.py", "done") for n in range(200)]
    monkeypatch.setattr(shared, "_sample", lambda conn: (texts, {}))
    for lowered in (True, False):
        sql = shared._EntitySql.of(make_query(["QZX.py", "qzxw"], 5), shared.Who(), True)
        sql.lowered = lowered
        assert sql.grams[0] is not None and sql.grams[1] is None
        shared._narrow_trigrams(cast(Any, None), sql)
        assert sql.trigrams == ([["qzx"], None] if lowered else [None, None]) and sql.tight == [False, False]
    sql = shared._EntitySql.of(make_query(["QZX.py"], 5), shared.Who(), True)
    sql.lowered = True
    shared._narrow_trigrams(cast(Any, None), sql)
    for conjunct in (False, True):
        condition, values = sql.match(0, conjunct)
        assert condition.count("LIKE") == 1 and "%qzx%" in values and "grams @>" in condition and "strpos" in condition


_INSERT = ("INSERT INTO pimem.turns (machine, doc_key, session_id, turn_index, source, cwd, ts, user_text, "
           "reply_text, user_lower, reply_lower, user_words, reply_words, user_chars, reply_chars, content_hash{}) "
           "VALUES ('laptop', %s, 's', 0, 'pi', '/w', now(), %s, '', %s, '', '{{}}', '{{}}', 1, 0, 'h'{})")


def _grams(conn: Conn, doc_key: str) -> list[str]:
    row = conn.execute("SELECT grams FROM pimem.turns WHERE doc_key = %s", (doc_key,)).fetchone()
    assert row is not None
    return list(row[0])


def test_a_row_written_without_its_grams_gets_the_databases(share_db: ShareDb) -> None:
    with psycopg.connect(share_db.conninfo("alice")) as conn:
        conn.execute(_INSERT.format("", ""), ("k1", "加锁 a_b", "加锁 a_b"))
        conn.execute(_INSERT.format(", grams", ", NULL"), ("k2", "c#", "c#"))
        assert _grams(conn, "k1") == row_grams("加锁 a_b", "") and _grams(conn, "k2") == ["c#"]
        # the lowered texts changed and the grams were left as they were: computed again
        conn.execute("UPDATE pimem.turns SET user_lower = 'x_y' WHERE doc_key = 'k1'")
        assert _grams(conn, "k1") == ["_y", "x_"]
        # changed with the texts (the push's upsert): the writer's
        conn.execute("UPDATE pimem.turns SET user_lower = '锁', grams = '{锁}' WHERE doc_key = 'k2'")
        assert _grams(conn, "k2") == ["锁"]
        conn.commit()


def test_the_push_sends_its_rows_grams(share_db: ShareDb, db_path: Path) -> None:
    """The push computes the grams (layout 5): its rows never reach the database's function, here replaced
    by one that would store a sentinel; an edited turn pushed again carries its new grams."""
    with psycopg.connect(share_db.admin, autocommit=True) as conn:
        conn.execute("CREATE OR REPLACE FUNCTION pimem.short_grams(u text, r text) RETURNS text[] LANGUAGE sql "
                     "IMMUTABLE AS $$ SELECT '{sentinel}'::text[] $$")
    turns = [Turn(f"t{n}", "s1", "/work/proj", text, f"reply {n} with c# and a_b", 1_750_000_000_000 + n)
             for n, text in enumerate(HOSTILE)]
    write(db_path, turns)
    config = ShareConfig(conninfo=share_db.conninfo("alice"), machine="laptop", folders=("/work/proj",))
    assert push(db_path, config).sent == len(turns)
    write(db_path, [Turn("t0", "s1", "/work/proj", "加锁 now", "x_y", 1_750_000_000_000)])
    assert push(db_path, config).sent == 1

    def pushed() -> dict[str, tuple[list[str], str, str]]:
        with psycopg.connect(share_db.admin) as conn:
            return {str(k): (list(g), str(u), str(r)) for k, g, u, r in conn.execute(
                "SELECT doc_key, grams, user_lower, reply_lower FROM pimem.turns")}
    rows = pushed()
    assert len(rows) == len(turns) and rows["t0"][1:] == ("加锁 now", "x_y")
    assert all(grams == row_grams(user, reply) for grams, user, reply in rows.values())
    with psycopg.connect(share_db.conninfo("alice")) as conn:    # a writer sending none gets the function's
        conn.execute(_INSERT.format("", ""), ("k9", "a_b", "a_b"))
        conn.commit()
    assert pushed()["k9"][0] == ["sentinel"]


def test_a_members_grams_touch_only_their_rows_and_make_no_row_match(share_db: ShareDb) -> None:
    """The push's grams are the member's to write, as their ``user_lower`` is: row-level security keeps
    them to the member's own rows, and recall tests every row the grams narrow to literally."""
    put(share_db, "bob", [Row("desk", "b1", "s", "/w", "加锁 a_b", "", 1_750_000_000_000)])
    with psycopg.connect(share_db.conninfo("alice")) as conn:
        # grams of entities the row does not hold: a candidate for them, never a match
        conn.execute(_INSERT.format(", grams", ", %s"), ("k1", "plain words", "plain words", ["锁", "a_", "_b"]))
        assert conn.execute("UPDATE pimem.turns SET grams = '{}' WHERE author = 'bob'").rowcount == 0
        conn.commit()
        for statement in (f"DROP INDEX pimem.{schema.NARROW_INDEX}", "ALTER TABLE pimem.turns DROP COLUMN grams",
                          "DROP TRIGGER turns_grams_insert ON pimem.turns",
                          "CREATE OR REPLACE FUNCTION pimem.short_grams(u text, r text) RETURNS text[] "
                          "LANGUAGE sql IMMUTABLE AS $$ SELECT '{}'::text[] $$"):
            with pytest.raises(psycopg.errors.InsufficientPrivilege):
                conn.execute(statement)
            conn.rollback()
    with psycopg.connect(share_db.admin) as conn:
        assert _grams(conn, "b1") == row_grams("加锁 a_b", "")
    with psycopg.connect(share_db.conninfo("carol"), autocommit=True) as conn:
        for entities in (["锁"], ["a_b"], ["锁", "a_b"]):
            query = make_query(entities, 10)
            got = [(r.author, r.turn_id) for r in shared.entity_rows(conn, query, shared.Who(), 10)]
            assert got == [(r.author, r.turn_id) for r in shared.scan_oracle(conn, query, shared.Who(), 10)]
            assert got == [("bob", "b1")], entities


def test_migration_from_layout_3_computes_the_grams_and_keeps_the_pages(pg_server: PgServer) -> None:
    db = share_db_at_layout(pg_server, 3)   # a store set up by a layout-3 pimem
    rng = random.Random(9)
    put(db, "alice", _mixed_rows(rng, 150, "laptop"))
    put(db, "bob", _mixed_rows(rng, 150, "desk"))
    checked = [0]
    with psycopg.connect(db.conninfo("carol"), autocommit=True) as conn:
        assert not shared.has_grams(conn)
        before = _pages(conn, checked)
    layout = apply_init(db.admin, members=MEMBERS)
    assert (layout.layout, layout.min_reader_layout) == (schema.LAYOUT, 1)
    with psycopg.connect(db.admin, autocommit=True) as conn:
        assert read_layout(conn).layout == schema.LAYOUT
        rows = conn.execute("SELECT user_lower, reply_lower, grams FROM pimem.turns").fetchall()
        assert len(rows) == 300
        assert all(set(grams) == short_grams(user + "\n" + reply) for user, reply, grams in rows)
    with psycopg.connect(db.conninfo("carol"), autocommit=True) as conn:
        assert shared.has_grams(conn)
        assert _pages(conn, checked) == before
    assert checked[0] > 300


def test_migration_from_layout_4_keeps_the_grams_and_the_pages(pg_server: PgServer) -> None:
    """Layout 4's generated column becomes the push's (its values kept, no rewrite), the database still
    filling a row written without them; the word GINs of turns, which no layout-3 reader uses, are gone."""
    db = share_db_at_layout(pg_server, 4)   # a store set up by a layout-4 pimem
    rng = random.Random(10)
    put(db, "alice", _mixed_rows(rng, 150, "laptop"))
    put(db, "bob", _mixed_rows(rng, 150, "desk"))
    checked = [0]
    with psycopg.connect(db.conninfo("carol"), autocommit=True) as conn:
        before = _pages(conn, checked)
    with psycopg.connect(db.admin, autocommit=True) as conn:
        generated = conn.execute("SELECT doc_key, grams FROM pimem.turns ORDER BY doc_key").fetchall()
    layout = apply_init(db.admin, members=MEMBERS)
    assert (layout.layout, layout.min_reader_layout) == (schema.LAYOUT, 1)
    with psycopg.connect(db.admin, autocommit=True) as conn:
        assert conn.execute("SELECT doc_key, grams FROM pimem.turns ORDER BY doc_key").fetchall() == generated
        assert conn.execute("SELECT attgenerated, attnotnull FROM pg_attribute WHERE attname = 'grams' "
                            "AND attrelid = 'pimem.turns'::regclass").fetchone() == ("", True)
        indexes = {str(name) for name, in conn.execute("SELECT indexname FROM pg_indexes "
                                                       "WHERE schemaname = 'pimem'")}
        assert schema.NARROW_INDEX in indexes and not {"turns_user_words", "turns_reply_words"} & indexes
        # layout 7: the grams' and the lowered texts' GINs are the one index over both (layout 8: on turn_lowered)
        assert not {"turns_grams", "turns_user_lower_trgm", "turns_reply_lower_trgm", schema.LOWERED_INDEX} & indexes
    put(db, "carol", _mixed_rows(rng, 30, "box"))      # written without grams, after the migration
    with psycopg.connect(db.conninfo("carol"), autocommit=True) as conn:
        assert _pages(conn, checked) != before      # carol's rows found, each page equal to the oracle's
        assert all(list(grams) == row_grams(u, r) for u, r, grams in conn.execute(
            "SELECT user_lower, reply_lower, grams FROM pimem.turns WHERE author = 'carol'"))
    with psycopg.connect(db.admin, autocommit=True) as conn:
        conn.execute("DELETE FROM pimem.turns WHERE author = 'carol'")
    with psycopg.connect(db.conninfo("carol"), autocommit=True) as conn:
        assert _pages(conn, checked) == before
    assert checked[0] > 300


def test_entity_statements_are_never_prepared(share_db: ShareDb, monkeypatch: pytest.MonkeyPatch) -> None:
    """psycopg prepares a statement run five times on a connection, and PostgreSQL may then plan it for
    any pattern (a generic plan: a scan of the whole table for these LIKEs)."""
    put(share_db, "alice", _mixed_rows(random.Random(8), 120, "laptop"))
    monkeypatch.setattr(shared, "SELECTIVE_ROWS", 4)
    with psycopg.connect(share_db.conninfo("bob"), autocommit=True) as conn:
        for _ in range(8):
            for entities in (["锁", "缓存", "a_b"], ["flamingo", "cache", "100%"]):
                shared.entity_rows(conn, make_query(entities, 5), shared.Who(), 5)
        prepared = [str(s) for s, in conn.execute("SELECT statement FROM pg_prepared_statements")]
        assert prepared                     # psycopg did prepare the statements run that often
        assert not [s for s in prepared if "LIKE" in s or "grams @>" in s]


def test_an_entity_with_trigrams_and_common_grams_is_read_through_pg_trgm(share_db: ShareDb,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """Grams the planner expects in more than COMMON_GRAMS_ROWS rows narrow an entity pg_trgm narrows
    too little to pay their bitmap: read without them. An entity with rare grams keeps them, and so
    does one without trigrams (nothing else narrows it); the pages are the oracle's either way."""
    put(share_db, "alice", [Row("box", f"k{n}", "s", "/w", "my_title x_y" if n % 2 else "x", "c#" if n < 3 else "y",
                                1_750_000_000_000 + n) for n in range(300)])
    with psycopg.connect(share_db.admin, autocommit=True) as conn:
        conn.execute("ANALYZE pimem.turns")
    monkeypatch.setattr(shared, "COMMON_GRAMS_ROWS", 50)
    with psycopg.connect(share_db.conninfo("bob"), autocommit=True) as conn:
        sql = shared._EntitySql.of(make_query(["my_title", "y_title", "x_y", "c#"], 5), shared.Who(), True)
        assert all(g is not None for g in sql.grams)
        shared._unnarrow_common_grams(conn, sql)
        assert sql.grams[0] is None and sql.grams[1] is None     # y_ and _t: in half of the rows
        assert sql.grams[2] == ["_y", "x_"] and sql.grams[3] == ["c#"]      # no trigram: kept
        sql = shared._EntitySql.of(make_query(["c#title"], 5), shared.Who(), True)
        shared._unnarrow_common_grams(conn, sql)
        assert sql.grams[0] is not None                       # c# is rare
        for entities in (["my_title"], ["my_title", "c#", "x_y"], ["y_title", "flamingo"]):
            query = make_query(entities, 5)
            got = shared.entity_rows(conn, query, shared.Who(), 5)
            assert [(r.author, r.turn_id, r.hits) for r in got] == [
                (r.author, r.turn_id, r.hits) for r in shared.scan_oracle(conn, query, shared.Who(), 5)], entities
