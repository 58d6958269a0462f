"""Parse one file into units of work and commit them (the core of :mod:`pimem.sync`).

A unit (:class:`_Unit`: a parsed chunk, its session info, the parser state and the parse position
at a line boundary) is plain data; :class:`Writer` applies units in short transactions, each unit
under a savepoint with its file's parse position, so any commit point is a consistent place to
stop, crash or be cancelled. :class:`_FileImport` drives the parse of one file (whole or its
appended part) and writes its units' rows through ``pimem.store``.

Over ~400 lines for a reason: the writer's failure handling (which file a failed transaction
names, which units are retried) and the file import's stop/resume decisions are one protocol;
split, each half would have to be read with the other open.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import sqlite3
import time
from collections.abc import Callable, Container, Iterator
from dataclasses import dataclass, field, replace
from typing import IO, Any

from pimem import editspans, index
from pimem.discovery import SourceFile
from pimem.importers import TRANSCRIPT_FILES, make_database_reader, make_parser
from pimem.importers.base import (
    BadState,
    Chunk,
    NotThisFormat,
    SessionInfo,
    TranscriptParser,
    TurnDelta,
    absolute_touch_path,
    feed_line,
)
from pimem.jsonl import HEAD_BYTES, LineReader, UnsupportedFile, is_compressed, open_transcript, read_window
from pimem.models import Source, SyncIssue, import_issue
from pimem.store import (
    SessionRow,
    StoreError,
    encode_tool_names,
    get_turns,
    is_store_failure,
    store_failure,
    transaction,
    upsert_session,
)
from pimem.store.edits import SpanRow, clear_spans, put_spans
from pimem.store.files import (
    PARSE_AGAIN_SIZE,
    ConcurrentSync,
    FileState,
    ParsePoint,
    claim_row,
    clear_nodes,
    load_state,
    node_anchor,
    put_nodes,
    save_state,
)
from pimem.store.touches import TouchRow, clear_touches, put_touches
from pimem.store.turns import TurnRow, delete_turns, turns_with_message_ids, upsert_turns
from pimem.textutil import clean_text, join_parts, merge_names, storable_id

log = logging.getLogger("pimem.sync")

CHUNK_TURNS = 400
CHUNK_BYTES = 8 * 1024 * 1024
CHUNK_SECONDS = 0.25


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


def _span_rows(delta: TurnDelta, cwd: str, turn_id: str, ts: int) -> list[SpanRow]:
    """The lines a turn's edit calls wrote, within the bound rule (pimem.editspans)."""
    rows: list[SpanRow] = []
    for edit in delta.edits:
        path = absolute_touch_path(edit.path, cwd)
        if path is None or editspans.skipped_path(path):
            continue
        call_id = None if edit.call_id is None else storable_id(edit.call_id)
        if edit.earlier is not None:
            # over a file the session saw in an earlier turn: the lines it added to that view in a run are
            # its own, a span after its write over unknown content (pimem.editspans.span_since)
            split = editspans.span_since(edit.earlier, edit.new)
            if split is not None:
                rows.append(SpanRow(path, turn_id, ts, edit.tool, call_id, True, split[0].added, []))
                if split[1].added:
                    rows.append(SpanRow(path, turn_id, ts, edit.tool, call_id, False, split[1].added, [],
                                        context=split[1].context))
                continue
        if edit.before is not None:
            span = editspans.span_against(edit.before, edit.new)
        else:
            span = editspans.span_of(edit.old, edit.new, edit.kept_before, edit.kept_after)
        # a whole-file write over content the transcript gives is an edit of the whole file: the lines it
        # kept keep their writer; over unknown content it replaces what earlier calls wrote (pimem.lineblame)
        whole = edit.whole and edit.old is None and edit.before is None
        if span is None and edit.whole:
            # too large to record its lines, but the file was replaced: what earlier calls wrote is gone
            span, whole = editspans.Span([], []), True
        if span is None or not (span.added or span.removed or whole):
            continue
        rows.append(SpanRow(path, turn_id, ts, edit.tool, call_id, whole, span.added, span.removed,
                            edit.amends, span.context))
    return rows


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
        if TRANSCRIPT_FILES[self.file.source].is_database(self.file.path):
            self._run_database()
            return
        if TRANSCRIPT_FILES[self.file.source].is_document(self.file.path):
            self._run_document()
            return
        with contextlib.closing(open_transcript(self.file.path)) as stream:
            self._plain = None if is_compressed(self.file.path) else stream
            resume = self._append_point()
            parser: TranscriptParser | None = None
            if resume is not None:
                try:
                    parser = make_parser(self.file.source, self.file.path, resume.state, self._lookup_node,
                                         self._stored_turns)
                except BadState as error:   # another tool wrote (or damaged) it: parsed again from the start
                    log.info("the saved state of a %s file is not pimem's (%s): parsing it again",
                             self.file.source, error)
                    resume = None
            if resume is not None and parser is not None:
                offset, lines = resume.parsed_bytes, resume.parsed_lines
                self._resumed = True
                self._broken = _BrokenLines.from_state(resume.state)
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
        # Records a document's reader could not use without a line (an OpenCode session's message files) are
        # counted here; broken records with a line (a chat session log's entries) are reported like lines.
        reports = []
        if chunk.bad_lines and not chunk.first_bad_line:   # records without a line (Chunk.note_bad_record)
            bad, chunk.bad_lines, chunk.first_bad_line = chunk.bad_lines, 0, None
            reports.append(import_issue(self.file.source, self.file.key,
                                        f"{bad} record(s) could not be read and were skipped", partly=True))
        self._commit(chunk, parser, size, 0, True, size, final=reports)

    def _run_database(self) -> None:
        """A database of many sessions: only the sessions changed since the saved state are read, each
        committed as one unit with the reader's state after it (parse position 0 until the last: a sync
        stopped midway continues next time from that state). The same database file (inode) only: a
        replaced one is read whole, and so is one whose sessions the importer's rules must read again
        (pimem.store.files.parse_again: its saved state would skip every session not changed since)."""
        prior = self.prior
        saved = None
        if (prior is not None and not self.force and not prior.state.get("error")
                and prior.inode == self.file.inode and prior.size != PARSE_AGAIN_SIZE):
            saved = prior.state
        reader = make_database_reader(self.file.source, self.file.path, saved)
        first = True
        bad_records = 0
        for info, chunk in reader.sessions():
            bad_records += chunk.bad_lines
            self.writer.add(_Unit(self, chunk, info, reader.state(), 0, 0, first, ""), 0)
            first = False
            if self.outcome.stopped:
                return
            if self.cancel():
                self.outcome.cancelled = True
                return
        reports = []
        if bad_records:
            reports.append(import_issue(self.file.source, self.file.key,
                                        f"{bad_records} record(s) could not be read and were skipped", partly=True))
        self.writer.add(_Unit(self, Chunk(), SessionInfo(), reader.state(), self.file.size, 0, first, "", reports), 0)

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
        return node_anchor(self.conn, self.stored.file_id, storable_id(entry_id))

    def _stored_turns(self, native_id: str, id_pattern: str) -> dict[int, tuple[str, str]]:
        """This session's stored turns whose message id matches ``id_pattern`` (see importers/pi.py: a v1
        session Pi rewrote)."""
        return turns_with_message_ids(self.conn, f"{self.file.source}:{storable_id(native_id)}", id_pattern)

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
        # ids become store keys here, as the store can hold them (pimem.textutil.storable_id: a transcript's
        # JSON may give an id with a lone surrogate; the parser keeps it as it is, in its state too)
        session_id = f"{self.file.source}:{storable_id(info.native_id)}" if info.native_id else None
        if unit.first:
            clear_nodes(self.conn, stored.file_id)
        turns = 0
        if session_id is not None and not info.excluded:
            self._write_session(session_id, info, unit.chunk)
            turns = self._write_turns(session_id, info.cwd, list(unit.chunk.turns.values()))
        if unit.chunk.nodes:
            put_nodes(self.conn, stored.file_id, [(storable_id(entry), None if anchor is None else storable_id(anchor))
                                                  for entry, anchor in unit.chunk.nodes])
        self._save_state(stored, unit.parsed_bytes, unit.parsed_lines, unit.state, session_id, unit.digest)
        return turns

    def _write_session(self, session_id: str, info: SessionInfo, chunk: Chunk) -> None:
        started_at = info.started_at
        if started_at is None:
            started_at = min((d.ts for d in chunk.turns.values() if d.is_new), default=self.file.mtime_ns // 10**6)
        model = None if info.model_id is None else clean_text(info.model_id)   # as the transcript gave it
        upsert_session(self.conn, SessionRow(session_id, self.file.source, info.cwd, started_at, model, self.file.key))

    def _write_turns(self, session_id: str, cwd: str, deltas: list[TurnDelta]) -> int:
        """Upsert a chunk's turns, give them docs and record the files they touched; returns how many
        turn rows changed."""
        message_ids = [storable_id(delta.user_message_id) for delta in deltas]
        ids = [f"{session_id}:{message_id}" for message_id in message_ids]
        stored = get_turns(self.conn, ids)
        rows: list[TurnRow] = []
        items: list[index.IndexItem] = []
        restarted: list[str] = []   # stored turns parsed again from their start: their touches are replaced
        touches: list[TouchRow] = []
        spans: list[SpanRow] = []
        for turn_id, message_id, delta in zip(ids, message_ids, deltas, strict=True):
            names = [clean_text(name) for name in delta.tools]   # a tool's name may be its id (Copilot Chat)
            previous = stored.get(turn_id)
            if delta.is_new and previous is not None:
                restarted.append(turn_id)
            if delta.is_new:
                user_text, ts, turn_index = delta.user_text, delta.ts, delta.turn_index
                reply_text, tools = join_parts(delta.reply_parts), names
            elif previous is None:
                continue  # a reply to a turn that is no longer stored
            else:
                user_text, ts, turn_index = previous.user_text, previous.ts, previous.turn_index
                reply_text = join_parts([previous.reply_text, *delta.reply_parts])
                tools = merge_names(previous.tool_names, names)
            for raw_path, action in delta.files:
                path = absolute_touch_path(raw_path, cwd)
                if path is not None:
                    touches.append((path, turn_id, action, session_id, ts))
            spans.extend(_span_rows(delta, cwd, turn_id, ts))
            before = None if previous is None else (previous.ts, previous.user_text, previous.reply_text)
            items.append(index.IndexItem(turn_id, ts, user_text, reply_text, delta.line if delta.is_new else None,
                                         before))
            if previous is not None and (previous.user_text, previous.reply_text, previous.tool_names, previous.ts,
                                         previous.turn_index) == (user_text, reply_text, tools, ts, turn_index):
                continue
            rows.append((turn_id, session_id, turn_index, ts, user_text, reply_text, encode_tool_names(tools),
                         message_id))
        upsert_turns(self.conn, rows)
        index.put_many(self.conn, items, fts=self.writer.fts)
        clear_touches(self.conn, restarted)
        put_touches(self.conn, touches)
        clear_spans(self.conn, restarted)
        put_spans(self.conn, spans)
        # A turn that keeps an earlier id (a Pi v1 session Pi rewrote) replaces the copy an older pimem
        # stored under the new id; its doc is forgotten by the next full sync (index.reconcile).
        replaced = [f"{session_id}:{storable_id(delta.replaces)}"
                    for delta in deltas if delta.is_new and delta.replaces]
        removed = delete_turns(self.conn, replaced)
        clear_touches(self.conn, replaced)
        clear_spans(self.conn, replaced)
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


def with_saved_states(conn: sqlite3.Connection, files: list[SourceFile],
                      known: Container[str] | None = None) -> list[tuple[SourceFile, FileState | None]]:
    """Each file with its saved parse state, the one way an import's jobs are made. ``known``: the only
    paths that may have one (the stamps read already), so that a new file costs no query."""
    return [(f, load_state(conn, f.key) if known is None or f.key in known else None) for f in files]


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

