"""Incremental sync of the agents' transcripts into the store.

* A file whose size, mtime and inode are unchanged is only stat'ed.
* A file that grew (same inode, and the bytes before the last parse point unchanged, checked on two
  small windows) is parsed from where the last sync stopped, with the parser state saved then.
* Anything else (rewritten in place, truncated, replaced, compressed, or ``force``) is parsed again
  from the start. Turn rows are never deleted: turns outlive their files (the one exception: the
  copy an older pimem stored of a Pi v1 turn under the id Pi gave it when it rewrote the file).
* Work is committed in short transactions at line boundaries, together with the file's parse
  position, so a crash or a cancel leaves a consistent store and the next sync resumes. What a sync
  reports (turns changed, files, issues) counts committed work only (see :class:`Writer`).
* One broken file or root becomes an issue; every other file is imported. A broken line in the
  middle of a file is skipped and reported once, naming its line and the agent version the file
  records (an unfinished last line is not broken: it is left for the next sync).
* Transcripts are opened without blocking and must be regular files (jsonl.open_regular): a FIFO,
  socket or device that replaced a transcript after discovery is an issue ("it is a FIFO, not a
  regular file"), never a hang. Discovery itself skips non-regular files silently.
* With much to do, files are parsed by a pool of processes (both cores); SQLite serialises writes.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import gc
import hashlib
import json
import logging
import multiprocessing
import os
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from typing import IO, Any

from pimem import index
from pimem.discovery import SourceFile, discover, stat_paths
from pimem.importers import TRANSCRIPT_FILES, make_parser
from pimem.importers.base import Chunk, NotThisFormat, SessionInfo, TranscriptParser, TurnDelta, feed_line
from pimem.jsonl import HEAD_BYTES, LineReader, UnsupportedFile, is_compressed, open_transcript, read_window
from pimem.models import SOURCES, Source, SyncIssue, SyncProgress, SyncStats, import_issue
from pimem.paths import SourceRoots
from pimem.store import (
    SessionRow,
    StoreError,
    connect,
    encode_tool_names,
    get_turns,
    is_store_failure,
    set_meta,
    store_failure,
    transaction,
    upsert_session,
)
from pimem.store.files import (
    ConcurrentSync,
    FileState,
    ParsePoint,
    Stamp,
    claim_row,
    clear_nodes,
    forget_files,
    load_stamps,
    load_stamps_for,
    load_state,
    node_anchor,
    put_nodes,
    save_state,
)
from pimem.store.turns import TurnRow, delete_turns, turns_with_message_ids, upsert_turns
from pimem.textutil import join_parts, merge_names

log = logging.getLogger("pimem.sync")

CHUNK_TURNS = 400
CHUNK_BYTES = 8 * 1024 * 1024
CHUNK_SECONDS = 0.25
POOL_MIN_FILES = 4
POOL_MIN_BYTES = 48 * 1024 * 1024

ProgressCallback = Callable[[SyncProgress], None]


@contextlib.contextmanager
def _collector_paused() -> Iterator[None]:
    """Discovery and comparison make a few hundred thousand small acyclic tuples; the cyclic collector
    would walk them again and again for nothing (~10 % of a no-change sync over 150k files)."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


# ---------------------------------------------------------------------------------------------
# One file
# ---------------------------------------------------------------------------------------------

def fingerprint(handle: IO[bytes], parsed_bytes: int) -> str:
    """Digest of the file's head and of the bytes just before ``parsed_bytes``, read from the open file:
    if either changed, the file was rewritten rather than appended to."""
    head = read_window(handle, 0, min(HEAD_BYTES, parsed_bytes))
    tail_start = max(0, parsed_bytes - HEAD_BYTES)
    tail = read_window(handle, tail_start, parsed_bytes - tail_start)
    digest = hashlib.blake2b(digest_size=16)
    digest.update(head)
    digest.update(b"\0")
    digest.update(tail)
    return digest.hexdigest()


@dataclass
class FileOutcome:
    source: Source
    path: str
    parsed: bool = False
    turns_changed: int = 0          # turn rows changed by committed transactions only
    issues: list[SyncIssue] = field(default_factory=list)
    cancelled: bool = False
    conflicted: bool = False        # another sync imported this file meanwhile; left to that one
    failed: bool = False            # a part could not be stored: the rest is read again next sync

    @property
    def stopped(self) -> bool:
        """Nothing more of this file is stored in this sync."""
        return self.conflicted or self.failed


