"""``pimem_meta``: pimem's key-value facts about the store (layout, index state, last sync)."""

from __future__ import annotations

import sqlite3
import uuid

# The identity of the store's content: a random id written when the store is created and whenever its
# index is rebuilt. A process that keeps what it read from the store (pimem.recall.dense) checks it on
# each use: a store restored from another file, or created anew in its place, has another id.
STORE_ID = "store_id"


def has_object(conn: sqlite3.Connection, name: str, kind: str = "table") -> bool:
    """Whether the store holds a table (or index, ``kind``) of this name: a reader of a store whose layout
    predates it must do without."""
    return conn.execute("SELECT 1 FROM sqlite_master WHERE type = ? AND name = ?", (kind, name)).fetchone() is not None


def get_meta(conn: sqlite3.Connection, key: str) -> str | None:
    row = conn.execute("SELECT value FROM pimem_meta WHERE key = ?", (key,)).fetchone()
    return None if row is None else str(row[0])


def set_meta(conn: sqlite3.Connection, key: str, value: str) -> None:
    conn.execute(
        "INSERT INTO pimem_meta(key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value",
        (key, value),
    )


def new_store_id(conn: sqlite3.Connection) -> None:
    """Give the store's content a new identity (in the caller's write transaction)."""
    set_meta(conn, STORE_ID, uuid.uuid4().hex)
