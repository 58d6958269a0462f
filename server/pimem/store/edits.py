"""``pimem_edit_*`` (layouts 7 to 9): the lines each edit tool call wrote and replaced, per file (issue 23).

Written by the sync in the same transaction as the turn rows (pimem.sync.ingest), from the importers'
edit calls turned into lines by pimem.editspans; read by pimem.lineblame. Three tables:

* ``pimem_edit_files``: one id per absolute path (as File History resolves it), so the line rows
  repeat a small integer, not the path;
* ``pimem_edit_spans``: one row per call and file (per block of a multi-edit call), with the turn and
  its time (the order of calls), the tool and the call id; ``whole`` when the call wrote the whole
  file (the session is the turn's: read from ``turns`` for the few lines shown);
* ``pimem_edit_lines``: one row per added line (``pos`` ≥ 0, its position among the call's non-blank
  new lines) and per removed line (``pos`` < 0), keyed by (file, normalized line hash): the lines of
  the current text are looked up by hash, never by reading a file's whole history.

Layout 8 adds ``pimem_edit_lines_by_hash``, the added lines by hash across files: whether a line was
also written in another file (an idiom, attributed only in a block: pimem.lineblame rule 3) is two
seeks per line, whatever the store's size.

Layout 9 adds ``pimem_edit_context``: the lines a call kept next to each block of lines it added
(pimem.editspans ``context_of``: at most ``CONTEXT_LINES`` on each side of a block), keyed as the line
rows, so the lines of the current text that were a call's neighbours are found by hash too (pimem.lineblame
rule 2: they place a line between them). Never attributed: they were in the file before the call.

Rows of a turn parsed again from its start are replaced, as its touches are.
A span marked ``amends`` (a call's result read after the call was stored) replaces that call's
whole-file span, else its span of the same lines; one that replaces nothing is not stored (a result
of no call, of another turn or file, or saying other texts than its call).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import NamedTuple

from pimem.store.batches import chunks, placeholders
from pimem.store.meta import has_object

EDITS_SCHEMA = """
CREATE TABLE IF NOT EXISTS pimem_edit_files (
  path_id INTEGER PRIMARY KEY,
  path    TEXT NOT NULL UNIQUE
);
CREATE TABLE IF NOT EXISTS pimem_edit_spans (
  span_id    INTEGER PRIMARY KEY,   -- in write order: orders the calls of one turn
  path_id    INTEGER NOT NULL,
  turn_id    TEXT NOT NULL,
  ts         INTEGER NOT NULL,      -- the turn's time
  tool       TEXT NOT NULL,
  call_id    TEXT,
  whole      INTEGER NOT NULL       -- 1: the call wrote the whole file (what was there before is gone)
);
CREATE INDEX IF NOT EXISTS pimem_edit_spans_by_turn ON pimem_edit_spans (turn_id);
CREATE INDEX IF NOT EXISTS pimem_edit_spans_whole ON pimem_edit_spans (path_id) WHERE whole = 1;
CREATE TABLE IF NOT EXISTS pimem_edit_lines (
  path_id INTEGER NOT NULL,
  hash    INTEGER NOT NULL,         -- pimem.editspans.line_hash of the normalized line
  span_id INTEGER NOT NULL,
  pos     INTEGER NOT NULL,         -- >= 0: an added line's position (pimem.editspans.position); < 0: removed
  PRIMARY KEY (path_id, hash, span_id, pos)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS pimem_edit_lines_by_span ON pimem_edit_lines (span_id);
"""

# layout 9: the lines a call kept next to the lines it added (pos: index among the call's non-blank new lines)
EDITS_CONTEXT_SCHEMA = """
CREATE TABLE IF NOT EXISTS pimem_edit_context (
  path_id INTEGER NOT NULL,
  hash    INTEGER NOT NULL,
  span_id INTEGER NOT NULL,
  pos     INTEGER NOT NULL,
  PRIMARY KEY (path_id, hash, span_id, pos)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS pimem_edit_context_by_span ON pimem_edit_context (span_id);
"""

# layout 8: the added lines by hash, across files (pimem.lineblame: a line some call also wrote in another
# file is an idiom, which alone names no write)
EDITS_BY_HASH_SCHEMA = """
CREATE INDEX IF NOT EXISTS pimem_edit_lines_by_hash ON pimem_edit_lines (hash, path_id) WHERE pos >= 0;
"""


@dataclass(frozen=True)
class SpanRow:
    """One call's lines in one file, ready to store."""

    path: str
    turn_id: str
    ts: int
    tool: str
    call_id: str | None
    whole: bool
    added: list[tuple[int, int]]     # (position, hash)
    removed: list[int]               # hashes
    amends: bool = False             # replaces the span of the same turn, call and file (an Edit's: any)
    context: Sequence[tuple[int, int]] = ()   # (index, hash): lines the call kept next to its added ones


def _path_ids(conn: sqlite3.Connection, paths: Iterable[str]) -> dict[str, int]:
    wanted = sorted(set(paths))
    conn.executemany("INSERT OR IGNORE INTO pimem_edit_files (path) VALUES (?)", [(path,) for path in wanted])
    found: dict[str, int] = {}
    for batch in chunks(wanted):
        for path_id, path in conn.execute(
                f"SELECT path_id, path FROM pimem_edit_files WHERE path IN ({placeholders(len(batch))})", batch):
            found[str(path)] = int(path_id)
    return found


def put_spans(conn: sqlite3.Connection, spans: Sequence[SpanRow]) -> None:
    if not spans:
        return
    ids = _path_ids(conn, (span.path for span in spans))
    for span in spans:
        path_id = ids[span.path]
        rows = [(digest, pos) for pos, digest in span.added]
        rows.extend((digest, -1 - k) for k, digest in enumerate(span.removed))
        if span.amends:
            # the same call stored by an earlier parse, before its result said what the file held (a
            # Write's lines before it, an Edit's lines next to the text it replaced): its whole-file span,
            # else its span of the same lines (the result read again). A result that amends no stored
            # call (of another turn, file or call, or saying other texts than the call) stores nothing.
            stale = [span_id for span_id, whole in conn.execute(
                "SELECT span_id, whole FROM pimem_edit_spans WHERE path_id = ? AND turn_id = ? AND call_id = ? "
                "AND tool = ?", (path_id, span.turn_id, span.call_id, span.tool)) if whole]
            if not stale:
                lines = set(rows)
                stale = [span_id for span_id, in conn.execute(
                    "SELECT span_id FROM pimem_edit_spans WHERE path_id = ? AND turn_id = ? AND call_id = ? "
                    "AND tool = ? AND whole = 0", (path_id, span.turn_id, span.call_id, span.tool))
                    if lines == set(conn.execute("SELECT hash, pos FROM pimem_edit_lines WHERE span_id = ?",
                                                 (span_id,)))][:1]
            if not stale:
                continue
            for span_id in stale:
                conn.execute("DELETE FROM pimem_edit_lines WHERE span_id = ?", (span_id,))
                conn.execute("DELETE FROM pimem_edit_context WHERE span_id = ?", (span_id,))
                conn.execute("DELETE FROM pimem_edit_spans WHERE span_id = ?", (span_id,))
        cursor = conn.execute("INSERT INTO pimem_edit_spans (path_id, turn_id, ts, tool, call_id, whole) "
                              "VALUES (?, ?, ?, ?, ?, ?)", (path_id, span.turn_id, span.ts, span.tool, span.call_id,
                                                            int(span.whole)))
        span_id = cursor.lastrowid
        conn.executemany("INSERT OR IGNORE INTO pimem_edit_lines (path_id, hash, span_id, pos) VALUES (?, ?, ?, ?)",
                         [(path_id, digest, span_id, pos) for digest, pos in rows])
        if span.context:
            conn.executemany("INSERT OR IGNORE INTO pimem_edit_context (path_id, hash, span_id, pos) "
                             "VALUES (?, ?, ?, ?)", [(path_id, digest, span_id, pos) for pos, digest in span.context])


def clear_spans(conn: sqlite3.Connection, turn_ids: Sequence[str]) -> None:
    """Forget the spans of these turns (before a turn parsed again from its start is written)."""
    for batch in chunks(list(turn_ids)):
        span_ids = [row[0] for row in conn.execute(
            f"SELECT span_id FROM pimem_edit_spans WHERE turn_id IN ({placeholders(len(batch))})", batch)]
        if not span_ids:
            continue
        for ids in chunks(span_ids):
            marks = placeholders(len(ids))
            conn.execute(f"DELETE FROM pimem_edit_lines WHERE span_id IN ({marks})", ids)
            conn.execute(f"DELETE FROM pimem_edit_context WHERE span_id IN ({marks})", ids)
            conn.execute(f"DELETE FROM pimem_edit_spans WHERE span_id IN ({marks})", ids)


class SpanInfo(NamedTuple):
    """A span's row (a tuple: a whole file's attribution reads thousands)."""

    span_id: int
    turn_id: str
    ts: int
    tool: str
    call_id: str | None
    whole: bool


def path_id(conn: sqlite3.Connection, path: str) -> int | None:
    row = conn.execute("SELECT path_id FROM pimem_edit_files WHERE path = ?", (path,)).fetchone()
    return None if row is None else int(row[0])


def line_rows(conn: sqlite3.Connection, file_id: int, hashes: Sequence[int],
              span_ids: Sequence[int] | None = None) -> list[tuple[int, int, int]]:
    """(hash, span id, pos) of the rows of these line hashes in one file (only these spans' if given)."""
    found: list[tuple[int, int, int]] = []
    for batch in chunks(list(hashes)):
        sql = (f"SELECT hash, span_id, pos FROM pimem_edit_lines WHERE path_id = ? "
               f"AND hash IN ({placeholders(len(batch))})")
        if span_ids is None:
            found.extend(conn.execute(sql, [file_id, *batch]))
            continue
        for spans in chunks(list(span_ids)):
            found.extend(conn.execute(sql + f" AND span_id IN ({placeholders(len(spans))})",
                                      [file_id, *batch, *spans]))
    return found


def span_lines(conn: sqlite3.Connection, span_id: int) -> dict[int, int]:
    """One call's added lines in its file: index among its non-blank new lines -> line hash (one seek of
    ``pimem_edit_lines_by_span``; at most a call's bounded lines, pimem.editspans.MAX_CALL_LINES)."""
    return {int(pos) >> 1: int(digest) for digest, pos in conn.execute(
        "SELECT hash, pos FROM pimem_edit_lines WHERE span_id = ? AND pos >= 0", (span_id,))}


def more_rows_than(conn: sqlite3.Connection, file_id: int, digest: int, limit: int) -> bool:
    """Whether one file has more than ``limit`` rows of one line hash (at most ``limit`` + 1 steps of the
    primary key, however many there are)."""
    return conn.execute("SELECT 1 FROM pimem_edit_lines WHERE path_id = ? AND hash = ? LIMIT 1 OFFSET ?",
                        (file_id, digest, limit)).fetchone() is not None


def context_rows(conn: sqlite3.Connection, file_id: int, hashes: Sequence[int] | None) -> list[tuple[int, int, int]]:
    """(hash, span id, index) of the context lines (layout 9) of these line hashes in one file (every one of
    the file's when None: one range of the primary key). A store whose layout predates the table (a reader
    of a store not migrated yet) has none."""
    if not has_object(conn, "pimem_edit_context"):
        return []
    if hashes is None:
        return list(conn.execute("SELECT hash, span_id, pos FROM pimem_edit_context WHERE path_id = ?", (file_id,)))
    found: list[tuple[int, int, int]] = []
    for batch in chunks(list(hashes)):
        found.extend(conn.execute(f"SELECT hash, span_id, pos FROM pimem_edit_context WHERE path_id = ? "
                                  f"AND hash IN ({placeholders(len(batch))})", [file_id, *batch]))
    return found


def file_rows(conn: sqlite3.Connection, file_id: int) -> list[tuple[int, int, int]]:
    """(hash, span id, pos) of every row of one file: one range of the primary key."""
    return list(conn.execute("SELECT hash, span_id, pos FROM pimem_edit_lines WHERE path_id = ?", (file_id,)))


def written_elsewhere(conn: sqlite3.Connection, file_id: int, hashes: Iterable[int]) -> set[int]:
    """The line hashes among ``hashes`` that some call added to a file other than ``file_id`` (two seeks
    of ``pimem_edit_lines_by_hash`` per hash). A store whose layout predates that index (a reader of a
    store not migrated yet) has none: the empty set, as before the rule."""
    if not has_object(conn, "pimem_edit_lines_by_hash", "index"):
        return set()
    found: set[int] = set()
    for batch in chunks(sorted(set(hashes))):
        values = ", ".join("(?)" for _ in batch)
        found.update(int(row[0]) for row in conn.execute(
            f"WITH wanted(h) AS (VALUES {values}) SELECT h FROM wanted WHERE "
            "EXISTS (SELECT 1 FROM pimem_edit_lines WHERE hash = h AND pos >= 0 AND path_id < ?) OR "
            "EXISTS (SELECT 1 FROM pimem_edit_lines WHERE hash = h AND pos >= 0 AND path_id > ?)",
            [*batch, file_id, file_id]))
    return found


def whole_spans(conn: sqlite3.Connection, file_id: int) -> list[tuple[int, int]]:
    """(ts, span id) of the calls that wrote the whole file."""
    return [(int(ts), int(span_id)) for span_id, ts in conn.execute(
        "SELECT span_id, ts FROM pimem_edit_spans WHERE path_id = ? AND whole = 1", (file_id,))]


def created_file(conn: sqlite3.Connection, path: str, file_id: int, span_id: int) -> bool:
    """Whether the whole-file write ``span_id`` (over content its transcript does not give) created the
    file at ``path``: no call of any agent touched the path before it. Read from the touches (one range
    of their primary key: every edit call touches its file) and, for the write's own turn, from its
    spans in call order; a read or delete in the same turn cannot be ordered against the write, so it
    counts as before (precision first)."""
    row = conn.execute("SELECT turn_id, ts FROM pimem_edit_spans WHERE span_id = ?", (span_id,)).fetchone()
    if row is None:
        return False
    turn_id, ts = str(row[0]), int(row[1])
    for other_turn, action in conn.execute(
            "SELECT turn_id, action FROM pimem_touches WHERE path = ? AND ts <= ?", (path, ts)):
        if other_turn != turn_id or action in ("read", "delete"):
            return False
    return conn.execute("SELECT 1 FROM pimem_edit_spans WHERE turn_id = ? AND path_id = ? AND span_id < ? LIMIT 1",
                        (turn_id, file_id, span_id)).fetchone() is None


def span_infos(conn: sqlite3.Connection, span_ids: Iterable[int]) -> dict[int, SpanInfo]:
    found: dict[int, SpanInfo] = {}
    for batch in chunks(sorted(set(span_ids))):
        for span_id, turn_id, ts, tool, call_id, whole in conn.execute(
                f"SELECT span_id, turn_id, ts, tool, call_id, whole FROM pimem_edit_spans "
                f"WHERE span_id IN ({placeholders(len(batch))})", batch):
            found[int(span_id)] = SpanInfo(int(span_id), str(turn_id), int(ts), str(tool),
                                           None if call_id is None else str(call_id), bool(whole))
    return found
