"""``pimem share push`` against a real PostgreSQL: scope, incremental and idempotent pushes, changed
turns, the shared key, forget, allow, and the CLI's status."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import psycopg
import pytest

from pimem.share.manage import allow, forget, share_status
from pimem.share.push import push
from pimem.share.state import ShareConfig
from share.conftest import ShareDb
from share.local import Turn, many, write


def config(db: ShareDb, user: str = "alice", machine: str = "laptop", folders: tuple[str, ...] = ("/work/proj",),
           sources: tuple[str, ...] = ()) -> ShareConfig:
    return ShareConfig(conninfo=db.conninfo(user), machine=machine, folders=folders, sources=sources)


def remote(db: ShareDb, sql: str = "SELECT author, machine, doc_key FROM pimem.turns ORDER BY 1, 2, 3",
           params: tuple[object, ...] = ()) -> list[tuple[object, ...]]:
    with psycopg.connect(db.admin) as conn:
        return conn.execute(sql, params).fetchall()


def test_push_sends_only_the_chosen_folders_and_agents(share_db: ShareDb, db_path: Path) -> None:
    write(db_path, [Turn("a", "s1", "/work/proj", "u", "r"), Turn("b", "s2", "/work/proj/sub", "u", "r"),
                    Turn("c", "s3", "/work/project-other", "u", "r"), Turn("d", "s4", "/home/x", "u", "r"),
                    Turn("e", "s5", "/elsewhere", "u", "r", source="codex")])
    stats = push(db_path, config(share_db, sources=("codex",)))
    assert (stats.sent, stats.full) == (3, True)
    assert [row[2] for row in remote(share_db)] == ["a", "b", "e"]
    assert remote(share_db, "SELECT DISTINCT author, machine FROM pimem.turns") == [("alice", "laptop")]


def test_nothing_is_shared_by_default(share_db: ShareDb, db_path: Path) -> None:
    write(db_path, many(5))
    from pimem.share.db import ShareError
    with pytest.raises(ShareError, match="not configured"):
        push(db_path, config(share_db, folders=()))
    assert remote(share_db) == []


def test_a_second_push_is_incremental_and_changes_nothing(share_db: ShareDb, db_path: Path) -> None:
    write(db_path, many(300))
    cfg = config(share_db)
    first = push(db_path, cfg, batch_rows=100)
    assert (first.sent, first.batches) == (300, 3)
    stamps = remote(share_db, "SELECT doc_key, pushed_at FROM pimem.turns ORDER BY 1")
    again = push(db_path, cfg)
    assert (again.sent, again.examined, again.full) == (0, 0, False)
    assert remote(share_db, "SELECT doc_key, pushed_at FROM pimem.turns ORDER BY 1") == stamps


def test_new_and_grown_turns_follow(share_db: ShareDb, db_path: Path) -> None:
    turns = many(10)
    write(db_path, turns)
    cfg = config(share_db)
    push(db_path, cfg)
    grown = Turn(turns[3].turn_id, turns[3].session, turns[3].cwd, turns[3].user, turns[3].reply + " and more",
                 turns[3].ts)
    write(db_path, [grown, *many(2, prefix="n")])
    stats = push(db_path, cfg)
    assert (stats.sent, stats.full) == (3, False)
    assert remote(share_db, "SELECT reply_text, reply_lower FROM pimem.turns WHERE doc_key = %s",
                  (grown.turn_id,)) == [(grown.reply, grown.reply.lower())]
    assert len(remote(share_db)) == 12


def test_lowered_texts_and_words_are_the_local_ones(share_db: ShareDb, db_path: Path) -> None:
    from pimem.words import tokens
    user = "İstanbul STRASSE ǅemal ΟΔΟΣ crashed getSignedUrl 锁的问题"
    write(db_path, [Turn("x", "s", "/work/proj", user, "Ärger")])
    push(db_path, config(share_db))
    row = remote(share_db, "SELECT user_lower, reply_lower, user_words, reply_words, user_chars, ts "
                           "FROM pimem.turns")[0]
    assert row[0] == user.lower() and row[1] == "ärger"
    assert sorted(row[2]) == sorted(tokens(user)) and row[3] == tokens("Ärger")   # type: ignore[arg-type]
    assert row[4] == len(user)
    assert int(row[5].timestamp() * 1000) == 1_750_000_000_000   # type: ignore[attr-defined]


def test_the_state_restarts_for_another_store_and_nothing_doubles(share_db: ShareDb, db_path: Path) -> None:
    write(db_path, many(20))
    cfg = config(share_db)
    push(db_path, cfg)
    db_path.unlink()
    for suffix in ("-wal", "-shm"):
        Path(f"{db_path}{suffix}").unlink(missing_ok=True)
    write(db_path, many(25))        # a new store in its place (another store_id)
    stats = push(db_path, cfg)
    assert stats.full and stats.sent == 25
    assert len(remote(share_db)) == 25


def test_forget_deletes_remote_rows_and_keeps_them_away(share_db: ShareDb, db_path: Path, tmp_path: Path) -> None:
    write(db_path, many(40, per_session=20))          # sessions t-s0, t-s1
    cfg = config(share_db)
    push(db_path, cfg)
    result = forget(db_path, cfg, "t-s0")
    assert (result.scope, result.remote_deleted) == ("session", 20)
    write(db_path, [Turn("t0000001", "t-s0", "/work/proj", "changed", "again")])
    push(db_path, cfg)
    assert {row[2] for row in remote(share_db)} == {f"t{n:07d}" for n in range(20, 40)}
    # another machine of the same person learns the tombstone and does not push that session
    other = tmp_path / "other" / "memory.db"
    write(other, many(40, per_session=20))
    push(other, config(share_db, machine="desktop"))
    assert {row[2] for row in remote(share_db) if row[1] == "desktop"} == {f"t{n:07d}" for n in range(20, 40)}
    # a folder
    result = forget(other, config(share_db, machine="desktop"), "/work/proj")
    assert (result.scope, result.remote_deleted) == ("folder", 40)
    assert remote(share_db) == []
    assert push(db_path, cfg).sent == 0


def test_forget_while_the_server_is_unreachable_is_applied_at_the_next_push(share_db: ShareDb,
                                                                             db_path: Path) -> None:
    write(db_path, many(20, per_session=10))
    cfg = config(share_db)
    push(db_path, cfg)
    bad = ShareConfig(conninfo="host=/nonexistent port=1 user=alice dbname=x", machine="laptop",
                      folders=cfg.folders)
    result = forget(db_path, bad, "t-s1")
    assert result.remote_deleted is None and result.error
    assert len(remote(share_db)) == 20
    push(db_path, cfg)
    assert {row[2] for row in remote(share_db)} == {f"t{n:07d}" for n in range(10)}


def test_held_turns_are_listed_and_go_when_allowed(share_db: ShareDb, db_path: Path) -> None:
    env = "DB_HOST=db.internal\nDB_USER=app\nDB_PASS_WORD=Zq81xLmw\nOTHER_THING=4411\n"
    write(db_path, [Turn("ok", "s1", "/work/proj", "hello", "world"),
                    Turn("env", "s2", "/work/proj", "my env is\n" + env, "thanks")])
    cfg = config(share_db)
    stats = push(db_path, cfg)
    assert (stats.sent, stats.held) == (1, 1)
    status = share_status(db_path, cfg)
    assert (status.pushed, status.held, status.pending, status.reachable) == (1, 1, 0, True)
    assert [(h.turn_id, h.reasons) for h in status.held_turns] == [("env", ("env-block",))]
    assert push(db_path, cfg).sent == 0                  # still held
    assert allow(db_path, "s2") == ("session", 1)
    stats = push(db_path, cfg)
    assert (stats.sent, stats.held) == (1, 0)
    assert share_status(db_path, cfg).held == 0
    assert {row[2] for row in remote(share_db)} == {"ok", "env"}


def test_texts_with_nul_and_huge_texts_are_pushed(share_db: ShareDb, db_path: Path) -> None:
    huge = ("lorem ipsum dolor sit amet " * 400_000)[:10_000_000]
    write(db_path, [Turn("nul", "s", "/work/proj", "a\x00b", "c"), Turn("huge", "s", "/work/proj", "big", huge)])
    assert push(db_path, config(share_db)).sent == 2
    rows = dict(remote(share_db, "SELECT doc_key, length(reply_text) FROM pimem.turns UNION ALL "
                                 "SELECT 'nul-text', 0 FROM pimem.turns WHERE user_text = 'a\ufffdb'"))
    from pimem.share.gate import SHARED_TEXT_CHARS
    assert SHARED_TEXT_CHARS < rows["huge"] < SHARED_TEXT_CHARS + 100 and "nul-text" in rows


def test_an_allowance_is_for_the_held_content_only(share_db: ShareDb, db_path: Path) -> None:
    """Allowing a session lets its turns held *now* go; a later turn of that session, or an allowed turn
    that changes, with something secret-looking goes through the gate again (held)."""
    token, other = "Zx81QmPw3LrT9vKd2NcY7hJs", "Qa72WnEr4TyU8iOp1AsDf6Gh"
    write(db_path, [Turn("h1", "s1", "/work/proj", f"use {token}", "ok")])
    cfg = config(share_db)
    assert push(db_path, cfg).held == 1
    assert allow(db_path, "s1") == ("session", 1)
    assert push(db_path, cfg).sent == 1
    write(db_path, [Turn("h2", "s1", "/work/proj", f"and now {other}", "ok"),
                    Turn("h1", "s1", "/work/proj", f"use {token}", f"ok, also {other}")])
    stats = push(db_path, cfg)
    assert (stats.sent, stats.held) == (0, 2)
    stored = remote(share_db, "SELECT doc_key, user_text || reply_text FROM pimem.turns")
    assert stored == [("h1", f"use {token}ok")] and other not in str(stored)


def test_timestamps_out_of_range_do_not_stop_the_push(share_db: ShareDb, db_path: Path) -> None:
    """Another program may write any integer into turns.ts (clamped as local recall clamps it) or
    turns.turn_index (clamped to PostgreSQL's integer)."""
    write(db_path, [Turn("far", "s", "/work/proj", "u", "r", ts=10**17), Turn("neg", "s", "/work/proj", "u", "r",
                                                                             ts=-5)])
    with sqlite3.connect(db_path) as conn:
        conn.execute("UPDATE turns SET turn_index = ? WHERE turn_id = 'far'", (2**40,))
    assert push(db_path, config(share_db)).sent == 2
    years = dict(remote(share_db, "SELECT doc_key, extract(year FROM ts AT TIME ZONE 'UTC')::int FROM pimem.turns"))
    assert years["neg"] == 1970 and years["far"] >= 2100   # type: ignore[operator]


def test_values_the_copy_format_could_mangle_arrive_exactly(share_db: ShareDb, db_path: Path) -> None:
    """The rows go by a binary COPY: texts and array elements with the text format's special characters
    (tab, newline, backslash, ``\\N``, quotes, braces, commas, NULL) arrive as they were."""
    from pimem.words import tokens
    user = 'tab\there\nnew line \\N back\\slash "quoted" {braces} a,b NULL \r end ✓ 𝄞'
    tools = ("bash", 'we"ird', "{a,b}", "NULL", "back\\slash", "")
    write(db_path, [Turn("x\\N\t", 's"{1}', "/work/proj/a,b {c}", user, "\\.\n\\.", tools=tools)])
    assert push(db_path, config(share_db)).sent == 1
    row = remote(share_db, "SELECT doc_key, session_id, cwd, user_text, reply_text, user_lower, user_words, "
                           "tools, user_chars, reply_chars FROM pimem.turns")[0]
    assert row == ("x\\N\t", 's"{1}', "/work/proj/a,b {c}", user, "\\.\n\\.", user.lower(),
                   row[6], list(tools), len(user), 5)
    assert sorted(row[6]) == sorted(tokens(user))     # type: ignore[arg-type]


def test_long_texts_are_stored_with_lz4_where_the_server_has_it(share_db: ShareDb, db_path: Path) -> None:
    """The push asks for lz4 TOAST compression (cheaper for the server than the default pglz)."""
    with psycopg.connect(share_db.admin) as conn:
        row = conn.execute("SELECT 'lz4' = ANY (enumvals) FROM pg_settings "
                           "WHERE name = 'default_toast_compression'").fetchone()
    if not (row and row[0]):
        pytest.skip("this PostgreSQL was built without lz4")
    reply = " ".join(f"the cache line {n} of the flamingo service" for n in range(200))
    write(db_path, [Turn("long", "s", "/work/proj", "short", reply)])
    assert push(db_path, config(share_db)).sent == 1
    assert remote(share_db, "SELECT pg_column_compression(reply_text), pg_column_compression(user_text) "
                            "FROM pimem.turns") == [("lz4", None)]
