"""The ranked conversation lists kept per process (pimem/recall/rankcache.py): the next
page of a question is not ranked again, and every answer is the one a fresh process gives, whoever
wrote to the store meanwhile (this connection, another one, another process)."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from pimem import index
from pimem.recall import make_query, rankcache, ranking
from pimem.recall.freetext import parse_text, recall_conversations
from pimem.store import connect, transaction

from .test_ranking import _history, _session

HERE = Path(__file__).resolve().parent
QUESTION = "application help live"


@pytest.fixture
def conn(db_path: Path) -> Iterator[sqlite3.Connection]:
    ranking._RANKED.clear()
    yield connect(db_path)
    ranking._RANKED.clear()


def _answer(conn: sqlite3.Connection, text: str, limit: int = 10, offset: int = 0) -> list[tuple[str, str, list[str]]]:
    found = parse_text(text)
    rows = recall_conversations(conn, found, make_query([c.term for c in found[:8]], limit, None, None, offset)).rows
    return [(row.session_id, row.turn_id, sorted(row.matched)) for row in rows]


def _fresh(conn: sqlite3.Connection, text: str, limit: int = 10, offset: int = 0) -> list[tuple[str, str, list[str]]]:
    """The answer of a process that kept nothing."""
    ranking._RANKED.clear()
    try:
        return _answer(conn, text, limit, offset)
    finally:
        ranking._RANKED.clear()


@pytest.fixture
def ranked(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """How many times conversations were ranked."""
    calls: list[int] = []
    original = ranking._rank_all

    def counting(*args: object) -> object:
        calls.append(1)
        return original(*args)   # type: ignore[arg-type]

    monkeypatch.setattr(ranking, "_rank_all", counting)
    return calls


def test_the_next_page_is_not_ranked_again(conn: sqlite3.Connection, ranked: list[int]) -> None:
    _history(conn)
    first = _answer(conn, QUESTION)
    second = _answer(conn, QUESTION, offset=10)
    third = _answer(conn, QUESTION, offset=20)
    assert len(ranked) == 1   # the old code ranked once per page
    assert first and second and third
    assert first + second + third == _fresh(conn, QUESTION, limit=30)
    assert second == _fresh(conn, QUESTION, offset=10)
    # Another question, another filter: ranked of their own.
    before = len(ranked)
    _answer(conn, "sister Emily")
    found = parse_text(QUESTION)
    recall_conversations(conn, found, make_query(["x"], 10, ["claude"]))
    assert len(ranked) == before + 2


def test_a_page_beyond_the_ranked_pool_is_right(conn: sqlite3.Connection, monkeypatch: pytest.MonkeyPatch,
                                                ranked: list[int]) -> None:
    _history(conn)
    monkeypatch.setattr(ranking, "CANDIDATE_SESSIONS", 8)
    pages = [_answer(conn, QUESTION, limit=4, offset=offset) for offset in (0, 4, 8, 12)]
    # offset 0 and 4 end within the 8 ranked sessions: one ranking; 8 and 12 need a larger pool each.
    assert len(ranked) == 3
    assert pages[2] and pages[3]
    for number, page in enumerate(pages):
        assert page == _fresh(conn, QUESTION, limit=4, offset=4 * number)


def test_writes_on_the_same_connection_are_seen(conn: sqlite3.Connection) -> None:
    _history(conn)
    before = _answer(conn, "flamingo payroll")
    _session(conn, "pi:flamingo", [("the flamingo payroll failed", "Roll back.")], start=1_800_000_000_000)
    after = _answer(conn, "flamingo payroll")
    assert after[0][0] == "pi:flamingo" and after != before
    assert after == _fresh(conn, "flamingo payroll")


def test_a_write_by_another_connection_is_seen(conn: sqlite3.Connection, db_path: Path) -> None:
    _history(conn)
    assert _answer(conn, QUESTION) == _fresh(conn, QUESTION)
    kept = _answer(conn, QUESTION)
    other = connect(db_path)
    _session(other, "pi:late", [("help with the application where I live", "Sure.")], start=1_800_000_000_000)
    after = _answer(conn, QUESTION)
    assert after != kept and "pi:late" in [row[0] for row in after]
    assert after == _fresh(conn, QUESTION)
    # A doc's session changed behind this process's back.
    with transaction(other):
        other.execute("UPDATE pimem_word_docs SET session = (SELECT rowid FROM sessions WHERE session_id = "
                      "'pi:emily') WHERE session = (SELECT rowid FROM sessions WHERE session_id = 'pi:late')")
    moved = _answer(conn, QUESTION)
    assert moved != after and moved == _fresh(conn, QUESTION)
    other.close()


def test_a_sync_by_another_process_is_seen(conn: sqlite3.Connection, db_path: Path) -> None:
    _history(conn)
    kept = _answer(conn, "zeppelin hangar")
    assert kept == []
    # test_ranking's own imports need tests/ on the path (support.*), as pytest's rootdir gives it.
    code = ("import sys; sys.path[:0] = [sys.argv[1], sys.argv[3]]; from test_ranking import _session; "
            "from pimem.store import connect; "
            "_session(connect(sys.argv[2]), 'pi:zeppelin', [('the zeppelin hangar', 'It flies.')], "
            "start=1_800_000_000_000)")
    subprocess.run([sys.executable, "-c", code, str(HERE), str(db_path), str(HERE.parent)], check=True)
    after = _answer(conn, "zeppelin hangar")
    assert after and after[0][0] == "pi:zeppelin"
    assert after == _fresh(conn, "zeppelin hangar")


def test_a_connection_in_a_transaction_neither_uses_nor_fills_the_lists(conn: sqlite3.Connection,
                                                                          ranked: list[int]) -> None:
    _history(conn)
    _answer(conn, QUESTION)
    conn.execute("BEGIN IMMEDIATE")
    try:
        _session_rows(conn)
        inside = _answer(conn, QUESTION)
        assert "pi:inside" in [row[0] for row in inside]
        assert len(ranked) == 2
    finally:
        conn.execute("ROLLBACK")
    after = _answer(conn, QUESTION)
    assert "pi:inside" not in [row[0] for row in after]
    assert after == _fresh(conn, QUESTION)


def _session_rows(conn: sqlite3.Connection) -> None:
    """A session written and indexed inside the caller's transaction."""
    from pimem.store import SessionRow, upsert_session
    upsert_session(conn, SessionRow("pi:inside", "pi", "/w", 1_800_000_000_000, None, "/inside.jsonl"))
    conn.execute("INSERT INTO turns (turn_id, session_id, turn_index, ts, user_text, reply_text, tool_names, "
                 "user_message_id) VALUES ('pi:inside:0', 'pi:inside', 0, 1800000000000, "
                 "'application help where we live', 'Yes.', NULL, 'pi:inside:0')")
    index.put(conn, "pi:inside:0", 1_800_000_000_000, "application help where we live", "Yes.", None, None, fts=True)


