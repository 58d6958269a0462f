"""The recall index: exact candidates for literal, case-insensitive substring search.

Two contentless FTS5 tables with the ``trigram`` tokenizer index ``lower(user_text)`` and
``lower(reply_text)`` (Python's ``str.lower``, the same function the recall semantics use). Every
indexed text gets two sentinel characters appended, so that every real character starts at least one
trigram: a 1- or 2-character entity is then answered through the trigram vocabulary (all trigrams that
start with it), a longer one by the AND of its trigrams. Both give a superset of the true matches,
which recall then verifies exactly against the stored text; the index never decides a result.

The index rowid (``pimem_docs.doc_key``) is ``(day << 20) | n``: the UTC day of the turn, then a dense
sequence number within that day. Iterating an index list in rowid order is iterating days newest first
(within a day recall sorts by the exact ``pimem_docs.ts``), which lets recall stop once the top results
are certain. Dense keys matter: FTS5 delta-encodes rowids, and sparse millisecond keys made the index
four times larger and its inserts slower.

Invariants: the index is written in the same transaction as the turn row; only pimem updates turn
rows (the Pi extension only inserts), so the text to remove from the contentless index on an update is
the row's previous text. Rows the extension inserts are indexed by :func:`catch_up` at the next write,
and recall scans any not yet indexed (see pimem/recall.py).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable
from dataclasses import dataclass

from pimem.store import get_meta, set_meta
from pimem.textutil import clamp_ms

KEY_SHIFT = 20
SLOT_MASK = (1 << KEY_SHIFT) - 1
DAY_MS = 86_400_000
SENTINEL = "\x01\x01"
FTS_TABLES = ("pimem_fts_user", "pimem_fts_reply")


def index_text(text: str) -> str:
    return text.lower() + SENTINEL


def fts_enabled(conn: sqlite3.Connection) -> bool:
    return get_meta(conn, "index") == "trigram"


def day_of(ts: int) -> int:
    return clamp_ms(ts) // DAY_MS


def key_day(doc_key: int) -> int:
    return doc_key >> KEY_SHIFT


def day_bounds(day: int) -> tuple[int, int]:
    """The first and last doc key of a day."""
    return day << KEY_SHIFT, (day << KEY_SHIFT) | SLOT_MASK


def _allocate_key(conn: sqlite3.Connection, ts: int) -> int:
    low, high = day_bounds(day_of(ts))
    top = conn.execute("SELECT max(doc_key) FROM pimem_docs WHERE doc_key BETWEEN ? AND ?", (low, high)).fetchone()[0]
    if top is None:
        return low
    if top < high:
        return int(top) + 1
    # A million turns in one day: take any free slot of that day.
    used = {row[0] for row in conn.execute("SELECT doc_key FROM pimem_docs WHERE doc_key BETWEEN ? AND ?",
                                           (low, high))}
    for candidate in range(low, high + 1):
        if candidate not in used:
            return candidate
    raise RuntimeError("recall index: no free key left for this day")


def _fts_insert(conn: sqlite3.Connection, key: int, user_text: str, reply_text: str) -> None:
    conn.execute("INSERT INTO pimem_fts_user(rowid, text) VALUES (?, ?)", (key, index_text(user_text)))
    conn.execute("INSERT INTO pimem_fts_reply(rowid, text) VALUES (?, ?)", (key, index_text(reply_text)))


def _fts_delete(conn: sqlite3.Connection, key: int, user_text: str, reply_text: str) -> None:
    conn.execute("INSERT INTO pimem_fts_user(pimem_fts_user, rowid, text) VALUES ('delete', ?, ?)",
                 (key, index_text(user_text)))
    conn.execute("INSERT INTO pimem_fts_reply(pimem_fts_reply, rowid, text) VALUES ('delete', ?, ?)",
                 (key, index_text(reply_text)))


def put(conn: sqlite3.Connection, turn_id: str, ts: int, user_text: str, reply_text: str,
        line: int | None, previous: tuple[int, str, str] | None, *, fts: bool) -> None:
    """Index a turn, or re-index it after an update. ``previous`` = (ts, user_text, reply_text) of the
    row before this write (None when the row is new). Runs inside the caller's transaction."""
    row = conn.execute("SELECT doc_key FROM pimem_docs WHERE turn_id = ?", (turn_id,)).fetchone()
    if row is None:
        key = _allocate_key(conn, ts)
        conn.execute("INSERT INTO pimem_docs(doc_key, turn_id, line, ts) VALUES (?, ?, ?, ?)",
                     (key, turn_id, line, clamp_ms(ts)))
        if fts:
            _fts_insert(conn, key, user_text, reply_text)
        return
    key = int(row[0])
    if previous is None:
        # Indexed once, but its row vanished and came back: the old postings cannot be removed
        # (their text is gone), so they become garbage under a forgotten key.
        conn.execute("DELETE FROM pimem_docs WHERE doc_key = ?", (key,))
        set_meta(conn, "index_garbage", str(int(get_meta(conn, "index_garbage") or 0) + 1))
        put(conn, turn_id, ts, user_text, reply_text, line, None, fts=fts)
        return
    old_ts, old_user, old_reply = previous
    if key_day(key) != day_of(ts):
        if fts:
            _fts_delete(conn, key, old_user, old_reply)
        conn.execute("DELETE FROM pimem_docs WHERE doc_key = ?", (key,))
        new_key = _allocate_key(conn, ts)
        conn.execute("INSERT INTO pimem_docs(doc_key, turn_id, line, ts) VALUES (?, ?, ?, ?)",
                     (new_key, turn_id, line, clamp_ms(ts)))
        if fts:
            _fts_insert(conn, new_key, user_text, reply_text)
        return
    if line is not None or old_ts != ts:
        conn.execute("UPDATE pimem_docs SET line = COALESCE(?, line), ts = ? WHERE doc_key = ?",
                     (line, clamp_ms(ts), key))
    if fts and (old_user, old_reply) != (user_text, reply_text):
        _fts_delete(conn, key, old_user, old_reply)
        _fts_insert(conn, key, user_text, reply_text)


