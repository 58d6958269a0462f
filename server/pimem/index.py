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

Writing is two-step. The sync writes a turn and its ``pimem_docs`` row and marks the doc pending
(``pimem_pending``), in the same transaction; :func:`build_pending` then writes the postings of pending
docs in large batches sorted by key (FTS5 is several times faster that way than turn by turn, and a
first import stores every turn before it spends time on the index). Recall scans pending docs exactly,
so a turn is found as soon as its row is committed.

The index is append-only: a turn whose text changed (its reply grew) is simply indexed again. Its old
postings stay (FTS5 keeps both under one rowid when there is no per-row size table, ``columnsize=0``):
they can only add candidates, which recall verifies against the current text, never hide a turn. The
old text is never needed, so nothing that changes a row behind pimem's back can corrupt the index.
Such leftovers are counted (``index_garbage``) and the index is rebuilt when they pile up. Rows the
extension inserts get a doc at the next sync (:func:`catch_up`); until then recall scans them too.

Every doc whose postings are written is appended to ``pimem_index_log`` in the same transaction (the
newest LOG_KEEP entries are kept): a process holding index lists in memory
(:mod:`pimem.recall.dense`) reads from it which docs changed since. Each such transaction ends its
entries with a *mark*, a random negative number in place of a doc key: the same mark at the same
position means the same history up to it, so a store rolled back to an older copy of itself and
written on again is told apart from the one the lists were read on (:func:`log_entry`).
"""

from __future__ import annotations

import contextlib
import secrets
import sqlite3
from collections.abc import Callable
from dataclasses import dataclass

from pimem import wordhelper, words
from pimem.store import get_meta, set_meta, transaction
from pimem.store.batches import chunks, placeholders
from pimem.store.meta import STORE_ID, new_store_id
from pimem.textutil import clamp_ms

KEY_SHIFT = 20
SLOT_MASK = (1 << KEY_SHIFT) - 1
DAY_MS = 86_400_000
SENTINEL = "\x01\x01"
FTS_TABLES = ("pimem_fts_user", "pimem_fts_reply")
BUILD_BATCH = 2000
BULK_MIN_PENDING = 20_000


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


@dataclass
class IndexItem:
    turn_id: str
    ts: int
    user_text: str
    reply_text: str
    line: int | None
    previous: tuple[int, str, str] | None   # (ts, user_text, reply_text) before this write, if the row existed


def _next_keys(conn: sqlite3.Connection, day: int, count: int) -> list[int]:
    """``count`` unused keys of ``day``: after the day's highest key, else any free slot."""
    low, high = day_bounds(day)
    top = conn.execute("SELECT max(doc_key) FROM pimem_docs WHERE doc_key BETWEEN ? AND ?", (low, high)).fetchone()[0]
    start = low if top is None else int(top) + 1
    if start + count - 1 <= high:
        return list(range(start, start + count))
    used = {row[0] for row in conn.execute("SELECT doc_key FROM pimem_docs WHERE doc_key BETWEEN ? AND ?",
                                           (low, high))}
    free = [key for key in range(low, high + 1) if key not in used][:count]
    if len(free) < count:
        raise RuntimeError("recall index: no free key left for this day")
    return free


