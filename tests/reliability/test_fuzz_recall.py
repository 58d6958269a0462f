"""Recall with random entities == the oracle (hypothesis), on a store imported through the real sync
from generated transcripts whose texts mix astral characters, combining marks, case-changing
letters (İ, ẞ, Σ/ς), every kind of whitespace, LIKE wildcards, backslashes, CJK and very long
texts, plus rows written the way the Pi extension writes them (not indexed).

tests/test_recall.py covers a small alphabet; this adds: any Unicode scalar value except surrogates
(astral planes included), combining sequences, entities with leading/trailing whitespace, very long
entities (up to the 1,000-character limit, cut from stored texts so that they hit), many entities at once,
and the sources/cwd filters."""

from __future__ import annotations

import json
import random
import shutil
import sqlite3
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pimem import wire
from pimem.recall import MAX_ENTITY_CHARS, make_query, recall, recall_scan
from pimem.store import connect, transaction
from pimem.sync import SyncRequest, run_sync
from support.history import roots_under

from ._support import SCRATCH

SPECIAL = ["%", "_", "\\", "\\\\", "100%", "a_b", "C:\\path\\file", "e\u0301", "a\u0308", "\u0301", "𝔘𝔫𝔦", "😀",
           "𠜎", "🏳️‍🌈", "İ", "ı", "ẞ", "ß", "Σ", "σ", "ς", "ǅ", "K", "\u00a0", "\u3000", "\t", "\n", "缓存", "锁",
           "flamingo", "Flamingo", "FLAMINGO", "x", "a", "the", "ﬃ", "Ⅻ", "ꭰ", "\u200d", "\ufeff", "''", '"']
CWDS = ["/tmp/p/webshop", "/tmp/p/webshop/sub", "/tmp/p/中文项目", "/tmp/p/𝔘", "/tmp/p/web"]
EXAMPLES = {"unicode": 150, "substrings": 150, "special": 100}


def special_text(rng: random.Random, low: int, high: int) -> str:
    parts = [rng.choice(SPECIAL) for _ in range(rng.randint(low, high))]
    separators = ["", " ", "  ", "\n", "\t", " , "]
    return rng.choice(separators).join(parts)


def _session(number: int, rng: random.Random) -> list[str]:
    header = {"type": "session", "version": 3, "id": f"fuzz-{number}", "timestamp": "2026-11-30T10:00:00.000Z",
              "cwd": CWDS[number % len(CWDS)]}
    lines = [json.dumps(header, ensure_ascii=False)]
    parent = None
    for turn in range(rng.randint(1, 30)):
        long = rng.random() < 0.03
        user = special_text(rng, 1, 12) if not long else special_text(rng, 1200, 2500)
        reply = special_text(rng, 0, 25)
        ts = 1_796_000_000_000 + rng.randrange(0, 40) * 1000   # many equal times: ties matter
        for entry_id, role, text in ((f"u{turn}", "user", user), (f"a{turn}", "assistant", reply)):
            lines.append(json.dumps({"type": "message", "id": entry_id, "parentId": parent,
                                     "timestamp": "2026-11-30T10:00:01.000Z",
                                     "message": {"role": role, "content": [{"type": "text", "text": text}],
                                                 "timestamp": ts}}, ensure_ascii=False))
            parent = entry_id
    return lines


@pytest.fixture(scope="module")
def store() -> Iterator[tuple[sqlite3.Connection, list[str]]]:
    tmp = Path(tempfile.mkdtemp(prefix="pimem-fuzz-recall-", dir=SCRATCH))
    try:
        rng = random.Random(20261201)
        for number in range(45):
            path = tmp / "pi/agent/sessions" / f"--s{number % 7}--" / f"2026-11-30T10-00-00-000Z_fuzz-{number}.jsonl"
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text("\n".join(_session(number, rng)) + "\n", encoding="utf-8")
        db = tmp / "memory.db"
        stats = run_sync(SyncRequest(db_path=str(db), roots=roots_under(tmp)))
        assert not stats.issues and stats.turns > 500
        conn = connect(db)
        with transaction(conn):   # rows the Pi extension inserts on its own: not indexed yet
            for number in range(40):
                conn.execute(
                    "INSERT INTO turns (turn_id, session_id, turn_index, ts, user_text, reply_text, tool_names, "
                    "user_message_id) VALUES (?, ?, 0, ?, ?, ?, NULL, ?)",
                    (f"pi:fuzz-{number}:ext{number}", f"pi:fuzz-{number}", 1_796_000_000_000 + number,
                     special_text(rng, 1, 6), special_text(rng, 0, 8), f"ext{number}"))
        texts = [text for row in conn.execute("SELECT user_text, reply_text FROM turns") for text in row if text]
        assert max(len(text) for text in texts) > 2000
        yield conn, texts
        conn.close()
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def same(conn: sqlite3.Connection, entities: list[str], limit: int, sources: list[str] | None = None,
         cwd: str | None = None) -> int:
    query = make_query(entities, limit, sources, cwd)
    fast, oracle = recall(conn, query), recall_scan(conn, query)
    assert [wire.recall_row(row) for row in fast] == [wire.recall_row(row) for row in oracle], query
    return len(oracle)


