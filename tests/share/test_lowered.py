"""Layout 8's narrow table of lowered texts (``pimem.turn_lowered``) on a real PostgreSQL: kept in step with
``turns`` by its statement triggers whoever writes (inserts, the push's upsert, updates that change the keys,
deletes, ``forget``, ``TRUNCATE``); members read it and cannot write it; entity recall reads its statements'
rows there (a page equal to the oracle's after every write); the migration from layout 7 fills it, moves the
index onto it and keeps the pages."""

from __future__ import annotations

import random
import time
from datetime import UTC, datetime
from typing import Any

import psycopg
import pytest

from pimem.recall import make_query
from pimem.share import recall as shared
from pimem.share import schema
from pimem.share.db import ShareError, apply_init, read_layout
from pimem.share.push import apply_forget
from share.conftest import MEMBERS, ShareDb, share_db_at_layout
from share.pgserver import PgServer
from share.test_grams import _mixed_rows, _pages
from share.test_recall import Row, put

Conn = psycopg.Connection[tuple[Any, ...]]

_PROJECTED = "author, machine, doc_key, ts, source, cwd, user_lower, reply_lower, grams"


def _in_step(admin: str) -> int:
    """Asserts that the narrow table holds exactly ``turns``' projection; returns its number of rows."""
    with psycopg.connect(admin) as conn:
        turns = conn.execute(f"SELECT {_PROJECTED} FROM pimem.turns ORDER BY author, machine, doc_key").fetchall()
        narrow = conn.execute(f"SELECT {_PROJECTED} FROM pimem.turn_lowered "
                              "ORDER BY author, machine, doc_key").fetchall()
    assert narrow == turns
    return len(turns)


def _page(conn: Conn, entities: list[str]) -> list[tuple[object, ...]]:
    query = make_query(entities, 10)
    got = [(r.author, r.turn_id, r.hits) for r in shared.entity_rows(conn, query, shared.Who(), 10)]
    assert got == [(r.author, r.turn_id, r.hits) for r in shared.scan_oracle(conn, query, shared.Who(), 10)]
    return got


def test_every_write_to_turns_keeps_the_narrow_table_in_step(share_db: ShareDb) -> None:
    rng = random.Random(81)
    put(share_db, "alice", _mixed_rows(rng, 60, "laptop"))
    put(share_db, "bob", _mixed_rows(rng, 60, "desk"))
    assert _in_step(share_db.admin) == 120
    with psycopg.connect(share_db.conninfo("carol"), autocommit=True) as reader:
        assert shared.entity_sql(reader, make_query(["x"], 5), shared.Who()).table == shared.NARROW_TABLE
        before = _page(reader, ["flamingo"])
        with psycopg.connect(share_db.conninfo("alice")) as conn:
            # an update of the lowered texts, and one that changes a row's keys (deleted and inserted again)
            conn.execute("UPDATE pimem.turns SET user_text = 'Flamingo flamingo', user_lower = 'flamingo flamingo', "
                         "reply_text = 'FLAMINGO', reply_lower = 'flamingo' "
                         "WHERE doc_key = 'laptop-0003'")
            conn.execute("UPDATE pimem.turns SET doc_key = 'renamed', machine = 'laptop2' "
                         "WHERE doc_key = 'laptop-0004'")
            # the push's upsert: a conflict updates, a new key inserts, in one statement
            conn.execute("INSERT INTO pimem.turns SELECT * FROM pimem.turns WHERE doc_key = 'laptop-0005' "
                         "UNION ALL SELECT author, machine, 'fresh', session_id, turn_index, source, cwd, ts, "
                         "'A_b Flamingo', reply_text, 'a_b flamingo', reply_lower, user_words, reply_words, "
                         "user_chars, reply_chars, tools, content_hash, pushed_at, NULL FROM pimem.turns "
                         "WHERE doc_key = 'laptop-0006' "
                         "ON CONFLICT (author, machine, doc_key) DO UPDATE SET reply_text = 'Flamingo X', "
                         "reply_lower = 'flamingo x'")
            conn.execute("DELETE FROM pimem.turns WHERE doc_key IN ('laptop-0007', 'laptop-0008')")
            conn.commit()
        assert _in_step(share_db.admin) == 119    # one new row, two deleted
        after = _page(reader, ["flamingo"])
        assert ("alice", "laptop-0003", 3) in after and after != before
        assert ("alice", "fresh") in {(author, turn) for author, turn, _ in _page(reader, ["a_b", "flamingo"])}
    with psycopg.connect(share_db.admin) as conn:
        conn.execute("TRUNCATE pimem.turns")
        conn.commit()
    assert _in_step(share_db.admin) == 0


