"""Sessions: the list of a folder's sessions, newest first (``pimem/sessions``, ``pimem sessions``),
and one session's turns, in order, around a turn: what an agent (the MCP tool ``read_session``) or a
sessions view and a rendered conversation (``pimem/session``) read to see what led to a recalled
turn and what came after it, with the files each turn's tool calls touched.

A session's order is ``turn_index``, then time, then turn id (``turn_index`` is the display order the
importers and the extension write; ties only occur in stores written by old extension versions).
Rows carry the same fields as recall's rows (:class:`pimem.recall.RecallRow`), with ``hits`` 0.
"""

from __future__ import annotations

import contextlib
import sqlite3
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field, replace

from pimem.paths import in_folder
from pimem.recall import RecallRow
from pimem.store import parse_tool_names
from pimem.store.text import holds_undecodable, shown_text, tolerating
from pimem.store.touches import touches_of_turns
from pimem.textutil import quoted

# Turns in one request, each side (the MCP tool validates this bound too; see agent_tools).
MAX_CONTEXT = 20
# The same for an editor's view of a session (pimem/session), which pages through long sessions.
MAX_VIEW_CONTEXT = 200
DEFAULT_VIEW_CONTEXT = 50
# The sessions list (pimem/sessions): a page of at most MAX_SESSIONS.
MAX_SESSIONS = 500
DEFAULT_SESSIONS = 200
PROMPT_CUT_CHARS = 300           # a session's first prompt, as a list shows it


def cut_prompt(text: str) -> tuple[str, bool]:
    """A prompt as a list shows it: at most PROMPT_CUT_CHARS characters, and whether it was cut."""
    return (text[:PROMPT_CUT_CHARS], True) if len(text) > PROMPT_CUT_CHARS else (text, False)



@dataclass(frozen=True)
class SessionSummary:
    session_id: str
    source: str
    cwd: str
    jsonl_path: str
    started_at: int
    last_ts: int
    turn_count: int
    first_prompt: str



@dataclass(frozen=True)
class SessionsPage:
    sessions: list[SessionSummary]
    total: int                # every session that matches, not only this page



def list_sessions(conn: sqlite3.Connection, folders: Sequence[str] | None = None,
                  sources: Sequence[str] | None = None, limit: int = DEFAULT_SESSIONS, offset: int = 0) -> SessionsPage:
    """The sessions holding at least one turn whose cwd is one of ``folders`` or below (normalised
    folders; None: all), of ``sources`` (None: all), newest turn first (then session id), a page of
    ``limit`` from ``offset``. One snapshot: a sync writing meanwhile cannot shift the page."""
    if not 1 <= limit <= MAX_SESSIONS or offset < 0:
        raise ValueError(f"limit must be within 1..{MAX_SESSIONS} and offset at least 0")
    with read_snapshot(conn):
        # text that is not valid UTF-8 (another program wrote it): such a session is left out, such a
        # first prompt shown empty (pimem.store.text)
        return tolerating(conn, lambda: _list_sessions(conn, folders, sources, limit, offset))


def _list_sessions(conn: sqlite3.Connection, folders: Sequence[str] | None, sources: Sequence[str] | None,
                   limit: int, offset: int) -> SessionsPage:
    where, args = "", list(sources or ())
    if sources:
        where = f"WHERE s.source IN ({','.join('?' * len(sources))})"
    found = [row for row in conn.execute(
        "SELECT s.session_id, s.source, s.cwd, s.jsonl_path, s.started_at, MAX(t.ts), COUNT(*) "
        f"FROM sessions s JOIN turns t ON t.session_id = s.session_id {where} GROUP BY s.session_id", args)
        if not holds_undecodable(row)
        and (folders is None or any(in_folder(str(row[2] or ""), folder) for folder in folders))]
    found.sort(key=lambda row: (-(row[5] or 0), str(row[0])))
    page = found[offset:offset + limit]
    sessions = []
    for session_id, source, cwd, jsonl_path, started_at, last_ts, count in page:
        first = conn.execute("SELECT user_text FROM turns WHERE session_id = ? ORDER BY turn_index, ts, turn_id "
                             "LIMIT 1", (session_id,)).fetchone()
        sessions.append(SessionSummary(
            str(session_id), str(source), str(cwd or ""), str(jsonl_path or ""),
            started_at if isinstance(started_at, int) else 0, last_ts if isinstance(last_ts, int) else 0,
            int(count), shown_text(first[0]) if first else ""))
    return SessionsPage(sessions, len(found))


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
    started_at: int = 0
    files: dict[str, list[tuple[str, str]]] = field(default_factory=dict)   # turn id -> (path, action)


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


@contextlib.contextmanager
def read_snapshot(conn: sqlite3.Connection) -> Iterator[None]:
    """One read snapshot (a sync writing meanwhile cannot shift what is read), unless the caller has one."""
    if conn.in_transaction:
        yield
        return
    conn.execute("BEGIN")
    try:
        yield
    finally:
        conn.execute("COMMIT")


def read_window(conn: sqlite3.Connection, session_id: str, turn_id: str | None = None, before: int = 2,
                after: int = 2, *, max_context: int = MAX_CONTEXT, files: bool = False) -> SessionWindow:
    """The turns of ``session_id`` from ``before`` turns before ``turn_id`` to ``after`` turns after it;
    without ``turn_id``, the session's first ``after + 1`` turns; ``files``: with what each turn's
    tool calls touched. Raises :class:`SessionError`."""
    if not 0 <= before <= max_context or not 0 <= after <= max_context:
        raise ValueError(f"before and after must be within 0..{max_context}")
    with read_snapshot(conn):
        # a turn whose text is not valid UTF-8 (another program wrote it) is left out (pimem.store.text)
        window = tolerating(conn, lambda: _read_window(conn, session_id, turn_id, before, after))
        if files:
            window = replace(window, files=touches_of_turns(conn, [row.turn_id for row in window.turns]))
        return window


def _read_window(conn: sqlite3.Connection, session_id: str, turn_id: str | None, before: int,
                 after: int) -> SessionWindow:
    session = conn.execute("SELECT source, cwd, jsonl_path, started_at FROM sessions WHERE session_id = ?",
                           (session_id,)).fetchone()
    if session is None:
        raise SessionError("sessionId", f"no session {quoted(session_id)} in the store")
    order = [str(row[0]) for row in conn.execute(
        "SELECT turn_id FROM turns WHERE session_id = ? ORDER BY turn_index, ts, turn_id", (session_id,))]
    if turn_id is None:
        start, stop = 0, min(len(order), after + 1)
    else:
        try:
            position = order.index(turn_id)
        except ValueError:
            raise SessionError("turnId", f"no turn {quoted(turn_id)} in session {quoted(session_id)}") from None
        start, stop = max(0, position - before), min(len(order), position + after + 1)
    wanted = order[start:stop]
    rows: dict[str, RecallRow] = {}
    if wanted:
        marks = ",".join("?" * len(wanted))
        for values in conn.execute(
                f"SELECT {_TURN_COLUMNS} FROM turns t JOIN sessions s ON s.session_id = t.session_id "
                f"LEFT JOIN pimem_docs d ON d.turn_id = t.turn_id WHERE t.turn_id IN ({marks})", wanted):
            if holds_undecodable(values):
                continue
            row = _row(values)
            rows[row.turn_id] = row
    return SessionWindow(
        session_id=session_id, source=str(session[0]), cwd=str(session[1] or ""), jsonl_path=str(session[2] or ""),
        turn_count=len(order), first_position=start, turns=[rows[turn] for turn in wanted if turn in rows],
        started_at=session[3] if isinstance(session[3], int) else 0)
