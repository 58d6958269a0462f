"""The word index's docs kept per process (pimem/recall/docmap.py): free text ranked from the kept map
answers exactly as a process reading ``pimem_word_docs`` for every question, whatever was written to
the store between two questions (turns added by another connection, a rebuild, a doc gone from the
table, the words-only build after an upgrade, the store replaced under the same path)."""

from __future__ import annotations

import random
import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest

from pimem import index
from pimem.recall import docmap, make_query, ranking
from pimem.recall.freetext import parse_text, recall_conversations
from pimem.store import SessionRow, connect, set_meta, transaction, upsert_session

from .test_ranking import _history, _session

QUESTION = "application help live"
LATE = 1_800_000_000_000


@pytest.fixture
def conn(db_path: Path) -> Iterator[sqlite3.Connection]:
    ranking._RANKED.clear()
    docmap.enable()
    yield connect(db_path)
    docmap.disable()
    ranking._RANKED.clear()


def _answer(conn: sqlite3.Connection, text: str = QUESTION) -> list[tuple[str, str, list[str]]]:
    """Ranked anew (not the list kept for a next page), from the kept map when there is one."""
    ranking._RANKED.clear()
    found = parse_text(text)
    rows = recall_conversations(conn, found, make_query([c.term for c in found[:8]], 20)).rows
    return [(row.session_id, row.turn_id, sorted(row.matched)) for row in rows]


def _fresh(conn: sqlite3.Connection, text: str = QUESTION) -> list[tuple[str, str, list[str]]]:
    """The answer of a process that reads the table for every question (the kept map left as it is)."""
    docmap._MAPS.enabled = False
    try:
        return _answer(conn, text)
    finally:
        docmap._MAPS.enabled = True


def _kept(conn: sqlite3.Connection) -> docmap.DocMap:
    maps = list(docmap._MAPS.maps.values())
    assert len(maps) == 1
    return maps[0]


def _table(conn: sqlite3.Connection) -> tuple[dict[int, int], dict[int, list[tuple[int, int, int]]]]:
    sessions = dict(conn.execute("SELECT doc_key, session FROM pimem_word_docs"))
    docs: dict[int, list[tuple[int, int, int]]] = {}
    for session, key, uc, rc in conn.execute("SELECT session, doc_key, user_chars, reply_chars FROM pimem_word_docs "
                                             "ORDER BY session, doc_key"):
        docs.setdefault(session, []).append((key, uc, rc))
    return sessions, docs


def _same_as_table(conn: sqlite3.Connection) -> None:
    kept = _kept(conn)
    sessions, docs = _table(conn)
    keys = sorted(sessions)
    assert kept.sessions(keys) == [sessions[key] for key in keys]
    assert kept.session_docs(sorted(docs)) == docs
    # and nothing more: every doc and session the map holds is in the table
    held = [(day << docmap.SHIFT) | slot for day, slots in kept.session.items()
            for slot, session in enumerate(slots) if session != docmap.MISSING]
    assert sorted(held) == keys
    assert kept.session_docs(sorted(kept.docs)) == docs


def test_a_warm_question_reads_no_doc_from_the_table(conn: sqlite3.Connection, monkeypatch: pytest.MonkeyPatch) -> None:
    _history(conn)
    first = _answer(conn)
    assert first and first == _fresh(conn)

    def unread(*_args: object) -> object:
        raise AssertionError("read from the table")

    monkeypatch.setattr(ranking, "_doc_sessions", unread)
    monkeypatch.setattr(ranking, "_session_docs", unread)
    assert _answer(conn) == first
    _same_as_table(conn)


def test_turns_added_by_another_connection_are_in_the_next_answer(conn: sqlite3.Connection, db_path: Path) -> None:
    _history(conn)
    before = _answer(conn)
    other = connect(db_path)
    # A new session on a day the map has not seen, and a new turn in a session it has (a day it has).
    _session(other, "pi:late", [("help with the application where I live", "Sure.")], start=LATE)
    _session(other, "pi:noise3", [("I live and breathe this application, help", "Ok.")],
             start=1_700_000_000_000 + 4 * 3_600_000)
    after = _answer(conn)
    assert after != before and "pi:late" in [row[0] for row in after]
    assert after == _fresh(conn)
    _same_as_table(conn)
    other.close()