def test_members_read_the_narrow_table_and_cannot_write_it(share_db: ShareDb) -> None:
    put(share_db, "bob", [Row("desk", "b1", "s", "/w", "flamingo", "", 1_750_000_000_000)])
    with psycopg.connect(share_db.conninfo("alice")) as conn:
        assert conn.execute("SELECT count(*) FROM pimem.turn_lowered").fetchone() == (1,)
        for statement in ("UPDATE pimem.turn_lowered SET user_lower = 'x'", "DELETE FROM pimem.turn_lowered",
                          "INSERT INTO pimem.turn_lowered SELECT author, 'm', 'k', ts, source, cwd, 'a_b', '', "
                          "'{a_,_b}' FROM pimem.turn_lowered", "TRUNCATE pimem.turn_lowered",
                          f"DROP INDEX pimem.{schema.NARROW_INDEX}",
                          "DROP TRIGGER turns_lowered_insert ON pimem.turns"):
            with pytest.raises(psycopg.errors.InsufficientPrivilege):
                conn.execute(statement)
            conn.rollback()
    assert _in_step(share_db.admin) == 1


def test_migration_from_layout_7_fills_the_narrow_table_and_keeps_the_pages(pg_server: PgServer) -> None:
    db = share_db_at_layout(pg_server, 7)   # a store set up by a layout-7 pimem
    rng = random.Random(82)
    put(db, "alice", _mixed_rows(rng, 150, "laptop"))
    put(db, "bob", _mixed_rows(rng, 150, "desk"))
    checked = [0]
    with psycopg.connect(db.conninfo("carol"), autocommit=True) as conn:
        assert shared._store_indexes(conn) == (True, True, False)
        before = _pages(conn, checked)
    layout = apply_init(db.admin, members=MEMBERS)
    assert (layout.layout, layout.min_reader_layout) == (schema.LAYOUT, 1) and schema.LAYOUT == 8
    with psycopg.connect(db.admin, autocommit=True) as conn:
        assert read_layout(conn).layout == 8
        indexes = {str(name) for name, in conn.execute("SELECT indexname FROM pg_indexes WHERE schemaname = 'pimem'")}
        assert schema.NARROW_INDEX in indexes and schema.LOWERED_INDEX not in indexes
        options = conn.execute("SELECT reloptions FROM pg_class WHERE oid = 'pimem.turn_lowered'::regclass").fetchone()
        assert options == (["toast_tuple_target=8160"],)
    assert _in_step(db.admin) == 300
    with psycopg.connect(db.conninfo("carol"), autocommit=True) as conn:
        assert shared._store_indexes(conn) == (True, False, True)
        assert _pages(conn, checked) == before
    put(db, "carol", _mixed_rows(rng, 30, "box"))        # written after the migration: the triggers' rows
    assert _in_step(db.admin) == 330
    with psycopg.connect(db.conninfo("carol"), autocommit=True) as conn:
        assert _pages(conn, checked) != before
    assert checked[0] > 300


def test_a_migration_past_layout_7_builds_no_index_on_turns() -> None:
    """From layout 6 (or older) to 8, layout 7's index on ``turns`` is not built only to be dropped (~25
    minutes at 2M rows); from layout 7 it is dropped."""
    create = f"CREATE INDEX IF NOT EXISTS {schema.LOWERED_INDEX} "
    assert create in schema.MIGRATIONS[6]()
    for layout in (0, 4, 6, 7):
        sql = schema.migration_sql(layout)
        assert create not in sql and f"CREATE INDEX IF NOT EXISTS {schema.NARROW_INDEX} " in sql, layout
        assert f"DROP INDEX IF EXISTS {schema.SCHEMA}.{schema.LOWERED_INDEX};" in sql


