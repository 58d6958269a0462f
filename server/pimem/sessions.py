"""One session's turns, in order, around a turn: what an agent (the MCP tool ``read_session``) or a
sessions view reads to see what led to a recalled turn and what came after it.

A session's order is ``turn_index``, then time, then turn id (``turn_index`` is the display order the
importers and the extension write; ties only occur in stores written by old extension versions).
Rows carry the same fields as recall's rows (:class:`pimem.recall.RecallRow`), with ``hits`` 0.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from dataclasses import dataclass

from pimem.recall import RecallRow
from pimem.store import parse_tool_names

# Turns in one request, each side (the MCP tool validates this bound too; see agent_tools).
MAX_CONTEXT = 20


class SessionError(LookupError):
    """The session or the turn does not exist; ``field`` names the argument that is wrong."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(message)
        self.field = field


@dataclass(frozen=True)
class SessionWindow:
    session_id: str
    source: str
    cwd: str
    jsonl_path: str
    turn_count: int           # turns the session holds
    first_position: int       # 0-based position of turns[0] in the session
    turns: list[RecallRow]

    @property
    def more_before(self) -> bool:
        return self.first_position > 0

    @property
    def more_after(self) -> bool:
        return self.first_position + len(self.turns) < self.turn_count


_TURN_COLUMNS = ("t.turn_id, t.session_id, s.source, s.cwd, t.ts, t.user_text, t.reply_text, t.tool_names, "
                 "s.jsonl_path, d.line")


def _row(values: Sequence[object]) -> RecallRow:
    return RecallRow(
        turn_id=str(values[0]), session_id=str(values[1]), source=str(values[2]), cwd=str(values[3] or ""),
        ts=values[4] if isinstance(values[4], int) else 0, user_text=str(values[5] or ""),
        reply_text=str(values[6] or ""), tool_names=parse_tool_names(values[7]), hits=0,
        jsonl_path=str(values[8] or ""), line=values[9] if isinstance(values[9], int) else None,
    )


def read_window(conn: sqlite3.Connection, session_id: str, turn_id: str | None = None, before: int = 2,
                after: int = 2) -> SessionWindow:
    """The turns of ``session_id`` from ``before`` turns before ``turn_id`` to ``after`` turns after it;
    without ``turn_id``, the session's first ``after + 1`` turns. Raises :class:`SessionError`."""
    if not 0 <= before <= MAX_CONTEXT or not 0 <= after <= MAX_CONTEXT:
        raise ValueError(f"before and after must be within 0..{MAX_CONTEXT}")
    if conn.in_transaction:
        return _read_window(conn, session_id, turn_id, before, after)
    conn.execute("BEGIN")  # one snapshot: a sync writing meanwhile cannot shift the window
    try:
        return _read_window(conn, session_id, turn_id, before, after)
    finally:
        conn.execute("COMMIT")


def _read_window(conn: sqlite3.Connection, session_id: str, turn_id: str | None, before: int,
                 after: int) -> SessionWindow:
    session = conn.execute("SELECT source, cwd, jsonl_path FROM sessions WHERE session_id = ?",
                           (session_id,)).fetchone()
    if session is None:
        raise SessionError("sessionId", f"no session {session_id!r} in the store")
    order = [str(row[0]) for row in conn.execute(
        "SELECT turn_id FROM turns WHERE session_id = ? ORDER BY turn_index, ts, turn_id", (session_id,))]
    if turn_id is None:
        start, stop = 0, min(len(order), after + 1)
    else:
        try:
            position = order.index(turn_id)
        except ValueError:
            raise SessionError("turnId", f"no turn {turn_id!r} in session {session_id!r}") from None
        start, stop = max(0, position - before), min(len(order), position + after + 1)
    wanted = order[start:stop]
    rows: dict[str, RecallRow] = {}
    if wanted:
        marks = ",".join("?" * len(wanted))
        for values in conn.execute(
                f"SELECT {_TURN_COLUMNS} FROM turns t JOIN sessions s ON s.session_id = t.session_id "
                f"LEFT JOIN pimem_docs d ON d.turn_id = t.turn_id WHERE t.turn_id IN ({marks})", wanted):
            row = _row(values)
            rows[row.turn_id] = row
    return SessionWindow(
        session_id=session_id, source=str(session[0]), cwd=str(session[1] or ""), jsonl_path=str(session[2] or ""),
        turn_count=len(order), first_position=start, turns=[rows[turn] for turn in wanted if turn in rows])