@dataclass
class _Stored:
    """A file's row as committed: its id (None before its first commit) and revision. The writer works
    on a copy inside a transaction and keeps it only once that transaction has committed."""

    file_id: int | None
    revision: int
    checked: bool = False   # the row exists and was checked against concurrent syncs


@dataclass
class _Unit:
    """A parsed chunk of one file, ready to commit with the file's new parse position."""

    job: _FileImport
    chunk: Chunk
    info: SessionInfo
    state: dict[str, Any]
    parsed_bytes: int
    parsed_lines: int
    first: bool
    digest: str                                                    # fingerprint at parsed_bytes
    reports: list[SyncIssue] = field(default_factory=list)         # issues that hold once this unit is stored


@dataclass
class _BrokenLines:
    """Broken lines (not a JSON record, or a record the parser could not read) in the parsed part of a
    file. Kept in the file's saved state so that each is reported once: an append-only sync reads only
    the new lines, and a re-parse of a file unchanged since (a forced sync) finds them already reported."""

    first: int | None = None       # the file's first broken line
    count: int = 0
    reported: int = 0              # how many of them an issue has named
    first_new: int | None = None   # the first one not reported yet

    KEY = "brokenLines"

    @classmethod
    def from_state(cls, state: dict[str, Any] | None) -> _BrokenLines:
        saved = (state or {}).get(cls.KEY)
        if not (isinstance(saved, list) and len(saved) == 4):
            return cls()
        first, count, reported, first_new = saved
        if not all(isinstance(value, int) or value is None for value in saved):
            return cls()
        return cls(first, count or 0, reported or 0, first_new)

    def to_state(self) -> list[int | None] | None:
        return [self.first, self.count, self.reported, self.first_new] if self.count else None

    def add(self, chunk: Chunk) -> None:
        if not chunk.bad_lines:
            return
        self.count += chunk.bad_lines
        if self.first is None:
            self.first = chunk.first_bad_line
        if self.first_new is None:
            self.first_new = chunk.first_bad_line


def _broken_lines_cause(first_new: int | None, new: int, total: int, agent_version: str | None) -> str:
    if new == 1:
        what = f"line {first_new} could not be read (broken JSON or not a record) and was skipped"
    else:
        what = (f"{new} lines could not be read (broken JSON or not a record) and were skipped, "
                f"the first is line {first_new}")
    if total > new:
        what += f" ({total} in the file so far)"
    written = (f"the file was written by {agent_version}" if agent_version
               else "the file does not say which agent version wrote it")
    return f"{what}; the rest was imported; {written}"


def _store_failure_cause(error: sqlite3.OperationalError) -> str:
    return f"the memory store could not take this file's rows ({error}); retried next sync"


class _StoreFailed(Exception):
    """A transaction of the writer was rolled back; ``unit`` is the unit whose write failed (None when
    BEGIN or COMMIT did)."""

    def __init__(self, unit: _Unit | None, error: sqlite3.OperationalError) -> None:
        super().__init__(str(error))
        self.unit = unit
        self.error = error


