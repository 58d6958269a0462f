"""Layout 8's narrow table of lowered texts (``pimem.turn_lowered``) on a real PostgreSQL: kept in step with
``turns`` by its statement triggers whoever writes (inserts, the push's upsert, updates that change the keys,
deletes, ``forget``, ``TRUNCATE``); members read it and cannot write it; entity recall reads its statements'
rows there (a page equal to the oracle's after every write); the migration from layout 7 fills it, moves the
index onto it and keeps the pages."""

from __future__ import annotations

import random
from typing import Any

import psycopg
import pytest

from pimem.recall import make_query
from pimem.share import recall as shared
from pimem.share import schema
from pimem.share.db import apply_init, read_layout
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
