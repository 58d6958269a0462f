"""The faster scoring of ``ranking.rank`` (issue 21) answers exactly as the plain loops it replaced:
the same top turns and sessions, ties in the same order. (The same on LongMemEval's dev questions:
bench/experiments/rank_identity.py.)"""

from __future__ import annotations

import gc
import heapq
import random
import sqlite3
import threading
import time
from collections import Counter
from operator import itemgetter
from pathlib import Path

import pytest

from pimem.recall import make_query, ranking
from pimem.recall.freetext import parse_text
from pimem.store import connect

from .test_ranking import _session


def _nlargest(scores: dict[int, float], count: int) -> list[int]:
    return [key for key, _ in heapq.nlargest(count, scores.items(), key=itemgetter(1))]


@pytest.mark.parametrize("seed", range(5))
def test_top_is_nlargest_ties_included(seed: int) -> None:
    rng = random.Random(seed)
    weights = [rng.random() * 4 for _ in range(4)]
    # Few distinct values (sums of a few idf weights, as in rank): many ties across the cut.
    scores = {rng.randrange(10**10): sum(w for w in weights if rng.random() < 0.4) for _ in range(3_000)}
    for count in (0, 1, 7, 150, 2_000, len(scores) - 1, len(scores), len(scores) + 5):
        assert ranking._top(scores, count) == _nlargest(scores, count)


def _page(conn: sqlite3.Connection, text: str) -> list[tuple[int, int, float, float]]:
    found = parse_text(text)
    qwords = ranking.query_words([c.term for c in found])
    page: list[tuple[int, int, float, float]] = []
    original = ranking._rows

    def rows(c: sqlite3.Connection, conversations: list[ranking.Conversation], surface: dict[str, str]
             ) -> list[object]:
        page.extend((x.session, x.best_doc, x.score, x.best_turn_score) for x in conversations)
        return original(c, conversations, surface)   # type: ignore[return-value]

    ranking._rows = rows   # type: ignore[assignment]
    ranking._RANKED.clear()   # ranked again, not the list kept from the last call
    try:
        ranking.rank(conn, qwords, make_query([c.term for c in found], 40, None, None, 0))
    finally:
        ranking._rows = original
    return page


