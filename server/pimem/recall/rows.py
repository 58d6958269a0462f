"""A recall row: one stored turn as recall returns it, read from SQL in one way.

:data:`ROW_COLUMNS` is the column list every recall read selects (the scan, the index walk, the rows
not indexed yet, :func:`get_turn`), and :func:`make_row` turns one result row into a
:class:`RecallRow`.
"""

from __future__ import annotations

import os
import re
import shlex
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

    @property
    def sort_key(self) -> tuple[int, int, str]:
        return (-self.hits, -self.ts, self.turn_id)

    @property
    def copy_key(self) -> tuple[str, str, int]:
        return (self.user_text, self.reply_text, self.ts)

    @property
    def resume_command(self) -> str | None:
        """The shell command that resumes this session in its own agent, or None.

        Everything in it comes from a transcript, so nothing may become an option or a second
        command: the session id must have its agent's real shape (a UUID for Claude Code and Codex;
        for Pi, Pi's own session-id rule, though only the file path is passed), paths must be
        absolute (an argument starting with ``/`` is never an option) and free of control
        characters, and ``cd`` gets ``--``. Anything else gets no command.
        """
        native = self.session_id.split(":", 1)[1] if ":" in self.session_id else ""
        if self.source == "pi":
            if not (_PI_SESSION_ID.fullmatch(native) and _safe_absolute(self.jsonl_path)):
                return None
            return f"pi --session {shlex.quote(self.jsonl_path)}"
        if self.source == "claude":
            if not _UUID.fullmatch(native):
                return None
            resume = f"claude --resume {native}"
            if not self.cwd:
                return resume
            return f"cd -- {shlex.quote(self.cwd)} && {resume}" if _safe_absolute(self.cwd) else None
        if self.source == "codex":
            return f"codex resume {native}" if _UUID.fullmatch(native) else None
        return None

    @property
    def truncated(self) -> bool:
        """Whether :meth:`to_dict` cuts a field of this row."""
        return (len(self.user_text) > TEXT_CUT_CHARS or len(self.reply_text) > TEXT_CUT_CHARS
                or len(self.cwd) > MAX_PATH_CHARS or len(self.jsonl_path) > MAX_PATH_CHARS
                or len(self.turn_id) > MAX_TURN_ID_CHARS or len(self.session_id) > MAX_TURN_ID_CHARS
                or len(self.tool_names) > TOOL_NAMES_CUT
                or any(len(name) > TOOL_NAME_CUT_CHARS for name in self.tool_names))

    def to_dict(self, *, full: bool = False) -> dict[str, object]:
        """The row as the protocol sends it. In a recall answer (RecallRow) every long field is cut to
        its limit (a prefix; ``truncated`` is then true). ``full`` is the whole turn (TurnRow, for
        pimem/turn and ``pimem show``): nothing cut, no ``hits`` and no ``truncated``."""
        result: dict[str, object] = {
            "turnId": self.turn_id, "sessionId": self.session_id, "source": self.source, "cwd": self.cwd,
            "ts": self.ts, "userText": self.user_text, "replyText": self.reply_text, "toolNames": self.tool_names,
            "hits": self.hits, "jsonlPath": self.jsonl_path, "line": self.line,
            "resumeCommand": self.resume_command, "matched": self.matched, "truncated": False,
        }
        if full:
            del result["hits"], result["truncated"], result["matched"]
            return result
        if not self.truncated:
            return result
        result.update(
            turnId=self.turn_id[:MAX_TURN_ID_CHARS], sessionId=self.session_id[:MAX_TURN_ID_CHARS],
            cwd=self.cwd[:MAX_PATH_CHARS], jsonlPath=self.jsonl_path[:MAX_PATH_CHARS],
            userText=self.user_text[:TEXT_CUT_CHARS], replyText=self.reply_text[:TEXT_CUT_CHARS],
            toolNames=[name[:TOOL_NAME_CUT_CHARS] for name in self.tool_names[:TOOL_NAMES_CUT]],
            truncated=True)
        return result


# Claude Code session ids are UUIDs (v4), Codex thread ids UUIDs (v7 now, v4 in older rollouts).
_UUID = re.compile(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}")
# Pi's assertValidSessionId (UUIDv7 ids, and the custom ids `--session-id` accepts).
_PI_SESSION_ID = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?")
_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def _safe_absolute(path: str) -> bool:
    """A path a resume command may hold: absolute, no longer than a real path can be, and without
    control characters (a newline would end the command where a terminal shows one line)."""
    return bool(path) and len(path) <= MAX_PATH_CHARS and os.path.isabs(path) and _CONTROL.search(path) is None


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
