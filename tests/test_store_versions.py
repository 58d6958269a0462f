"""Two pimem versions on one store (issue 10, item 10): the bundled server and a pip-installed CLI
need not be the same release.

A second copy of the package is made from this one (a copied package tree, put first on
PYTHONPATH): version ``NEWER_VERSION``, ``LAYOUT`` one higher, and one extra migration step that
adds a table and fills it in place from what the store holds. The real ``pimem`` commands of both
copies then run against one store, in both orders:

* the newer migrates an older store forward in place: no table dropped, no row changed, nothing
  re-parsed (its next sync parses no file);
* the older never drops, rewrites or writes a newer store: its ``sync`` exits 1 with one line asking
  for an upgrade and changes no byte of any table, while its ``status`` and ``recall`` still answer
  (through pimem's tables when the newer layout says older readers may, else through the extension's
  tables alone);
* a store written by today's main (``schema_version`` "3", no ``layout``) is layout 3, migrated in place.
"""

from __future__ import annotations

import json
import re
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from pimem import __version__
from pimem.store import LAYOUT, StoreError, connect, set_meta, transaction
from pimem.sync import SyncRequest, run_sync
from support.env import env_for
from support.history import REPO, roots_under

NEWER_VERSION = "99.0"
NEWER_LAYOUT = LAYOUT + 1
EXTRA_STEP = '''

def _layout_with_file_history(conn):
    """The test's extra step: a new table, filled in place from what the store already holds."""
    conn.execute("CREATE TABLE pimem_file_history (file_id INTEGER NOT NULL, revision INTEGER NOT NULL, "
                 "size INTEGER NOT NULL, PRIMARY KEY (file_id, revision))")
    conn.execute("INSERT INTO pimem_file_history SELECT file_id, revision, size FROM pimem_files")


MIGRATIONS[LAYOUT - 1] = _layout_with_file_history
'''


def make_newer_pimem(target: Path, *, older_readers_may_read: bool) -> Path:
    """A copy of this package as the next release would be: one more layout, one more step."""
    package = target / "pimem"
    shutil.copytree(REPO / "server" / "pimem", package, ignore=shutil.ignore_patterns("__pycache__"))
    init = package / "__init__.py"
    text = init.read_text(encoding="utf-8")
    assert f'__version__ = "{__version__}"' in text
    init.write_text(text.replace(f'__version__ = "{__version__}"', f'__version__ = "{NEWER_VERSION}"'),
                    encoding="utf-8")
    store = package / "store" / "schema.py"
    text, count = re.subn(r"^LAYOUT = \d+", f"LAYOUT = {NEWER_LAYOUT}", store.read_text(encoding="utf-8"),
                          flags=re.M)
    assert count == 1
    if not older_readers_may_read:
        text, count = re.subn(r"^MIN_READER_LAYOUT = \d+", f"MIN_READER_LAYOUT = {NEWER_LAYOUT}", text, flags=re.M)
        assert count == 1
    store.write_text(text + EXTRA_STEP, encoding="utf-8")
    return target


