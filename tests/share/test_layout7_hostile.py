"""Layout 7's index of both lowered texts joined by a line feed (``schema.LOWERED``), against hostile
entities on a real PostgreSQL (round q9): an entity that spans the join (the end of a user text, the line
feed, the start of its reply) is in the indexed text but in neither column, so it must match no row;
``%``, ``_``, ``\\`` and line feeds in it, case folding, entities of a thousand characters; and the
paths older pimems take on a layout-8 store (layout 7's joined texts on turns, no index left there; layout
6's per-column LIKEs); a migration from layout 6 cut short. Every answer is
the plain oracle's (:func:`pimem.share.recall.scan_oracle`), on the shipped thresholds and on thresholds
small enough that every path of ``entity_rows`` is taken."""

from __future__ import annotations

import random
from typing import Any

import psycopg
import pytest

from pimem.recall import make_query
from pimem.share import recall as shared
from pimem.share.db import ShareError, apply_init, read_layout
from share.conftest import MEMBERS, ShareDb, share_db_at_layout
from share.pgserver import PgServer
from share.test_hostile_differential import PATHS
from share.test_recall import Row, put

T0 = 1_750_000_000_000
_RNG = random.Random(7)
LONG = "".join(_RNG.choice("abcdefghij klmno_%\\锁") for _ in range(6_000))

# (user, reply): texts whose end and start make an entity with a line feed across the join
ROWS = [("alpha foo", "bar beta"), ("x_%", "\\y tail"), ("ends with 锁", "缓存 starts"), ("FOO", "BAR"),
        ("foo\nbar inside the user text", "nothing"), ("nothing", "in the reply: x_%\n\\y"),
        ("İstanbul", "straße\nΟΔΟΣ"), ("pre " + LONG, "post"), ("", "bar only"), ("foo only", ""),
        ("the flamingo", "the payroll"), ("flamingo", "\npayroll"), ("flamingo\n", "payroll")]
ENTITIES = [["foo\nbar"], ["o\nb"], ["x_%\n\\y"], ["锁\n缓存"], ["foo\nbar", "beta"], ["FOO\nBAR"],
            ["i̇stanbul"], ["STRASSE\nοδος"], ["straße\nοδος"], [LONG[:1000]], [LONG[2000:3000].upper(), "post"],
            ["o\n", "\nb"], ["flamingo\n\npayroll"], ["flamingo\npayroll"], ["flamingo", "payroll"],
            ["%"], ["_"], ["\\"]]


def _rows(copies: int) -> list[Row]:
    return [Row("laptop", f"k{n:03d}-{c}", f"s{n}", "/work/proj", user, reply, T0 + n * 1000 + c)
            for c in range(copies) for n, (user, reply) in enumerate(ROWS)]


def _key(rows: list[Any]) -> list[tuple[object, ...]]:
    return [(r.author, r.machine, r.turn_id, r.hits) for r in rows]


# What each pimem's entity recall reads on a layout-8 store (share.recall._store_indexes): this one the narrow
# table; a layout-7 pimem the joined texts on turns, whose index the migration moved (no index: the same
# answers, slowly); a layout-6 pimem the per-column LIKEs.
READERS = {"layout 8": None, "layout-7 pimem": (True, True, False), "layout-6 pimem": (True, False, False)}


@pytest.mark.parametrize("path", list(PATHS))
@pytest.mark.parametrize("reader", list(READERS))
def test_entities_across_the_join_and_hostile_ones_match_as_the_oracle(
        share_db: ShareDb, monkeypatch: pytest.MonkeyPatch, path: str, reader: str) -> None:
    put(share_db, "alice", _rows(4))
    for name, value in PATHS[path].items():
        monkeypatch.setattr(shared, name, value, raising=False)
    older = READERS[reader]
    if older is not None:
        monkeypatch.setattr(shared, "_store_indexes", lambda conn: older)
    shared._SAMPLES.clear()
    with psycopg.connect(share_db.conninfo("bob"), autocommit=True) as conn:
        assert shared._store_indexes(conn) == (older or (True, False, True))
        found = 0
        for entities in ENTITIES:
            query = make_query(entities, 50)
            expected = shared.scan_oracle(conn, query, shared.Who(), 50)
            assert _key(shared.entity_rows(conn, query, shared.Who(), 50)) == _key(expected), entities
            found += len(expected)
            if entities in (["foo\nbar"], ["o\nb"], ["x_%\n\\y"], ["锁\n缓存"], ["flamingo\n\npayroll"]):
                # across the join: only the rows holding it in one text (never "alpha foo" + "bar beta")
                assert all(entities[0] in r.user_text.lower() or entities[0] in r.reply_text.lower()
                           for r in expected), entities
                assert not {"alpha foo", "ends with 锁", "x_%", "flamingo"} & {r.user_text for r in expected}
        assert found > 40


def test_a_migration_from_layout_6_cut_short_leaves_it_whole_and_the_next_one_completes(
        pg_server: PgServer) -> None:
    """``pimem share init --apply`` on a layout-6 store while a push holds the table (its lock stops
    ``CREATE INDEX``, and the lock timeout cuts the migration short): one transaction, so nothing of it
    is left (layout 6, its three GINs, no ``turns_lowered``) and entity recall answers as before, on the
    per-column path; the next apply completes layout 8 (layout 7's index never built on turns) and the
    answers are the same."""
    db = share_db_at_layout(pg_server, 6)
    put(db, "alice", _rows(2))

    def state() -> tuple[int, set[str]]:
        with psycopg.connect(db.admin, autocommit=True) as conn:
            indexes = {str(name) for name, in conn.execute("SELECT indexname FROM pg_indexes WHERE schemaname = "
                                                           "'pimem' AND tablename = 'turns'")}
            return read_layout(conn).layout, indexes & {"turns_lowered", "turns_user_lower_trgm",
                                                         "turns_reply_lower_trgm", "turns_grams"}

    def pages() -> list[list[tuple[object, ...]]]:
        with psycopg.connect(db.conninfo("bob"), autocommit=True) as conn:
            found = []
            for entities in ENTITIES:
                query = make_query(entities, 50)
                got = _key(shared.entity_rows(conn, query, shared.Who(), 50))
                assert got == _key(shared.scan_oracle(conn, query, shared.Who(), 50)), entities
                found.append(got)
            return found

    before = pages()
    assert state() == (6, {"turns_user_lower_trgm", "turns_reply_lower_trgm", "turns_grams"})
    with psycopg.connect(db.conninfo("alice")) as pushing:
        pushing.execute("LOCK TABLE pimem.turns IN ROW EXCLUSIVE MODE")     # what a push's INSERT holds
        with pytest.raises(ShareError, match="lock timeout"):
            apply_init(db.admin + " options='-c lock_timeout=300'", members=MEMBERS)
        pushing.rollback()
    assert state() == (6, {"turns_user_lower_trgm", "turns_reply_lower_trgm", "turns_grams"})
    assert pages() == before
    assert apply_init(db.admin, members=MEMBERS).layout == 8      # 6 -> 8: layout 7's index never built
    assert state() == (8, set())
    assert pages() == before and sum(map(len, before)) > 40
