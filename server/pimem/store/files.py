"""What pimem knows of each transcript file: ``pimem_files`` and ``pimem_pi_nodes``.

``pimem_files`` holds, per file, its stat when it was last parsed, how far (bytes and lines), a
fingerprint of the bytes before that point, and the parser's state to continue from. Every commit of
a file bumps its ``revision``: a sync writes a file's row only at the revision it read
(:func:`claim_row`, :func:`save_state`), so two pimem processes never apply the same bytes twice
(:class:`ConcurrentSync`). ``pimem_pi_nodes`` keeps, for a Pi session tree, every entry's nearest
user-message ancestor, so that an appended reply finds its turn without re-reading the file.

These functions run inside the caller's transaction; they never commit.
"""

from __future__ import annotations

import functools
import json
import sqlite3
from collections.abc import Sequence
from dataclasses import dataclass
from operator import itemgetter
from typing import Any

from pimem.textutil import is_storable

Stamp = tuple[str, int, int, int, int, int]
"""A known file's row: (path, size, mtime_ns, inode, parsed_bytes, file_id): its stat when it was last parsed
and how far. Plain rows, not objects: a no-change sync reads one per known file."""

_STAMPS_SQL = "SELECT jsonl_path, size, mtime_ns, inode, parsed_bytes, file_id FROM pimem_files"


class ConcurrentSync(Exception):
    """Another sync committed the same file meanwhile (two pimem processes at once)."""


@dataclass
class FileState:
    """A file's whole row, as read before parsing it again."""

    file_id: int
    size: int
    mtime_ns: int
    inode: int
    parsed_bytes: int
    parsed_lines: int
    fingerprint: str
    state_json: str | None
    revision: int = 0

    @functools.cached_property
    def state(self) -> dict[str, Any]:
        """The parser's saved state, decoded on first use: a no-change sync over 150k files never needs it."""
        try:
            value = json.loads(self.state_json or "{}")
        except ValueError:
            return {}
        return value if isinstance(value, dict) else {}


def load_stamps(conn: sqlite3.Connection) -> dict[str, Stamp]:
    """Every known file's :data:`Stamp`, by path."""
    rows = conn.execute(_STAMPS_SQL).fetchall()
    return dict(zip(map(itemgetter(0), rows), rows, strict=True))   # built in C: a no-change sync reads every row


def load_stamps_for(conn: sqlite3.Connection, paths: list[str]) -> dict[str, Stamp]:
    """:func:`load_stamps` for a few files (a live update)."""
    stamps = {}
    for path in paths:
        row = conn.execute(f"{_STAMPS_SQL} WHERE jsonl_path = ?", (path,)).fetchone()
        if row is not None:
            stamps[path] = row
    return stamps


def load_state(conn: sqlite3.Connection, path: str) -> FileState | None:
    """The file's saved row (None for a file never committed)."""
    row = conn.execute(
        "SELECT file_id, size, mtime_ns, inode, parsed_bytes, parsed_lines, fingerprint, state, revision "
        "FROM pimem_files WHERE jsonl_path = ?", (path,)).fetchone()
    return None if row is None else FileState(*row)


def claim_row(conn: sqlite3.Connection, path: str, source: str, revision: int) -> int:
    """The file's id, creating an empty row for a new file; ConcurrentSync when another sync committed
    the file after this one read it at ``revision``."""
    conn.execute(
        "INSERT INTO pimem_files (jsonl_path, source, size, mtime_ns, inode, parsed_bytes, parsed_lines, "
        "fingerprint, state) VALUES (?, ?, 0, 0, 0, 0, 0, '', '{}') ON CONFLICT(jsonl_path) DO NOTHING",
        (path, source),
    )
    row = conn.execute("SELECT file_id, revision FROM pimem_files WHERE jsonl_path = ?", (path,)).fetchone()
    if int(row[1]) != revision:
        raise ConcurrentSync()
    return int(row[0])


