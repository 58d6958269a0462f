"""A Codex prompt of images only continues the turn its ``task_started`` closed (pimem.importers.codex,
docs/formats.md 2.6), on stores an older pimem wrote and on a saved state another tool wrote."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from pimem.store import connect, set_meta, transaction
from pimem.sync.rules import META_KEY
from support.sync import sync

SESSION = "01a1f0c2-3d4e-7f50-8a6b-7c8d9e0f1a2c"


def _envelope(kind: str, payload: dict[str, Any], second: int) -> str:
    return json.dumps({"timestamp": f"2026-11-12T10:00:{second:02d}.000Z", "type": kind, "payload": payload}) + "\n"


def _rollout(base: Path, lines: list[str]) -> Path:
    target = base / "codex" / "sessions" / "2026" / "11" / "12" / f"rollout-2026-11-12T10-00-00-{SESSION}.jsonl"
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text("".join(lines), encoding="utf-8")
    return target


FIRST_TASK = [
    _envelope("session_meta", {"id": SESSION, "timestamp": "2026-11-12T10:00:00.000Z", "cwd": "/proj"}, 0),
    _envelope("event_msg", {"type": "task_started"}, 1),
    _envelope("response_item", {"type": "message", "id": "m1", "role": "user",
                                "content": [{"type": "input_text", "text": "Why does checkout crash?"}]}, 2),
    _envelope("response_item", {"type": "message", "role": "assistant",
                                "content": [{"type": "output_text", "text": "cart.items is undefined."}]}, 3),
    _envelope("event_msg", {"type": "task_started"}, 4),
]
SCREENSHOT = [
    _envelope("response_item", {"type": "message", "role": "user", "content": [
        {"type": "input_image", "image_url": "data:image/png;base64,iVBORw0KGgo="}]}, 5),
    _envelope("response_item", {"type": "message", "role": "assistant", "content": [
        {"type": "output_text", "text": "The screenshot shows the TypeError."}]}, 6),
]
EXPECTED = [("Why does checkout crash?", "cart.items is undefined.\nThe screenshot shows the TypeError.")]


def _turns(db: Path) -> list[tuple[str, str]]:
    conn = sqlite3.connect(db)
    try:
        return conn.execute("SELECT user_text, reply_text FROM turns ORDER BY turn_index").fetchall()
    finally:
        conn.close()


def test_a_store_an_older_pimem_wrote_gets_the_replies_to_image_only_prompts(tmp_path: Path) -> None:
    """The rule changed what a rollout gives (rules version 6): a store parsed by the pimem before it (rules
    5, whose saved states have no ``closed``) is parsed again, and gets what one import gives (before: an
    append after a ``task_started`` continued from the old state and lost the reply, and replies lost
    earlier stayed lost)."""
    base, db = tmp_path / "agents", tmp_path / "m.db"
    transcript = _rollout(base, FIRST_TASK)
    assert not sync(base, db).issues
    conn = connect(db)
    with transaction(conn):
        for file_id, state in conn.execute("SELECT file_id, state FROM pimem_files").fetchall():
            saved = json.loads(state)
            saved.pop("closed", None)   # what the pimem before the rule saved
            conn.execute("UPDATE pimem_files SET state = ? WHERE file_id = ?", (json.dumps(saved), file_id))
        set_meta(conn, META_KEY, json.dumps({"claude": 6, "codex": 5, "pi": 4}))
    conn.close()
    transcript.write_text("".join(FIRST_TASK + SCREENSHOT), encoding="utf-8")
    assert not sync(base, db).issues
    assert _turns(db) == EXPECTED
    whole = tmp_path / "whole.db"
    assert not sync(base, whole).issues and _turns(whole) == EXPECTED


@pytest.mark.parametrize("closed", [[1], {"turn": "m1"}, "\ud800"], ids=["list", "object", "lone-surrogate"])
def test_a_saved_state_whose_closed_turn_is_not_a_turn_id_costs_nothing(tmp_path: Path, closed: Any) -> None:
    """The state a store holds may have been written by another tool: a ``closed`` that is not a text the
    store can hold is forgotten (the reply to the screenshot then goes to no turn, as before the rule), and
    the rollout is read on (before: a list or an object made the screenshot's line a broken one in the
    user's report; a lone surrogate failed every later sync of the file, its new turns never imported)."""
    base, db = tmp_path / "agents", tmp_path / "m.db"
    transcript = _rollout(base, FIRST_TASK)
    assert not sync(base, db).issues
    conn = connect(db)
    with transaction(conn):
        state = json.loads(conn.execute("SELECT state FROM pimem_files").fetchone()[0])
        assert state["closed"] == "m1"
        state["closed"] = closed
        conn.execute("UPDATE pimem_files SET state = ?", (json.dumps(state),))
    conn.close()
    later = [_envelope("event_msg", {"type": "task_started"}, 7),
             _envelope("response_item", {"type": "message", "id": "m2", "role": "user",
                                         "content": [{"type": "input_text", "text": "Fix it then."}]}, 8)]
    transcript.write_text("".join(FIRST_TASK + SCREENSHOT + later), encoding="utf-8")
    assert [issue.error for issue in sync(base, db).issues] == []
    assert _turns(db) == [("Why does checkout crash?", "cart.items is undefined."), ("Fix it then.", "")]
