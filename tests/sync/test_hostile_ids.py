"""Ids a store cannot hold: JSON allows a lone surrogate ("\\ud800"; JavaScript writes one when a string is
cut inside a pair), UTF-8 (hence SQLite) cannot hold one. A transcript whose entry, message, call or session
ids hold one is imported like the same transcript with plain ids."""

from __future__ import annotations

import json
import shutil
import sqlite3
from pathlib import Path
from typing import Any

from pimem.models import SyncIssue
from support.history import SAMPLES
from support.sync import sync

RECONSTRUCTED = Path(__file__).resolve().parents[1] / "fixtures" / "reconstructed"


def _is_id(key: str) -> bool:
    return key in ("id", "uuid") or key.endswith(("Id", "ID", "_id", "Uuid"))


def _hostile(value: Any) -> Any:
    """``value`` with a lone surrogate appended to every id (the same one to each, so references hold)."""
    if isinstance(value, dict):
        return {key: (item + "\ud800" if _is_id(key) and isinstance(item, str) and item else _hostile(item))
                for key, item in value.items()}
    if isinstance(value, list):
        return [_hostile(item) for item in value]
    return value


def _hostile_line(line: str) -> str:
    try:
        return json.dumps(_hostile(json.loads(line)))
    except ValueError:
        return line   # a broken line of the fixture stays broken


def _history(base: Path, hostile: bool) -> Path:
    shutil.copytree(SAMPLES, base, ignore=shutil.ignore_patterns("MANIFEST.md"))
    shutil.copytree(RECONSTRUCTED, base, dirs_exist_ok=True, ignore=shutil.ignore_patterns("*.vscdb", "*.db"))
    if hostile:
        for path in [*base.rglob("*.jsonl"), *base.rglob("*.json")]:
            text = path.read_text(encoding="utf-8")
            if path.suffix == ".jsonl":
                lines = [_hostile_line(line) for line in text.splitlines()]
                path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
            else:
                path.write_text(json.dumps(_hostile(json.loads(text))), encoding="utf-8")
    return base


def _issues(issues: list[SyncIssue], base: Path) -> list[tuple[str, str]]:
    return sorted((str(Path(issue.jsonl_path).relative_to(base)), issue.error.replace(str(base), "BASE"))
                  for issue in issues)


def _rows(db: Path, sql: str) -> list[tuple[Any, ...]]:
    conn = sqlite3.connect(db)
    rows = conn.execute(sql).fetchall()
    conn.close()
    return rows


def _turns(db: Path) -> list[tuple[Any, ...]]:
    return _rows(db, "SELECT s.source, t.user_text, t.reply_text FROM turns t JOIN sessions s "
                     "ON s.session_id = t.session_id ORDER BY 1, 2, 3")


def test_ids_holding_a_lone_surrogate_lose_no_turn(tmp_path: Path) -> None:
    plain, hostile = _history(tmp_path / "plain", False), _history(tmp_path / "hostile", True)
    issues = _issues(sync(plain, tmp_path / "plain.db").issues, plain)   # the fixtures' broken lines
    expected = _turns(tmp_path / "plain.db")
    assert {source for source, _, _ in expected} >= {"pi", "claude", "codex", "gemini", "copilot-cli"}
    assert _issues(sync(hostile, tmp_path / "hostile.db").issues, hostile) == issues
    assert _turns(tmp_path / "hostile.db") == expected
    # a second sync (appends nothing) changes nothing and reports nothing
    assert not sync(hostile, tmp_path / "hostile.db").issues
    assert _turns(tmp_path / "hostile.db") == expected


def _spans(db: Path) -> list[tuple[Any, ...]]:
    return _rows(db, "SELECT s.turn_id, s.tool, s.call_id, s.whole, l.hash, l.pos FROM pimem_edit_spans s "
                     "JOIN pimem_edit_lines l ON l.span_id = s.span_id ORDER BY 1, 3, 6")


def test_a_pi_turn_whose_id_holds_a_lone_surrogate_gives_one_sync_s_spans_whatever_the_syncs(tmp_path: Path) -> None:
    """A read, then a write of the file in the turn of a user entry whose id holds a lone surrogate: synced after
    every line, the write claims what one sync of the whole file gives it (the lines it added, not the file)."""
    before = "a = compute(one, two)\nb = compute(three, four)\n"
    after = before + "c = compute(five, six)\n"
    turn = "u\ud800"
    lines = [{"type": "session", "version": 3, "id": "s\udc01", "timestamp": "2026-11-01T10:00:00.000Z", "cwd": "/p"},
             {"type": "message", "id": turn, "parentId": None, "timestamp": "2026-11-01T10:00:01.000Z",
              "message": {"role": "user", "content": "tidy", "timestamp": 1793527201000}},
             {"type": "message", "id": "a\ud801", "parentId": turn, "timestamp": "2026-11-01T10:00:02.000Z",
              "message": {"role": "assistant", "content": [
                  {"type": "toolCall", "id": "c1", "name": "read", "arguments": {"path": "f.py"}}]}},
             {"type": "message", "id": "r\ud803", "parentId": "a\ud801", "timestamp": "2026-11-01T10:00:03.000Z",
              "message": {"role": "toolResult", "toolCallId": "c1", "toolName": "read",
                          "content": [{"type": "text", "text": before}], "isError": False}},
             {"type": "message", "id": "w\ud804", "parentId": "r\ud803", "timestamp": "2026-11-01T10:00:04.000Z",
              "message": {"role": "assistant", "content": [
                  {"type": "toolCall", "id": "c2", "name": "write", "arguments": {"path": "f.py", "content": after}}]}}]
    text = [json.dumps(line, separators=(",", ":")) + "\n" for line in lines]
    relative = Path("pi/agent/sessions/--p--/2026-11-01T10-00-00-000Z_s1.jsonl")
    schedules = {"full": [len(text)], **{f"cut{k}": [k, len(text)] for k in range(1, len(text))}}
    for name, steps in schedules.items():
        target = tmp_path / name / relative
        target.parent.mkdir(parents=True)
        for step in steps:
            target.write_text("".join(text[:step]), encoding="utf-8")
            assert not sync(tmp_path / name, tmp_path / f"{name}.db").issues
    assert _turns(tmp_path / "full.db") == [("pi", "tidy", "")]
    spans = _spans(tmp_path / "full.db")
    assert [tool for _, tool, _, _, _, _ in spans] == ["write"]   # the line it added, not the file
    expected = _turns(tmp_path / "full.db")
    for name in schedules:
        assert (name, _turns(tmp_path / f"{name}.db"), _spans(tmp_path / f"{name}.db")) == (name, expected, spans)