def _owned_store(pg_server: PgServer, layout: int) -> tuple[ShareDb, str]:
    """A new database owned by ``pimem_owner``, a role that is no superuser (docs/share.md: the database's
    owner may be the admin), set up by that owner as a pimem of shared layout ``layout`` (its group
    ``owned_team``); returns the store and the owner's conninfo."""
    with psycopg.connect(pg_server.conninfo(), autocommit=True) as conn:
        conn.execute("DO $$ BEGIN CREATE ROLE pimem_owner LOGIN CREATEROLE; "
                     "EXCEPTION WHEN duplicate_object THEN NULL; END $$")
        db = ShareDb(pg_server, pg_server.new_database())
        conn.execute(f'ALTER DATABASE "{db.dbname}" OWNER TO pimem_owner')
    owner = pg_server.conninfo(user="pimem_owner", dbname=db.dbname)
    missing = [table for first, table in ((2, "word_docs"), (3, "turn_words")) if layout < first]
    roles = "\n".join(line for line in schema.roles_sql("owned_team", MEMBERS).splitlines()
                      if not any(f"{schema.SCHEMA}.{table} " in line for table in missing))
    with psycopg.connect(owner, autocommit=True) as conn:
        conn.execute(("".join(schema.MIGRATIONS[n]() for n in range(layout)) + "INSERT INTO pimem.pimem_share_meta "
                      f"VALUES ('layout', '{layout}'), ('min_reader_layout', '1');").encode())
        conn.execute(roles.encode())
    return db, owner


@pytest.mark.parametrize("start", [1, 7])
def test_a_migration_by_an_owner_who_is_no_superuser_reads_every_row(pg_server: PgServer, start: int) -> None:
    """Row-level security is forced on ``turns`` and its policies name the team's group only: the owner's
    backfills (layout 2's counts, layout 3's postings, layout 8's narrow table) read every row all the same,
    and ``turns`` is forced again after."""
    db, owner = _owned_store(pg_server, start)
    rng = random.Random(83)
    put(db, "alice", _mixed_rows(rng, 40, "laptop"))
    put(db, "bob", _mixed_rows(rng, 40, "desk"))
    assert apply_init(owner, group="owned_team", members=MEMBERS).layout == schema.LAYOUT
    assert _in_step(db.admin) == 80
    with psycopg.connect(db.admin) as conn:
        counts = {str(w): int(n) for w, n in conn.execute(
            "SELECT w, count(*) FROM pimem.turns t, LATERAL (SELECT DISTINCT unnest(t.user_words || t.reply_words) "
            "AS w) x GROUP BY w")}
        assert counts and counts == {str(w): int(n) for w, n in conn.execute(
            "SELECT word, docs FROM pimem.word_docs WHERE docs <> 0")}
        assert conn.execute("SELECT count(*) FROM pimem.turn_words").fetchone() == (80,)
        assert conn.execute("SELECT relforcerowsecurity FROM pg_class "
                            "WHERE oid = 'pimem.turns'::regclass").fetchone() == (True,)
    with psycopg.connect(owner) as conn:          # the owner reads no row again
        assert conn.execute("SELECT count(*) FROM pimem.turns").fetchone() == (0,)
    with psycopg.connect(db.conninfo("carol"), autocommit=True) as conn:
        assert _page(conn, ["a_b"])


def test_a_migration_cut_short_leaves_layout_7_whole(pg_server: PgServer, monkeypatch: pytest.MonkeyPatch) -> None:
    """The migration is one transaction: its connection killed after the backfill and the index, nothing of
    layout 8 is left (no table, no trigger), layout 7's index is still there, pushes and pages go on as before;
    a second ``init`` then migrates."""
    db = share_db_at_layout(pg_server, 7)
    rng = random.Random(84)
    put(db, "alice", _mixed_rows(rng, 80, "laptop"))
    checked = [0]
    with psycopg.connect(db.conninfo("carol"), autocommit=True) as conn:
        before = _pages(conn, checked)
    whole = schema.MIGRATIONS[7]
    monkeypatch.setitem(schema.MIGRATIONS, 7, lambda: whole() + "SELECT pg_terminate_backend(pg_backend_pid());")
    with pytest.raises(ShareError):
        apply_init(db.admin, members=MEMBERS)
    with psycopg.connect(db.admin, autocommit=True) as conn:
        assert read_layout(conn).layout == 7
        assert conn.execute("SELECT to_regclass('pimem.turn_lowered'), to_regclass(%s) IS NOT NULL",
                            [f"{schema.SCHEMA}.{schema.LOWERED_INDEX}"]).fetchone() == (None, True)
        assert conn.execute("SELECT count(*) FROM pg_trigger WHERE tgname LIKE 'turns_lowered_%'").fetchone() == (0,)
    put(db, "bob", _mixed_rows(rng, 20, "desk"))
    with psycopg.connect(db.conninfo("carol"), autocommit=True) as conn:
        assert shared._store_indexes(conn) == (True, True, False)
        assert _pages(conn, checked) != before
    monkeypatch.setitem(schema.MIGRATIONS, 7, whole)
    assert apply_init(db.admin, members=MEMBERS).layout == 8
    assert _in_step(db.admin) == 100


