"""Turns not in the word index yet: their words are tokenized once per process, and the answer is the
one a fresh process gives (pimem/recall/ranking.py, ``_PendingWords``)."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest

from pimem import index, words
from pimem.recall import make_query, ranking
from pimem.recall.freetext import parse_text, recall_conversations
from pimem.store import connect, transaction

from .test_ranking import _history, _session

QUESTIONS = ("flamingo deployment", "where does Emily live", "rollback friday kubernetes", "application help")


@pytest.fixture
def conn(db_path: Path) -> Iterator[sqlite3.Connection]:
    ranking._PENDING_WORDS.by_store.clear()
    yield connect(db_path)
    ranking._PENDING_WORDS.by_store.clear()


def _answer(conn: sqlite3.Connection, text: str) -> list[tuple[str, str, list[str]]]:
    found = parse_text(text)
    rows = recall_conversations(conn, found, make_query([c.term for c in found[:8]], 20)).rows
    return [(row.session_id, row.turn_id, sorted(row.matched)) for row in rows]


def _fresh(conn: sqlite3.Connection, text: str) -> list[tuple[str, str, list[str]]]:
    """The answer of a process that never saw the pending turns."""
    saved = dict(ranking._PENDING_WORDS.by_store)
    ranking._PENDING_WORDS.by_store.clear()
    ranking._RANKED.clear()   # nor ranked anything
    try:
        return _answer(conn, text)
    finally:
        ranking._PENDING_WORDS.by_store.clear()
        ranking._PENDING_WORDS.by_store.update(saved)
        ranking._RANKED.clear()


def _lagging(conn: sqlite3.Connection) -> None:
    """An indexed history and, after it, sessions whose turns are stored but not in the word index yet."""
    _history(conn)
    _session(conn, "pi:new", [("the flamingo deployment failed on friday", "Roll back with kubernetes.")],
             start=1_800_000_000_000, build=False)
    for number in range(12):
        _session(conn, f"pi:late{number}", [(f"help with the application {number}", "The flamingo is pink."),
                                            ("Emily wants to live near the sea", "A deployment on friday?")],
                 start=1_800_000_000_000 + (number + 1) * 3_600_000, build=False)
    assert ranking.pending_backlog(conn) > 20


def test_pending_turns_are_tokenized_once_and_answers_stay_identical(
        conn: sqlite3.Connection, monkeypatch: pytest.MonkeyPatch) -> None:
    _lagging(conn)
    fresh = {text: _fresh(conn, text) for text in QUESTIONS}
    calls: list[str] = []
    tokens = words.tokens
    monkeypatch.setattr(words, "tokens", lambda text: calls.append(text) or tokens(text))
    first = {text: _answer(conn, text) for text in QUESTIONS}
    calls_first = len(calls)
    again = {text: _answer(conn, text) for text in QUESTIONS}
    assert first == fresh and again == fresh
    assert fresh["flamingo deployment"][0][0] == "pi:new"
    # The pending turns' texts were tokenized by the first question only; later ones tokenize the question.
    assert calls_first >= 2 * ranking.pending_backlog(conn)
    assert len(calls) - calls_first <= len(QUESTIONS) * 4


def test_a_pending_turn_whose_text_changed_is_read_again(conn: sqlite3.Connection) -> None:
    _lagging(conn)
    assert "pi:late3" not in [row[0] for row in _answer(conn, "zeppelin")]
    with transaction(conn):   # the reply grows while the turn is still pending (same doc key)
        conn.execute("UPDATE turns SET reply_text = reply_text || ' The zeppelin landed.' "
                     "WHERE turn_id = 'pi:late3:1'")
    assert _answer(conn, "zeppelin")[0][0] == "pi:late3"
    assert _answer(conn, "zeppelin") == _fresh(conn, "zeppelin")
    with transaction(conn):   # same length, other words: still exact
        conn.execute("UPDATE turns SET reply_text = replace(reply_text, 'zeppelin', 'airships') "
                     "WHERE turn_id = 'pi:late3:1'")
    assert "pi:late3" not in [row[0] for row in _answer(conn, "zeppelin")]
    assert _answer(conn, "airships")[0][0] == "pi:late3"


def test_indexed_turns_leave_the_kept_words(conn: sqlite3.Connection) -> None:
    _lagging(conn)
    before = _answer(conn, "flamingo deployment")
    assert sum(map(len, ranking._PENDING_WORDS.by_store.values())) >= 20
    index.build_pending(conn)
    assert ranking.pending_backlog(conn) == 0
    after = _answer(conn, "flamingo deployment")
    assert not ranking._PENDING_WORDS.by_store
    assert after == _fresh(conn, "flamingo deployment")
    assert after[0][0] == before[0][0] == "pi:new"
