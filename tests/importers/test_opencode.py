"""The OpenCode importer beyond its real fixture (tests/fixtures/expected/opencode/): a database re-read only
where it changed, its -wal as part of its stamp and of live updates, the 2.x message table
(reconstructed rows in the real 1.18.33 schema, whose session_message table is the 2.x one), and what
is no turn."""

from __future__ import annotations

import json
import shutil
import sqlite3
from pathlib import Path

import pytest

from pimem.discovery import stat_paths
from pimem.importers import opencode
from pimem.models import SyncIssue
from pimem.store import connect, parse_tool_names
from pimem.sync import SyncRequest, run_sync
from support.history import REPO, roots_under

FIXTURE = REPO / "tests" / "fixtures" / "opencode-real" / "opencode" / "opencode.db"
FIRST, SECOND = "ses_db3cc199bffeqUVIlffB7rLM8o", "ses_db3cbf321ffelXRTgTA4CV1L1u"


def _copy(base: Path) -> Path:
    (base / "opencode").mkdir(parents=True)
    db = base / "opencode" / "opencode.db"
    shutil.copyfile(FIXTURE, db)
    return db


def _sync(base: Path) -> tuple[int, list[str]]:
    stats = run_sync(SyncRequest(db_path=str(base / "memory.db"), roots=roots_under(base), sources={"opencode"}))
    return stats.scanned_files, [issue.error for issue in stats.issues]


def _write(db: Path, *statements: tuple[str, tuple[object, ...]]) -> None:
    """As OpenCode writes: WAL, then closed (checkpointed)."""
    conn = sqlite3.connect(db, isolation_level=None)
    conn.execute("PRAGMA journal_mode = WAL")
    for sql, args in statements:
        conn.execute(sql, args)
    conn.close()


