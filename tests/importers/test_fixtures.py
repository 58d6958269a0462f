"""Data-driven importer tests: every real and hand-crafted transcript against its expected turns.

The expectations in tests/fixtures/expected/ were derived by reading each file (see
tests/fixtures/README.md), not by running pimem.
"""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from pimem.store import connect, parse_tool_names
from pimem.sync import SyncRequest, run_sync
from support.history import REPO, load_expected, roots_under

CASES = load_expected()


def _base_of(file: Path) -> Path:
    parts = file.parts
    for marker in ("claude", "codex", "pi", "gemini", "opencode", "copilot", "vscode", "cursor-home", "cursor"):
        if marker in parts:
            return Path(*parts[: parts.index(marker)])
    raise AssertionError(f"no agent root in {file}")


def _import_one(file: Path, db_path: Path, bad_lines: list[int], bad_records: int = 0) -> sqlite3.Connection:
    stats = run_sync(SyncRequest(db_path=str(db_path), roots=roots_under(_base_of(file)), paths=[str(file)]))
    if bad_lines or bad_records:
        # Broken records: one issue naming the first line (a database: their count), the rest imported (the
        # turns are checked below).
        named = f"line {bad_lines[0]}" if bad_lines else f"{bad_records} record(s)"
        assert [("was incomplete" in issue.error, named in issue.error)
                for issue in stats.issues] == [(True, True)], [issue.error for issue in stats.issues]
    else:
        assert not stats.issues, [issue.error for issue in stats.issues]
    return connect(db_path)


@pytest.mark.parametrize("case", CASES, ids=[str(case["name"]) for case in CASES])
def test_importer_matches_expected_turns(case: dict[str, Any], db_path: Path) -> None:
    file = REPO / str(case["file"])
    assert file.exists(), file
    for session in case.get("sessions") or [case]:
        if case["source"] == "cursor" and session.get("cwd"):
            os.makedirs(session["cwd"], exist_ok=True)   # a transcript's folder is its slug decoded against folders
    conn = _import_one(file, db_path, list(case.get("badLines", [])), int(case.get("badRecords", 0)))
    if not case["imported"]:
        assert conn.execute("SELECT count(*) FROM turns").fetchone()[0] == 0
        assert conn.execute("SELECT count(*) FROM sessions").fetchone()[0] == 0
        return
    # A transcript is one session; a database (OpenCode) lists its sessions under "sessions".
    sessions = case.get("sessions") or [case]
    assert conn.execute("SELECT count(*) FROM sessions").fetchone()[0] == len(sessions)
    assert conn.execute("SELECT count(*) FROM turns").fetchone()[0] == sum(len(s["turns"]) for s in sessions)
    for session in sessions:
        _check_session(conn, case["source"], file, session)


def _check_session(conn: sqlite3.Connection, source: str, file: Path, case: dict[str, Any]) -> None:
    session_id = f"{source}:{case['nativeSessionId']}"
    rows = conn.execute(
        "SELECT turn_id, user_text, reply_text, tool_names, turn_index FROM turns WHERE session_id = ? "
        "ORDER BY turn_index", (session_id,)).fetchall()
    expected = [
        (f"{session_id}:{turn['userMessageId']}", turn["userText"], turn["replyText"], turn["toolNames"])
        for turn in case["turns"]
    ]
    actual = [(row[0], row[1], row[2], parse_tool_names(row[3])) for row in rows]
    assert actual == expected
    # The time of each turn, where the expectation gives it (the newer sources' fixtures do).
    times = [turn.get("ts") for turn in case["turns"]]
    if any(ts is not None for ts in times):
        stored = dict(conn.execute("SELECT turn_id, ts FROM turns"))
        assert [stored[turn_id] for turn_id, *_ in expected] == times
    assert [row[4] for row in rows] == list(range(len(rows)))
    cwd = conn.execute("SELECT cwd, source, jsonl_path FROM sessions WHERE session_id = ?", (session_id,)).fetchone()
    assert cwd == (case["cwd"], source, str(file))
    # The files each turn's tool calls touched: absolute, in the order the store keeps (path, action).
    touches: dict[str, list[list[str]]] = {}
    for turn_id, path, action in conn.execute(
            "SELECT turn_id, path, action FROM pimem_touches WHERE session_id = ? ORDER BY 1, 2, 3", (session_id,)):
        touches.setdefault(turn_id, []).append([path, action])
    assert touches == {f"{session_id}:{turn['userMessageId']}": sorted(turn["files"])
                       for turn in case["turns"] if turn.get("files")}
