"""``pimem_touches``: which files each turn's tool calls read, wrote, edited or deleted.

pimem's own table (never the extension's): one row per (absolute path, turn, action), written by the
sync in the same transaction as the turn rows (pimem.sync.ingest). Keyed by path first, so the
conversations that touched one file are one index range; a second index by turn serves a session's
turns and the re-parse of a turn (its rows are replaced, not added to).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Sequence

from pimem.store.batches import chunks, placeholders

TOUCHES_SCHEMA = """
CREATE TABLE IF NOT EXISTS pimem_touches (
  path    TEXT NOT NULL,
  turn_id TEXT NOT NULL,
  action  TEXT NOT NULL,
  PRIMARY KEY (path, turn_id, action)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS pimem_touches_by_turn ON pimem_touches (turn_id);
"""

# (absolute path, turn id, action)
TouchRow = tuple[str, str, str]


def put_touches(conn: sqlite3.Connection, rows: Iterable[TouchRow]) -> None:
    conn.executemany("INSERT OR IGNORE INTO pimem_touches (path, turn_id, action) VALUES (?, ?, ?)", rows)


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