@dataclass(frozen=True)
class ParsePoint:
    """Where a parse of a file stopped, with what is needed to continue there."""

    source: str
    size: int                   # the file's stat as this parse saw it
    mtime_ns: int
    inode: int
    parsed_bytes: int
    parsed_lines: int
    fingerprint: str
    session_id: str | None
    state: dict[str, Any]       # the parser's state (JSON)


def _state_json(state: dict[str, Any]) -> str:
    """A parser's state as the store holds it: JSON, its text raw but for what UTF-8 cannot hold (a lone
    surrogate a transcript's JSON gave, kept by the parser as an id): then all escaped, so that the state
    read back is the state saved (an append continues as a full parse would)."""
    text = json.dumps(state, ensure_ascii=False)
    return text if is_storable(text) else json.dumps(state)


def save_state(conn: sqlite3.Connection, file_id: int | None, revision: int, point: ParsePoint) -> None:
    """Record a new parse point and bump the revision; ConcurrentSync (and nothing written) when the row
    is no longer at ``revision``: another sync committed this file since it was read, and this one's
    rows would apply twice."""
    updated = conn.execute(
        "UPDATE pimem_files SET source = ?, size = ?, mtime_ns = ?, inode = ?, parsed_bytes = ?, "
        "parsed_lines = ?, fingerprint = ?, session_id = ?, state = ?, revision = revision + 1 "
        "WHERE file_id = ? AND revision = ?",
        (point.source, point.size, point.mtime_ns, point.inode, point.parsed_bytes, point.parsed_lines,
         point.fingerprint, point.session_id, _state_json(point.state), file_id, revision),
    ).rowcount
    if updated != 1:
        raise ConcurrentSync()


def forget_files(conn: sqlite3.Connection, file_ids: Sequence[int]) -> None:
    """Drop what pimem knew of files that are gone (their turns stay)."""
    conn.executemany("DELETE FROM pimem_pi_nodes WHERE file_id = ?", [(file_id,) for file_id in file_ids])
    conn.executemany("DELETE FROM pimem_files WHERE file_id = ?", [(file_id,) for file_id in file_ids])


def node_anchor(conn: sqlite3.Connection, file_id: int | None, entry_id: str) -> tuple[bool, str | None]:
    """(found, anchor) of a Pi entry parsed earlier (importers.base.NodeLookup)."""
    row = conn.execute("SELECT anchor FROM pimem_pi_nodes WHERE file_id = ? AND entry_id = ?",
                       (file_id, entry_id)).fetchone()
    return (False, None) if row is None else (True, row[0])


def put_nodes(conn: sqlite3.Connection, file_id: int | None, nodes: list[tuple[str, str | None]]) -> None:
    conn.executemany("INSERT OR REPLACE INTO pimem_pi_nodes (file_id, entry_id, anchor) VALUES (?, ?, ?)",
                     [(file_id, entry_id, anchor) for entry_id, anchor in nodes])


def clear_nodes(conn: sqlite3.Connection, file_id: int | None) -> None:
    """A fresh parse of a file replaces what an earlier parse of it remembered."""
    conn.execute("DELETE FROM pimem_pi_nodes WHERE file_id = ?", (file_id,))


PARSE_AGAIN_SIZE = -1   # the size parse_again stamps: no file has it


def parse_again(conn: sqlite3.Connection, sources: Sequence[str]) -> int:
    """Make the next sync parse every known file of these sources again, from its start: the stamp can
    no longer match (size -1) and the saved point cannot be resumed from (no fingerprint; a database of
    many sessions, whose saved state says which sessions were read, is read whole for that size:
    pimem.sync.ingest). Returns how many files."""
    if not sources:
        return 0
    cursor = conn.execute(f"UPDATE pimem_files SET size = ?, fingerprint = '' WHERE source IN "
                          f"({','.join('?' * len(sources))})", [PARSE_AGAIN_SIZE, *sources])
    return cursor.rowcount