class Writer:
    """Commits parsed chunks — of one file or of many small ones — in short transactions (about
    CHUNK_TURNS turns or CHUNK_SECONDS each). A unit is committed whole with its file's parse
    position, so any commit point is a consistent place to stop, crash or be cancelled.

    Counters, file ids and revisions change only after COMMIT. When a unit's write fails in the middle
    of a transaction (an OperationalError that is not a failure of the whole store), the whole
    transaction is rolled back, the issue names the file whose write failed, that file stops for this
    sync (it continues from its last committed position next time), and the other units are tried
    once more without it. If that fails too, or BEGIN/COMMIT itself fails, every file of the batch is
    named. A failure of the whole store (locked past the busy timeout, disk full, read-only, damaged:
    ``store.is_store_failure``) stops the sync with ``store.store_failure``'s one line: every other
    file would fail the same way. What was committed stays either way."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn
        self.fts = index.fts_enabled(conn)
        self._units: list[_Unit] = []
        self._turns = 0
        self._bytes = 0
        self._since = time.monotonic()

    def add(self, unit: _Unit, size: int) -> None:
        self._units.append(unit)
        self._turns += len(unit.chunk.turns)
        self._bytes += size
        if (self._turns >= CHUNK_TURNS or self._bytes >= CHUNK_BYTES
                or time.monotonic() - self._since >= CHUNK_SECONDS):
            self.flush()

    def flush(self) -> None:
        units, self._units = self._units, []
        self._turns = self._bytes = 0
        self._since = time.monotonic()
        retried = False
        while True:
            units = [unit for unit in units if not unit.job.outcome.stopped]
            if not units:
                return
            try:
                self._store(units)
                return
            except _StoreFailed as failure:
                if failure.unit is not None and not retried:
                    failure.unit.job.store_failed(failure.error)
                    retried = True
                    continue
                for job in dict.fromkeys(unit.job for unit in units):
                    job.store_failed(failure.error)
                return

    def _store(self, units: list[_Unit]) -> None:
        """One transaction; the imports learn what it did only once it has committed."""
        stored: dict[_FileImport, _Stored] = {}
        changed: dict[_FileImport, int] = {}
        committed: list[_Unit] = []
        conflicts: list[_FileImport] = []
        broken: dict[_FileImport, Exception] = {}
        current: _Unit | None = None
        try:
            with transaction(self.conn):
                for unit in units:
                    job = unit.job
                    if job in broken or job in conflicts:
                        continue
                    trial = replace(stored.get(job, job.stored))
                    current = unit
                    try:
                        with savepoint(self.conn):
                            turns = job.write(unit, trial)
                    except ConcurrentSync:
                        conflicts.append(job)
                        continue
                    except sqlite3.Error as error:
                        if is_store_failure(error) or isinstance(error, sqlite3.OperationalError):
                            raise  # the transaction is lost: see below
                        broken[job] = error  # this file's data could not be stored; the others go on
                        continue
                    except Exception as error:  # this file's data could not be stored; the others go on
                        broken[job] = error
                        continue
                    stored[job] = trial
                    changed[job] = changed.get(job, 0) + turns
                    committed.append(unit)
                current = None
        except sqlite3.Error as error:
            if self.conn.in_transaction:  # a failed COMMIT leaves the transaction open
                with contextlib.suppress(sqlite3.Error):
                    self.conn.execute("ROLLBACK")
            if is_store_failure(error):  # the whole store (locked, full, read-only, damaged): stop the sync
                raise store_failure(error, getattr(self.conn, "path", None)) from None
            if isinstance(error, sqlite3.OperationalError):
                raise _StoreFailed(current, error) from error
            raise
        for job, state in stored.items():
            job.stored = state
        for job, turns in changed.items():
            job.outcome.turns_changed += turns
        for unit in committed:
            unit.job.outcome.issues.extend(unit.reports)
        for job in conflicts:
            job.outcome.conflicted = True
            log.info("another sync is importing %s; leaving it to that one", job.file.key)
        for job, failure in broken.items():
            job.outcome.failed = True
            job.outcome.issues.append(import_issue(job.file.source, job.file.key,
                                                   f"could not be stored ({type(failure).__name__})"))
            log.warning("storing a %s file failed: %s", job.file.source, type(failure).__name__)


@contextlib.contextmanager
def savepoint(conn: sqlite3.Connection) -> Iterator[None]:
    conn.execute("SAVEPOINT unit")
    try:
        yield
    except BaseException:
        if conn.in_transaction:  # a full disk or an I/O error may have rolled everything back already
            with contextlib.suppress(sqlite3.Error):
                conn.execute("ROLLBACK TO unit")
                conn.execute("RELEASE unit")
        raise
    conn.execute("RELEASE unit")


class _FileImport:
    """Parse one file (whole or its appended part) into units for the writer."""

    def __init__(self, writer: Writer, source_file: SourceFile, prior: FileState | None,
                 force: bool, cancel: Callable[[], bool]) -> None:
        self.writer = writer
        self.conn = writer.conn
        self.file = source_file
        self.prior = prior
        self.force = force
        self.cancel = cancel
        self.outcome = FileOutcome(source_file.source, source_file.key)
        self.stored = _Stored(prior.file_id, prior.revision) if prior is not None else _Stored(None, 0)
        self._plain: IO[bytes] | None = None   # the open file, when its bytes are the JSONL (not .zst)
        self._resumed = False
        self._broken = _BrokenLines()

    # -- decision -----------------------------------------------------------------------------
    def _append_point(self) -> FileState | None:
        prior, current = self.prior, self.file
        if prior is None or self.force or prior.state.get("error") or self._plain is None:
            return None  # compressed files (no _plain) are always re-read
        if current.inode != prior.inode or current.size < prior.parsed_bytes:
            return None
        try:
            if fingerprint(self._plain, prior.parsed_bytes) != prior.fingerprint:
                return None
        except OSError:
            return None
        return prior

    def run(self) -> FileOutcome:
        try:
            self._run()
        except NotThisFormat as error:
            self._record_failure(str(error))
        except UnsupportedFile as error:
            self.outcome.issues.append(import_issue(self.file.source, self.file.key, str(error)))
        except FileNotFoundError:
            pass  # deleted while we were syncing: nothing to import, its turns stay
        except StoreError:
            raise  # the store cannot be used at all: the sync stops (not this file's problem)
        except sqlite3.Error as error:
            if is_store_failure(error):
                raise store_failure(error, getattr(self.conn, "path", None)) from None
            if not isinstance(error, sqlite3.OperationalError):
                raise
            self.store_failed(error)
        except OSError as error:
            self.outcome.issues.append(import_issue(self.file.source, self.file.key,
                                                    f"cannot read the file ({error.strerror or error})"))
        except Exception as error:  # the isolation boundary: one file never stops the others
            self.outcome.issues.append(import_issue(self.file.source, self.file.key,
                                                    f"unexpected {type(error).__name__} while reading it"))
            log.warning("import of a %s file failed: %s", self.file.source, type(error).__name__)
        finally:
            self._plain = None
        return self.outcome

    def store_failed(self, error: sqlite3.OperationalError) -> None:
        """The store failed while this file was being stored: what was committed stays, the rest of the
        file is read again by the next sync."""
        if self.outcome.failed:
            return
        self.outcome.failed = True
        self.outcome.issues.append(import_issue(self.file.source, self.file.key, _store_failure_cause(error)))

    def _run(self) -> None:
        self.outcome.parsed = True
        if TRANSCRIPT_FILES[self.file.source].is_document(self.file.path):
            self._run_document()
            return
        with contextlib.closing(open_transcript(self.file.path)) as stream:
            self._plain = None if is_compressed(self.file.path) else stream
            resume = self._append_point()
            if resume is not None:
                offset, lines, state = resume.parsed_bytes, resume.parsed_lines, resume.state
                parser = make_parser(self.file.source, self.file.path, state, self._lookup_node, self._stored_turns)
                self._resumed = True
                self._broken = _BrokenLines.from_state(state)
            else:
                offset, lines = 0, 0
                parser = make_parser(self.file.source, self.file.path, None, None, self._stored_turns)
            if parser.session().excluded and resume is not None:
                self._commit(Chunk(), parser, self.file.size, lines, first=False, size=0)
                return
            reader = LineReader.resume(stream, offset, lines)
            chunk = Chunk()
            first = resume is None
            chunk_start = time.monotonic()
            committed_at = reader.position
            for line in reader.scan(parser.interesting):
                feed_line(parser, line, chunk)
                if (len(chunk.turns) >= CHUNK_TURNS or line.end - committed_at >= CHUNK_BYTES
                        or time.monotonic() - chunk_start >= CHUNK_SECONDS):
                    # Commit at this line's end (the reader may already have counted lines beyond it).
                    self._commit(chunk, parser, line.end, line.number, first, line.end - committed_at)
                    first = False
                    chunk, chunk_start, committed_at = Chunk(), time.monotonic(), line.end
                    if self.outcome.stopped:
                        return  # the store failed or another sync took over: read again next time
                    if self.cancel():
                        self.outcome.cancelled = True
                        return
            reports = []
            if reader.oversized_lines:
                reports.append(import_issue(self.file.source, self.file.key,
                                            f"{reader.oversized_lines} line(s) longer than 32 MiB were skipped",
                                            partly=True))
            self._commit(chunk, parser, reader.position, reader.lines_read, first, reader.position - committed_at,
                         final=reports)

    def _run_document(self) -> None:
        """A transcript that is one JSON document: read whole, committed as one unit."""
        document, size = TRANSCRIPT_FILES[self.file.source].read_document(self.file.path, self.file.size)
        parser = make_parser(self.file.source, self.file.path, None)
        chunk = Chunk()
        parser.feed_document(document, chunk)
        self._commit(chunk, parser, size, 0, True, size)

    def _commit(self, chunk: Chunk, parser: TranscriptParser, parsed_bytes: int, parsed_lines: int,
                first: bool, size: int, *, final: list[SyncIssue] | None = None) -> None:
        """Hand a chunk to the writer with a snapshot of the parser at this line boundary. ``final``: this
        is the end of the parse, and these issues hold once it is stored (then broken lines are reported)."""
        self._broken.add(chunk)
        reports = list(final or ())
        if final is not None:
            broken = self._broken_report(parser.session().agent_version)
            if broken is not None:
                reports.append(broken)
        state = parser.state()
        broken_state = self._broken.to_state()
        if broken_state is not None:
            state[_BrokenLines.KEY] = broken_state
        digest = ""
        if self._plain is not None:
            with contextlib.suppress(OSError):
                digest = fingerprint(self._plain, parsed_bytes)
        self.writer.add(_Unit(self, chunk, replace(parser.session()), state, parsed_bytes, parsed_lines, first,
                              digest, reports), size)

    def _broken_report(self, agent_version: str | None) -> SyncIssue | None:
        """The issue for the broken lines not reported yet (None if there are none, or if a re-parse of
        a file unchanged since its last complete parse finds exactly the ones reported then)."""
        broken = self._broken
        new = broken.count - broken.reported
        if new <= 0:
            return None
        first_new = broken.first_new
        broken.reported, broken.first_new = broken.count, None
        prior, current = self.prior, self.file
        if (not self._resumed and prior is not None and prior.parsed_bytes >= prior.size
                and (prior.size, prior.mtime_ns, prior.inode) == (current.size, current.mtime_ns, current.inode)):
            before = _BrokenLines.from_state(prior.state)
            if (before.first, before.count) == (broken.first, broken.count) and before.reported == before.count:
                return None
        return import_issue(self.file.source, self.file.key,
                            _broken_lines_cause(first_new, new, broken.count, agent_version), partly=True)

    # -- reads during the parse ---------------------------------------------------------------
    def _lookup_node(self, entry_id: str) -> tuple[bool, str | None]:
        return node_anchor(self.conn, self.stored.file_id, entry_id)

    def _stored_turns(self, native_id: str, id_pattern: str) -> dict[int, tuple[str, str]]:
        """This session's stored turns whose message id matches ``id_pattern`` (see importers/pi.py: a v1
        session Pi rewrote)."""
        return turns_with_message_ids(self.conn, f"{self.file.source}:{native_id}", id_pattern)

    # -- writes (inside the writer's transaction) ---------------------------------------------
    def _file_row(self, revision: int) -> int:
        return claim_row(self.conn, self.file.key, self.file.source, revision)

    def _save_state(self, stored: _Stored, parsed_bytes: int, parsed_lines: int, state: dict[str, Any],
                    session_id: str | None, digest: str) -> None:
        save_state(self.conn, stored.file_id, stored.revision, ParsePoint(
            self.file.source, self.file.size, self.file.mtime_ns, self.file.inode, parsed_bytes, parsed_lines,
            digest, session_id, state))
        stored.revision += 1

    def write(self, unit: _Unit, stored: _Stored) -> int:
        """Store one unit, updating ``stored`` (the writer's copy of the file's row); returns how many
        turn rows changed."""
        if not stored.checked:
            stored.file_id = self._file_row(stored.revision)
            stored.checked = True
        info = unit.info
        session_id = f"{self.file.source}:{info.native_id}" if info.native_id else None
        if unit.first:
            clear_nodes(self.conn, stored.file_id)
        turns = 0
        if session_id is not None and not info.excluded:
            self._write_session(session_id, info, unit.chunk)
            turns = self._write_turns(session_id, list(unit.chunk.turns.values()))
        if unit.chunk.nodes:
            put_nodes(self.conn, stored.file_id, unit.chunk.nodes)
        self._save_state(stored, unit.parsed_bytes, unit.parsed_lines, unit.state, session_id, unit.digest)
        return turns

    def _write_session(self, session_id: str, info: SessionInfo, chunk: Chunk) -> None:
        started_at = info.started_at
        if started_at is None:
            started_at = min((d.ts for d in chunk.turns.values() if d.is_new), default=self.file.mtime_ns // 10**6)
        upsert_session(self.conn, SessionRow(session_id, self.file.source, info.cwd, started_at, info.model_id,
                                             self.file.key))

    def _write_turns(self, session_id: str, deltas: list[TurnDelta]) -> int:
        """Upsert a chunk's turns and give them docs; returns how many rows changed."""
        ids = [f"{session_id}:{delta.user_message_id}" for delta in deltas]
        stored = get_turns(self.conn, ids)
        rows: list[TurnRow] = []
        items: list[index.IndexItem] = []
        for turn_id, delta in zip(ids, deltas, strict=True):
            previous = stored.get(turn_id)
            if delta.is_new:
                user_text, ts, turn_index = delta.user_text, delta.ts, delta.turn_index
                reply_text, tools = join_parts(delta.reply_parts), list(delta.tools)
            elif previous is None:
                continue  # a reply to a turn that is no longer stored
            else:
                user_text, ts, turn_index = previous.user_text, previous.ts, previous.turn_index
                reply_text = join_parts([previous.reply_text, *delta.reply_parts])
                tools = merge_names(previous.tool_names, delta.tools)
            before = None if previous is None else (previous.ts, previous.user_text, previous.reply_text)
            items.append(index.IndexItem(turn_id, ts, user_text, reply_text, delta.line if delta.is_new else None,
                                         before))
            if previous is not None and (previous.user_text, previous.reply_text, previous.tool_names, previous.ts,
                                         previous.turn_index) == (user_text, reply_text, tools, ts, turn_index):
                continue
            rows.append((turn_id, session_id, turn_index, ts, user_text, reply_text, encode_tool_names(tools),
                         delta.user_message_id))
        upsert_turns(self.conn, rows)
        index.put_many(self.conn, items, fts=self.writer.fts)
        # A turn that keeps an earlier id (a Pi v1 session Pi rewrote) replaces the copy an older pimem
        # stored under the new id; its doc is forgotten by the next full sync (index.reconcile).
        removed = delete_turns(self.conn, [f"{session_id}:{delta.replaces}" for delta in deltas
                                           if delta.is_new and delta.replaces])
        return len(rows) + removed

    def _record_failure(self, cause: str) -> None:
        """Remember a file that is not a transcript, so it is reported once, not parsed every sync."""
        self.outcome.issues.append(import_issue(self.file.source, self.file.key, cause))
        self.writer.flush()  # this file's earlier units (if any) first: the state saved here replaces them
        if self.outcome.stopped:
            return
        stored = replace(self.stored)
        try:
            with transaction(self.conn):
                if not stored.checked:
                    stored.file_id = self._file_row(stored.revision)
                    stored.checked = True
                self._save_state(stored, self.file.size, 0, {"error": cause}, None, "")
        except ConcurrentSync:
            return
        except sqlite3.OperationalError as error:
            if is_store_failure(error):
                raise store_failure(error, getattr(self.conn, "path", None)) from None
            self.store_failed(error)
            return
        self.stored = stored