@pytest.fixture(scope="module")
def newer(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_newer_pimem(tmp_path_factory.mktemp("newer"), older_readers_may_read=True)


@pytest.fixture(scope="module")
def newer_unreadable(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_newer_pimem(tmp_path_factory.mktemp("newer-unreadable"), older_readers_may_read=False)


def pimem(package: Path | None, *args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """The real command line of this pimem (``package`` None) or of the copy at ``package``."""
    env = dict(env)
    env.pop("PYTHONPATH", None)
    if package is not None:
        env["PYTHONPATH"] = str(package)
    return subprocess.run([sys.executable, "-m", "pimem", *args], env=env, capture_output=True, text=True,
                          timeout=120, check=False, cwd=REPO)


def ok(result: subprocess.CompletedProcess[str]) -> subprocess.CompletedProcess[str]:
    assert result.returncode == 0 and "Traceback" not in result.stderr, result.stderr
    return result


def snapshot(db: Path) -> dict[str, list[tuple[object, ...]]]:
    """Every row of every table (FTS5 shadow tables included, the virtual tables themselves not)."""
    conn = sqlite3.connect(db)
    try:
        names = [row[0] for row in conn.execute(
            "SELECT name FROM sqlite_master WHERE type = 'table' AND sql NOT LIKE 'CREATE VIRTUAL TABLE%'")]
        return {name: sorted(conn.execute(f'SELECT * FROM "{name}"').fetchall(), key=repr) for name in names}
    finally:
        conn.close()


def meta(db: Path) -> dict[str, str]:
    conn = sqlite3.connect(db)
    try:
        return dict(conn.execute("SELECT key, value FROM pimem_meta").fetchall())
    finally:
        conn.close()


UPGRADE = (f"was written by pimem {NEWER_VERSION} (layout {NEWER_LAYOUT}); this pimem ({__version__}) "
           f"understands up to layout {LAYOUT}: please upgrade")


def add_pi_session(history: Path, marker: str) -> None:
    session_id = "3f1c2b7a-0000-4000-8000-00000000a11d"
    folder = history / "pi" / "agent" / "sessions" / "--tmp-pimem-versions--"
    path = folder / f"2026-11-30T10-00-00-000Z_{session_id}.jsonl"
    path.parent.mkdir(parents=True, exist_ok=True)
    records = [
        {"type": "session", "version": 3, "id": session_id, "timestamp": "2026-11-30T10:00:00.000Z",
         "cwd": "/tmp/pimem-versions"},
        {"type": "message", "id": "v1", "parentId": None, "timestamp": "2026-11-30T10:00:01.000Z",
         "message": {"role": "user", "content": [{"type": "text", "text": f"{marker} question"}],
                     "timestamp": 1764496801000}},
        {"type": "message", "id": "v2", "parentId": "v1", "timestamp": "2026-11-30T10:00:02.000Z",
         "message": {"role": "assistant", "content": [{"type": "text", "text": f"{marker} answer"}],
                     "timestamp": 1764496802000}},
    ]
    path.write_text("".join(json.dumps(record) + "\n" for record in records), encoding="utf-8")


def assert_older_reads_but_never_writes(db: Path, env: dict[str, str], history: Path, newer: Path, *,
                                        index_readable: bool) -> None:
    """This pimem on the newer store: status and recall answer, sync refuses and changes nothing."""
    before = snapshot(db)
    status = ok(pimem(None, "status", "--json", env=env))
    assert [line for line in status.stderr.splitlines() if line.strip()] == [
        f"pimem: this store ({db}) {UPGRADE} (reading it still works)"]
    counted = json.loads(status.stdout)
    assert counted["totalTurns"] == len(before["turns"]) and counted["upgradeRequired"].endswith(UPGRADE)
    for words in (["flamingo"], ["缓存"], ["cache", "lock"]):
        older_rows = json.loads(ok(pimem(None, "recall", *words, "--json", "--limit", "10", env=env)).stdout)
        newer_rows = json.loads(ok(pimem(newer, "recall", *words, "--json", "--limit", "10", env=env)).stdout)
        assert older_rows and len(older_rows) == len(newer_rows)
        if index_readable:
            assert older_rows == newer_rows
        else:   # read from the extension's tables alone: same turns, no line numbers (pimem_docs)
            assert [{**row, "line": None} for row in newer_rows] == older_rows
    add_pi_session(history, "Okapi-versions")
    refused = pimem(None, "sync", env=env)
    assert refused.returncode == 1 and "Traceback" not in refused.stderr
    assert [line for line in refused.stderr.splitlines() if line.strip()] == [f"pimem: this store ({db}) {UPGRADE}"]
    assert snapshot(db) == before
    # The newer one imports the new session; the older one reads it.
    assert json.loads(ok(pimem(newer, "sync", "--json", env=env)).stdout)["turns"] == 1
    found = json.loads(ok(pimem(None, "recall", "Okapi-versions", "--json", env=env)).stdout)
    assert [row["userText"] for row in found] == ["Okapi-versions question"]


def test_the_newer_copy_is_what_runs(newer: Path, history: Path, tmp_path: Path) -> None:
    env = env_for(history, tmp_path / "memory.db")
    assert ok(pimem(newer, "--version", env=env)).stdout.strip() == f"pimem {NEWER_VERSION}"
    assert ok(pimem(None, "--version", env=env)).stdout.strip() == f"pimem {__version__}"


def test_a_newer_pimem_migrates_the_store_in_place_and_the_older_one_still_reads_it(
        newer: Path, history: Path, tmp_path: Path) -> None:
    db = tmp_path / "memory.db"
    env = env_for(history, db)
    assert json.loads(ok(pimem(None, "sync", "--json", env=env)).stdout)["turns"] > 40
    before = snapshot(db)
    assert meta(db)["layout"] == str(LAYOUT)

    ok(pimem(newer, "status", env=env))       # any command of the newer one migrates forward

    after = snapshot(db)
    assert set(after) == set(before) | {"pimem_file_history"}
    assert {name: rows for name, rows in after.items() if name not in ("pimem_meta", "pimem_file_history")} == \
        {name: rows for name, rows in before.items() if name != "pimem_meta"}
    assert sorted(after["pimem_file_history"]) == sorted(
        (row[0], row[11], row[3]) for row in before["pimem_files"])   # filled in place from pimem_files
    assert {**dict(before["pimem_meta"]), "layout": str(NEWER_LAYOUT), "layout_written_by": NEWER_VERSION} == \
        dict(after["pimem_meta"])
    assert meta(db)["schema_version"] == "3"     # what pimem 0.1.0 checks: never changed
    stats = json.loads(ok(pimem(newer, "sync", "--json", env=env)).stdout)
    assert stats["scannedFiles"] == 0 and stats["turns"] == 0      # nothing re-parsed

    assert_older_reads_but_never_writes(db, env, history, newer, index_readable=True)


def test_an_older_pimem_never_drops_a_store_a_newer_one_created(newer: Path, history: Path, tmp_path: Path) -> None:
    db = tmp_path / "memory.db"
    env = env_for(history, db)
    assert json.loads(ok(pimem(newer, "sync", "--json", env=env)).stdout)["turns"] > 40
    assert meta(db)["layout"] == str(NEWER_LAYOUT) and "pimem_file_history" in snapshot(db)
    assert_older_reads_but_never_writes(db, env, history, newer, index_readable=True)


def test_a_layout_older_readers_cannot_read_is_answered_from_the_extensions_tables(
        newer_unreadable: Path, history: Path, tmp_path: Path) -> None:
    db = tmp_path / "memory.db"
    env = env_for(history, db)
    ok(pimem(newer_unreadable, "sync", env=env))
    assert meta(db)["min_reader_layout"] == str(NEWER_LAYOUT)
    status = json.loads(ok(pimem(None, "status", "--json", env=env)).stdout)
    assert status["turnsToIndex"] == 0 and status["lastSync"] is None     # pimem_meta is not read
    assert_older_reads_but_never_writes(db, env, history, newer_unreadable, index_readable=False)


def test_a_store_of_todays_main_is_layout_3_and_is_migrated_in_place(newer: Path, history: Path,
                                                                     tmp_path: Path) -> None:
    db = tmp_path / "memory.db"
    env = env_for(history, db)
    ok(pimem(None, "sync", env=env))
    conn = sqlite3.connect(db)
    with conn:  # what main's pimem (no migration scheme) leaves: schema_version "3" and nothing else
        conn.execute("DELETE FROM pimem_meta WHERE key IN ('layout', 'min_reader_layout', 'layout_written_by')")
    conn.close()
    before = snapshot(db)
    stats = json.loads(ok(pimem(None, "sync", "--json", env=env)).stdout)
    assert stats["scannedFiles"] == 0                  # this pimem takes it as its own layout 3
    ok(pimem(newer, "status", env=env))
    after = snapshot(db)
    assert set(after) == set(before) | {"pimem_file_history"}
    for name in ("turns", "sessions", "pimem_files", "pimem_docs", "pimem_fts_user_data", "pimem_fts_reply_data"):
        assert after[name] == before[name], name
    assert meta(db)["layout"] == str(NEWER_LAYOUT)
    assert json.loads(ok(pimem(newer, "sync", "--json", env=env)).stdout)["scannedFiles"] == 0


def test_a_sync_under_way_writes_nothing_once_a_newer_pimem_has_migrated_the_store(
        history: Path, tmp_path: Path) -> None:
    """The window between two of a long sync's transactions: every write transaction checks, under
    the write lock, that the layout it read is still the store's."""
    db = tmp_path / "memory.db"
    conn = connect(db)
    newer = sqlite3.connect(db, isolation_level=None)
    newer.execute("BEGIN IMMEDIATE")     # what a newer pimem's migration does between two of our commits
    newer.execute("CREATE TABLE pimem_file_history (file_id INTEGER, revision INTEGER, size INTEGER)")
    newer.execute("UPDATE pimem_meta SET value = ? WHERE key = 'layout'", (str(NEWER_LAYOUT),))
    newer.execute("UPDATE pimem_meta SET value = ? WHERE key = 'layout_written_by'", (NEWER_VERSION,))
    newer.execute("COMMIT")
    newer.close()
    before = snapshot(db)
    with pytest.raises(StoreError, match="please upgrade"), transaction(conn):
        set_meta(conn, "written-after-the-migration", "1")
    with pytest.raises(StoreError, match="please upgrade"):
        run_sync(SyncRequest(db_path=str(db), roots=roots_under(history)), conn=conn)
    conn.close()
    assert snapshot(db) == before
