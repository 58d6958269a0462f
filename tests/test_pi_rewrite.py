"""A Pi v1 session that Pi rewrites as v3 when it opens it keeps its turns (issue 10, item 15).

Pi gives every v1 entry a new random id when it migrates the file in place, so the user message
stored as ``L5`` (pimem's id for a v1 entry: its line) is ``c5965ca9`` afterwards. The fixture pairs in
tests/fixtures/pi-v1-rewrite/ are real: each ``*.after.jsonl`` is what the real Pi 1.6.0 wrote when it
opened the ``*.before.jsonl`` (regenerate.py); ``gaps`` has a blank and a broken line, which Pi drops,
so its line numbers shift. The last test runs the real Pi itself.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

import pimem.sync.ingest as sync_module
from pimem.recall import make_query, recall
from pimem.store import connect
from support.history import REPO
from support.sync import sync

PAIRS = REPO / "tests" / "fixtures" / "pi-v1-rewrite"
SESSION_ID = "pi:5f0c7a2e-3b1d-4c8e-9a47-1d2e3f4a5b6c"
FOLDER = Path("pi/agent/sessions/--tmp-pimem-demo-legacy-app--")
NAME = "2025-11-20T10-14-58-077Z_5f0c7a2e-3b1d-4c8e-9a47-1d2e3f4a5b6c.jsonl"
TURNS_SQL = ("SELECT turn_id, session_id, turn_index, ts, user_text, reply_text, tool_names, user_message_id "
             "FROM turns ORDER BY turn_index, turn_id")


def turns(db: Path) -> list[tuple[object, ...]]:
    conn = connect(db)
    try:
        return conn.execute(TURNS_SQL).fetchall()
    finally:
        conn.close()


def place(base: Path, source: Path) -> Path:
    """Put ``source`` where Pi keeps the session (a new file: a new inode, as Pi's rewrite may give)."""
    target = base / FOLDER / NAME
    target.parent.mkdir(parents=True, exist_ok=True)
    temporary = target.with_suffix(".tmp")
    shutil.copyfile(source, temporary)
    os.replace(temporary, target)
    return target


def pi_entry_ids(path: Path) -> dict[str, str]:
    """user text -> entry id of the user messages of a v3 file."""
    found = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        record = json.loads(line)
        message = record.get("message") or {}
        if message.get("role") == "user":
            content = message["content"]
            text = content if isinstance(content, str) else "\n".join(b["text"] for b in content if b["type"] == "text")
            found[text.strip()] = record["id"]
    return found


@pytest.mark.parametrize("pair", ["plain", "gaps"])
def test_pi_rewrite_of_a_v1_session_keeps_its_turns(pair: str, tmp_path: Path, db_path: Path) -> None:
    before, after = PAIRS / f"{pair}.before.jsonl", PAIRS / f"{pair}.after.jsonl"
    target = place(tmp_path, before)
    sync(tmp_path, db_path)
    v1 = turns(db_path)
    assert len(v1) == 4 and all(str(row[7]).startswith("L") for row in v1)
    place(tmp_path, after)
    stats = sync(tmp_path, db_path)
    assert stats.scanned_files == 1 and not stats.issues
    assert turns(db_path) == v1                       # same ids, texts, replies, order: nothing duplicated
    conn = connect(db_path)
    recalled = [row.turn_id for row in recall(conn, make_query(["flamingo"], limit=50))]
    assert recalled and set(recalled) <= {row[0] for row in v1} and len(set(recalled)) == len(recalled)
    # Pi goes on writing v3 entries: a reply to the last v1 turn (by its new entry id) and a new turn.
    ids = pi_entry_ids(target)
    last_v1 = ids["After the compaction: what is left to do for the flamingo fix?"]
    with open(target, "a", encoding="utf-8") as handle:
        handle.write(json.dumps({"type": "message", "id": "feed0001", "parentId": last_v1,
                                 "timestamp": "2025-11-21T09:00:00.000Z",
                                 "message": {"role": "assistant", "content": [{"type": "text", "text": "quokka"}],
                                             "timestamp": 1763715600000}}) + "\n")
        handle.write(json.dumps({"type": "message", "id": "feed0002", "parentId": "feed0001",
                                 "timestamp": "2025-11-21T09:01:00.000Z",
                                 "message": {"role": "user", "content": "and the wombat?",
                                             "timestamp": 1763715660000}}) + "\n")
    stats = sync(tmp_path, db_path)
    assert not stats.issues
    now = turns(db_path)
    assert now[:3] == v1[:3] and now[3][0] == v1[3][0] and str(now[3][5]).endswith("\nquokka")
    assert [(row[0], row[4]) for row in now[4:]] == [(f"{SESSION_ID}:feed0002", "and the wombat?")]
    # A forced re-parse of the v3 file gives the same rows.
    sync(tmp_path, db_path, force=True)
    assert turns(db_path) == now
    conn.close()


def test_duplicates_an_older_pimem_stored_are_removed(tmp_path: Path, db_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """A store synced by a pimem without this fix holds each v1 turn twice (L-id and Pi's new id);
    the next parse of the file (a forced sync) leaves one row per turn, under the v1 id."""
    place(tmp_path, PAIRS / "plain.before.jsonl")
    sync(tmp_path, db_path)
    v1 = turns(db_path)
    place(tmp_path, PAIRS / "plain.after.jsonl")
    with monkeypatch.context() as patch:   # as before the fix: the stored v1 turns are not looked up
        patch.setattr(sync_module._FileImport, "_stored_turns", lambda self, native_id, pattern: {})
        sync(tmp_path, db_path)
    assert len(turns(db_path)) == 2 * len(v1)
    stats = sync(tmp_path, db_path, force=True)
    assert not stats.issues and turns(db_path) == v1
    stats = sync(tmp_path, db_path)   # a full sync also forgets the removed rows' index entries
    conn = connect(db_path)
    try:
        assert conn.execute("SELECT count(*) FROM pimem_docs").fetchone()[0] == len(v1)
        recalled = [row.turn_id for row in recall(conn, make_query(["flamingo"], limit=50))]
        assert recalled and set(recalled) <= {row[0] for row in v1}
    finally:
        conn.close()


def test_same_position_with_other_text_is_a_new_turn(tmp_path: Path, db_path: Path) -> None:
    """Only a turn with the v1 turn's position and text takes its id: a v3 file that merely shares the
    session id (edited, or another conversation) does not overwrite the stored v1 turns."""
    place(tmp_path, PAIRS / "plain.before.jsonl")
    sync(tmp_path, db_path)
    v1 = turns(db_path)
    edited = tmp_path / "edited.jsonl"
    edited.write_text((PAIRS / "plain.after.jsonl").read_text(encoding="utf-8").replace(
        "Why does the legacy-app flamingo cache", "Why does the legacy-app heron cache"), encoding="utf-8")
    place(tmp_path, edited)
    sync(tmp_path, db_path)
    now = {row[0]: row for row in turns(db_path)}
    assert all(now[row[0]] == row for row in v1)          # every v1 row is still there, unchanged
    new = [row for turn_id, row in now.items() if not str(row[7]).startswith("L")]
    assert [row[4] for row in new] == ["Why does the legacy-app heron cache return stale prices?"]


@pytest.mark.e2e
def test_real_pi_opening_a_v1_session_keeps_its_turns(tmp_path: Path, db_path: Path) -> None:
    """The real Pi 1.6.0 opens the v1 session (and rewrites it in place); pimem's turns stay the same."""
    from support.pi_real import verify_pi_sessions

    target = place(tmp_path, PAIRS / "gaps.before.jsonl")
    sync(tmp_path, db_path)
    v1 = turns(db_path)
    cwd = "/tmp/pimem-demo/legacy-app"
    Path(cwd).mkdir(parents=True, exist_ok=True)
    report = verify_pi_sessions(tmp_path / "pi" / "agent", cwd, [target])
    opened = report["files"][0]
    assert opened["error"] is None and not opened["unchanged"]
    header = json.loads(target.read_text(encoding="utf-8").splitlines()[0])
    assert header["version"] == 3
    stats = sync(tmp_path, db_path)
    assert stats.scanned_files == 1 and not stats.issues
    assert turns(db_path) == v1
    conn = connect(db_path)
    try:
        nodes = conn.execute("SELECT count(*) FROM pimem_pi_nodes").fetchone()[0]
        assert nodes == 14                                  # every v3 entry is a node (Pi dropped 2 lines)
        assert conn.execute("SELECT count(*) FROM turns WHERE session_id = ?", (SESSION_ID,)).fetchone()[0] == 4
    finally:
        conn.close()