def import_files(conn: sqlite3.Connection, jobs: list[tuple[SourceFile, FileState | None]], *, force: bool = False,
                 cancel: Callable[[], bool] = lambda: False,
                 parsed: Callable[[int], None] | None = None) -> list[FileOutcome]:
    """Import transcripts in this process, committing small files together. Each file is its own
    isolation boundary: its problems become ``outcome.issues``. ``parsed(n)`` reports progress."""
    writer = Writer(conn)
    imports: list[_FileImport] = []
    try:
        for count, (source_file, prior) in enumerate(jobs, start=1):
            if cancel():
                break
            job = _FileImport(writer, source_file, prior, force, cancel)
            imports.append(job)
            job.run()
            if parsed is not None:
                parsed(count)
    except StoreError:
        raise  # the store cannot take the parsed rest either; the next sync reads it again
    except BaseException:
        writer.flush()  # a cancel or interrupt: keep what was parsed
        raise
    writer.flush()
    return [job.outcome for job in imports]


def import_file(conn: sqlite3.Connection, source_file: SourceFile, prior: FileState | None, *,
                force: bool = False, cancel: Callable[[], bool] = lambda: False) -> FileOutcome:
    """Import one transcript (the isolation boundary: problems become ``outcome.issues``)."""
    return import_files(conn, [(source_file, prior)], force=force, cancel=cancel)[0]


