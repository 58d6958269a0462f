"""The Cursor importer: the agent transcripts (data-driven, with tests/fixtures/expected/cursor/) and the
IDE's ``state.vscdb`` (built from the reconstructed ``cursorDiskKV.json`` rows)."""

from __future__ import annotations

import json
import os
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from pimem.importers import cursor
from pimem.importers.base import Chunk, absolute_touch_path, feed_line
from pimem.jsonl import LineReader
from support.history import REPO, load_expected

CASES = [case for case in load_expected() if case["source"] == "cursor" and "sessions" not in case]   # transcripts
ROWS = REPO / "tests/fixtures/reconstructed/cursor/User/globalStorage/cursorDiskKV.json"
C1 = "8c2f4e6a-1b3d-4f5a-9c7e-2d4f6a8b0c1e"
WEBSHOP = "/tmp/pimem-demo/webshop"


@pytest.fixture(autouse=True)
def _webshop_exists() -> None:
    # The transcript's folder is its slug decoded against the folders that exist (fixtures README).
    os.makedirs(WEBSHOP, exist_ok=True)


def turns_of(chunk: Chunk, cwd: str) -> list[dict[str, Any]]:
    return [{"userMessageId": d.user_message_id, "userText": d.user_text, "replyText": "\n".join(d.reply_parts),
             "toolNames": d.tools, "files": [[absolute_touch_path(p, cwd) or p, a] for p, a in d.files], "ts": d.ts}
            for d in chunk.turns.values()]


@pytest.mark.parametrize("case", CASES, ids=[str(case["name"]) for case in CASES])
def test_transcript_matches_expected(case: dict[str, Any]) -> None:
    path = REPO / str(case["file"])
    parser = cursor.CursorTranscriptParser(str(path), None)
    chunk = Chunk()
    with path.open("rb") as stream:
        for line in LineReader(stream).scan(parser.interesting):
            feed_line(parser, line, chunk)
    info = parser.session()
    assert (info.native_id, info.cwd) == (case["nativeSessionId"], case["cwd"])
    mtime = path.stat().st_mtime_ns // 1_000_000
    expected = [{**turn, "files": turn.get("files", []), "ts": turn["ts"] or mtime} for turn in case["turns"]]
    assert turns_of(chunk, info.cwd) == expected
    bad = case.get("badLines", [])
    assert (chunk.bad_lines, chunk.first_bad_line) == (len(bad), bad[0] if bad else None)


def make_db(path: Path, rows: dict[str, str]) -> None:
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE ItemTable (key TEXT UNIQUE ON CONFLICT REPLACE, value BLOB)")
    conn.execute("CREATE TABLE cursorDiskKV (key TEXT UNIQUE ON CONFLICT REPLACE, value BLOB)")
    conn.executemany("INSERT INTO cursorDiskKV VALUES (?, ?)", rows.items())
    conn.commit()
    conn.close()


def read_db(path: Path, seen: dict[str, list[Any]]) -> dict[str, tuple[Any, ...]]:
    conn = sqlite3.connect(f"{path.as_uri()}?mode=ro", uri=True)
    try:
        return {cid: (sig, info, chunk) for cid, sig, info, chunk in cursor.read_composers(conn, seen)}
    finally:
        conn.close()


def test_database_conversations(tmp_path: Path) -> None:
    db = tmp_path / "state.vscdb"
    make_db(db, json.loads(ROWS.read_text(encoding="utf-8")))
    found = read_db(db, {})
    assert sorted(found) == sorted([C1, "1a2b3c4d-5e6f-4a7b-8c9d-0e1f2a3b4c5d"])   # the draft has no headers
    _, info, chunk = found[C1]
    assert (info.native_id, info.cwd, info.started_at) == (C1, WEBSHOP, 1796500000000)
    assert info.model_id == "claude-4.5-sonnet"
    assert turns_of(chunk, info.cwd) == [
        {"userMessageId": "U0", "userText": "Why is the flamingo cache stale?",
         "replyText": "The TTL check is inverted.",
         "toolNames": ["read_file_v2", "edit_file_v2"],
         "files": [[WEBSHOP + "/cache.py", "read"], [WEBSHOP + "/cache.py", "edit"]], "ts": 1796500001000},
        {"userMessageId": "U1", "userText": "Run the tests, 100% please", "replyText": "All tests pass.",
         "toolNames": ["run_terminal_cmd"], "files": [], "ts": 1796500060000}]
    assert chunk.bad_lines == 1   # the truncated bubble
    _, old_info, old = found["1a2b3c4d-5e6f-4a7b-8c9d-0e1f2a3b4c5d"]
    assert old_info.cwd == ""   # a row older than workspaceIdentifier
    assert [(d.user_text, d.reply_parts, d.ts) for d in old.turns.values()] == [
        ("Explain 锁 in payroll", ["A lock serialises payroll runs."], 1796500000000 - 86400000)]


def test_database_reads_only_changed_conversations(tmp_path: Path) -> None:
    db = tmp_path / "state.vscdb"
    rows = json.loads(ROWS.read_text(encoding="utf-8"))
    make_db(db, rows)
    seen = {cid: sig for cid, (sig, _, _) in read_db(db, {}).items()}
    assert read_db(db, seen) == {}
    # Cursor streams the last answer into its bubble: the conversation is read again.
    conn = sqlite3.connect(db)
    conn.execute("UPDATE cursorDiskKV SET value = ? WHERE key = ?",
                 (json.dumps({"_v": 3, "type": 2, "text": "All tests pass, flamingo too."}), f"bubbleId:{C1}:gone"))
    conn.execute("INSERT INTO cursorDiskKV VALUES (?, ?)",
                 (f"bubbleId:{C1}:gone", json.dumps({"_v": 3, "type": 2, "text": "Also: flamingo is fixed."})))
    conn.commit()
    conn.close()
    again = read_db(db, seen)
    assert list(again) == [C1]
    assert list(again[C1][2].turns["U1"].reply_parts) == ["All tests pass.", "Also: flamingo is fixed."]


