"""Local stores for the share tests, written the way the sync engine writes them (turn rows, docs,
index postings and their log), so that the push's incremental path sees what it sees in use."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from pimem import index
from pimem.store import SessionRow, connect, encode_tool_names, transaction, upsert_session


@dataclass(frozen=True)
class Turn:
    turn_id: str
    session: str
    cwd: str
    user: str
    reply: str
    ts: int = 1_750_000_000_000
    source: str = "pi"
    tools: tuple[str, ...] = ("bash",)


def write(db: Path | sqlite3.Connection, turns: Iterable[Turn], *, build: bool = True) -> None:
    conn = connect(db) if isinstance(db, Path) else db
    try:
        fts = index.fts_enabled(conn)
        with transaction(conn):
            for number, turn in enumerate(turns):
                upsert_session(conn, SessionRow(turn.session, turn.source, turn.cwd, 0, None, f"/x/{turn.session}"))
                conn.execute(
                    "INSERT INTO turns (turn_id, session_id, turn_index, ts, user_text, reply_text, tool_names, "
                    "user_message_id) VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT(turn_id) DO UPDATE SET "
                    "user_text = excluded.user_text, reply_text = excluded.reply_text",
                    (turn.turn_id, turn.session, number, turn.ts, turn.user, turn.reply,
                     encode_tool_names(list(turn.tools)), turn.turn_id))
                index.put(conn, turn.turn_id, turn.ts, turn.user, turn.reply, number + 1, None, fts=fts)
        if build:
            index.build_pending(conn)
    finally:
        if isinstance(db, Path):
            conn.close()


def many(count: int, *, cwd: str = "/work/proj", prefix: str = "t", per_session: int = 20,
         text: str = "fix the flamingo cache") -> list[Turn]:
    return [Turn(f"{prefix}{n:07d}", f"{prefix}-s{n // per_session}", cwd, f"{text} {n}",
                 f"the reply about {text} number {n}", 1_750_000_000_000 + n * 1000) for n in range(count)]
