"""The words' counts of the shared store (layout 2, ``pimem.word_docs``: free text's document counts),
on a real PostgreSQL: kept exact by the database's triggers through pushes, changed texts pushed again
and forgets; backfilled by the migration from layout 1 (whose stores are still read, counting per word);
readable and not writable by members."""

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
from pimem.share.state import ShareConfig, save_config
from share.conftest import MEMBERS, ShareDb
from share.local import Turn, write
from share.pgserver import PgServer
from share.test_recall import Row, put


def _counts_by_scan(conn: psycopg.Connection[tuple[object, ...]]) -> dict[str, int]:
    return {str(w): int(n) for w, n in conn.execute(
        "SELECT w, count(*) FROM pimem.turns t, LATERAL (SELECT DISTINCT unnest(t.user_words || t.reply_words) AS w) "
        "x GROUP BY w")}


def _kept_counts(conn: psycopg.Connection[tuple[object, ...]]) -> dict[str, int]:
    return {str(w): int(n) for w, n in conn.execute("SELECT word, docs FROM pimem.word_docs WHERE docs <> 0")}


def pushed_history(share_db: ShareDb, db_path: Path) -> tuple[list[Turn], ShareConfig]:
    """30 turns alice pushed from /work/proj (3 sessions, *flamingo* in each) and one row of bob's."""
    turns = [Turn(f"t{n}", f"s{n % 3}", "/work/proj", f"the flamingo cache number {n}",
                  f"fixed the payroll export {n % 4}", 1_750_000_000_000 + n * 1000) for n in range(30)]
    write(db_path, turns)
    config = ShareConfig(conninfo=share_db.conninfo("alice"), machine="laptop", folders=("/work/proj",))
    save_config(db_path, config)
    push(db_path, config)
    put(share_db, "bob", [Row("desk", "b1", "s1", "/w", "flamingo payroll", "the flamingo again", 1_750_000_000_000)])
    return turns, config


def test_word_counts_follow_pushes_changes_and_forgets(share_db: ShareDb, db_path: Path) -> None:
    turns, config = pushed_history(share_db, db_path)
    with psycopg.connect(share_db.admin, autocommit=True) as conn:
        assert _kept_counts(conn) == _counts_by_scan(conn)
        assert _kept_counts(conn)["flamingo"] == 31
    # Changed texts pushed again: the upsert's updated rows leave their old words, gain the new ones.
    write(db_path, [replace(t, user=f"retry the kubernetes deploy {n}") for n, t in enumerate(turns[:10])])
    push(db_path, config)
    with psycopg.connect(share_db.admin, autocommit=True) as conn:
        assert _kept_counts(conn) == _counts_by_scan(conn)
        assert _kept_counts(conn)["flamingo"] == 21 and _kept_counts(conn)["kubernet"] == 10
    with psycopg.connect(share_db.conninfo("alice")) as conn:
        apply_forget(conn, "session", "s1")
        conn.commit()
    with psycopg.connect(share_db.admin, autocommit=True) as conn:
        assert _kept_counts(conn) == _counts_by_scan(conn)
    # Members read the counts (free text's idf) and cannot write them.
    with psycopg.connect(share_db.conninfo("carol")) as conn:
        assert conn.execute("SELECT docs FROM pimem.word_docs WHERE word = 'flamingo'").fetchone() is not None
        for statement in ("INSERT INTO pimem.word_docs VALUES ('x', 1)", "UPDATE pimem.word_docs SET docs = 0",
                          "DELETE FROM pimem.word_docs", "SELECT pimem.count_words()"):
            with pytest.raises(psycopg.errors.InsufficientPrivilege):
                conn.execute(statement)
            conn.rollback()


def test_layout_1_migrates_to_2_with_its_counts_and_is_read_either_way(pg_server: PgServer) -> None:
    dbname = pg_server.new_database()
    db = ShareDb(pg_server, dbname)
    with psycopg.connect(db.admin, autocommit=True) as conn:   # a store set up by a layout-1 pimem
        conn.execute((schema.MIGRATIONS[0]() + "INSERT INTO pimem.pimem_share_meta VALUES ('layout', '1'), "
                      "('min_reader_layout', '1');").encode())
        conn.execute(b"CREATE ROLE reader_l1 LOGIN; GRANT USAGE ON SCHEMA pimem TO reader_l1; "
                     b"GRANT SELECT ON pimem.turns TO reader_l1" if not _role(conn, "reader_l1") else b"SELECT 1")
    rng = random.Random(11)
    words = ["flamingo", "cache", "retry", "deploy", "the", "emily", "boston", "lag", "postgres"]
    rows = [Row("box", f"r{n}", f"s{n // 4}", "/work/proj", " ".join(rng.choices(words, k=rng.randint(1, 6))),
                " ".join(rng.choices(words, k=rng.randint(0, 12))), 1_750_000_000_000 + n * 1000) for n in range(80)]
    put(db, "pimem_admin", rows)
    question = "flamingo deploy lag"
    qwords = ranking.query_words(_shortlist(candidates(question)))
    query = make_query(["x"], 10)
    with psycopg.connect(db.conninfo("reader_l1"), autocommit=True) as conn:   # layout 1: counted per word
        stats = shared.store_stats(conn, f"l1-{dbname}")
        assert not stats.word_docs
        before = shared.text_page(conn, qwords, query, shared.Who(), f"l1-{dbname}")
        assert before.rows and [r.turn_id for r in before.rows] == [
            r.turn_id for r in shared.text_oracle(conn, qwords, query, shared.Who(), f"l1-{dbname}").rows]
    layout = apply_init(db.admin, members=MEMBERS)
    assert (layout.layout, layout.min_reader_layout) == (schema.LAYOUT, 1)   # through 2 (and 3, test_turn_words)
    with psycopg.connect(db.admin, autocommit=True) as conn:
        assert read_layout(conn).layout == schema.LAYOUT
        assert _kept_counts(conn) == _counts_by_scan(conn) and _kept_counts(conn)["flamingo"] > 10
    with psycopg.connect(db.conninfo("carol"), autocommit=True) as conn:    # layout 2: the kept counts
        stats = shared.store_stats(conn, f"l2-{dbname}")
        assert stats.word_docs
        after = shared.text_page(conn, qwords, query, shared.Who(), f"l2-{dbname}")
        assert [(r.turn_id, r.hits) for r in after.rows] == [(r.turn_id, r.hits) for r in before.rows]


def _role(conn: psycopg.Connection[tuple[object, ...]], name: str) -> bool:
    return conn.execute("SELECT 1 FROM pg_roles WHERE rolname = %s", (name,)).fetchone() is not None