def test_a_reply_that_grew_is_read_again(conn: sqlite3.Connection) -> None:
    _history(conn)
    _answer(conn, "kubernetes rollout")
    with transaction(conn):
        previous = conn.execute("SELECT ts, user_text, reply_text FROM turns WHERE turn_id = 'pi:noise4:1'").fetchone()
        grown = previous[2] + " and the kubernetes rollout, at length: " + "words " * 200
        conn.execute("UPDATE turns SET reply_text = ? WHERE turn_id = 'pi:noise4:1'", (grown,))
        index.put(conn, "pi:noise4:1", previous[0], previous[1], grown, None, tuple(previous), fts=True)
    index.build_pending(conn)
    assert _answer(conn, "kubernetes rollout") == _fresh(conn, "kubernetes rollout") != []
    _same_as_table(conn)


def test_a_logged_doc_gone_from_the_table_has_no_session(conn: sqlite3.Connection, db_path: Path) -> None:
    _history(conn)
    first = [row[0] for row in _answer(conn)][:3]
    other = connect(db_path)
    with transaction(other):   # a writer that keeps the log's contract: the docs it changed are logged
        gone = [key for (key,) in other.execute(
            f"SELECT doc_key FROM pimem_word_docs WHERE session IN (SELECT rowid FROM sessions "
            f"WHERE session_id IN ({', '.join('?' * len(first))}))", first)]
        other.executemany("DELETE FROM pimem_word_docs WHERE doc_key = ?", [(key,) for key in gone])
        other.executemany("INSERT INTO pimem_index_log(doc_key) VALUES (?)", [(key,) for key in gone])
    after = _answer(conn)
    assert not set(first) & {row[0] for row in after}   # their postings stay; they have no session
    assert after == _fresh(conn)
    _same_as_table(conn)
    assert gone and _kept(conn).sessions(gone) == [docmap.MISSING] * len(gone)
    other.close()


def test_a_rebuild_between_two_questions(conn: sqlite3.Connection) -> None:
    _history(conn)
    _answer(conn)
    with transaction(conn):
        index.rebuild(conn)   # the word index emptied, every doc pending (scored from its text)
    assert _answer(conn) == _fresh(conn) != []
    _same_as_table(conn)      # empty, as the table: the rows deleted by the rebuild are not logged
    index.build_pending(conn)
    assert _answer(conn) == _fresh(conn) != []
    _same_as_table(conn)


def test_the_words_only_build_after_an_upgrade_is_seen(conn: sqlite3.Connection, db_path: Path) -> None:
    _history(conn)
    _answer(conn)
    with transaction(conn):   # a store of layout 5 (no word index), upgraded by the next connection
        for table in ("pimem_words", "pimem_word_docs", "pimem_words_pending"):
            conn.execute(f"DROP TABLE {table}")
        set_meta(conn, "layout", "5")
    conn.close()
    upgraded = connect(db_path)
    assert upgraded.execute("SELECT count(*) FROM pimem_words_pending").fetchone()[0] > 60
    assert _answer(upgraded) == _fresh(upgraded)   # while the words-only docs are pending: no map
    assert not docmap._MAPS.maps
    index.build_pending(upgraded)   # their words written without the log
    assert _answer(upgraded) == _fresh(upgraded) != []
    _same_as_table(upgraded)


def _copy(source: sqlite3.Connection, target: Path) -> None:
    target.parent.mkdir(parents=True, exist_ok=True)
    copy = sqlite3.connect(target)
    source.backup(copy)
    copy.close()


def _restore(saved: Path, live: sqlite3.Connection) -> None:
    """``saved`` written over the live store (what restoring a copy under the same path does)."""
    copy = sqlite3.connect(saved)
    copy.backup(live)
    copy.close()


def test_the_store_rolled_back_and_written_on_otherwise(conn: sqlite3.Connection, tmp_path: Path,
                                                        db_path: Path) -> None:
    _history(conn)
    saved = tmp_path / "saved" / "memory.db"
    _copy(conn, saved)
    _answer(conn)
    writer = connect(db_path)
    _session(writer, "pi:late", [("help with the application where I live", "Sure.")], start=LATE)
    _answer(conn)   # the map follows the log past the copy's end
    _restore(saved, writer)
    assert _answer(conn) == _fresh(conn)   # the log now ends before the map's position
    _same_as_table(conn)
    # The same store id and as many docs logged since the copy, on the same day: the same log
    # positions and doc keys, another session behind them.
    _session(writer, "pi:other", [("help with the application where I live, again", "Sure.")], start=LATE)
    after = _answer(conn)
    assert "pi:other" in [row[0] for row in after] and "pi:late" not in [row[0] for row in after]
    assert after == _fresh(conn)
    _same_as_table(conn)
    writer.close()