def test_no_member_reaches_the_narrow_table_through_its_trigger_function(share_db: ShareDb) -> None:
    """``keep_lowered`` is ``SECURITY DEFINER``: a member who could attach it to a table of their own would
    write any row into the narrow table (another author's, forged). Its EXECUTE is revoked from PUBLIC; and
    through ``turns`` a member's statement reaches their own rows only (row-level security decides the
    transition tables' rows)."""
    put(share_db, "bob", [Row("desk", "b1", "s", "/w", "flamingo", "", 1_750_000_000_000)])
    with psycopg.connect(share_db.conninfo("alice")) as conn:
        conn.execute("CREATE TEMP TABLE forged AS SELECT * FROM pimem.turns WITH NO DATA")
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            conn.execute("CREATE TRIGGER forge AFTER INSERT ON forged REFERENCING NEW TABLE AS new_rows "
                         "FOR EACH STATEMENT EXECUTE FUNCTION pimem.keep_lowered()")
        conn.rollback()
        assert conn.execute("UPDATE pimem.turns SET user_lower = 'payroll' WHERE author = 'bob'").rowcount == 0
        assert conn.execute("DELETE FROM pimem.turns WHERE author = 'bob'").rowcount == 0
        conn.commit()
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            conn.execute("INSERT INTO pimem.turns SELECT 'bob', 'desk', 'b2', session_id, turn_index, source, cwd, "
                         "ts, user_text, reply_text, 'payroll', reply_lower, user_words, reply_words, user_chars, "
                         "reply_chars, tools, content_hash, pushed_at, grams FROM pimem.turns")
    with psycopg.connect(share_db.admin) as conn:
        assert conn.execute("SELECT author, doc_key, user_lower FROM pimem.turn_lowered").fetchall() == [
            ("bob", "b1", "flamingo")]
    assert _in_step(share_db.admin) == 1


def test_forget_keeps_the_narrow_table_in_step(share_db: ShareDb) -> None:
    rng = random.Random(85)
    put(share_db, "alice", _mixed_rows(rng, 60, "laptop"))
    put(share_db, "bob", _mixed_rows(rng, 30, "desk"))
    with psycopg.connect(share_db.conninfo("alice")) as conn:
        assert apply_forget(conn, "session", "s2") == 6
        assert apply_forget(conn, "folder", "/home/a") > 0
        conn.commit()
    left = _in_step(share_db.admin)
    assert 30 < left < 84
    with psycopg.connect(share_db.conninfo("carol"), autocommit=True) as conn:
        assert all(author == "bob" or turn[:7] == "laptop-" for author, turn, _ in _page(conn, ["a_b"]))