@pytest.mark.parametrize(("text", "words"), [
    ("<user_info>\nOS\n</user_info>\n<user_query>\nfix it\n</user_query>", "fix it"),
    ("<attached_files>\n<file>a.py</file>\n</attached_files>\nplain words", "plain words"),
    ("no markup at all", "no markup at all"),
])
def test_user_words(text: str, words: str) -> None:
    assert cursor.user_words(text) == words


def test_slugs(tmp_path: Path) -> None:
    (tmp_path / "my app" / "src").mkdir(parents=True)
    (tmp_path / "my-app").mkdir()
    assert cursor.slugify("/tmp/pimem-demo/webshop") == "tmp-pimem-demo-webshop"
    assert cursor.decode_slug(cursor.slugify(str(tmp_path / "my app" / "src"))) == str(tmp_path / "my app" / "src")
    assert cursor.decode_slug(cursor.slugify(str(tmp_path / "my-app"))) == ""   # "my app" and "my-app": ambiguous
    assert cursor.decode_slug("no-such-folder-anywhere") == ""


def _sync(tmp_path: Path, db: Path) -> Any:
    from pimem.paths import SourceRoots
    from pimem.sync import SyncRequest, run_sync

    roots = SourceRoots(cursor=(tmp_path / "projects", db.parent))
    return run_sync(SyncRequest(db_path=str(tmp_path / "memory.db"), roots=roots))


def test_database_through_a_sync(tmp_path: Path) -> None:
    """The conversations become sessions; a no-change sync reads nothing; a changed conversation alone is
    read again; nothing is written beside Cursor's database."""
    from pimem.store import connect

    db = tmp_path / "globalStorage" / "state.vscdb"
    db.parent.mkdir()
    make_db(db, json.loads(ROWS.read_text(encoding="utf-8")))
    before = sorted(p.name for p in db.parent.iterdir())
    stats = _sync(tmp_path, db)
    assert [("was incomplete" in issue.error, "Cursor" in issue.error) for issue in stats.issues] == [(True, True)]
    conn = connect(tmp_path / "memory.db")
    assert conn.execute("SELECT session_id, cwd FROM sessions ORDER BY 1").fetchall() == [
        ("cursor:1a2b3c4d-5e6f-4a7b-8c9d-0e1f2a3b4c5d", ""), (f"cursor:{C1}", WEBSHOP)]
    assert conn.execute("SELECT turn_id, user_text, reply_text FROM turns ORDER BY 1").fetchall()[1:] == [
        (f"cursor:{C1}:U0", "Why is the flamingo cache stale?", "The TTL check is inverted."),
        (f"cursor:{C1}:U1", "Run the tests, 100% please", "All tests pass.")]
    assert sorted(p.name for p in db.parent.iterdir()) == before   # no -wal, no -shm left
    again = _sync(tmp_path, db)
    assert (again.scanned_files, again.issues) == (0, [])
    writer = sqlite3.connect(db)
    writer.execute("INSERT INTO cursorDiskKV VALUES (?, ?)",
                   (f"bubbleId:{C1}:gone", json.dumps({"_v": 3, "type": 2, "text": "Also: flamingo is fixed."})))
    writer.commit()
    writer.close()
    _sync(tmp_path, db)
    assert conn.execute("SELECT reply_text FROM turns WHERE turn_id = ?", (f"cursor:{C1}:U1",)).fetchone() == (
        "All tests pass.\nAlso: flamingo is fixed.",)
    conn.close()


def test_a_sync_beside_cursor_writing_never_blocks_it(tmp_path: Path) -> None:
    """Cursor's write pattern (WAL, short commits in a loop) beside syncs: the writer never waits or fails
    on pimem, and pimem changes no byte of the database."""
    import threading
    import time

    db = tmp_path / "globalStorage" / "state.vscdb"
    db.parent.mkdir()
    make_db(db, json.loads(ROWS.read_text(encoding="utf-8")))
    writer = sqlite3.connect(db, timeout=0, check_same_thread=False)
    writer.execute("PRAGMA journal_mode=WAL")
    stop = threading.Event()
    failures: list[str] = []
    commits = 0

    def write() -> None:
        nonlocal commits
        while not stop.is_set():
            try:
                writer.execute("INSERT INTO cursorDiskKV VALUES (?, ?)",
                               (f"bubbleId:{C1}:gone", json.dumps({"_v": 3, "type": 2, "text": f"tick {commits}"})))
                writer.commit()
                commits += 1
            except sqlite3.OperationalError as error:   # busy: pimem held a lock
                failures.append(str(error))
            time.sleep(0.001)

    thread = threading.Thread(target=write)
    thread.start()
    try:
        for _ in range(5):
            stats = _sync(tmp_path, db)
            assert all("Cursor" in issue.error for issue in stats.issues)
    finally:
        stop.set()
        thread.join()
    writer.close()
    assert failures == [] and commits > 0