@dataclass
class IndexItem:
    turn_id: str
    ts: int
    user_text: str
    reply_text: str
    line: int | None
    previous: tuple[int, str, str] | None   # (ts, user_text, reply_text) before this write, if the row existed


def put_many(conn: sqlite3.Connection, items: list[IndexItem], *, fts: bool) -> None:
    """:func:`put` for a batch, with set-at-a-time statements for the common case (new turns)."""
    known: dict[str, tuple[int, int | None]] = {}
    ids = [item.turn_id for item in items]
    for start in range(0, len(ids), 500):
        batch = ids[start:start + 500]
        for turn_id, key, line in conn.execute(
            f"SELECT turn_id, doc_key, line FROM pimem_docs WHERE turn_id IN ({','.join('?' * len(batch))})", batch
        ):
            known[turn_id] = (int(key), line)
    fresh = [item for item in items if item.turn_id not in known]
    for item in items:
        if item.turn_id not in known:
            continue
        key, line = known[item.turn_id]
        previous = item.previous
        unchanged = previous is not None and previous == (item.ts, item.user_text, item.reply_text)
        if unchanged:
            if item.line is not None and item.line != line:
                conn.execute("UPDATE pimem_docs SET line = ? WHERE doc_key = ?", (item.line, key))
            continue
        put(conn, item.turn_id, item.ts, item.user_text, item.reply_text, item.line, previous, fts=fts)
    if not fresh:
        return
    # Dense keys per day: the next free numbers after the day's highest key.
    keyed: list[tuple[int, IndexItem]] = []
    by_day: dict[int, list[IndexItem]] = {}
    for item in fresh:
        by_day.setdefault(day_of(item.ts), []).append(item)
    for day, day_items in by_day.items():
        low, high = day_bounds(day)
        top = conn.execute("SELECT max(doc_key) FROM pimem_docs WHERE doc_key BETWEEN ? AND ?",
                           (low, high)).fetchone()[0]
        next_key = low if top is None else int(top) + 1
        for item in day_items:
            if next_key > high:
                keyed.append((-1, item))  # the day is full: allocated one by one below
            else:
                keyed.append((next_key, item))
                next_key += 1
    conn.executemany("INSERT OR IGNORE INTO pimem_docs(doc_key, turn_id, line, ts) VALUES (?, ?, ?, ?)",
                     [(key, item.turn_id, item.line, clamp_ms(item.ts)) for key, item in keyed if key >= 0])
    placed: dict[int, str] = {}
    keys = [key for key, _ in keyed if key >= 0]
    for start in range(0, len(keys), 500):
        key_batch = keys[start:start + 500]
        placed.update(conn.execute(
            f"SELECT doc_key, turn_id FROM pimem_docs WHERE doc_key IN ({','.join('?' * len(key_batch))})", key_batch))
    # FTS5 appends to its pending lists when rowids arrive in increasing order; out of order it flushes.
    inserted = sorted(((key, item) for key, item in keyed if placed.get(key) == item.turn_id), key=lambda pair: pair[0])
    if fts:
        conn.executemany("INSERT INTO pimem_fts_user(rowid, text) VALUES (?, ?)",
                         [(key, index_text(item.user_text)) for key, item in inserted])
        conn.executemany("INSERT INTO pimem_fts_reply(rowid, text) VALUES (?, ?)",
                         [(key, index_text(item.reply_text)) for key, item in inserted])
    for key, item in keyed:
        if placed.get(key) != item.turn_id:  # taken meanwhile by another process, or the day was full
            put(conn, item.turn_id, item.ts, item.user_text, item.reply_text, item.line, None, fts=fts)