# ---------------------------------------------------------------------------------------------
# Worker processes
# ---------------------------------------------------------------------------------------------

_worker_conn: sqlite3.Connection | None = None
_worker_cancel: Any = None


def _worker_init(db_path: str, cancel_event: Any) -> None:
    global _worker_conn, _worker_cancel
    logging.getLogger().setLevel(logging.WARNING)
    _worker_conn = connect(db_path)
    _worker_cancel = cancel_event


def _worker_import(files: list[SourceFile], force: bool) -> list[FileOutcome]:
    assert _worker_conn is not None
    # The saved state is read even when forced (force only decides not to resume from it): without the
    # file's revision, its first write would look like another sync's and the file would be skipped.
    jobs = [(source_file, load_state(_worker_conn, source_file.key)) for source_file in files]
    return import_files(_worker_conn, jobs, force=force, cancel=_worker_cancel.is_set)


# ---------------------------------------------------------------------------------------------
# Whole sync
# ---------------------------------------------------------------------------------------------

@dataclass
class SyncRequest:
    db_path: str
    roots: SourceRoots
    sources: set[Source] = field(default_factory=lambda: set(SOURCES))
    force: bool = False
    paths: list[str] | None = None          # only these files (live updates); None = everything
    workers: int | None = None              # None: automatic; 1: no worker processes


