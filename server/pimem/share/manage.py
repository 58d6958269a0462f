"""``pimem share status``, ``allow`` and ``forget``: what this machine shares and what it holds back."""

from __future__ import annotations

import json
import os
import sqlite3
from dataclasses import dataclass
from pathlib import Path

import psycopg

from pimem.paths import in_folder, normalize_folder
from pimem.share.db import ShareError, connect, one_line, read_layout
from pimem.share.push import Scope, apply_forget
from pimem.share.state import ShareConfig, get_meta, open_state
from pimem.store import connect as store_connect

HELD_LISTED = 50


@dataclass(frozen=True)
class HeldTurn:
    turn_id: str
    session_id: str
    reasons: tuple[str, ...]
    ts: int


@dataclass(frozen=True)
class ShareStatus:
    config: ShareConfig | None
    reachable: bool | None       # None: not configured, so not tried
    error: str | None
    layout: int | None
    remote_rows: int | None      # this person's rows from this machine in the shared store
    in_scope: int
    pushed: int
    held: int
    held_turns: tuple[HeldTurn, ...]
    last_push: dict[str, object] | None

    @property
    def pending(self) -> int:
        return max(0, self.in_scope - self.pushed - self.held)

    def as_dict(self) -> dict[str, object]:
        config = self.config
        return {"configured": bool(config and config.configured),
                "machine": config.machine if config else None,
                "folders": list(config.folders) if config else [], "agents": list(config.sources) if config else [],
                "auto": bool(config and config.auto), "reachable": self.reachable, "error": self.error,
                "layout": self.layout, "remoteRows": self.remote_rows, "inScope": self.in_scope,
                "pushed": self.pushed, "pending": self.pending, "held": self.held,
                "heldTurns": [{"turnId": h.turn_id, "sessionId": h.session_id, "reasons": list(h.reasons),
                               "ts": h.ts} for h in self.held_turns],
                "lastPush": self.last_push}


def _count_in_scope(db_path: Path, scope: Scope) -> int:
    local = store_connect(db_path, create=False, for_writing=False)
    try:
        counts = local.execute("SELECT s.session_id, s.source, s.cwd, count(*) FROM turns t "
                               "JOIN sessions s ON s.session_id = t.session_id GROUP BY s.session_id").fetchall()
    finally:
        local.close()
    return sum(int(n) for sid, source, cwd, n in counts
               if scope.session_in(str(sid), str(source or ""), str(cwd or "")))


def share_status(db_path: Path, config: ShareConfig | None, *, probe: bool = True) -> ShareStatus:
    state = open_state(db_path)
    try:
        pushed = int(state.execute("SELECT count(*) FROM pushed").fetchone()[0])
        held_count = int(state.execute("SELECT count(*) FROM held").fetchone()[0])
        held = tuple(HeldTurn(str(t), str(s), tuple(str(r).split(",")), int(ts)) for t, s, r, ts in state.execute(
            "SELECT turn_id, session_id, reasons, ts FROM held ORDER BY ts DESC LIMIT ?", (HELD_LISTED,)))
        raw = get_meta(state, "last_push")
        last = json.loads(raw) if raw else None
        forgotten = state.execute("SELECT scope, value FROM forgotten").fetchall()
    finally:
        state.close()
    in_scope = _count_in_scope(db_path, Scope(config, forgotten)) if config and config.configured else 0
    reachable: bool | None = None
    error = None
    layout = remote = None
    if config and config.conninfo and probe:
        try:
            with connect(config.conninfo) as conn:
                layout = read_layout(conn).layout
                if layout:
                    row = conn.execute("SELECT count(*) FROM pimem.turns WHERE author = current_user AND machine = %s",
                                       (config.machine,)).fetchone()
                    remote = int(str(row[0])) if row else 0
            reachable = True
        except ShareError as exc:
            reachable, error = False, str(exc)
        except psycopg.Error as exc:
            reachable, error = True, one_line(exc)
    return ShareStatus(config, reachable, error, layout, remote, in_scope, pushed, held_count, held, last)


def allow(db_path: Path, value: str) -> tuple[str, int]:
    """Let a held turn, or every held turn of a session, go at the next push. Returns (scope, turns)."""
    state = open_state(db_path)
    try:
        turns = int(state.execute("SELECT count(*) FROM held WHERE turn_id = ?", (value,)).fetchone()[0])
        scope = "turn"
        if not turns:
            turns = int(state.execute("SELECT count(*) FROM held WHERE session_id = ?", (value,)).fetchone()[0])
            scope = "session"
        if not turns:
            raise ShareError(f"no held turn or session {value!r} (pimem share status lists them)")
        with state:
            state.execute("INSERT OR IGNORE INTO allowed(scope, value) VALUES (?, ?)", (scope, value))
        return scope, turns
    finally:
        state.close()


@dataclass(frozen=True)
class ForgetResult:
    scope: str
    value: str
    remote_deleted: int | None     # None: the shared store was not reached (done at the next push)
    error: str | None


def forget_target(value: str) -> tuple[str, str]:
    """A folder (a path: has a separator, or starts with ~ or .) or a session id."""
    if os.sep in value or value.startswith(("~", ".")):
        return "folder", normalize_folder(value)
    return "session", value


def forget(db_path: Path, config: ShareConfig | None, value: str) -> ForgetResult:
    """Stop sharing a session or folder and delete the person's copies of it from the shared store
    (every machine's); kept from coming back by a tombstone here and in the shared store."""
    scope, value = forget_target(value)
    state = open_state(db_path)
    try:
        with state:
            state.execute("INSERT INTO forgotten(scope, value, remote_done) VALUES (?, ?, 0) "
                          "ON CONFLICT(scope, value) DO UPDATE SET remote_done = 0", (scope, value))
            _drop_local(db_path, state, scope, value)
        if not config or not config.conninfo:
            return ForgetResult(scope, value, None, "sharing is not configured")
        try:
            with connect(config.conninfo) as conn:
                deleted = apply_forget(conn, scope, value)
                conn.commit()
        except ShareError as exc:
            return ForgetResult(scope, value, None, str(exc))
        except psycopg.Error as exc:
            return ForgetResult(scope, value, None, one_line(exc))
        with state:
            state.execute("UPDATE forgotten SET remote_done = 1 WHERE scope = ? AND value = ?", (scope, value))
        return ForgetResult(scope, value, deleted, None)
    finally:
        state.close()


def _drop_local(db_path: Path, state: sqlite3.Connection, scope: str, value: str) -> None:
    """The forgotten turns are no longer pushed or held (their fingerprints go)."""
    local = store_connect(db_path, create=False, for_writing=False)
    try:
        if scope == "session":
            sessions = [value]
        else:
            sessions = [str(sid) for sid, cwd in local.execute("SELECT session_id, cwd FROM sessions")
                        if in_folder(str(cwd or ""), value)]
        for sid in sessions:
            state.execute("DELETE FROM pushed WHERE turn_id IN (SELECT value FROM json_each(?))",
                          (json.dumps([str(t) for (t,) in local.execute(
                              "SELECT turn_id FROM turns WHERE session_id = ?", (sid,))]),))
            state.execute("DELETE FROM held WHERE session_id = ?", (sid,))
    finally:
        local.close()