def test_another_store_under_the_same_path(conn: sqlite3.Connection, tmp_path: Path, db_path: Path) -> None:
    _history(conn)
    _answer(conn)
    elsewhere = connect(tmp_path / "elsewhere" / "memory.db")
    _session(elsewhere, "pi:elsewhere", [("help with the application where I live", "Sure.")])
    _restore(tmp_path / "elsewhere" / "memory.db", conn)
    after = _answer(conn)
    assert [row[0] for row in after] == ["pi:elsewhere"]
    assert after == _fresh(conn)
    _same_as_table(conn)


def test_the_map_equals_the_table_after_random_writes(conn: sqlite3.Connection, db_path: Path) -> None:
    rng = random.Random(11)
    vocabulary = ["application", "help", "live", "kernel", "sister", "garden", "cache", "ledger"]
    other = connect(db_path)
    for step in range(12):
        turns = [(" ".join(rng.sample(vocabulary, 3)), " ".join(rng.sample(vocabulary, 2)))
                 for _ in range(rng.randrange(1, 5))]
        # sessions over a few days, some written again with more turns (their docs keep their keys)
        _session(other, f"s{rng.randrange(6)}", turns, start=1_700_000_000_000 + rng.randrange(4) * 86_400_000)
        if step == 6:
            with transaction(other):
                index.rebuild(other)
            index.build_pending(other)
        assert _answer(conn) == _fresh(conn)
        _same_as_table(conn)
    other.close()


def test_a_connection_in_a_transaction_neither_uses_nor_replaces_the_map(conn: sqlite3.Connection,
                                                                         db_path: Path) -> None:
    _history(conn)
    _answer(conn)
    kept = _kept(conn)
    reader = connect(db_path)
    reader.execute("BEGIN")
    reader.execute("SELECT count(*) FROM turns").fetchone()   # its snapshot: before pi:late
    _session(connect(db_path), "pi:late", [("help with the application where I live", "Sure.")], start=LATE)
    after = _answer(conn)    # the map follows the log to pi:late
    assert "pi:late" in [row[0] for row in after] and kept.seq == index.log_position(conn)[1]
    older = _answer(reader)  # the snapshot's answer, read from the table
    assert "pi:late" not in [row[0] for row in older]
    reader.execute("COMMIT")
    assert _kept(conn) is kept and kept.seq == index.log_position(conn)[1]   # not read again from the snapshot
    assert _answer(conn) == after == _fresh(conn)


def test_a_log_trimmed_past_the_map(conn: sqlite3.Connection, db_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert _answer(conn) == []        # a map read on an empty log
    monkeypatch.setattr(index, "LOG_KEEP", 3)
    monkeypatch.setattr(docmap, "REFRESH_MAX", 1_000_000)
    _history(connect(db_path))        # more docs logged than the log keeps
    assert index.log_position(conn)[0] > 1
    assert _answer(conn) == _fresh(conn) != []
    _same_as_table(conn)


def test_the_store_replaced_while_the_map_is_brought_up_to_date(
        conn: sqlite3.Connection, tmp_path: Path, db_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A copy of the store (the same id, another history from the map's position on) restored over it
    between two of a refresh's reads: the map must not take the log of one history and the rows of the
    other (it would pass every later check, the copy's entries being at the same positions)."""
    _history(conn)
    saved = tmp_path / "saved" / "memory.db"
    _copy(conn, saved)
    _answer(conn)                                   # the map, at the copy's position
    writer = connect(db_path)
    _session(writer, "pi:late", [("help with the application where I live", "Sure.")], start=LATE)
    # The other history: the copy written on with as many docs on the same day, behind another session.
    other = connect(saved)
    with transaction(other):
        upsert_session(other, SessionRow("pi:zz", "pi", "/w", LATE, None, "/pi:zz.jsonl"))
    _session(other, "pi:other", [("help with the application where I live, again", "Sure.")], start=LATE)
    other.close()
    assert index.log_position(writer)[1] == index.log_position(connect(saved))[1]
    real = index.log_entry
    replaced = []

    def restoring(reader: sqlite3.Connection, seq: int) -> int | None:
        if reader is conn and not replaced and seq == index.log_position(writer)[1]:
            _restore(saved, writer)                 # between the refresh's reads of the log and of the mark
            replaced.append(seq)
        return real(reader, seq)

    monkeypatch.setattr(index, "log_entry", restoring)
    _answer(conn)
    assert replaced
    monkeypatch.setattr(index, "log_entry", real)
    after = _answer(conn)
    assert "pi:other" in [row[0] for row in after]
    assert after == _fresh(conn)
    _same_as_table(conn)
    writer.close()
