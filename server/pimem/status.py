"""What the store holds (``pimem status`` and ``pimem/status``)."""

from __future__ import annotations

import json
import sqlite3

from pimem.index import unindexed_count
from pimem.store import count_turns_by_source, get_meta, upgrade_notice


def store_status(conn: sqlite3.Connection, db_path: str) -> dict[str, object]:
    turns = count_turns_by_source(conn)
    sessions = int(conn.execute("SELECT count(*) FROM sessions").fetchone()[0])
    last_sync: object = None
    raw = get_meta(conn, "last_sync")
    if raw:
        try:
            last_sync = json.loads(raw)
        except ValueError:
            last_sync = None
    return {
        "dbPath": db_path,
        "sessions": sessions,
        "turns": turns,
        "totalTurns": sum(turns.values()),
        "turnsToIndex": unindexed_count(conn),
        "lastSync": last_sync,
        "upgradeRequired": upgrade_notice(conn),
    }
