"""``pimem_touches``: which files each turn's tool calls read, wrote, edited or deleted.

pimem's own table (never the extension's): one row per (absolute path, turn, action), written by the
sync in the same transaction as the turn rows (pimem.sync.ingest). Keyed by path first, and carrying
the turn's session and time, so the conversations that touched one file are one range of the table,
read without a join (pimem.filehistory); a second index by turn serves a session's turns and the
re-parse of a turn (its rows are replaced, not added to).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Sequence

from pimem.store.batches import chunks, placeholders

TOUCHES_SCHEMA = """
CREATE TABLE IF NOT EXISTS pimem_touches (
  path       TEXT NOT NULL,
  turn_id    TEXT NOT NULL,
  action     TEXT NOT NULL,     -- read, write, edit, delete
  session_id TEXT NOT NULL,     -- the turn's (a copy: the file history reads no other table)
  ts         INTEGER NOT NULL,  -- the turn's time (rewritten with the turn when it is parsed again)
  PRIMARY KEY (path, turn_id, action)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS pimem_touches_by_turn ON pimem_touches (turn_id);
"""

# (absolute path, turn id, action, session id, the turn's ts)
TouchRow = tuple[str, str, str, str, int]


def put_touches(conn: sqlite3.Connection, rows: Iterable[TouchRow]) -> None:
    conn.executemany("INSERT OR IGNORE INTO pimem_touches (path, turn_id, action, session_id, ts) "
                     "VALUES (?, ?, ?, ?, ?)", rows)


def clear_touches(conn: sqlite3.Connection, turn_ids: Sequence[str]) -> None:
    """Forget what these turns touched (before a turn parsed again from its start is written)."""
    conn.executemany("DELETE FROM pimem_touches WHERE turn_id = ?", [(turn_id,) for turn_id in turn_ids])


def touches_of_turns(conn: sqlite3.Connection, turn_ids: Sequence[str]) -> dict[str, list[tuple[str, str]]]:
    """For each turn that touched files: its (path, action) pairs, by path then action."""
    found: dict[str, list[tuple[str, str]]] = {}
    for batch in chunks(list(turn_ids)):
        for turn_id, path, action in conn.execute(
                f"SELECT turn_id, path, action FROM pimem_touches WHERE turn_id IN ({placeholders(len(batch))}) "
                "ORDER BY turn_id, path, action", batch):
            found.setdefault(str(turn_id), []).append((str(path), str(action)))
    return found


# A session's touches of one path: (session id, touching turns, newest ts, the turn at that ts,
# its actions comma-separated, whether any changed the file).
PathSession = tuple[str, int, int, str, str, bool]


def sessions_touching(conn: sqlite3.Connection, path: str) -> list[PathSession]:
    """Per session, what its turns did to ``path``: one range of the primary key, no join. (With a
    single MAX aggregate, SQLite takes the bare ``turn_id`` from the row holding the maximum.)"""
    return [(str(session_id), int(turns), int(ts), str(turn_id), str(actions), bool(changed))
            for session_id, turns, ts, turn_id, actions, changed in conn.execute(
                "SELECT session_id, COUNT(DISTINCT turn_id), MAX(ts), turn_id, group_concat(DISTINCT action), "
                "SUM(action != 'read') > 0 FROM pimem_touches WHERE path = ? GROUP BY session_id", (path,))]
