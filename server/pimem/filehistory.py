"""Memory of each file: the conversations whose tool calls read, wrote, edited or deleted one file
(``pimem/fileHistory``, ``pimem file-history``), from ``pimem_touches`` (pimem.store.touches).

A lookup is one range of the table's primary key (the path) joined to the touching turns: its cost
follows how often the file was touched, not the size of the store (``bench/file_history.py``).
"""

from __future__ import annotations

import os
import posixpath
import sqlite3
from dataclasses import dataclass, field

from pimem.recall import MAX_PATH_CHARS, MAX_TURN_ID_CHARS
from pimem.sessions import cut_prompt, read_snapshot, resume_command

MAX_SESSIONS = 200
DEFAULT_SESSIONS = 50
# The actions that change a file (what "N past conversations edited this file" counts).
CHANGING = frozenset({"write", "edit", "delete"})
_ACTION_ORDER = ("read", "write", "edit", "delete")


def normalize_file_path(path: str) -> str:
    """A path as touches are stored: absolute, normalised (``..`` resolved, no trailing separator),
    symlinks not resolved. ValueError when it is not absolute."""
    if not os.path.isabs(path):
        raise ValueError("path must be absolute")
    return posixpath.normpath(path) if path.startswith("/") else os.path.normpath(path)


@dataclass
class FileSession:
    session_id: str
    source: str
    cwd: str
    jsonl_path: str
    actions: set[str] = field(default_factory=set)
    turns: set[str] = field(default_factory=set)
    last_ts: int = 0
    turn_id: str = ""            # the newest touching turn
    prompt: str = ""             # its user text

    def to_dict(self) -> dict[str, object]:
        prompt, cut = cut_prompt(self.prompt)
        return {"sessionId": self.session_id[:MAX_TURN_ID_CHARS], "source": self.source,
                "cwd": self.cwd[:MAX_PATH_CHARS], "jsonlPath": self.jsonl_path[:MAX_PATH_CHARS],
                "actions": [action for action in _ACTION_ORDER if action in self.actions],
                "turns": len(self.turns), "lastTs": self.last_ts, "turnId": self.turn_id[:MAX_TURN_ID_CHARS],
                "prompt": prompt, "truncated": cut or len(self.turn_id) > MAX_TURN_ID_CHARS,
                "resumeCommand": resume_command(self.source, self.session_id, self.cwd, self.jsonl_path)}


@dataclass(frozen=True)
class FileHistory:
    path: str
    total: int                   # distinct sessions that touched the file
    edited: int                  # of them, those whose calls wrote, edited or deleted it
    sessions: list[FileSession]  # newest touching turn first, at most the limit asked for

    def to_dict(self) -> dict[str, object]:
        return {"path": self.path, "total": self.total, "edited": self.edited,
                "sessions": [session.to_dict() for session in self.sessions]}


def file_history(conn: sqlite3.Connection, path: str, limit: int = DEFAULT_SESSIONS) -> FileHistory:
    """The sessions whose tool calls touched ``path`` (normalised with :func:`normalize_file_path`)."""
    if not 1 <= limit <= MAX_SESSIONS:
        raise ValueError(f"limit must be within 1..{MAX_SESSIONS}")
    path = normalize_file_path(path)
    with read_snapshot(conn):
        sessions: dict[str, FileSession] = {}
        for session_id, source, cwd, jsonl_path, turn_id, ts, action in conn.execute(
                "SELECT t.session_id, s.source, s.cwd, s.jsonl_path, t.turn_id, t.ts, f.action "
                "FROM pimem_touches f JOIN turns t ON t.turn_id = f.turn_id "
                "JOIN sessions s ON s.session_id = t.session_id WHERE f.path = ?", (path,)):
            session = sessions.get(session_id)
            if session is None:
                session = sessions[session_id] = FileSession(str(session_id), str(source), str(cwd or ""),
                                                             str(jsonl_path or ""))
            session.actions.add(str(action))
            session.turns.add(str(turn_id))
            ts = ts if isinstance(ts, int) else 0
            if (ts, turn_id) > (session.last_ts, session.turn_id) or not session.turn_id:
                session.last_ts, session.turn_id = ts, str(turn_id)
        ordered = sorted(sessions.values(), key=lambda session: (-session.last_ts, session.session_id))
        page = ordered[:limit]
        for session in page:   # only the shown turns' prompts are read
            row = conn.execute("SELECT user_text FROM turns WHERE turn_id = ?", (session.turn_id,)).fetchone()
            session.prompt = str(row[0] or "") if row else ""
    return FileHistory(path, len(sessions), sum(1 for session in sessions.values() if session.actions & CHANGING),
                       page)
