"""A store with rows another program wrote in text that is not valid UTF-8 (issue 20.9), and what
recall must answer on it: what it answers on the same store without those turns."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

from pimem import wire
from pimem.recall import make_query, recall_scan

QUERIES = [["flamingo"], ["the", "a"], ["the", "file", "test"], ["error", "is", "to", "and"]]


def corrupt(db: Path, clean: Path) -> list[str]:
    """Two turns (the best answers to the first two queries) get a byte that is not UTF-8 before their
    user text and reply, as another program could write them; ``clean`` is the store without them.
    Returns their turn ids."""
    conn = sqlite3.connect(db)
    try:
        victims = [recall_scan(conn, make_query(entities, 1))[0].turn_id for entities in QUERIES[:2]]
        conn.backup(target := sqlite3.connect(clean))
        target.executemany("DELETE FROM turns WHERE turn_id = ?", [(turn_id,) for turn_id in victims])
        target.commit()
        target.close()
        conn.execute("UPDATE turns SET user_text = CAST(x'ff41' AS TEXT) || user_text WHERE turn_id = ?", (victims[0],))
        conn.execute("UPDATE turns SET reply_text = reply_text || CAST(x'c328' AS TEXT) WHERE turn_id = ?",
                     (victims[1],))
        conn.commit()
    finally:
        conn.close()
    return victims


def expected(clean: Path, entities: list[str], limit: int) -> list[dict[str, Any]]:
    conn = sqlite3.connect(clean)
    try:
        return [wire.recall_row(row) for row in recall_scan(conn, make_query(entities, limit))]
    finally:
        conn.close()


def _valid(data: bytes) -> bool:
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def quoted_texts(db: Path, clean: Path, victims: list[str], *, invalid_only: bool = False) -> list[str]:
    """Pieces of the victims' stored text that no message may show (those no other turn holds);
    ``invalid_only``: of the values that are not valid UTF-8 only."""
    conn = sqlite3.connect(db)
    conn.text_factory = bytes
    try:
        texts = [bytes(value).decode("utf-8", "replace").strip("\ufffdA(")[:40] for turn_id in victims
                 for value in conn.execute("SELECT user_text, reply_text FROM turns WHERE turn_id = ?",
                                           (turn_id,)).fetchone()
                 if not invalid_only or not _valid(bytes(value))]
    finally:
        conn.close()
    others = sqlite3.connect(clean)
    try:
        return [text for text in texts if text and others.execute(
            "SELECT 1 FROM turns WHERE instr(user_text, ?) OR instr(reply_text, ?)", (text, text)).fetchone() is None]
    finally:
        others.close()