def _unchanged(stamp: Stamp | None, current: SourceFile) -> bool:
    """Same size, mtime and inode, and parsed to the end (an interrupted parse is not finished)."""
    return (stamp is not None and stamp[1] == current.size and stamp[2] == current.mtime_ns
            and stamp[3] == current.inode and stamp[4] >= current.size)


def run_sync(request: SyncRequest, *, progress: ProgressCallback | None = None,
             cancel: threading.Event | None = None, conn: sqlite3.Connection | None = None) -> SyncStats:
    """Synchronise the store with the transcript files. Safe to run again at any time."""
    started = time.monotonic()
    stats = SyncStats()
    own_conn = conn is None
    conn = conn or connect(request.db_path)
    cancel = cancel or threading.Event()
    try:
        with _collector_paused():
            if request.paths is None:
                stamps = load_stamps(conn)
                files = discover(request.roots, request.sources, stats.issues)
                _forget_vanished(conn, stamps, {f.key for f in files})
            else:  # a live update: only these files' stamps are read (cheap whatever the store's size)
                files = stat_paths(request.paths or [], request.roots, request.sources, stats.issues)
                stamps = load_stamps_for(conn, [f.key for f in files])
            changed = [f for f in files if request.force or not _unchanged(stamps.get(f.key), f)]
        # Only changed files need their saved parse state (a no-change sync reads none).
        todo = [(f, load_state(conn, f.key) if f.key in stamps else None) for f in changed]
        stats.skipped_files = len(files) - len(todo)
        # Newest first: what the user did last becomes searchable first.
        todo.sort(key=lambda item: item[0].mtime_ns, reverse=True)
        reporter = _ProgressReporter(progress, len(todo))
        reporter.report(0)
        outcomes = _run_files(conn, request, todo, reporter, cancel)
        for outcome in outcomes:
            if outcome.parsed:
                stats.scanned_files += 1
            if outcome.turns_changed:
                stats.turns += outcome.turns_changed
                stats.count_file(outcome.source)
                stats.changed_sources.add(outcome.source)
            stats.issues.extend(outcome.issues)
            if outcome.cancelled:
                stats.cancelled = True
        if cancel.is_set():
            stats.cancelled = True
        if not stats.cancelled:
            # Rows the Pi extension inserted get their docs: all drift on a full sync, the rows since
            # the last one on a live update (which must stay fast on a large store).
            with transaction(conn):
                added = index.reconcile(conn) if request.paths is None else index.catch_up(conn)
            if added:
                log.info("%d turns written by another program join the index", added)
        stats.stored_ms = int((time.monotonic() - started) * 1000)
        # Every stored turn is already found by recall (pending docs are scanned); now index them.
        index.build_pending(conn, cancel=cancel.is_set, progress=reporter.report_index)
        if cancel.is_set():
            stats.cancelled = True
        stats.duration_ms = int((time.monotonic() - started) * 1000)
        with transaction(conn):
            set_meta(conn, "last_sync", json.dumps({
                "finishedAt": int(time.time() * 1000), "turns": stats.turns, "issues": len(stats.issues),
                "cancelled": stats.cancelled, "force": request.force,
            }))
        log.info("sync: %d turns changed, %d files parsed, %d unchanged, %d issues, %d ms",
                 stats.turns, stats.scanned_files, stats.skipped_files, len(stats.issues), stats.duration_ms)
        return stats
    finally:
        if own_conn:
            conn.close()