def put_many(conn: sqlite3.Connection, items: list[IndexItem], *, fts: bool) -> None:
    """Give each written turn its doc and mark it pending (postings come from :func:`build_pending`).
    Runs inside the caller's transaction, right after the turn rows were written. ``previous`` of an
    item only serves to recognise an unchanged turn."""
    known: dict[str, tuple[int, int | None, bool]] = {}
    ids = [item.turn_id for item in items]
    for batch in chunks(ids):
        for turn_id, key, line, pending in conn.execute(
            "SELECT d.turn_id, d.doc_key, d.line, p.doc_key IS NOT NULL FROM pimem_docs d "
            f"LEFT JOIN pimem_pending p ON p.doc_key = d.doc_key WHERE d.turn_id IN ({placeholders(len(batch))})", batch
        ):
            known[turn_id] = (int(key), line, bool(pending))
    fresh: list[IndexItem] = []
    garbage = 0
    for item in items:
        if item.turn_id not in known:
            fresh.append(item)
            continue
        key, line, pending = known[item.turn_id]
        previous = item.previous
        if previous is not None and previous == (item.ts, item.user_text, item.reply_text):
            if item.line is not None and item.line != line:
                conn.execute("UPDATE pimem_docs SET line = ? WHERE doc_key = ?", (item.line, key))
            continue
        if not pending and fts:
            garbage += 1  # its postings stay beside the new ones (harmless extra candidates)
        if previous is None or key_day(key) != day_of(item.ts):
            conn.execute("DELETE FROM pimem_pending WHERE doc_key = ?", (key,))
            conn.execute("DELETE FROM pimem_docs WHERE doc_key = ?", (key,))
            fresh.append(item)
            continue
        conn.execute("UPDATE pimem_docs SET line = COALESCE(?, line), ts = ? WHERE doc_key = ?",
                     (item.line, clamp_ms(item.ts), key))
        conn.execute("INSERT OR IGNORE INTO pimem_pending(doc_key) VALUES (?)", (key,))
    if garbage:
        _add_garbage(conn, garbage)
    if not fresh:
        return
    by_day: dict[int, list[IndexItem]] = {}
    for item in fresh:
        by_day.setdefault(day_of(item.ts), []).append(item)
    rows: list[tuple[int, str, int | None, int]] = []
    for day, day_items in by_day.items():
        for key, item in zip(_next_keys(conn, day, len(day_items)), day_items, strict=True):
            rows.append((key, item.turn_id, item.line, clamp_ms(item.ts)))
    # Another process may take the same keys between our max() and our insert (two pimem syncs at
    # once): a key that did not go in is allocated again, one at a time.
    conn.executemany("INSERT OR IGNORE INTO pimem_docs(doc_key, turn_id, line, ts) VALUES (?, ?, ?, ?)", rows)
    placed: dict[int, str] = {}
    keys = [row[0] for row in rows]
    for key_batch in chunks(keys):
        placed.update(conn.execute(
            f"SELECT doc_key, turn_id FROM pimem_docs WHERE doc_key IN ({placeholders(len(key_batch))})", key_batch))
    marked: list[tuple[int]] = []
    for key, turn_id, line, ts in rows:
        if placed.get(key) != turn_id:
            key = _next_keys(conn, day_of(ts), 1)[0]
            conn.execute("INSERT INTO pimem_docs(doc_key, turn_id, line, ts) VALUES (?, ?, ?, ?)",
                         (key, turn_id, line, ts))
        marked.append((key,))
    conn.executemany("INSERT OR IGNORE INTO pimem_pending(doc_key) VALUES (?)", marked)


def put(conn: sqlite3.Connection, turn_id: str, ts: int, user_text: str, reply_text: str, line: int | None,
        previous: tuple[int, str, str] | None, *, fts: bool) -> None:
    """:func:`put_many` for one turn."""
    put_many(conn, [IndexItem(turn_id, ts, user_text, reply_text, line, previous)], fts=fts)


def build_pending(conn: sqlite3.Connection, *, cancel: Callable[[], bool] = lambda: False,
                  progress: Callable[[int, int], None] | None = None) -> int:
    """Write the postings of every pending doc, in batches sorted by key (each its own short
    transaction). Returns how many docs were indexed; stops early when ``cancel()`` turns true.
    A large build has a batch's word texts made by a helper process while it writes the batch's
    trigram postings (:mod:`pimem.wordhelper`)."""
    fts = fts_enabled(conn)
    word_index = fts and words.words_enabled(conn)
    total = int(conn.execute("SELECT count(*) FROM pimem_pending").fetchone()[0])
    if fts and total >= BULK_MIN_PENDING and not in_bulk(conn):
        with transaction(conn):
            set_bulk(conn, True)
    with contextlib.ExitStack() as stack:
        helper = stack.enter_context(wordhelper.WordHelper()) if word_index and wordhelper.wanted(total) else None
        done = _build_batches(conn, cancel, progress, total, fts=fts, word_index=word_index, helper=helper)
    if word_index:
        _build_words_only(conn, cancel)
    if done:
        with transaction(conn):
            _trim_log(conn)
    if in_bulk(conn) and not conn.execute("SELECT 1 FROM pimem_pending LIMIT 1").fetchone():
        with transaction(conn):
            optimize(conn)
            set_bulk(conn, False)
    return done