def test_a_plain_sqlite_connection_is_not_followed(conn: sqlite3.Connection, db_path: Path,
                                                   ranked: list[int]) -> None:
    _history(conn)
    plain = sqlite3.connect(db_path, isolation_level=None)
    try:
        _answer(plain, QUESTION)
        _answer(plain, QUESTION, offset=10)
        assert len(ranked) == 2 and len(ranking._RANKED) == 0
    finally:
        plain.close()


def test_kept_lists_are_bounded(conn: sqlite3.Connection) -> None:
    _history(conn)
    lists: rankcache.RankedLists[str] = rankcache.RankedLists(rankcache.StoreChanges(), entries=3, max_bytes=100)
    made: list[str] = []

    def make(value: str) -> str:
        made.append(value)
        return value

    for key in ("a", "b", "c", "d"):
        assert lists.get_or_make(conn, key, lambda key=key: make(key), lambda _v: 10) == key
    assert len(lists) == 3
    lists.get_or_make(conn, "a", lambda: make("a"), lambda _v: 10)   # "a" went first: made again
    assert made == ["a", "b", "c", "d", "a"]
    lists.get_or_make(conn, "d", lambda: make("d"), lambda _v: 10)   # still kept
    assert made[-1] == "a"
    lists.get_or_make(conn, "big", lambda: make("big"), lambda _v: 95)   # bytes: the others go
    assert len(lists) == 1
    lists.get_or_make(conn, "huge", lambda: make("huge"), lambda _v: 101)   # larger than the bound: not kept
    assert len(lists) == 1
