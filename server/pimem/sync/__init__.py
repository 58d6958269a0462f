"""Incremental sync of the agents' transcripts into the store.

* A file whose size, mtime and inode are unchanged is only stat'ed.
* A file that grew (same inode, and the bytes before the last parse point unchanged, checked on two
  small windows) is parsed from where the last sync stopped, with the parser state saved then.
* Anything else (rewritten in place, truncated, replaced, compressed, or ``force``) is parsed again
  from the start. Turn rows are never deleted: turns outlive their files (the one exception: the
  copy an older pimem stored of a Pi v1 turn under the id Pi gave it when it rewrote the file).
* Work is committed in short transactions at line boundaries, together with the file's parse
  position, so a crash or a cancel leaves a consistent store and the next sync resumes. What a sync
  reports (turns changed, files, issues) counts committed work only (see :class:`~pimem.sync.ingest.Writer`).
* One broken file or root becomes an issue; every other file is imported. A broken line in the
  middle of a file is skipped and reported once, naming its line and the agent version the file
  records (an unfinished last line is not broken: it is left for the next sync).
* Transcripts are opened without blocking and must be regular files (jsonl.open_regular): a FIFO,
  socket or device that replaced a transcript after discovery is an issue ("it is a FIFO, not a
  regular file"), never a hang. Discovery itself skips non-regular files silently.
* With much to do, files are parsed by a pool of processes (both cores); SQLite serialises writes.

The package: :mod:`~pimem.sync.ingest` (parse a file into units, commit them: the core),
:mod:`~pimem.sync.pool` (worker processes), :mod:`~pimem.sync.progress`, :mod:`~pimem.sync.rules`
(an importer's rules changed: its files are parsed again once); which files exist is
:mod:`pimem.discovery`, their saved state :mod:`pimem.store.files`. Here: :class:`SyncRequest` and
:func:`run_sync`, which decides what changed and hands it on.
"""

from __future__ import annotations

import contextlib
import gc
import json
import logging
import os
import sqlite3
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field

from pimem import index
from pimem.discovery import SourceFile, discover, stat_paths
from pimem.models import SOURCES, Source, SyncStats
from pimem.paths import SourceRoots
from pimem.store import connect, set_meta, transaction
from pimem.store.files import FileState, Stamp, forget_files, load_stamps, load_stamps_for
from pimem.sync.ingest import FileOutcome, import_files, with_saved_states
from pimem.sync.pool import run_pool
from pimem.sync.progress import ProgressCallback, ProgressReporter
from pimem.sync.rules import apply_rules_versions

__all__ = ["FileOutcome", "ProgressCallback", "SourceFile", "SyncRequest", "import_files", "run_sync"]

log = logging.getLogger("pimem.sync")

POOL_MIN_FILES = 4
POOL_MIN_BYTES = 48 * 1024 * 1024


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
        apply_rules_versions(conn)   # one meta row; when an importer's rules changed, its files parse again
        with _collector_paused():
            if request.paths is None:
                stamps = load_stamps(conn)
                files = discover(request.roots, request.sources, stats.issues)
                changed, unseen = _compare(files, stamps, request.force)
                _forget_vanished(conn, unseen)
            else:  # a live update: only these files' stamps are read (cheap whatever the store's size)
                files = stat_paths(request.paths or [], request.roots, request.sources, stats.issues)
                stamps = load_stamps_for(conn, [f.key for f in files])
                changed = [f for f in files if request.force or not _unchanged(stamps.get(f.key), f)]
        # Only changed files need their saved parse state (a no-change sync reads none).
        todo = with_saved_states(conn, changed, stamps)
        stats.skipped_files = len(files) - len(todo)
        # Newest first: what the user did last becomes searchable first.
        todo.sort(key=lambda item: item[0].mtime_ns, reverse=True)
        reporter = ProgressReporter(progress, len(todo))
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


def _compare(files: list[SourceFile], stamps: dict[str, Stamp],
             force: bool) -> tuple[list[SourceFile], list[Stamp]]:
    """The files to parse, and the stamps of known files discovery did not find (maybe vanished), in one
    pass over the files (a no-change sync of a large history is this loop and discovery's)."""
    unseen = dict(stamps)
    pop = unseen.pop
    changed = []
    for f in files:
        stamp = pop(f.key, None)
        if stamp is None:
            stamp = stamps.get(f.key)   # the same path found twice (never by discover; kept exact)
        if force or stamp is None or not (stamp[1] == f.size and stamp[2] == f.mtime_ns and stamp[3] == f.inode
                                          and stamp[4] >= f.size):
            changed.append(f)
    return changed, list(unseen.values())


def _forget_vanished(conn: sqlite3.Connection, unseen: list[Stamp]) -> None:
    gone = [stamp[5] for stamp in unseen if not os.path.exists(stamp[0])]
    if not gone:
        return
    with transaction(conn):
        forget_files(conn, gone)


def _run_files(conn: sqlite3.Connection, request: SyncRequest, todo: list[tuple[SourceFile, FileState | None]],
               reporter: ProgressReporter, cancel: threading.Event) -> list[FileOutcome]:
    workers = request.workers if request.workers is not None else min(4, os.cpu_count() or 1)
    big = sum(f.size - (p.parsed_bytes if p else 0) for f, p in todo)
    if workers > 1 and len(todo) >= POOL_MIN_FILES and big >= POOL_MIN_BYTES:
        return run_pool(request.db_path, request.force, todo, workers, reporter, cancel)
    return import_files(conn, todo, force=request.force, cancel=cancel.is_set, parsed=reporter.report)