def _forget_vanished(conn: sqlite3.Connection, stamps: dict[str, Stamp], present: set[str]) -> None:
    gone = [stamp[5] for path, stamp in stamps.items() if path not in present and not os.path.exists(path)]
    if not gone:
        return
    with transaction(conn):
        forget_files(conn, gone)


def _run_files(conn: sqlite3.Connection, request: SyncRequest, todo: list[tuple[SourceFile, FileState | None]],
               reporter: _ProgressReporter, cancel: threading.Event) -> list[FileOutcome]:
    workers = request.workers if request.workers is not None else min(4, os.cpu_count() or 1)
    big = sum(f.size - (p.parsed_bytes if p else 0) for f, p in todo)
    if workers > 1 and len(todo) >= POOL_MIN_FILES and big >= POOL_MIN_BYTES:
        return _run_pool(request, todo, workers, reporter, cancel)
    return import_files(conn, todo, force=request.force, cancel=cancel.is_set, parsed=reporter.report)


def _batches(todo: list[tuple[SourceFile, FileState | None]]) -> Iterator[list[SourceFile]]:
    """Files grouped for a worker: small files together (they commit together), big ones alone."""
    batch: list[SourceFile] = []
    size = 0
    for source_file, _prior in todo:
        batch.append(source_file)
        size += source_file.size
        if len(batch) >= 32 or size >= CHUNK_BYTES:
            yield batch
            batch, size = [], 0
    if batch:
        yield batch