def _check_all(conn: sqlite3.Connection, entities: list[str], data: st.DataObject) -> None:
    for limit in (1, 50):
        same(conn, entities, limit)
    sources = data.draw(st.none() | st.lists(st.sampled_from(["pi", "claude", "codex"]), min_size=1, unique=True))
    cwd = data.draw(st.none() | st.sampled_from([*CWDS, "/tmp/p", "/"]))
    same(conn, entities, data.draw(st.integers(1, 50)), sources, cwd)


NONBLANK = st.text(st.characters(exclude_categories=("Cs",)), min_size=1, max_size=40).filter(lambda s: s.strip())
def fuzz(examples: int) -> settings:
    return settings(max_examples=examples, deadline=None,
                    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])


@fuzz(EXAMPLES["unicode"])
@given(entities=st.lists(NONBLANK, min_size=1, max_size=8), data=st.data())
def test_any_unicode_entities(store: tuple[sqlite3.Connection, list[str]], entities: list[str],
                              data: st.DataObject) -> None:
    _check_all(store[0], entities, data)


@fuzz(EXAMPLES["substrings"])
@given(data=st.data())
def test_entities_cut_from_stored_texts_including_very_long_and_whitespace_adjacent(
        store: tuple[sqlite3.Connection, list[str]], data: st.DataObject) -> None:
    conn, texts = store
    entities = []
    for _ in range(data.draw(st.integers(1, 4))):
        text = texts[data.draw(st.integers(0, len(texts) - 1))]
        start = data.draw(st.integers(0, len(text) - 1))
        # The longest an entity may be, less the up to 3 whitespace characters added around it.
        length = data.draw(st.sampled_from([1, 2, 3, 5, 12, 40, 400, MAX_ENTITY_CHARS - 3]))
        entity = text[start:start + length]
        entity = data.draw(st.sampled_from(["", " ", "\n", "\t", "\u00a0"])) + entity
        entity += data.draw(st.sampled_from(["", " ", "\n", "  "]))
        entities.append(entity if entity.strip() else "x")
    _check_all(conn, entities, data)


@fuzz(EXAMPLES["special"])
@given(entities=st.lists(st.lists(st.sampled_from(SPECIAL), min_size=1, max_size=4).map("".join)
                         .filter(lambda s: s.strip()), min_size=1, max_size=8), data=st.data())
def test_entities_of_special_characters(store: tuple[sqlite3.Connection, list[str]], entities: list[str],
                                        data: st.DataObject) -> None:
    _check_all(store[0], entities, data)


def test_the_store_really_contains_what_the_entities_aim_at(store: tuple[sqlite3.Connection, list[str]]) -> None:
    """The fuzzing is only meaningful if astral, combining, long and whitespace-adjacent entities hit."""
    conn, texts = store
    for entity in ["𝔘𝔫𝔦", "😀", "𠜎", "e\u0301", "İ", "ẞ", "\u3000缓存", "100%", "C:\\path\\file"]:
        assert same(conn, [entity], 50) > 0, entity
    long_text = max(texts, key=len)
    assert same(conn, [long_text[100:100 + MAX_ENTITY_CHARS]], 5) >= 1
    spaced = next(text for text in texts if 0 < text.find(" ") < len(text) - 4)
    start = spaced.find(" ")
    assert same(conn, [spaced[start:start + 4]], 5) >= 1          # leading whitespace
    assert same(conn, [spaced[start - 1:start + 1]], 5) >= 1      # trailing whitespace