def _build_batches(conn: sqlite3.Connection, cancel: Callable[[], bool], progress: Callable[[int, int], None] | None,
                   total: int, *, fts: bool, word_index: bool, helper: wordhelper.WordHelper | None) -> int:
    done = 0
    while not cancel():
        with transaction(conn):
            rows = conn.execute(
                "SELECT p.doc_key, t.user_text, t.reply_text, s.rowid FROM pimem_pending p "
                "LEFT JOIN pimem_docs d ON d.doc_key = p.doc_key LEFT JOIN turns t ON t.turn_id = d.turn_id "
                "LEFT JOIN sessions s ON s.session_id = t.session_id "
                f"ORDER BY p.doc_key LIMIT {BUILD_BATCH}").fetchall()
            if not rows:
                break
            live = [(key, user, reply) for key, user, reply, _ in rows if user is not None]
            made = None   # the batch's word texts, made by the helper while the trigram postings are written
            if word_index and helper is not None and live:
                made = helper.start([words.indexed(text or "") for _, user, reply in live for text in (user, reply)])
            if fts and live:
                conn.executemany("INSERT INTO pimem_fts_user(rowid, text) VALUES (?, ?)",
                                 [(key, index_text(user)) for key, user, _ in live])
                conn.executemany("INSERT INTO pimem_fts_reply(rowid, text) VALUES (?, ?)",
                                 [(key, index_text(reply or "")) for key, _, reply in live])
                conn.executemany("INSERT INTO pimem_index_log(doc_key) VALUES (?)", [(key,) for key, _, _ in live])
                conn.execute("INSERT INTO pimem_index_log(doc_key) VALUES (?)", (-1 - secrets.randbits(62),))
                if get_meta(conn, STORE_ID) is None:   # a store an older pimem created
                    new_store_id(conn)
            if word_index:
                words.write_docs(conn, [words.WordDoc(key, int(session or 0), user, reply or "")
                                        for key, user, reply, session in rows if user is not None],
                                 made=None if made is None else made())
                conn.execute(f"DELETE FROM pimem_words_pending WHERE doc_key IN ({placeholders(len(rows))})",
                             [row[0] for row in rows])
            conn.execute(f"DELETE FROM pimem_pending WHERE doc_key IN ({placeholders(len(rows))})",
                         [row[0] for row in rows])
        done += len(rows)
        if progress is not None:
            progress(done, total)
    return done


def _build_words_only(conn: sqlite3.Connection, cancel: Callable[[], bool]) -> int:
    """Write the word index of docs indexed before it existed (``pimem_words_pending``, filled by the
    migration to layout 6), in batches of their own; the trigram index of those docs is not touched."""
    done = 0
    while not cancel():
        with transaction(conn):
            rows = conn.execute(
                "SELECT p.doc_key, t.user_text, t.reply_text, s.rowid FROM pimem_words_pending p "
                "LEFT JOIN pimem_docs d ON d.doc_key = p.doc_key LEFT JOIN turns t ON t.turn_id = d.turn_id "
                "LEFT JOIN sessions s ON s.session_id = t.session_id "
                f"ORDER BY p.doc_key LIMIT {BUILD_BATCH}").fetchall()
            if not rows:
                break
            words.write_docs(conn, [words.WordDoc(key, int(session or 0), user, reply or "")
                                    for key, user, reply, session in rows if user is not None])
            conn.execute(f"DELETE FROM pimem_words_pending WHERE doc_key IN ({placeholders(len(rows))})",
                         [row[0] for row in rows])
        done += len(rows)
    return done


