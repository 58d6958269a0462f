"""The shared schema and its access rules, on a real PostgreSQL: layout, idempotent init, row-level
security (members read the team's rows, write and delete only their own, cannot forge the author)."""

from __future__ import annotations

import psycopg
import pytest

from pimem.share import schema
from pimem.share.db import ShareError, apply_init, check_writable, connect, read_layout
from share.conftest import ShareDb

_COLUMNS = ("machine, doc_key, session_id, turn_index, source, cwd, ts, user_text, reply_text, user_lower, "
            "reply_lower, user_words, reply_words, user_chars, reply_chars, content_hash")


def _insert(conn: psycopg.Connection[tuple[object, ...]], doc_key: str, author: str | None = None) -> None:
    values = ("m1", doc_key, "s1", 0, "pi", "/w", "2026-01-01T00:00:00Z", "Hello", "World", "hello", "world",
              ["hello"], ["world"], 5, 5, "h")
    if author is None:
        conn.execute(f"INSERT INTO pimem.turns({_COLUMNS}) VALUES ({', '.join(['%s'] * 16)})", values)
    else:
        conn.execute(f"INSERT INTO pimem.turns(author, {_COLUMNS}) VALUES ({', '.join(['%s'] * 17)})",
                     (author, *values))


def test_init_gives_the_current_layout_and_is_idempotent(share_db: ShareDb) -> None:
    with connect(share_db.conninfo("alice")) as conn:
        layout = read_layout(conn)
    assert (layout.layout, layout.min_reader_layout) == (schema.LAYOUT, schema.MIN_READER_LAYOUT)
    check_writable(layout)
    again = apply_init(share_db.admin, members=("alice", "dave"))   # a second admin run, one more member
    assert again.layout == schema.LAYOUT
    with connect(share_db.conninfo("dave")) as conn:
        _insert(conn, "d1")


def test_member_reads_others_rows_and_cannot_change_or_delete_them(share_db: ShareDb) -> None:
    with connect(share_db.conninfo("alice")) as conn:
        _insert(conn, "a1")
    with connect(share_db.conninfo("bob")) as conn:
        rows = conn.execute("SELECT author, doc_key FROM pimem.turns").fetchall()
        assert rows == [("alice", "a1")]
        assert conn.execute("DELETE FROM pimem.turns WHERE author = 'alice'").rowcount == 0
        assert conn.execute("UPDATE pimem.turns SET user_text = 'x' WHERE author = 'alice'").rowcount == 0
        conn.commit()
    with connect(share_db.conninfo("carol")) as conn:
        assert conn.execute("SELECT user_text FROM pimem.turns").fetchall() == [("Hello",)]


def test_author_cannot_be_forged(share_db: ShareDb) -> None:
    with connect(share_db.conninfo("bob")) as conn, pytest.raises(psycopg.errors.InsufficientPrivilege):
        _insert(conn, "b1", author="alice")
    with connect(share_db.conninfo("bob")) as conn:
        _insert(conn, "b2")
        conn.commit()
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            conn.execute("UPDATE pimem.turns SET author = 'alice' WHERE doc_key = 'b2'")
    with connect(share_db.conninfo("alice")) as conn:
        assert conn.execute("SELECT author FROM pimem.turns").fetchall() == [("bob",)]


def test_members_cannot_change_the_schema_or_policies(share_db: ShareDb) -> None:
    with connect(share_db.conninfo("alice")) as conn, pytest.raises(psycopg.errors.InsufficientPrivilege):
        conn.execute("ALTER TABLE pimem.turns DISABLE ROW LEVEL SECURITY")
    with connect(share_db.conninfo("alice")) as conn, pytest.raises(psycopg.errors.InsufficientPrivilege):
        conn.execute("UPDATE pimem.pimem_share_meta SET value = '99'")


def test_forget_tombstones_are_private(share_db: ShareDb) -> None:
    with connect(share_db.conninfo("alice")) as conn:
        conn.execute("INSERT INTO pimem.forgotten(scope, value) VALUES ('session', 's1')")
        conn.commit()
    with connect(share_db.conninfo("bob")) as conn:
        assert conn.execute("SELECT count(*) FROM pimem.forgotten").fetchone() == (0,)


def test_a_newer_or_missing_layout_is_never_written(share_db: ShareDb) -> None:
    with pytest.raises(ShareError, match="please upgrade"):
        check_writable(schema.ShareLayout(schema.LAYOUT + 1, schema.LAYOUT + 1, "9.9"))
    with pytest.raises(ShareError, match="init --apply"):
        check_writable(schema.ShareLayout(0, 0, None))
    with pytest.raises(ShareError, match="please upgrade"):
        apply_init_newer(share_db)


def apply_init_newer(share_db: ShareDb) -> None:
    with psycopg.connect(share_db.admin, autocommit=True) as conn:
        conn.execute("UPDATE pimem.pimem_share_meta SET value = %s WHERE key = 'layout'", (str(schema.LAYOUT + 1),))
    apply_init(share_db.admin)


def test_role_names_are_checked() -> None:
    for bad in ("Alice", "a b", 'x"; DROP TABLE pimem.turns; --', "", "1abc"):
        with pytest.raises(schema.ShareSchemaError):
            schema.roles_sql(members=(bad,))