def _index_rows(conn: sqlite3.Connection, rows: Iterable[tuple[int, str, int, str, str]], fts: bool) -> int:
    count = 0
    for _rowid, turn_id, ts, user_text, reply_text in rows:
        put(conn, turn_id, int(ts or 0), user_text or "", reply_text or "", None, None, fts=fts)
        count += 1
    return count


def watermark(conn: sqlite3.Connection) -> int:
    value = get_meta(conn, "index_watermark")
    return int(value) if value else 0


def catch_up(conn: sqlite3.Connection, *, full: bool = False) -> int:
    """Index turn rows written behind pimem's back (by the Pi extension). Inside a transaction."""
    fts = fts_enabled(conn)
    start = 0 if full else watermark(conn)
    rows = conn.execute(
        "SELECT t.rowid, t.turn_id, t.ts, t.user_text, t.reply_text FROM turns t "
        "WHERE t.rowid > ? AND NOT EXISTS (SELECT 1 FROM pimem_docs d WHERE d.turn_id = t.turn_id) "
        "ORDER BY t.rowid",
        (start,),
    ).fetchall()
    added = _index_rows(conn, rows, fts)
    top = conn.execute("SELECT max(rowid) FROM turns").fetchone()[0]
    set_meta(conn, "index_watermark", str(int(top or 0)))
    return added


def reconcile(conn: sqlite3.Connection) -> int:
    """Full consistency pass (cheap when consistent): index every unindexed turn, forget documents
    whose turn is gone, and rebuild the FTS tables when forgotten postings pile up. In a transaction."""
    turns = conn.execute("SELECT count(*) FROM turns").fetchone()[0]
    docs = conn.execute("SELECT count(*) FROM pimem_docs").fetchone()[0]
    added = 0
    if docs != turns:
        orphans = conn.execute(
            "SELECT doc_key FROM pimem_docs d WHERE NOT EXISTS (SELECT 1 FROM turns t WHERE t.turn_id = d.turn_id)"
        ).fetchall()
        if orphans:
            conn.executemany("DELETE FROM pimem_docs WHERE doc_key = ?", orphans)
            garbage = int(get_meta(conn, "index_garbage") or 0) + len(orphans)
            set_meta(conn, "index_garbage", str(garbage))
        added = catch_up(conn, full=True)
    garbage = int(get_meta(conn, "index_garbage") or 0)
    if garbage and garbage * 10 > max(turns, 1) and fts_enabled(conn):
        rebuild(conn)
    return added


def rebuild(conn: sqlite3.Connection) -> None:
    """Re-create the FTS postings from the turn rows (drops postings of forgotten documents)."""
    for table in FTS_TABLES:
        conn.execute(f"INSERT INTO {table}({table}) VALUES ('delete-all')")
    rows = conn.execute(
        "SELECT d.doc_key, t.user_text, t.reply_text FROM pimem_docs d JOIN turns t ON t.turn_id = d.turn_id"
    )
    for key, user_text, reply_text in rows:
        _fts_insert(conn, int(key), user_text or "", reply_text or "")
    set_meta(conn, "index_garbage", "0")


BULK_MIN_FILES = 200
BULK_MIN_BYTES = 64 * 1024 * 1024


def set_bulk(conn: sqlite3.Connection, bulk: bool) -> None:
    """Large imports write faster with FTS5's incremental merging off (segments are merged once at
    the end by :func:`optimize`). Persistent: a crash leaves it off until the next sync's end."""
    if fts_enabled(conn):
        for table in FTS_TABLES:
            conn.execute(f"INSERT INTO {table}({table}, rank) VALUES ('automerge', ?)", (0 if bulk else 4,))
            conn.execute(f"INSERT INTO {table}({table}, rank) VALUES ('hashsize', ?)", (32 << 20,))
    set_meta(conn, "index_bulk", "1" if bulk else "0")


def in_bulk(conn: sqlite3.Connection) -> bool:
    return get_meta(conn, "index_bulk") == "1"


def optimize(conn: sqlite3.Connection) -> None:
    """Merge the FTS segments after a large import (smaller file, faster queries)."""
    if fts_enabled(conn):
        for table in FTS_TABLES:
            conn.execute(f"INSERT INTO {table}({table}) VALUES ('optimize')")
