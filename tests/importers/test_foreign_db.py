"""Reading a running program's SQLite database (pimem.foreign_db, OpenCode's opencode.db): OpenCode's own
write pattern (a WAL database, a commit per message/part update) runs in another process beside
repeated syncs: the writer never gets SQLITE_BUSY, pimem creates no file, and a closed database is not
changed by a byte; a -wal left by a crash is read from a private copy."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from pimem.foreign_db import open_foreign, table_names
from pimem.importers import opencode
from pimem.store import connect
from pimem.sync import SyncRequest, run_sync
from support.history import REPO, roots_under

FIXTURE = REPO / "tests" / "fixtures" / "opencode-real" / "opencode" / "opencode.db"
SESSION = "ses_db3cc199bffeqUVIlffB7rLM8o"

# OpenCode's write pattern: WAL, one short transaction per message or part update, the message's and
# the session's time_updated touched. busy_timeout 0: any lock pimem held would fail a commit at once.
WRITER = r"""
import json, sqlite3, sys, time
path, seconds, session = sys.argv[1], float(sys.argv[2]), sys.argv[3]
conn = sqlite3.connect(path, isolation_level=None, timeout=0)
conn.execute("PRAGMA journal_mode = WAL")
conn.execute("PRAGMA synchronous = NORMAL")
conn.execute("PRAGMA busy_timeout = 0")
busy = commits = 0
end = time.monotonic() + seconds
n = 0
while time.monotonic() < end:
    n += 1
    now = int(time.time() * 1000)
    mid = "msg_writer%08d" % n
    try:
        conn.execute("BEGIN IMMEDIATE")
        conn.execute("INSERT INTO message (id, session_id, time_created, time_updated, data) VALUES (?, ?, ?, ?, ?)",
                     (mid, session, now, now, json.dumps({"role": "user", "time": {"created": now}})))
        conn.execute("INSERT INTO part (id, message_id, session_id, time_created, time_updated, data) "
                     "VALUES (?, ?, ?, ?, ?, ?)", ("prt_writer%08d" % n, mid, session, now, now,
                                                   json.dumps({"type": "text", "text": "writer prompt %d" % n})))
        conn.execute("UPDATE session SET time_updated = ? WHERE id = ?", (now, session))
        conn.execute("COMMIT")
        commits += 1
    except sqlite3.OperationalError as error:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        if "locked" in str(error) or "busy" in str(error):
            busy += 1
        else:
            raise
    time.sleep(0.002)
print(json.dumps({"busy": busy, "commits": commits}))
"""


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _files(folder: Path) -> list[str]:
    return sorted(os.listdir(folder))


def _sync(base: Path) -> list[str]:
    stats = run_sync(SyncRequest(db_path=str(base / "memory.db"), roots=roots_under(base), sources={"opencode"}))
    return [issue.error for issue in stats.issues]


def test_a_running_writer_never_gets_busy_and_no_file_appears(tmp_path: Path) -> None:
    folder = tmp_path / "opencode"
    folder.mkdir()
    shutil.copyfile(FIXTURE, folder / "opencode.db")
    writer = subprocess.Popen([sys.executable, "-c", WRITER, str(folder / "opencode.db"), "4", SESSION],
                              stdout=subprocess.PIPE, text=True)
    try:
        while not (folder / "opencode.db-shm").exists():   # the writer has it open in WAL mode
            time.sleep(0.01)
        syncs = 0
        deadline = time.monotonic() + 3.5
        while time.monotonic() < deadline:
            before = _files(folder)
            assert _sync(tmp_path) == []
            assert _files(folder) == before == ["opencode.db", "opencode.db-shm", "opencode.db-wal"]
            syncs += 1
    finally:
        out, _ = writer.communicate(timeout=60)
    assert writer.returncode == 0
    result = json.loads(out)
    assert result["busy"] == 0 and result["commits"] > 100, result
    assert syncs >= 3
    # Once the writer stopped, one more sync has every prompt it committed.
    assert _sync(tmp_path) == []
    prompts = connect(tmp_path / "memory.db").execute(
        "SELECT count(*) FROM turns WHERE user_text LIKE 'writer prompt %'").fetchone()[0]
    assert prompts == result["commits"]


def test_a_closed_database_is_read_without_changing_a_byte(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    folder = tmp_path / "opencode"
    folder.mkdir()
    db = folder / "opencode.db"
    shutil.copyfile(FIXTURE, db)
    stamp, digest = db.stat().st_mtime_ns, _digest(db)
    # What is beside the database while pimem has it open (a plain connection would add -wal and -shm,
    # and remove them again on closing).
    while_open: list[list[str]] = []

    def tables(conn: sqlite3.Connection) -> set[str]:
        names = table_names(conn)
        while_open.append(_files(folder))
        return names

    monkeypatch.setattr(opencode, "table_names", tables)
    assert _sync(tmp_path) == []
    assert while_open == [["opencode.db"]]
    assert _files(folder) == ["opencode.db"] and _digest(db) == digest and db.stat().st_mtime_ns == stamp
    assert connect(tmp_path / "memory.db").execute("SELECT count(*) FROM turns").fetchone()[0] == 3
    # The control: what a plain connection leaves beside the same database (this test can fail).
    plain = sqlite3.connect(db)
    plain.execute("SELECT count(*) FROM session").fetchone()
    assert "opencode.db-shm" in _files(folder)
    plain.close()


def test_a_wal_left_by_a_crash_is_read_from_a_private_copy(tmp_path: Path) -> None:
    live = tmp_path / "live"
    live.mkdir()
    shutil.copyfile(FIXTURE, live / "opencode.db")
    writer = sqlite3.connect(live / "opencode.db", isolation_level=None)
    writer.execute("PRAGMA journal_mode = WAL")
    writer.execute("PRAGMA wal_autocheckpoint = 0")
    writer.execute("UPDATE session SET time_updated = time_updated + 1")
    writer.execute("INSERT INTO message (id, session_id, time_created, time_updated, data) VALUES "
                   "('msg_crash', ?, 1796574900000, 1796574900000, '{\"role\": \"user\"}')", (SESSION,))
    writer.execute("INSERT INTO part (id, message_id, session_id, time_created, time_updated, data) VALUES "
                   "('prt_crash', 'msg_crash', ?, 1796574900000, 1796574900000, "
                   "'{\"type\": \"text\", \"text\": \"only in the wal\"}')", (SESSION,))
    folder = tmp_path / "opencode"
    folder.mkdir()
    shutil.copyfile(live / "opencode.db", folder / "opencode.db")      # as a crash leaves them: no -shm
    shutil.copyfile(live / "opencode.db-wal", folder / "opencode.db-wal")
    writer.close()
    digests = {name: _digest(folder / name) for name in _files(folder)}
    assert _sync(tmp_path) == []
    assert {name: _digest(folder / name) for name in _files(folder)} == digests
    texts = [text for (text,) in connect(tmp_path / "memory.db").execute("SELECT user_text FROM turns")]
    assert "only in the wal" in texts


def test_foreign_errors_are_os_errors_not_store_failures(tmp_path: Path) -> None:
    broken = tmp_path / "opencode.db"
    broken.write_bytes(b"not a database at all" * 100)
    try:
        with open_foreign(str(broken)) as conn:
            conn.execute("SELECT * FROM sqlite_master").fetchall()
    except OSError as error:
        assert "database" in str(error)
    else:
        raise AssertionError("a file that is not a database was read")
