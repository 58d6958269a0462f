"""A large index build has each batch's word texts made by a helper process (pimem/wordhelper.py, issue 21:
the import's wall time) while it writes the batch's trigram postings. The index it writes is the one a
build without the helper writes, row for row (FTS5's segments included), also when the helper cannot
start or dies midway; and the helper ends with the process that started it."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
import time
from collections.abc import Callable
from pathlib import Path
from typing import ClassVar

import pytest

from pimem import index, wordhelper, words
from pimem.store import SessionRow, connect, transaction, upsert_session
from support.processes import alive

from .test_word_text import SAMPLES, _generated

TEXTS = [*SAMPLES, *_generated(60, seed=3), "getSignedUrl zeta_ratelimit 数据库 " * 9000]   # the last > INDEXED_CHARS


def _pending_store(path: Path) -> sqlite3.Connection:
    """A store whose turns (the texts above, as user texts and replies) all wait for their postings."""
    conn = connect(path)
    with transaction(conn):
        upsert_session(conn, SessionRow("pi:s", "pi", "/tmp/p", 0, None, "/x/s"))
        for number, user in enumerate(TEXTS):
            reply = TEXTS[(number * 7 + 3) % len(TEXTS)]
            turn_id = f"pi:s:m{number:04d}"
            ts = 1_700_000_000_000 + number * 1000
            conn.execute("INSERT INTO turns (turn_id, session_id, turn_index, ts, user_text, reply_text) "
                         "VALUES (?, ?, ?, ?, ?, ?)", (turn_id, "pi:s", number, ts, user, reply))
            index.put(conn, turn_id, ts, user, reply, number + 1, None, fts=True)
    return conn


def _index_rows(conn: sqlite3.Connection) -> dict[str, list[tuple[object, ...]]]:
    """Every row of the word index and the trigram index (their FTS5 shadow tables: the segments)."""
    tables = [name for (name,) in conn.execute(
        "SELECT name FROM sqlite_master WHERE type = 'table' AND (name LIKE 'pimem_words_%' "
        "OR name LIKE 'pimem_fts_%' OR name = 'pimem_word_docs') AND name != 'pimem_words_pending' "
        "AND sql NOT LIKE 'CREATE VIRTUAL TABLE%'")]
    assert "pimem_words_data" in tables and "pimem_fts_reply_data" in tables
    return {table: conn.execute(f"SELECT * FROM {table} ORDER BY 1").fetchall() for table in tables}


class _Counted(wordhelper.WordHelper):
    made: ClassVar[list[_Counted]] = []

    def __init__(self) -> None:
        super().__init__()
        _Counted.made.append(self)


def _build(path: Path, monkeypatch: pytest.MonkeyPatch, *, helper: bool,
           helper_class: type[wordhelper.WordHelper] = _Counted) -> dict[str, list[tuple[object, ...]]]:
    conn = _pending_store(path)
    with monkeypatch.context() as patch:
        patch.setattr(index, "BUILD_BATCH", 7)   # many batches, each its own request to the helper
        patch.setattr(wordhelper, "wanted", lambda pending: helper)
        patch.setattr(wordhelper, "WordHelper", helper_class)
        _Counted.made = []
        assert index.build_pending(conn) == len(TEXTS)
    rows = _index_rows(conn)
    conn.close()
    return rows


def test_the_helper_makes_the_word_texts_and_the_index_is_the_same(tmp_path: Path,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    reference = _build(tmp_path / "a" / "memory.db", monkeypatch, helper=False)
    assert _Counted.made == []
    helped = _build(tmp_path / "b" / "memory.db", monkeypatch, helper=True)
    assert len(_Counted.made) == 1
    assert _Counted.made[0].served == -(-len(TEXTS) // 7)   # every batch's texts made by the helper
    assert _Counted.made[0].process is None                  # ended with the build
    assert helped == reference


class _DiesBeforeTheSecondRequest(_Counted):
    def start(self, texts: list[str]) -> Callable[[], list[str]]:
        if self.served == 1 and self.process is not None:
            self.process.kill()
            self.process.wait()
        return super().start(texts)


class _DiesBeforeItsSecondAnswer(_Counted):
    def start(self, texts: list[str]) -> Callable[[], list[str]]:
        result = super().start(texts)
        if self.served == 1 and self.process is not None:
            self.process.kill()
            self.process.wait()
        return result


class _CannotStart(_Counted):
    def __init__(self) -> None:
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(wordhelper.subprocess, "Popen", _no_process)
            super().__init__()


def _no_process(*_: object, **__: object) -> subprocess.Popen[bytes]:
    raise OSError("no processes left")


@pytest.mark.parametrize("failing", [_DiesBeforeTheSecondRequest, _DiesBeforeItsSecondAnswer, _CannotStart])
def test_a_helper_that_fails_leaves_the_same_index(failing: type[_Counted], tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    reference = _build(tmp_path / "a" / "memory.db", monkeypatch, helper=False)
    helped = _build(tmp_path / "b" / "memory.db", monkeypatch, helper=True, helper_class=failing)
    assert len(_Counted.made) == 1
    served = _Counted.made[0].served   # (a helper killed after its second request may have answered it)
    assert served == 0 if failing is _CannotStart else 1 <= served < -(-len(TEXTS) // 7)
    assert _Counted.made[0].process is None
    assert helped == reference


def test_answers_give_the_word_texts() -> None:
    texts = [words.indexed(text) for text in TEXTS]
    made = wordhelper.answer(texts)
    assert wordhelper.word_texts(texts, made) == [words.word_text(text) for text in TEXTS]
    # Most texts travel back as their appended part only.
    assert made[0] == (None, "") and made[2][0] is None and made[2][1]


@pytest.mark.parametrize(("cores", "load", "pending", "wanted"), [
    (2, 0.3, wordhelper.MIN_DOCS, True), (2, 0.3, wordhelper.MIN_DOCS - 1, False), (1, 0.0, 10**6, False),
    (2, 1.9, 10**6, True), (2, 2.0, 10**6, False), (8, 5.0, 10**6, True), (4, 6.5, 10**6, False),
])
def test_a_build_has_a_helper_when_it_is_large_and_a_core_is_idle(cores: int, load: float, pending: int,
                                                                   wanted: bool,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(wordhelper.os, "cpu_count", lambda: cores)
    monkeypatch.setattr(wordhelper.os, "getloadavg", lambda: (load, load, load))
    assert wordhelper.wanted(pending) is wanted


PARENT = textwrap.dedent("""
    import sys, time
    from pimem.wordhelper import WordHelper
    helper = WordHelper()
    assert helper.start(["getSignedUrl"])() == ["getSignedUrl\\nget Signed Url"]
    print(helper.process.pid, flush=True)
    time.sleep(120)
""")


def test_the_helper_ends_with_the_process_that_started_it() -> None:
    parent = subprocess.Popen([sys.executable, "-c", PARENT], stdout=subprocess.PIPE, text=True)
    pid = 0
    try:
        assert parent.stdout is not None
        pid = int(parent.stdout.readline())
        os.kill(parent.pid, signal.SIGKILL)
        parent.wait()
        deadline = time.monotonic() + 10
        while alive(pid) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not alive(pid)
    finally:
        if parent.poll() is None:
            parent.kill()
            parent.wait()
        if pid and alive(pid):   # this test failed: leave no process behind
            os.kill(pid, signal.SIGKILL)