LOG_KEEP = 100_000   # the newest entries of pimem_index_log kept (older readers of it start afresh)


def log_position(conn: sqlite3.Connection) -> tuple[int, int]:
    """The oldest and newest sequence numbers in ``pimem_index_log`` ((0, 0) when empty)."""
    # Two statements: SQLite answers a lone min() or max() of the rowid from the b-tree's ends, but
    # scans the whole table for both in one SELECT (15 ms at 260k entries).
    low = conn.execute("SELECT min(seq) FROM pimem_index_log").fetchone()[0]
    high = conn.execute("SELECT max(seq) FROM pimem_index_log").fetchone()[0]
    return int(low or 0), int(high or 0)


def logged_since(conn: sqlite3.Connection, seq: int) -> list[int]:
    """The docs whose postings were written after ``seq`` (each once; marks left out)."""
    return [int(key) for (key,) in conn.execute(
        "SELECT DISTINCT doc_key FROM pimem_index_log WHERE seq > ? AND doc_key >= 0", (seq,))]


def log_entry(conn: sqlite3.Connection, seq: int) -> int | None:
    """The entry at ``seq`` (a doc key, or a write's random mark); None when there is none."""
    row = conn.execute("SELECT doc_key FROM pimem_index_log WHERE seq = ?", (seq,)).fetchone()
    return None if row is None else int(row[0])


def store_id(conn: sqlite3.Connection) -> str | None:
    """The identity of the store's content (:data:`pimem.store.meta.STORE_ID`)."""
    return get_meta(conn, STORE_ID)


def _trim_log(conn: sqlite3.Connection) -> None:
    newest = log_position(conn)[1]
    conn.execute("DELETE FROM pimem_index_log WHERE seq <= ?", (newest - LOG_KEEP,))


def _garbage(conn: sqlite3.Connection) -> int:
    """Docs whose old postings stay in the FTS tables (see the module docstring)."""
    return int(get_meta(conn, "index_garbage") or 0)


def _add_garbage(conn: sqlite3.Connection, count: int) -> None:
    set_meta(conn, "index_garbage", str(_garbage(conn) + count))


# Turn rows above the watermark without a doc: written behind pimem's back since its last sync.
_ORPHANS = "FROM turns t WHERE t.rowid > ? AND NOT EXISTS (SELECT 1 FROM pimem_docs d WHERE d.turn_id = t.turn_id)"


def pending_count(conn: sqlite3.Connection) -> int:
    return int(conn.execute("SELECT count(*) FROM pimem_pending").fetchone()[0])


def unindexed_count(conn: sqlite3.Connection) -> int:
    """Turns recall must scan because the index does not hold them yet: pending docs (a cancelled or
    running build) and rows written behind pimem's back since the last sync. 0 without an index."""
    if not fts_enabled(conn):
        return 0
    orphans = conn.execute(f"SELECT count(*) {_ORPHANS}", (watermark(conn),)).fetchone()[0]
    return pending_count(conn) + int(orphans)


def watermark(conn: sqlite3.Connection) -> int:
    value = get_meta(conn, "index_watermark")
    return int(value) if value else 0


def catch_up(conn: sqlite3.Connection, *, full: bool = False) -> int:
    """Give a doc to turn rows written behind pimem's back (by the Pi extension). In a transaction."""
    start = 0 if full else watermark(conn)
    rows = conn.execute(f"SELECT t.turn_id, t.ts, t.user_text, t.reply_text {_ORPHANS} ORDER BY t.rowid",
                        (start,)).fetchall()
    items = [IndexItem(turn_id, int(ts or 0), user or "", reply or "", None, None) for turn_id, ts, user, reply in rows]
    if items:
        put_many(conn, items, fts=fts_enabled(conn))
    _advance_watermark(conn)
    return len(items)


def _advance_watermark(conn: sqlite3.Connection) -> None:
    """Every turn row up to the newest one has a doc: recall need not look below it for orphans."""
    top = conn.execute("SELECT max(rowid) FROM turns").fetchone()[0]
    set_meta(conn, "index_watermark", str(int(top or 0)))