def test_only_the_sessions_that_changed_are_read_again(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    db = _copy(tmp_path)
    read: list[str] = []
    original = opencode.OpenCodeDatabase._read_session

    def counting(self: opencode.OpenCodeDatabase, conn: sqlite3.Connection, session_id: str, *rest: object
                 ) -> object:
        read.append(session_id)
        return original(self, conn, session_id, *rest)  # type: ignore[arg-type]

    monkeypatch.setattr(opencode.OpenCodeDatabase, "_read_session", counting)
    assert _sync(tmp_path) == (1, []) and sorted(read) == sorted([FIRST, SECOND])
    read.clear()
    assert _sync(tmp_path) == (0, []) and read == []          # unchanged: only stat'ed
    _write(db, ("INSERT INTO message (id, session_id, time_created, time_updated, data) VALUES (?, ?, ?, ?, ?)",
                ("msg_zz1", SECOND, 1796574900000, 1796574900000, json.dumps({"role": "user"}))),
           ("INSERT INTO part (id, message_id, session_id, time_created, time_updated, data) VALUES (?, ?, ?, ?, ?, ?)",
            ("prt_zz1", "msg_zz1", SECOND, 1796574900000, 1796574900000,
             json.dumps({"type": "text", "text": "and a flamingo test"}))))
    assert _sync(tmp_path) == (1, []) and read == [SECOND]
    texts = [text for (text,) in connect(tmp_path / "memory.db").execute(
        "SELECT user_text FROM turns WHERE session_id = ? ORDER BY turn_index", (f"opencode:{SECOND}",))]
    assert texts == ["Please create file `notes.md` about zeta_ratelimit", "and a flamingo test"]


def test_the_wal_is_part_of_the_stamp_and_of_live_updates(tmp_path: Path) -> None:
    db = _copy(tmp_path)
    roots = roots_under(tmp_path)
    issues: list[SyncIssue] = []
    alone = stat_paths([str(db)], roots, {"opencode"}, issues)[0]
    (tmp_path / "opencode" / "opencode.db-wal").write_bytes(b"x" * 1000)
    both = stat_paths([str(db) + "-wal", str(db)], roots, {"opencode"}, issues)
    assert [f.path for f in both] == [str(db)] and issues == []
    assert both[0].size == alone.size + 1000
    assert stat_paths([str(tmp_path / "opencode" / "other.db-wal")], roots, {"opencode"}, issues) == []


def test_2x_messages_are_read_in_seq_order(tmp_path: Path) -> None:
    db = _copy(tmp_path)
    rows = [  # (id, type, seq, data) in the shapes of OpenCode's Session.Message schema
        ("m1", "user", 1, {"id": "m1", "type": "user", "text": "Explain the flamingo cache", "time": {"created": 5}}),
        ("m2", "model-switched", 2, {"type": "model-switched", "model": {"id": "mock-model"}}),
        ("m3", "assistant", 3, {"type": "assistant", "agent": "build", "model": {"id": "mock-model"},
                                "content": [{"type": "reasoning", "id": "r", "text": "hidden"},
                                            {"type": "text", "id": "t1", "text": "Reading it."},
                                            {"type": "tool", "id": "c1", "name": "read",
                                             "state": {"status": "completed", "input": {"path": "cache.py"}}},
                                            {"type": "tool", "id": "c2", "name": "shell",
                                             "state": {"status": "completed", "input": {"command": "ls"}}}],
                                "time": {"created": 6}}),
        ("m4", "synthetic", 4, {"type": "synthetic", "sessionID": FIRST, "text": "Continue"}),
        ("m5", "assistant", 5, {"type": "assistant", "content": [{"type": "text", "id": "t2", "text": "It is LRU."}],
                                "time": {"created": 7}}),
        ("m6", "user", 6, {"type": "user", "text": "   ", "time": {"created": 8}}),
        ("m7", "assistant", 7, {"type": "assistant", "content": [{"type": "text", "id": "t3", "text": "lost"}]}),
    ]
    _write(db, *[("INSERT INTO session_message (id, session_id, type, seq, time_created, time_updated, data) "
                  "VALUES (?, ?, ?, ?, ?, ?, ?)", (mid, FIRST, kind, seq, 1796575000000 + seq, 1796575000000 + seq,
                                                   json.dumps(data))) for mid, kind, seq, data in rows])
    assert _sync(tmp_path) == (1, [])
    conn = connect(tmp_path / "memory.db")
    turns = conn.execute("SELECT user_message_id, user_text, reply_text, tool_names, ts FROM turns "
                         "WHERE session_id = ?", (f"opencode:{FIRST}",)).fetchall()
    assert [(t[0], t[1], t[2], parse_tool_names(t[3]), t[4]) for t in turns] == [
        ("m1", "Explain the flamingo cache", "Reading it.\nIt is LRU.", ["read", "shell"], 5)]
    touches = conn.execute("SELECT path, action FROM pimem_touches WHERE session_id = ?",
                           (f"opencode:{FIRST}",)).fetchall()
    assert touches == [("/tmp/pimem-demo/opencode-lab/cache.py", "read")]


def test_synthetic_prompts_subagent_sessions_and_broken_rows_are_no_turns(tmp_path: Path) -> None:
    db = _copy(tmp_path)
    _write(db,
           ("INSERT INTO session (id, project_id, parent_id, slug, directory, title, version, time_created, "
            "time_updated) SELECT 'ses_child', project_id, ?, 'child', directory, 't', version, 1, 1 FROM session "
            "WHERE id = ?", (FIRST, FIRST)),
           ("INSERT INTO message (id, session_id, time_created, time_updated, data) VALUES "
            "('msg_c', 'ses_child', 2, 2, '{\"role\": \"user\"}')", ()),
           ("INSERT INTO part (id, message_id, session_id, time_created, time_updated, data) VALUES "
            "('prt_c', 'msg_c', 'ses_child', 2, 2, '{\"type\": \"text\", \"text\": \"sub-agent task\"}')", ()),
           ("INSERT INTO message (id, session_id, time_created, time_updated, data) VALUES "
            "('msg_zs', ?, 1796574990000, 1796574990000, '{\"role\": \"user\"}')", (FIRST,)),
           ("INSERT INTO part (id, message_id, session_id, time_created, time_updated, data) VALUES "
            "('prt_zs', 'msg_zs', ?, 1796574990000, 1796574990000, "
            "'{\"type\": \"text\", \"text\": \"Continue\", \"synthetic\": true}')", (FIRST,)),
           ("INSERT INTO part (id, message_id, session_id, time_created, time_updated, data) VALUES "
            "('prt_zt', 'msg_zs', ?, 1796574990000, 1796574990000, '{broken')", (FIRST,)))
    scanned, issues = _sync(tmp_path)
    assert scanned == 1 and len(issues) == 1 and "1 record(s) could not be read" in issues[0]
    conn = connect(tmp_path / "memory.db")
    assert conn.execute("SELECT count(*) FROM turns").fetchone()[0] == 3
    assert conn.execute("SELECT count(*) FROM sessions WHERE session_id = 'opencode:ses_child'").fetchone()[0] == 0


def test_a_file_that_is_not_an_opencode_database_is_one_issue(tmp_path: Path) -> None:
    (tmp_path / "opencode").mkdir()
    sqlite3.connect(tmp_path / "opencode" / "opencode.db").execute("CREATE TABLE other (x)").connection.close()
    _, issues = _sync(tmp_path)
    assert len(issues) == 1 and "not an OpenCode database" in issues[0]
    assert _sync(tmp_path) == (0, [])   # reported once, not read again until it changes


STORAGE = REPO / "tests" / "fixtures" / "opencode-storage" / "opencode" / "storage"


def test_the_older_json_tree_skips_sub_agents_and_reports_a_broken_record(tmp_path: Path) -> None:
    storage = tmp_path / "opencode" / "storage"
    shutil.copytree(STORAGE, storage)
    session_file = next(storage.glob(f"session/*/{SECOND}.json"))
    child = json.loads(session_file.read_text())
    child.update(id="ses_child0000000000000000", parentID=SECOND)
    (session_file.parent / "ses_child0000000000000000.json").write_text(json.dumps(child))
    (storage / "message" / FIRST / "msg_zzzbroken.json").write_text("{not json")
    scanned, issues = _sync(tmp_path)
    assert scanned == 3 and len(issues) == 1 and FIRST in issues[0], issues
    assert "1 record(s) could not be read" in issues[0] and "OpenCode 1.18.33" in issues[0]
    conn = connect(tmp_path / "memory.db")
    assert conn.execute("SELECT count(*) FROM turns").fetchone()[0] == 3
    assert conn.execute("SELECT count(*) FROM sessions WHERE session_id LIKE '%child%'").fetchone()[0] == 0
    assert _sync(tmp_path) == (0, [])
