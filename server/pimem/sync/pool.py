"""Worker processes for a large sync: files parsed in a pool (both cores), SQLite serialising the
short writes. Takes plain values (the store path, ``force``), not the sync request."""

from __future__ import annotations

import concurrent.futures
import logging
import multiprocessing
import os
import sqlite3
import threading
from collections.abc import Iterator
from typing import Any

from pimem.discovery import SourceFile
from pimem.store import StoreError, connect
from pimem.store.files import FileState
from pimem.sync.ingest import CHUNK_BYTES, FileOutcome, import_files, with_saved_states
from pimem.sync.progress import ProgressReporter

log = logging.getLogger("pimem.sync")

_worker_conn: sqlite3.Connection | None = None
_worker_cancel: Any = None


def _exit_with_parent() -> None:
    """End this worker when the process that started it is gone. A pool's workers wait on a queue whose
    writing end they hold themselves, so a parent killed with SIGKILL (an editor ending its language
    server, a user's ``kill -9``) would leave them waiting forever. What they committed stays; the
    store is sound after an exit at any point, as after a kill of the whole process group."""
    parent = multiprocessing.parent_process()
    if parent is None:
        return

    def watch() -> None:
        parent.join()   # returns when the parent has ended (its sentinel: a pipe, a handle on Windows)
        os._exit(1)

    threading.Thread(target=watch, name="pimem-parent-watch", daemon=True).start()


def _worker_init(db_path: str, cancel_event: Any) -> None:
    global _worker_conn, _worker_cancel
    _exit_with_parent()
    logging.getLogger().setLevel(logging.WARNING)
    _worker_conn = connect(db_path)
    _worker_cancel = cancel_event


def _worker_import(files: list[SourceFile], force: bool) -> list[FileOutcome]:
    assert _worker_conn is not None
    # The saved state is read even when forced (force only decides not to resume from it): without the
    # file's revision, its first write would look like another sync's and the file would be skipped.
    jobs = with_saved_states(_worker_conn, files)
    return import_files(_worker_conn, jobs, force=force, cancel=_worker_cancel.is_set)

def batches(todo: list[tuple[SourceFile, FileState | None]]) -> Iterator[list[SourceFile]]:
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


def run_pool(db_path: str, force: bool, todo: list[tuple[SourceFile, FileState | None]], workers: int,
              reporter: ProgressReporter, cancel: threading.Event) -> list[FileOutcome]:
    """Import files in worker processes. If the pool cannot work (it failed to start, a worker
    died), the files it did not finish are imported in this process instead."""
    context = multiprocessing.get_context("spawn")
    cancel_event = context.Event()
    outcomes: list[FileOutcome] = []
    finished_paths: set[str] = set()
    broken = False
    with concurrent.futures.ProcessPoolExecutor(
        max_workers=workers, mp_context=context, initializer=_worker_init,
        initargs=(db_path, cancel_event),
    ) as pool:
        # A bounded window of submitted batches: waiting stays cheap and a cancel stops quickly.
        queue = batches(todo)
        pending: dict[concurrent.futures.Future[list[FileOutcome]], list[SourceFile]] = {}
        while True:
            while not broken and not cancel.is_set() and len(pending) < 2 * workers:
                batch = next(queue, None)
                if batch is None:
                    break
                pending[pool.submit(_worker_import, batch, force)] = batch
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
        conn = connect(db_path)
        try:
            rest = with_saved_states(conn, [f for f, _ in todo if f.key not in finished_paths])
            done = len(finished_paths)
            outcomes.extend(import_files(conn, rest, force=force, cancel=cancel.is_set,
                                         parsed=lambda count: reporter.report(done + count)))
        finally:
            conn.close()
    return outcomes

