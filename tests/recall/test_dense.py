"""Multi-entity recall from index lists kept in memory (pimem.recall.dense, issue 12): every answer
equals the oracle's, on a fixed store and while the store changes under the kept lists (new turns,
grown replies, turns moved to another day, deleted turns, a rebuilt index, a trimmed log), and the
bit-sliced arithmetic equals plain sums."""

from __future__ import annotations

import random
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pimem import index, wire
from pimem.recall import RecallQuery, candidates, dense, recall, recall_scan
from pimem.store import SessionRow, connect, transaction, upsert_session

from .test_multi import DAY_MS, VOCABULARY, _query, _store


@pytest.fixture
def kept(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Lists kept as in ``pimem serve``; the returned list counts the queries the dense path answered."""
    monkeypatch.setattr(dense, "_enabled_bytes", dense.DEFAULT_MAX_BYTES)
    monkeypatch.setattr(dense, "_caches", {})
    answered: list[int] = []
    walk = dense.walk_levels

    def counting(*args: Any, **kwargs: Any) -> None:
        answered.append(1)
        walk(*args, **kwargs)

    monkeypatch.setattr(dense, "walk_levels", counting)
    return answered


@pytest.fixture
def conn(db_path: Path) -> sqlite3.Connection:
    return connect(db_path)


def _rows(rows: list[Any]) -> list[dict[str, object]]:
    return [wire.recall_row(row) for row in rows]


def _same_as_oracle(conn: sqlite3.Connection, query: RecallQuery) -> None:
    assert _rows(recall(conn, query)) == _rows(recall_scan(conn, query)), query


@pytest.mark.parametrize("track_limit", [candidates.TRACK_LIMIT, 10])
def test_kept_lists_give_the_oracle_answers(conn: sqlite3.Connection, kept: list[int],
                                             monkeypatch: pytest.MonkeyPatch, track_limit: int) -> None:
    monkeypatch.setattr(candidates, "TRACK_LIMIT", track_limit)
    rng = random.Random(41)
    _store(conn, rng, 1600, 160)
    for _ in range(200):
        _same_as_oracle(conn, _query(rng))
    assert len(kept) > 150      # the dense path answered (single-list queries do not exist here)


def _grow(conn: sqlite3.Connection, rng: random.Random, step: int) -> None:
    """One change of the kinds a sync makes: new turns, a grown reply, a turn moved to another day,
    a deleted turn; then the postings are written (or, every third step, left pending)."""
    with transaction(conn):
        rows = conn.execute("SELECT turn_id, session_id, ts, user_text, reply_text FROM turns").fetchall()
        for number in range(rng.randint(1, 6)):
            session = rng.choice(rows)[1]
            turn_id = f"{session}:grown{step}-{number}"
            ts = 1_700_000_000_000 + rng.randrange(170) * DAY_MS + rng.randrange(DAY_MS)
            user = " ".join(rng.sample(VOCABULARY, rng.randint(1, 4)))
            reply = " ".join(rng.sample(VOCABULARY, rng.randint(0, 6)))
            conn.execute("INSERT INTO turns (turn_id, session_id, turn_index, ts, user_text, reply_text) "
                         "VALUES (?, ?, ?, ?, ?, ?)", (turn_id, session, 10_000 + step, ts, user, reply))
            index.put(conn, turn_id, ts, user, reply, None, None, fts=True)
        turn_id, _, ts, user, reply = rng.choice(rows)
        longer = reply + " " + " ".join(rng.sample(VOCABULARY, 3))
        conn.execute("UPDATE turns SET reply_text = ? WHERE turn_id = ?", (longer, turn_id))
        index.put(conn, turn_id, ts, user, longer, None, (ts, user, reply), fts=True)
        turn_id, _, ts, user, reply = rng.choice(rows)
        moved = ts + rng.choice((-3, 2)) * DAY_MS
        conn.execute("UPDATE turns SET ts = ? WHERE turn_id = ?", (moved, turn_id))
        index.put(conn, turn_id, moved, user, reply, None, (ts, user, reply), fts=True)
        gone = rng.choice(rows)[0]
        conn.execute("DELETE FROM turns WHERE turn_id = ?", (gone,))
        index.reconcile(conn)
    if step % 3:
        index.build_pending(conn)


@pytest.mark.parametrize("max_delta", [dense.MAX_DELTA, 4])
def test_answers_stay_exact_while_the_store_changes(conn: sqlite3.Connection, kept: list[int],
                                                     monkeypatch: pytest.MonkeyPatch, max_delta: int) -> None:
    """The kept lists were read before the changes: the changed docs must come from the log (and be
    scored exactly), a moved or deleted doc must not keep its old bits' score, and a delta past
    MAX_DELTA must read everything again."""
    monkeypatch.setattr(dense, "MAX_DELTA", max_delta)
    monkeypatch.setattr(candidates, "TRACK_LIMIT", 10)
    rng = random.Random(5)
    _store(conn, rng, 900, 150)
    index.build_pending(conn)
    queries = [_query(rng) for _ in range(12)]
    for query in queries:
        _same_as_oracle(conn, query)      # the lists are kept from here on
    for step in range(1, 16):
        _grow(conn, rng, step)
        for query in queries:
            _same_as_oracle(conn, query)
    assert len(kept) >= 12 * 16 - 5


def test_a_rebuilt_index_and_a_trimmed_log_are_read_again(conn: sqlite3.Connection, kept: list[int],
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(index, "LOG_KEEP", 30)
    monkeypatch.setattr(candidates, "TRACK_LIMIT", 10)
    rng = random.Random(9)
    _store(conn, rng, 600, 80)
    index.build_pending(conn)
    queries = [_query(rng) for _ in range(8)]
    reads: list[int] = []
    read_snapshot = dense.read_snapshot

    def counting(connection: sqlite3.Connection) -> dense.Snapshot:
        reads.append(1)
        return read_snapshot(connection)

    monkeypatch.setattr(dense, "read_snapshot", counting)
    for query in queries:
        _same_as_oracle(conn, query)
    assert len(reads) == 1
    for step in range(1, 4):
        _grow(conn, rng, 3 * step + 1)      # postings written: the log moves on
    with transaction(conn):
        index.rebuild(conn)
    index.build_pending(conn)               # every doc logged again: far past LOG_KEEP
    for query in queries:
        _same_as_oracle(conn, query)
    assert len(reads) == 2


def test_a_small_memory_bound_evicts_lists_and_stays_exact(conn: sqlite3.Connection, kept: list[int],
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    rng = random.Random(13)
    _store(conn, rng, 800, 100)
    index.build_pending(conn)
    width_bytes = dense.read_snapshot(conn).width // 8 + 1
    monkeypatch.setattr(dense, "_enabled_bytes", 3 * width_bytes)
    monkeypatch.setattr(candidates, "TRACK_LIMIT", 10)
    for _ in range(60):
        _same_as_oracle(conn, _query(rng))
    cache = dense.cache_for(conn)
    assert cache is not None
    snapshot = cache.snapshot(conn)
    assert snapshot is not None and 0 < len(snapshot.lists) <= 3 and snapshot.list_bytes <= 3 * width_bytes


def test_without_enable_the_walk_answers(conn: sqlite3.Connection, monkeypatch: pytest.MonkeyPatch) -> None:
    """The CLI answers one query per process: reading whole lists would only cost it."""
    monkeypatch.setattr(dense, "_enabled_bytes", None)
    called: list[int] = []
    monkeypatch.setattr(dense, "walk_levels", lambda *args, **kwargs: called.append(1))
    rng = random.Random(3)
    _store(conn, rng, 300, 30)
    for _ in range(20):
        _same_as_oracle(conn, _query(rng))
    assert not called


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(seed=st.integers(0, 2**32 - 1), entities=st.lists(st.sampled_from(VOCABULARY), min_size=2, max_size=8),
       weights=st.none() | st.lists(st.integers(1, 5), min_size=8, max_size=8), limit=st.sampled_from([1, 4, 10]))
def test_hypothesis_kept_lists_match_oracle(tmp_path_factory: pytest.TempPathFactory, seed: int, entities: list[str],
                                            weights: list[int] | None, limit: int) -> None:
    conn = connect(tmp_path_factory.mktemp("d") / "d.db")
    _store(conn, random.Random(seed), 400, 50)
    query = RecallQuery(tuple(entities), limit, weights=tuple(weights[:len(entities)]) if weights else None)
    saved = dense._enabled_bytes, dict(dense._caches)
    dense._enabled_bytes = dense.DEFAULT_MAX_BYTES
    try:
        _same_as_oracle(conn, query)
        _same_as_oracle(conn, query)        # the second time from the kept lists
    finally:
        dense._enabled_bytes = saved[0]
        dense._caches.clear()
        dense._caches.update(saved[1])


@settings(max_examples=200, deadline=None)
@given(columns=st.lists(st.tuples(st.lists(st.booleans(), min_size=40, max_size=40), st.integers(0, 9)),
                        min_size=1, max_size=10),
       among=st.lists(st.booleans(), min_size=40, max_size=40))
def test_bit_sliced_sums_equal_plain_sums(columns: list[tuple[list[bool], int]], among: list[bool]) -> None:
    def mask(bits: list[bool]) -> int:
        return sum(1 << where for where, bit in enumerate(bits) if bit)

    planes: list[int] = []
    for bits, weight in columns:
        dense.add_weighted(planes, mask(bits), weight)
    sums = [sum(weight for bits, weight in columns if bits[doc]) for doc in range(40)]
    for doc in range(40):
        assert sum(((plane >> doc) & 1) << level for level, plane in enumerate(planes)) == sums[doc]
    chosen = [doc for doc in range(40) if among[doc]]
    level, docs = dense.highest_level(planes, mask(among))
    if chosen:
        top = max(sums[doc] for doc in chosen)
        assert level == top and dense.positions(docs) == [doc for doc in chosen if sums[doc] == top]



@pytest.mark.parametrize("numbers", [range(300, 0, -1), range(1, 301)], ids=["keys-descend", "keys-ascend"])
def test_ties_on_score_and_time_are_broken_by_turn_id(conn: sqlite3.Connection, kept: list[int],
                                                       numbers: range) -> None:
    """More docs than one verification batch with the same bound and the same ts: the k-th result's
    equals must still be verified (turn_id decides), wherever they come in the walk (the newest slots
    of a day first: with keys ascending with the turn ids, the best come last)."""
    ts = 1_700_000_000_000 + 5 * DAY_MS
    with transaction(conn):
        upsert_session(conn, SessionRow("pi:s", "pi", "/w", 0, None, "/x"))
        for number in numbers:
            turn_id = f"pi:s:m{number:04d}"
            user, reply = f"alpha beta note {number}", "gamma"
            conn.execute("INSERT INTO turns (turn_id, session_id, turn_index, ts, user_text, reply_text) "
                         "VALUES (?, 'pi:s', ?, ?, ?, ?)", (turn_id, number, ts, user, reply))
            index.put(conn, turn_id, ts, user, reply, None, None, fts=True)
    index.build_pending(conn)
    for limit in (1, 5, 70, 130):
        query = RecallQuery(("alpha", "beta", "gamma"), limit)
        _same_as_oracle(conn, query)
        assert [row.turn_id for row in recall(conn, query)][:2] == ["pi:s:m0001", "pi:s:m0002"][:limit]
    assert kept


def test_an_older_reader_never_uses_lists_read_on_a_newer_index(db_path: Path, kept: list[int],
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """Reader threads share the kept lists but not their transactions: one that still sees the index as
    it was before turns moved, went away and the index was rebuilt must not be answered from lists read
    after that (a moved turn's old key is not in them)."""
    monkeypatch.setattr(candidates, "TRACK_LIMIT", 10)
    writer = connect(db_path)
    rng = random.Random(17)
    _store(writer, rng, 700, 90)
    index.build_pending(writer)
    queries = [_query(rng) for _ in range(10)]
    older = connect(db_path)
    older.execute("BEGIN")
    older.execute("SELECT count(*) FROM turns").fetchone()    # its view is fixed from here on
    for step in (1, 2, 4):
        _grow(writer, rng, step)
    with transaction(writer):
        index.rebuild(writer)
    index.build_pending(writer)
    _grow(writer, rng, 5)
    for query in queries:
        _same_as_oracle(writer, query)        # lists read on the newest index
    for query in queries:
        assert _rows(recall(older, query)) == _rows(recall_scan(older, query)), query
    older.execute("COMMIT")
    for query in queries:
        _same_as_oracle(older, query)


def test_the_log_position_is_read_from_the_ends_of_the_log_not_by_a_scan(conn: sqlite3.Connection) -> None:
    """Every build and every kept-list query reads it: one SELECT of min() and max() together made SQLite
    scan the whole log (15 ms per appended turn after a first import of 260k turns)."""
    with transaction(conn):
        conn.executemany("INSERT INTO pimem_index_log(doc_key) VALUES (?)", [(key,) for key in range(60_000)])
    steps: list[int] = []
    conn.set_progress_handler(lambda: steps.append(1) or 0, 1000)
    try:
        assert index.log_position(conn) == (1, 60_000)
    finally:
        conn.set_progress_handler(None, 0)
    assert len(steps) < 5, len(steps)      # a scan of the 60,000 entries takes hundreds


def _restore(source: Path | sqlite3.Connection, live: sqlite3.Connection) -> None:
    """``sqlite3 memory.db ".restore b.db"``: the store's content replaced in place (same file, same
    inode), under connections that stay open."""
    backup = sqlite3.connect(source) if isinstance(source, Path) else source
    try:
        backup.backup(live)
    finally:
        if isinstance(source, Path):
            backup.close()


def test_a_store_restored_in_place_from_another_store_is_read_again(db_path: Path, tmp_path: Path,
                                                                    kept: list[int],
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 20.1: another store of the same size (the same index epoch and log position) restored
    over the kept one: the lists read on the first must not answer for the second."""
    monkeypatch.setattr(candidates, "TRACK_LIMIT", 10)
    other = tmp_path / "other.db"
    for path, seed in ((db_path, 23), (other, 29)):
        made = connect(path)
        _store(made, random.Random(seed), 900, 150)
        index.build_pending(made)
        made.close()
    live = connect(db_path)
    queries = [_query(random.Random(31)) for _ in range(12)]
    for query in queries:
        _same_as_oracle(live, query)          # the lists of the first store are kept from here on
    before = (index.epoch(live), index.log_position(live))
    _restore(other, live)
    assert (index.epoch(live), index.log_position(live)) == before    # nothing else tells them apart
    for query in queries:
        _same_as_oracle(live, query)
    assert len(kept) >= 2 * len(queries) - 2


def _add_turns(conn: sqlite3.Connection, tag: str, count: int, text: str, days_back: int) -> None:
    """``count`` turns of ``text``, ``days_back`` days before the store's newest turn, indexed."""
    with transaction(conn):
        session, ts = conn.execute("SELECT session_id, max(ts) FROM turns").fetchone()
        ts -= days_back * DAY_MS
        for number in range(count):
            turn_id = f"{session}:{tag}{number}"
            conn.execute("INSERT INTO turns (turn_id, session_id, turn_index, ts, user_text, reply_text) "
                         "VALUES (?, ?, ?, ?, ?, ?)", (turn_id, session, 20_000 + number, ts, text, text))
            index.put(conn, turn_id, ts, text, text, None, None, fts=True)
    index.build_pending(conn)


@pytest.mark.parametrize("winners", [0, 3, 5, 9])
def test_a_store_rolled_back_to_its_own_backup_and_synced_on_is_read_again(db_path: Path, kept: list[int],
                                                                          monkeypatch: pytest.MonkeyPatch,
                                                                          winners: int) -> None:
    """Issue 20.1: the store rolled back to its own older backup (the same store, a shorter log), then
    synced on: other docs are logged at the positions the kept lists already read (5 of them), up to
    them or past them, before the next query. Every answer stays the oracle's."""
    monkeypatch.setattr(candidates, "TRACK_LIMIT", 10)
    live = connect(db_path)
    rng = random.Random(37)
    _store(live, rng, 900, 150)
    index.build_pending(live)
    saved = sqlite3.connect(":memory:")
    live.backup(saved)                        # the backup, taken now
    queries = [RecallQuery(tuple(rng.sample(VOCABULARY, rng.randint(2, 8))), rng.choice([1, 3, 10]))
               for _ in range(12)]
    for query in queries:
        _same_as_oracle(live, query)          # the lists are kept from here on
    _add_turns(live, "filler", 5, "nothing to see", 0)
    for query in queries:
        _same_as_oracle(live, query)          # the kept lists follow the log
    _restore(saved, live)
    _add_turns(live, "winner", winners, " ".join(VOCABULARY), 1)   # the best answer to every query
    for query in queries:
        _same_as_oracle(live, query)
    _grow(live, rng, 100)
    for query in queries:
        _same_as_oracle(live, query)
    assert len(kept) >= 2 * len(queries)


def test_the_store_id_is_new_at_creation_and_at_a_rebuild_and_each_write_ends_with_a_mark(
        db_path: Path, tmp_path: Path) -> None:
    """What tells stores and histories apart (issue 20.1): another store, another id; a rebuild, another
    id; a store an older pimem made gets one at its first index write; a write's last log entry is a
    random mark that the docs read from the log leave out."""
    first, second = connect(db_path), connect(tmp_path / "second.db")
    assert index.store_id(first) and index.store_id(second) and index.store_id(first) != index.store_id(second)
    before = index.store_id(first)
    with transaction(first):
        index.rebuild(first)
    assert index.store_id(first) not in (None, before)
    with transaction(first):
        first.execute("DELETE FROM pimem_meta WHERE key = 'store_id'")      # as an older pimem left it
    _store(first, random.Random(3), 80, 10)
    assert index.store_id(first) is not None
    low, high = index.log_position(first)
    marks = [key for (key,) in first.execute("SELECT doc_key FROM pimem_index_log WHERE doc_key < 0")]
    assert marks and index.log_entry(first, high) in marks and len(set(marks)) == len(marks)
    assert all(key >= 0 for key in index.logged_since(first, low - 1))