def _run_pool(request: SyncRequest, todo: list[tuple[SourceFile, FileState | None]], workers: int,
              reporter: _ProgressReporter, cancel: threading.Event) -> list[FileOutcome]:
    """Import files in worker processes. If the pool cannot work (it failed to start, a worker
    died), the files it did not finish are imported in this process instead."""
    context = multiprocessing.get_context("spawn")
    cancel_event = context.Event()
    outcomes: list[FileOutcome] = []
    finished_paths: set[str] = set()
    broken = False
    with concurrent.futures.ProcessPoolExecutor(
        max_workers=workers, mp_context=context, initializer=_worker_init,
        initargs=(request.db_path, cancel_event),
    ) as pool:
        # A bounded window of submitted batches: waiting stays cheap and a cancel stops quickly.
        queue = _batches(todo)
        pending: dict[concurrent.futures.Future[list[FileOutcome]], list[SourceFile]] = {}
        while True:
            while not broken and not cancel.is_set() and len(pending) < 2 * workers:
                batch = next(queue, None)
                if batch is None:
                    break
                pending[pool.submit(_worker_import, batch, request.force)] = batch
            if not pending:
                break
            # (Indexing here while the workers parse was tried: on two cores it made both slower.)
            finished, _ = concurrent.futures.wait(pending, timeout=0.2,
                                                  return_when=concurrent.futures.FIRST_COMPLETED)
            for future in finished:
                pending.pop(future)
                try:
                    batch_outcomes = future.result()
                except concurrent.futures.CancelledError:
                    continue
                except concurrent.futures.process.BrokenProcessPool:
                    broken = True
                    continue
                except StoreError:  # the store cannot be used: stop every worker, then say so
                    cancel_event.set()
                    for other in pending:
                        other.cancel()
                    raise
                outcomes.extend(batch_outcomes)
                finished_paths.update(outcome.path for outcome in batch_outcomes if not outcome.cancelled)
                reporter.report(len(finished_paths))
            if cancel.is_set() or broken:
                cancel_event.set()
                for future in pending:
                    future.cancel()
    if broken and not cancel.is_set():
        log.warning("sync worker processes failed; importing the remaining files in this process")
        conn = connect(request.db_path)
        try:
            rest = [(f, load_state(conn, f.key)) for f, _ in todo if f.key not in finished_paths]
            done = len(finished_paths)
            outcomes.extend(import_files(conn, rest, force=request.force, cancel=cancel.is_set,
                                         parsed=lambda count: reporter.report(done + count)))
        finally:
            conn.close()
    return outcomes


class _ProgressReporter:
    """Calls the progress callback at most ~8 times a second, plus at the start and end of a phase."""

    def __init__(self, callback: ProgressCallback | None, total: int) -> None:
        self.callback = callback
        self.total = total
        self.files = 0
        self.last = 0.0

    def _emit(self, progress: SyncProgress, force: bool) -> None:
        if self.callback is None:
            return
        now = time.monotonic()
        if force or now - self.last >= 0.125:
            self.last = now
            self.callback(progress)

    def report(self, done: int) -> None:
        self.files = min(done, self.total)
        self._emit(SyncProgress(self.files, self.total), self.files in (0, self.total))

    def report_index(self, done: int, total: int) -> None:
        self._emit(SyncProgress(self.files, self.total, done, total), done in (0, total))
