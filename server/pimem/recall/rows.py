"""A recall row: one stored turn as recall returns it, read from SQL in one way.

:data:`ROW_COLUMNS` is the column list every recall read selects (the scan, the index walk, the rows
not indexed yet, :func:`get_turn`), and :func:`make_row` turns one result row into a
:class:`RecallRow`.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from dataclasses import dataclass, field

from pimem.recall.query import (
    MAX_PATH_CHARS,
    MAX_TURN_ID_CHARS,
    TEXT_CUT_CHARS,
    TOOL_NAME_CUT_CHARS,
    TOOL_NAMES_CUT,
    check_turn_id,
)
from pimem.store import parse_tool_names


@dataclass
class RecallRow:
    turn_id: str
    session_id: str
    source: str
    cwd: str
    ts: int
    user_text: str
    reply_text: str
    tool_names: list[str]
    hits: int
    jsonl_path: str
    line: int | None
    matched: list[str] = field(default_factory=list)   # the query's entities found in this turn
    # A row from the shared store (pimem.share.recall): who pushed it, from which machine (turn_id is
    # then that machine's turn id); None for a row of the local store.
    author: str | None = None
    machine: str | None = None

    @property
    def sort_key(self) -> tuple[int, int, str]:
        return (-self.hits, -self.ts, self.turn_id)

    @property
    def copy_key(self) -> tuple[str, str, int]:
        return (self.user_text, self.reply_text, self.ts)

    @property
    def truncated(self) -> bool:
        """Whether a recall answer cuts a field of this row (to the answer limits of
        :mod:`pimem.recall.query`; :func:`pimem.wire.recall_row`)."""
        return (len(self.user_text) > TEXT_CUT_CHARS or len(self.reply_text) > TEXT_CUT_CHARS
                or len(self.cwd) > MAX_PATH_CHARS or len(self.jsonl_path) > MAX_PATH_CHARS
                or len(self.turn_id) > MAX_TURN_ID_CHARS or len(self.session_id) > MAX_TURN_ID_CHARS
                or len(self.tool_names) > TOOL_NAMES_CUT
                or len(self.author or "") > MAX_TURN_ID_CHARS or len(self.machine or "") > MAX_TURN_ID_CHARS
                or any(len(name) > TOOL_NAME_CUT_CHARS for name in self.tool_names))


ROW_COLUMNS = ("t.turn_id, t.session_id, s.source, s.cwd, t.ts, t.user_text, t.reply_text, t.tool_names, "
                "s.jsonl_path, d.line")


def make_row(values: Sequence[object], hits: int) -> RecallRow:
    return RecallRow(
        turn_id=str(values[0]), session_id=str(values[1]), source=str(values[2]), cwd=str(values[3] or ""),
        ts=_int(values[4]), user_text=str(values[5] or ""), reply_text=str(values[6] or ""),
        tool_names=parse_tool_names(values[7]), hits=hits, jsonl_path=str(values[8] or ""),
        line=values[9] if isinstance(values[9], int) else None,
    )


def _int(value: object) -> int:
    try:
        return int(value)  # type: ignore[call-overload,no-any-return]
    except (TypeError, ValueError):
        return 0


def get_turn(conn: sqlite3.Connection, turn_id: str) -> RecallRow | None:
    """One stored turn, whole (``hits`` is 0), or None when the store has no such turn."""
    values = conn.execute(
        f"SELECT {ROW_COLUMNS} FROM turns t JOIN sessions s ON s.session_id = t.session_id "
        "LEFT JOIN pimem_docs d ON d.turn_id = t.turn_id WHERE t.turn_id = ?", (check_turn_id(turn_id),)).fetchone()
    return make_row(values, 0) if values is not None else None