def test_rank_same_as_plain_loops_with_ties(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    conn = connect(tmp_path / "memory.db")
    rng = random.Random(3)
    vocabulary = ["flamingo", "payroll", "invoice", "kernel", "sister", "garden", "cache", "ledger"]
    for number in range(60):
        turns = [(" ".join(rng.sample(vocabulary, 3)), " ".join(rng.sample(vocabulary, 2))) for _ in range(4)]
        _session(conn, f"s{number}", turns, start=1_700_000_000_000 + number * 3_600_000, build=False)
    from pimem import index
    index.build_pending(conn)
    # Small cuts, so that the top turns and sessions are cut among equal scores.
    monkeypatch.setattr(ranking, "CANDIDATE_TURNS", 17)
    monkeypatch.setattr(ranking, "CANDIDATE_SESSIONS", 9)
    text = "the flamingo payroll in the garden ledger"
    fast = _page(conn, text)
    monkeypatch.setattr(ranking, "_top", _nlargest)
    assert fast and _page(conn, text) == fast


def test_the_collector_is_paused_while_ranking_and_runs_again_after(tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    conn = connect(tmp_path / "memory.db")
    _session(conn, "s1", [("the flamingo payroll", "Rolled back.")])
    seen: list[bool] = []
    original = ranking._rank_all

    def ranking_all(*args: object) -> object:
        seen.append(gc.isenabled())
        return original(*args)   # type: ignore[arg-type]

    monkeypatch.setattr(ranking, "_rank_all", ranking_all)
    assert gc.isenabled()
    assert _page(conn, "flamingo payroll")
    assert seen == [False] and gc.isenabled()

    def failing(*_args: object) -> object:
        raise RuntimeError("ranking failed")

    monkeypatch.setattr(ranking, "_rank_all", failing)
    with pytest.raises(RuntimeError):
        _page(conn, "flamingo payroll")
    assert gc.isenabled()
    gc.disable()   # a process that runs without it keeps it off
    try:
        monkeypatch.setattr(ranking, "_rank_all", original)
        _page(conn, "flamingo payroll")
        assert not gc.isenabled()
    finally:
        gc.enable()


def test_the_collector_runs_again_when_the_last_of_several_threads_is_done() -> None:
    pause = ranking._GcPause()
    inside = threading.Barrier(2)
    first_out = threading.Event()
    during: list[bool] = []

    def first() -> None:
        with pause:
            inside.wait()
        first_out.set()

    def second() -> None:
        with pause:
            inside.wait()
            first_out.wait()
            during.append(gc.isenabled())   # the first thread is done, this one is not
    threads = [threading.Thread(target=first), threading.Thread(target=second)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert during == [False] and gc.isenabled()


@pytest.mark.parametrize("seed", range(4))
def test_one_read_word_gives_the_docs_step_1_and_top_give(seed: int) -> None:
    rng = random.Random(seed)
    docs = rng.sample(range(10**9, 10**10), 3_000)
    users = set(rng.sample(docs, 1_200))
    replies = set(rng.sample(docs, 2_000))
    weight = rng.random() * 5 + 0.1
    for count in (0, 1, 50, 400, 1_000, 2_500, 3_000):
        first = ranking._presence_scores(["w"], {"w": users}, {"w": replies}, {"w": weight}, {})
        best, scores = ranking._one_word_best(users, replies, weight, count)
        assert best == ranking._top(first, count)
        assert scores == {doc: first[doc] for doc in best}


def test_rank_of_one_word_same_as_scoring_every_doc(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    conn = connect(tmp_path / "memory.db")
    rng = random.Random(5)
    vocabulary = ["flamingo", "payroll", "invoice", "kernel", "sister", "garden", "cache", "ledger"]
    for number in range(60):
        turns = [(" ".join(rng.sample(vocabulary, 3)), " ".join(rng.sample(vocabulary, 3))) for _ in range(4)]
        _session(conn, f"s{number}", turns, start=1_700_000_000_000 + number * 3_600_000, build=False)
    from pimem import index
    index.build_pending(conn)
    monkeypatch.setattr(ranking, "CANDIDATE_TURNS", 17)   # cut among equal scores
    monkeypatch.setattr(ranking, "CANDIDATE_SESSIONS", 9)
    fast = [_page(conn, word) for word in ("flamingo", "the ledger", "garden")]

    def every_doc(users: set[int], replies: set[int], weight: float, count: int) -> tuple[list[int], dict[int, float]]:
        first = ranking._presence_scores(["w"], {"w": users}, {"w": replies}, {"w": weight}, {})
        return ranking._top(first, count), first

    monkeypatch.setattr(ranking, "_one_word_best", every_doc)
    assert all(fast) and [_page(conn, word) for word in ("flamingo", "the ledger", "garden")] == fast


def test_questions_that_keep_overlapping_do_not_keep_the_collector_off(monkeypatch: pytest.MonkeyPatch) -> None:
    """Two threads whose questions overlap without end (each starts before the other is done): the
    pause never reaches depth 0, so the cyclic garbage the rest of the process makes meanwhile (the
    server's event loop, a sync) must still be collected, at least every MAX_PAUSE seconds."""
    now = [0.0]
    monkeypatch.setattr(time, "monotonic", lambda: now[0])
    pause = ranking._GcPause()
    collected: list[int] = []

    class Cycle:
        def __init__(self) -> None:
            self.parts = [self]

    pause.__enter__()                       # the first question
    for _ in range(40):                     # 40 more, each begun before the one before it is done
        pause.__enter__()
        for _ in range(100):
            Cycle()                         # garbage only the collector frees
        now[0] += 1.0
        pause.__exit__(None, None, None)
        collected.append(sum(isinstance(o, Cycle) for o in gc.get_objects()))
    pause.__exit__(None, None, None)
    assert gc.isenabled()
    assert max(collected) <= 500   # a few seconds' worth (MAX_GC_PAUSE), not 4,000


@pytest.mark.parametrize("seed", range(5))
def test_typed_sums_are_one_addition_at_a_time(seed: int) -> None:
    rng = random.Random(seed)
    before = {rng.randrange(1_000): rng.random() * 9 for _ in range(300)}
    counts: Counter[int] = Counter(rng.choice([*before, *range(1_000, 1_400)]) for _ in range(3_000))
    weight = rng.random() * 7 + 0.01   # n × weight is not always weight added n times
    plain = dict(before)
    for session in counts.elements():   # one addition per doc, sessions entering in counts' order
        plain[session] = plain.get(session, 0.0) + weight
    fast = dict(before)
    ranking._add_typed(fast, counts, weight)
    assert list(fast.items()) == list(plain.items())


def test_sessions_close_together_are_checked_in_one_range(tmp_path: Path) -> None:
    conn = connect(tmp_path / "memory.db")
    for number in range(12):   # a minute apart: the same day, doc keys side by side
        _session(conn, f"s{number}", [("the flamingo payroll", "a reply"), ("payroll again", "flamingo")] * 2,
                 start=1_700_000_000_000 + number * 60_000, build=False)
    from pimem import index
    index.build_pending(conn)
    rows = conn.execute("SELECT session, doc_key, user_chars, reply_chars FROM pimem_word_docs ORDER BY doc_key")
    by_session: dict[int, list[tuple[int, int, int]]] = {}
    for session, doc, uc, rc in rows:
        by_session.setdefault(session, []).append((doc, uc, rc))
    groups = list(by_session.values())[1::2]   # every other session: the docs between are not asked for
    word = ranking.query_words(["payroll"])[0]
    found: dict[str, set[int]] = {word.token: set()}
    statements: list[str] = []
    conn.set_trace_callback(statements.append)
    ranking._check_words(conn, [word.token], {word.token: word.match}, groups, found, {word.token: set()})
    conn.set_trace_callback(None)
    holding = {doc for (doc,) in conn.execute("SELECT rowid FROM pimem_words WHERE pimem_words MATCH ?",
                                              (f'user : "{word.match}"',))}
    typed = {doc for group in groups for doc, _, _ in group if doc in holding}
    assert found[word.token] == typed and len(typed) == 4 * len(groups) and len(holding) > len(typed)
    assert len(statements) < len(groups)   # one lookup per session: as many as the groups


@pytest.mark.parametrize("seed", range(5))
def test_typed_sums_of_sessions_all_new_are_one_addition_at_a_time(seed: int) -> None:
    rng = random.Random(seed)
    counts: Counter[int] = Counter(rng.randrange(400) for _ in range(3_000))
    weight = rng.random() * 7 + 0.01
    plain: dict[int, float] = {}
    for session in counts.elements():
        plain[session] = plain.get(session, 0.0) + weight
    fast: dict[int, float] = {}
    ranking._add_typed(fast, counts, weight)
    assert list(fast.items()) == list(plain.items())


@pytest.mark.parametrize("seed", range(5))
def test_one_read_words_typed_top_is_the_top_of_its_sums(seed: int) -> None:
    """One read word: ``_top`` of the counts (ints) is ``_top`` of the float sums, ties in the order first met."""
    rng = random.Random(seed)
    docs = rng.sample(range(10**6), 4_000)
    session_of = {doc: rng.choice([*range(300), None, -1]) for doc in docs}   # None, -1: no session

    def sessions_of(found: object) -> list[int | None]:
        return [session_of[doc] for doc in found]   # type: ignore[attr-defined]

    weight = rng.random() * 5 + 0.01
    posting = set(docs)
    for wanted in (1, 40, 150, 299, 400):
        plain: dict[int, float] = {}
        for session in sessions_of(posting):
            if session is not None and session != -1:
                plain[session] = plain.get(session, 0.0) + weight
        expected = _nlargest(plain, wanted)
        assert ranking._typed_top(["w"], {"w": weight}, {"w": posting}, sessions_of, -1, wanted) == expected


@pytest.mark.parametrize("seed", range(5))
def test_each_sessions_best_is_the_loops(seed: int) -> None:
    rng = random.Random(seed)
    values = [rng.choice([0.3, 1.0, 1.3, 2.6]) for _ in range(2_000)]
    docs = rng.sample(range(10**6), len(values))
    sessions = [rng.choice([*range(200), None, -1]) for _ in docs]
    for scores in (sorted(values, reverse=True), values):   # best first (_top's order), and any order
        first = dict(zip(docs, scores, strict=True))
        plain: dict[int, float] = {}
        for doc, session in zip(docs, sessions, strict=True):
            if session is not None and session != -1:
                plain[session] = max(plain.get(session, 0.0), first[doc])
        assert list(ranking._session_best(docs, sessions, first, -1).items()) == list(plain.items())


def test_a_posting_under_the_budget_is_read_forwards_the_same(tmp_path: Path, monkeypatch: pytest.MonkeyPatch
                                                               ) -> None:
    """A column's posting that held fewer docs than the limit when last read is read oldest first and cut to
    its newest ``limit``: the same set, filled in the same order, as the newest-first read; also once it has
    grown past the limit."""
    conn = connect(tmp_path / "memory.db")
    for number in range(30):
        _session(conn, f"s{number}", [("the payroll run", "a reply"), ("nothing here", "payroll too")],
                 start=1_700_000_000_000 + number * 3_600_000)
    word = ranking.query_words(["payroll"])[0]
    ranking._POSTING_SIZES.clear()
    statements: list[str] = []
    conn.set_trace_callback(statements.append)

    def newest_first(column: str, limit: int) -> list[int]:
        return [int(doc) for (doc,) in conn.execute(
            "SELECT rowid FROM pimem_words WHERE pimem_words MATCH ? ORDER BY rowid DESC LIMIT ?",
            (f"{column} : {word.match}", limit))]

    for column, held in (("user", 30), ("reply", 30)):
        limit = 40
        assert list(ranking._postings(conn, column, word.match, limit, "k")) == list(set(newest_first(column, limit)))
        statements.clear()
        again = ranking._postings(conn, column, word.match, limit, "k")
        assert list(again) == list(set(newest_first(column, limit))) and len(again) == held
        assert not any("DESC" in statement for statement in statements if "json_group_array" in statement)
    # grown past the limit since: the newest 25 of 30, in the same order; read newest first the next time
    assert ranking._POSTING_SIZES[("k", "user", word.match)] == 30
    ranking._POSTING_SIZES[("k", "user", word.match)] = 20
    cut = ranking._postings(conn, "user", word.match, 25, "k")
    assert list(cut) == list(set(newest_first("user", 25))) and len(cut) == 25
    statements.clear()
    assert list(ranking._postings(conn, "user", word.match, 25, "k")) == list(cut)
    assert any("DESC" in statement for statement in statements if "json_group_array" in statement)
