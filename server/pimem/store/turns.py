"""The conversation rows: ``sessions`` and ``turns`` (the extension's tables), read and written.

pimem never deletes a row of these tables, with one exception: the second copy an older pimem stored
of a Pi v1 turn that Pi's own migration gave a new id (:func:`delete_turns`, see importers/pi.py).
``turns.user_message_id`` is always set (the extension's migration deletes rows without one).
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterable
from dataclasses import dataclass

from pimem.models import SOURCES
from pimem.store.batches import chunks, placeholders


@dataclass
class SessionRow:
    session_id: str
    source: str
    cwd: str
    started_at: int
    model_id: str | None
    jsonl_path: str


def upsert_session(conn: sqlite3.Connection, row: SessionRow) -> None:
    """Insert a session; on a known one, fill in what was missing (cwd, model) and move its start back
    when an earlier time shows up (a transcript without a start time of its own starts at its first
    turn, which an incremental sync may see only after the session row was written)."""
    conn.execute(
        """
        INSERT INTO sessions (session_id, source, cwd, started_at, model_id, jsonl_path)
        VALUES (?, ?, ?, ?, ?, ?)
        ON CONFLICT(session_id) DO UPDATE SET
          cwd = CASE WHEN sessions.cwd = '' THEN excluded.cwd ELSE sessions.cwd END,
          started_at = MIN(sessions.started_at, excluded.started_at),
          model_id = COALESCE(sessions.model_id, excluded.model_id),
          jsonl_path = CASE WHEN sessions.jsonl_path = '' THEN excluded.jsonl_path ELSE sessions.jsonl_path END
        """,
        (row.session_id, row.source, row.cwd, row.started_at, row.model_id, row.jsonl_path),
    )


@dataclass
class StoredTurn:
    turn_id: str
    session_id: str
    turn_index: int
    ts: int
    user_text: str
    reply_text: str
    tool_names: list[str]


TurnRow = tuple[str, str, int, int, str, str, "str | None", str]
"""A row to write: (turn_id, session_id, turn_index, ts, user_text, reply_text, tool_names as stored,
user_message_id)."""


def get_turns(conn: sqlite3.Connection, turn_ids: list[str]) -> dict[str, StoredTurn]:
    """The stored rows among ``turn_ids``."""
    found: dict[str, StoredTurn] = {}
    for batch in chunks(turn_ids):
        for row in conn.execute(
            "SELECT turn_id, session_id, turn_index, ts, user_text, reply_text, tool_names FROM turns "
            f"WHERE turn_id IN ({placeholders(len(batch))})", batch,
        ):
            found[row[0]] = StoredTurn(row[0], row[1], row[2], row[3], row[4], row[5], parse_tool_names(row[6]))
    return found


def upsert_turns(conn: sqlite3.Connection, rows: Iterable[TurnRow]) -> None:
    """Write whole turn rows: new ones are inserted, known ones (by ``turn_id``) replaced in place."""
    conn.executemany(
        """
        INSERT INTO turns (turn_id, session_id, turn_index, ts, user_text, reply_text, tool_names, user_message_id)
        VALUES (?, ?, ?, ?, ?, ?, ?, ?)
        ON CONFLICT(turn_id) DO UPDATE SET
          turn_index = excluded.turn_index, ts = excluded.ts, user_text = excluded.user_text,
          reply_text = excluded.reply_text, tool_names = excluded.tool_names,
          user_message_id = excluded.user_message_id
        """,
        rows,
    )


def delete_turns(conn: sqlite3.Connection, turn_ids: list[str]) -> int:
    """Remove pimem's own duplicates of turns (see the module docstring); returns how many rows went."""
    if not turn_ids:
        return 0
    removed = conn.executemany("DELETE FROM turns WHERE turn_id = ?", [(turn_id,) for turn_id in turn_ids]).rowcount
    return max(removed, 0)


def turns_with_message_ids(conn: sqlite3.Connection, session_id: str, id_pattern: str) -> dict[int, tuple[str, str]]:
    """A session's stored turns whose message id matches the GLOB ``id_pattern``, by turn index:
    {turn_index: (user_message_id, user_text)} (importers.base.StoredTurnLookup)."""
    rows = conn.execute(
        "SELECT turn_index, user_message_id, user_text FROM turns WHERE session_id = ? AND user_message_id GLOB ?",
        (session_id, id_pattern))
    return {int(turn_index): (str(message_id), str(text)) for turn_index, message_id, text in rows}


def parse_tool_names(value: object) -> list[str]:
    """``turns.tool_names`` is a JSON array or NULL; tolerate anything else a writer may have left."""
    if not isinstance(value, str) or not value:
        return []
    try:
        names = json.loads(value)
    except ValueError:
        return []
    return [name for name in names if isinstance(name, str)] if isinstance(names, list) else []


def encode_tool_names(names: list[str]) -> str | None:
    return json.dumps(names, ensure_ascii=False) if names else None


def count_turns_by_source(conn: sqlite3.Connection) -> dict[str, int]:
    counts: dict[str, int] = dict.fromkeys(SOURCES, 0)
    for source, count in conn.execute(
        "SELECT s.source, count(*) FROM turns t JOIN sessions s ON s.session_id = t.session_id GROUP BY s.source"
    ):
        if source in counts:
            counts[source] = int(count)
    return counts