def test_hostile_and_huge_texts_are_kept_and_found_as_the_oracle_finds_them(share_db: ShareDb) -> None:
    """LIKE's own characters, CJK, and texts far past a page (compressible or not: the narrow table's texts go
    out of line past 8 kB instead of refusing the row), kept in step and matched as the oracle matches."""
    rng = random.Random(86)
    wide = "".join(chr(rng.randint(0x4E00, 0x9FFF)) for _ in range(150_000))    # ~450 kB, incompressible
    rows = [Row("laptop", "huge-cjk", "s", "/w", wide + " 100% a_b", "back\\slash " + wide[:5000], 1_750_000_000_000),
            Row("laptop", "huge-ascii", "s", "/w", "x%y " * 100_000, "a_b_c " * 50_000 + "锁住", 1_750_000_001_000),
            Row("laptop", "small", "s", "/w", "100% a%b a_b", "back\\slash 锁", 1_750_000_002_000),
            Row("laptop", "decoy", "s", "/w", "100 a-b axb", "back/slash", 1_750_000_003_000)]
    put(share_db, "alice", rows)
    assert _in_step(share_db.admin) == 4
    with psycopg.connect(share_db.admin) as conn:
        sizes = dict(conn.execute("SELECT doc_key, pg_column_size(user_lower) FROM pimem.turn_lowered").fetchall())
    assert sizes["huge-cjk"] > 400_000 and sizes["huge-ascii"] < 20_000    # stored whole; the repeats compressed
    with psycopg.connect(share_db.conninfo("bob"), autocommit=True) as conn:
        for entities in (["100%"], ["a_b"], ["back\\slash"], ["x%y"], ["锁"], [wide[7000:7003]], ["a%b", "a_b"]):
            found = {r.doc_key for r in rows if any(e in f"{r.user}\n{r.reply}".lower() for e in entities)}
            assert "decoy" not in found and len(found) >= 1
            assert {turn for _, turn, _ in _page(conn, entities)} == found, entities


def test_the_narrow_index_keeps_no_statistics_of_the_joined_texts(share_db: ShareDb) -> None:
    """The planner would run every LIKE of a statement over the histogram of the joined texts (tens of ms of
    planning at k=8, 2M rows); ANALYZE keeps none for the index's column 1, the table's columns keep theirs."""
    put(share_db, "alice", _mixed_rows(random.Random(87), 200, "laptop"))
    with psycopg.connect(share_db.admin, autocommit=True) as conn:
        conn.execute("ANALYZE pimem.turn_lowered")
        kept = conn.execute("SELECT c.relname, count(*) FROM pg_statistic s JOIN pg_class c ON c.oid = s.starelid "
                            "WHERE c.relname IN ('turn_lowered', %s) GROUP BY c.relname", [schema.NARROW_INDEX])
        assert dict(kept.fetchall()) == {"turn_lowered": 9}


def test_a_repush_on_a_new_store_is_not_quadratic_in_its_rows(share_db: ShareDb) -> None:
    """The push's upsert fires the UPDATE triggers with empty transition tables first; PL/pgSQL kept that call's
    plan of their ``DELETE … USING old_rows`` (a never-analyzed table, one row expected), which then rescanned
    the transition table once per row of the table: 19 s each for 2,000 rows re-pushed. Planned per call
    (``EXECUTE``), a re-push costs about what the first push did (a ratio, against the same rows' push)."""
    from pimem.share import push as pushing

    count = 1_500
    rows = []
    for n in range(count):
        user, reply = f"user text {n} flamingo " + "x" * 300, f"reply {n} " + "lorem ipsum " * 60
        rows.append(["m", f"k{n:05d}", "s", 0, "pi", "/w", datetime.fromtimestamp(1_750_000_000 + n, UTC), user, reply,
                     user.lower(), reply.lower(), ["user", "text"], ["reply", "lorem"], len(user), len(reply), [],
                     f"h{n}", schema.row_grams(user.lower(), reply.lower())])
    edited = [[*r[:8], r[8] + " edited", r[9], r[10] + " edited", *r[11:16], r[16] + "e",
               schema.row_grams(r[9], r[10] + " edited")] for r in rows]
    names = ", ".join(pushing._COLUMNS)
    spent = []
    with psycopg.connect(share_db.conninfo("alice")) as conn:
        conn.execute("CREATE TEMP TABLE stage (LIKE pimem.turns INCLUDING DEFAULTS) ON COMMIT DELETE ROWS")
        conn.commit()
        for batch in (rows, edited):
            with conn.cursor() as cur:
                with cur.copy(f"COPY stage ({names}) FROM STDIN (FORMAT BINARY)") as copy:
                    copy.set_types(list(pushing._TYPES))
                    for values in batch:
                        copy.write_row(values)
                started = time.perf_counter()
                cur.execute(pushing._UPSERT.replace(pushing._STAGE, "stage"))
                spent.append(time.perf_counter() - started)
            conn.commit()
    assert _in_step(share_db.admin) == count
    assert spent[1] < 3 * spent[0] + 0.5, spent