def reconcile(conn: sqlite3.Connection) -> int:
    """Full consistency pass (cheap when consistent): give a doc to every turn that lacks one, forget
    docs whose turn is gone, and rebuild the FTS tables when forgotten postings pile up. In a
    transaction; returns how many turns got a doc."""
    turns = conn.execute("SELECT count(*) FROM turns").fetchone()[0]
    docs = conn.execute("SELECT count(*) FROM pimem_docs").fetchone()[0]
    added = 0
    if docs != turns:
        orphans = conn.execute(
            "SELECT d.doc_key, p.doc_key IS NOT NULL FROM pimem_docs d LEFT JOIN pimem_pending p "
            "ON p.doc_key = d.doc_key WHERE NOT EXISTS (SELECT 1 FROM turns t WHERE t.turn_id = d.turn_id)"
        ).fetchall()
        if orphans:
            conn.executemany("DELETE FROM pimem_docs WHERE doc_key = ?", [(key,) for key, _ in orphans])
            conn.executemany("DELETE FROM pimem_pending WHERE doc_key = ?", [(key,) for key, _ in orphans])
            indexed = sum(1 for _, pending in orphans if not pending)
            _add_garbage(conn, indexed)
        added = catch_up(conn, full=True)
    else:
        # Consistent: still move the watermark, or every recall would scan the whole turns table for
        # rows without a doc.
        _advance_watermark(conn)
    garbage = _garbage(conn)
    if garbage and garbage * 10 > max(turns, 1) and fts_enabled(conn):
        rebuild(conn)
    return added


def rebuild(conn: sqlite3.Connection) -> None:
    """Drop every posting (and the leftovers of updated turns) and mark every doc pending; then
    :func:`build_pending` writes them anew."""
    for table in FTS_TABLES:
        conn.execute(f"INSERT INTO {table}({table}) VALUES ('delete-all')")
    if words.words_enabled(conn):
        words.delete_all(conn)
    conn.execute("INSERT OR IGNORE INTO pimem_pending(doc_key) SELECT doc_key FROM pimem_docs")
    set_meta(conn, "index_garbage", "0")
    set_meta(conn, "index_epoch", str(epoch(conn) + 1))
    new_store_id(conn)


def epoch(conn: sqlite3.Connection) -> int:
    """Raised by :func:`rebuild`, the only writer that removes postings: within one epoch the
    postings of a doc only grow (what kept index lists rely on, with ``pimem_index_log``)."""
    value = get_meta(conn, "index_epoch")
    return int(value) if value else 0


def set_bulk(conn: sqlite3.Connection, bulk: bool) -> None:
    """Large builds write faster with FTS5's incremental merging off (segments are merged once at the
    end by :func:`optimize`). Persistent: an interrupted build leaves it off until a build finishes."""
    if fts_enabled(conn):
        for table in _fts_tables(conn):
            conn.execute(f"INSERT INTO {table}({table}, rank) VALUES ('automerge', ?)", (0 if bulk else 4,))
            conn.execute(f"INSERT INTO {table}({table}, rank) VALUES ('hashsize', ?)", (32 << 20,))
    set_meta(conn, "index_bulk", "1" if bulk else "0")


def in_bulk(conn: sqlite3.Connection) -> bool:
    return get_meta(conn, "index_bulk") == "1"


def optimize(conn: sqlite3.Connection) -> None:
    """Merge the FTS segments after a large build (smaller file, faster queries)."""
    if fts_enabled(conn):
        for table in _fts_tables(conn):
            conn.execute(f"INSERT INTO {table}({table}) VALUES ('optimize')")


def _fts_tables(conn: sqlite3.Connection) -> tuple[str, ...]:
    """The FTS5 tables of the store: the trigram index's, and the word index's where the layout has it."""
    return FTS_TABLES + ((words.WORDS_TABLE,) if words.words_enabled(conn) else ())
