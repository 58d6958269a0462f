"""A saved parser state is the store's, and the store is shared (the Pi extension writes the same
memory.db): a state whose fields are not of the types pimem writes is forgotten (the file is parsed again
from its start), and a text field holding a lone surrogate (JSON allows one) costs no sync."""

from __future__ import annotations

import json
import shutil
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from pimem.models import SyncIssue
from pimem.store import connect, transaction
from support.history import SAMPLES
from support.sync import sync

RECONSTRUCTED = Path(__file__).resolve().parents[1] / "fixtures" / "reconstructed"
FILES = {   # a transcript of each line importer that resumes from a saved state
    "pi": SAMPLES / "pi/agent/sessions/--tmp-pimem-demo-webshop--/"
                    "2026-11-30T09-45-48-861Z_01a22bd8-a83c-7278-b6dd-f7b4c2b178a9.jsonl",
    "claude": SAMPLES / "claude/projects/-tmp-pimem-demo-webshop/1ed4dd9a-5989-4487-9ac3-d2b870816ee8.jsonl",
    "codex": SAMPLES / "codex/sessions/2026/11/30/"
                       "rollout-2026-11-30T09-45-43-01a22bd8-92cc-7281-b5e5-172b34e9f807.jsonl",
    "copilot-cli": RECONSTRUCTED / "copilot/session-state/3c4d5e6f-7a8b-4c9d-8e0f-1a2b3c4d5e6f/events.jsonl",
    "gemini": RECONSTRUCTED / "gemini/tmp/webshop/chats/session-2026-12-01T09-00-4c1d9a52.jsonl",
    "cursor": RECONSTRUCTED / "cursor-home/.cursor/projects/tmp-pimem-demo-webshop/agent-transcripts/"
                              "8c2f4e6a-1b3d-4f5a-9c7e-2d4f6a8b0c1e/8c2f4e6a-1b3d-4f5a-9c7e-2d4f6a8b0c1e.jsonl",
}
WRONG_TYPES = [[1], {"x": 1}, 1.5]   # of no field's type (nor shape)


def _place(file: Path, base: Path, lines: list[str]) -> Path:
    root = SAMPLES if SAMPLES in file.parents else RECONSTRUCTED
    target = base / file.relative_to(root)
    if not target.parent.exists():
        shutil.copytree(file.parent, target.parent)   # beside it: what its importer reads there (workspace.yaml)
    target.write_text("".join(lines), encoding="utf-8")
    return target


def _turns(db: Path, times: bool = True) -> list[tuple[Any, ...]]:
    conn = sqlite3.connect(db)
    rows = conn.execute(f"SELECT turn_id, turn_index, {'ts' if times else 0}, user_text, reply_text, tool_names "
                        "FROM turns ORDER BY turn_id").fetchall()
    conn.close()
    return rows


def _errors(issues: list[SyncIssue], base: Path) -> list[str]:
    return sorted(issue.error.replace(str(base), "BASE") for issue in issues)


def _set_state(db: Path, key: str, value: Any) -> None:
    conn = connect(db)
    with transaction(conn):
        state = json.loads(conn.execute("SELECT state FROM pimem_files").fetchone()[0])
        state[key] = value
        conn.execute("UPDATE pimem_files SET state = ?", (json.dumps(state),))
    conn.close()


@pytest.mark.parametrize("source", list(FILES))
def test_a_saved_state_of_the_wrong_types_is_forgotten(tmp_path: Path, source: str) -> None:
    lines = FILES[source].read_text(encoding="utf-8").splitlines(keepends=True)
    cut = len(lines) // 2
    full = tmp_path / "full"
    _place(FILES[source], full, lines)
    expected_errors = _errors(sync(full, tmp_path / "full.db").issues, full)
    times = source != "cursor"   # a Cursor transcript has none: its turns get the file's when first read
    expected = _turns(tmp_path / "full.db", times)
    assert expected
    half = tmp_path / "half"
    _place(FILES[source], half, lines[:cut])
    sync(half, tmp_path / "half.db")   # (the half may end in a broken line)
    conn = sqlite3.connect(tmp_path / "half.db")
    saved = json.loads(conn.execute("SELECT state FROM pimem_files").fetchone()[0])
    conn.close()
    cases = [(key, value) for key in saved if key != "brokenLines" for value in WRONG_TYPES]
    assert len(cases) >= 3 * 5
    for n, (key, value) in enumerate(cases):
        base, db = tmp_path / f"case{n}", tmp_path / f"case{n}.db"
        _place(FILES[source], base, lines[:cut])
        sync(base, db)
        _set_state(db, key, value)
        _place(FILES[source], base, lines)
        issues = sync(base, db).issues
        assert (key, value, _errors(issues, base), _turns(db, times)) == (key, value, expected_errors, expected)


@pytest.mark.parametrize("source", list(FILES))
def test_a_saved_text_holding_a_lone_surrogate_costs_no_sync(tmp_path: Path, source: str) -> None:
    """Every text (or null) field of the state made "\\ud800" (such a field may now hold an id of the
    transcript as it is): what that does to the turns is the state's say, but the file is synced to its end,
    with no issue but the transcript's own, and the next sync reads nothing again."""
    lines = FILES[source].read_text(encoding="utf-8").splitlines(keepends=True)
    full = tmp_path / "full"
    _place(FILES[source], full, lines)
    expected_errors = set(_errors(sync(full, tmp_path / "full.db").issues, full))
    base, db = tmp_path / "half", tmp_path / "half.db"
    _place(FILES[source], base, lines[:len(lines) // 2])
    sync(base, db)
    conn = sqlite3.connect(db)
    saved = json.loads(conn.execute("SELECT state FROM pimem_files").fetchone()[0])
    conn.close()
    keys = [key for key, value in saved.items() if isinstance(value, str) or value is None]
    assert keys
    for key in keys:
        _set_state(db, key, "\ud800")
    target = _place(FILES[source], base, lines)
    assert set(_errors(sync(base, db).issues, base)) <= expected_errors
    conn = sqlite3.connect(db)
    assert conn.execute("SELECT parsed_bytes FROM pimem_files").fetchone() == (target.stat().st_size,)
    conn.close()
    assert not sync(base, db).issues
