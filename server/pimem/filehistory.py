"""Memory of each file: the conversations whose tool calls read, wrote, edited or deleted one file
(``pimem/fileHistory``, ``pimem file-history``), from ``pimem_touches`` (pimem.store.touches).

A lookup is one range of the table's primary key (the path), aggregated per session in SQL, then the
rows of the sessions shown: its cost follows how often the file was touched, not the size of the
store (``bench/file_history.py``).
"""

from __future__ import annotations

import os
import posixpath
import sqlite3
from dataclasses import dataclass

from pimem.sessions import read_snapshot
from pimem.store.batches import chunks, placeholders
from pimem.store.text import shown_text, tolerating
from pimem.store.touches import PathSession, sessions_touching

MAX_SESSIONS = 200
DEFAULT_SESSIONS = 50
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
    actions: list[str]           # in the order read, write, edit, delete
    turns: int                   # touching turns
    last_ts: int
    turn_id: str                 # the newest touching turn
    prompt: str = ""             # its user text



@dataclass(frozen=True)
class FileHistory:
    path: str
    total: int                   # distinct sessions that touched the file
    edited: int                  # of them, those whose calls wrote, edited or deleted it
    sessions: list[FileSession]  # newest touching turn first, at most the limit asked for



def _read(conn: sqlite3.Connection, path: str, limit: int,
          ) -> tuple[list[PathSession], dict[str, tuple[str, str, str]], dict[str, str]]:
    """The touching sessions, the shown ones' rows and prompts. Text that is not valid UTF-8 (another
    program wrote it) is shown empty (pimem.store.text)."""
    found = sessions_touching(conn, path)
    found.sort(key=lambda item: (-item[2], item[0]))
    page = found[:limit]
    info: dict[str, tuple[str, str, str]] = {}
    prompts: dict[str, str] = {}
    for batch in chunks([item[0] for item in page]):
        for session_id, source, cwd, jsonl_path in conn.execute(
                f"SELECT session_id, source, cwd, jsonl_path FROM sessions WHERE session_id IN "
                f"({placeholders(len(batch))})", batch):
            info[shown_text(session_id)] = (shown_text(source), shown_text(cwd), shown_text(jsonl_path))
    for batch in chunks([item[3] for item in page]):
        for turn_id, user_text in conn.execute(
                f"SELECT turn_id, user_text FROM turns WHERE turn_id IN ({placeholders(len(batch))})", batch):
            prompts[shown_text(turn_id)] = shown_text(user_text)
    return found, info, prompts


def file_history(conn: sqlite3.Connection, path: str, limit: int = DEFAULT_SESSIONS) -> FileHistory:
    """The sessions whose tool calls touched ``path`` (normalised with :func:`normalize_file_path`):
    one range of ``pimem_touches``, then the shown sessions' rows and prompts (at most ``limit``)."""
    if not 1 <= limit <= MAX_SESSIONS:
        raise ValueError(f"limit must be within 1..{MAX_SESSIONS}")
    path = normalize_file_path(path)
    with read_snapshot(conn):
        found, info, prompts = tolerating(conn, lambda: _read(conn, path, limit))
    page = found[:limit]
    sessions = []
    for session_id, turns, last_ts, turn_id, actions, _changed in page:
        source, cwd, jsonl_path = info.get(session_id, (session_id.split(":", 1)[0], "", ""))
        sessions.append(FileSession(session_id, source, cwd, jsonl_path,
                                    [action for action in _ACTION_ORDER if action in actions], turns, last_ts, turn_id,
                                    prompts.get(turn_id, "")))
    return FileHistory(path, len(found), sum(1 for item in found if item[5]), sessions)
