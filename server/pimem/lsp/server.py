"""The pimem language server's state (pygls 2.x): what the handlers share.

pimem.lsp.main builds the server (this state plus the handlers) and runs it on stdio. The handlers
are in pimem.lsp.handlers (decode params, call a service, encode the result), a sync's
progress in pimem.lsp.progress, error mapping in pimem.lsp.errors; how messages are read, validated,
answered and logged (the LSP lifecycle included) is in pimem.lsp.runtime.
Reads (recall, status, migration) run on one reader thread while it is free, on a small pool when it
is busy, each thread with its own SQLite connection; syncs run one at a time on a single writer
thread, so a request is never answered from a half-written file and never waits on "database is
locked" (WAL readers do not block).
"""

from __future__ import annotations

import asyncio
import functools
import logging
import sqlite3
import threading
import uuid
from collections.abc import Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

from lsprotocol import types
from pygls.exceptions import JsonRpcException
from pygls.lsp.server import LanguageServer
from pygls.protocol import JsonRPCNotification, JsonRPCRequestMessage, default_converter

from pimem import __version__, wire
from pimem.discovery import is_history_name
from pimem.importers import TRANSCRIPT_FILES
from pimem.importers.base import TranscriptFiles
from pimem.lsp import methods
from pimem.lsp.errors import CLIENT_ERRORS
from pimem.lsp.params import ServerOptions
from pimem.lsp.progress import SyncReporter
from pimem.lsp.runtime import PimemProtocol
from pimem.models import SyncStats
from pimem.paths import default_db_path, source_roots
from pimem.status import store_status
from pimem.store import StoreError, connect, connection_is_stale
from pimem.sync import SyncRequest, run_sync
from pimem.watch import TranscriptWatcher

log = logging.getLogger("pimem.lsp")
T = TypeVar("T")


def _converter() -> Any:
    """pygls' converter, except that params of unknown (custom) methods stay plain JSON instead of
    namedtuples, so validation sees exactly what the client sent. JSON-RPC lets a request omit
    ``params``: that is None here (then InvalidParams or the defaults), not a TypeError that pygls
    would answer with InternalError and log with a traceback. Members other than these (pygls
    passed them all to the constructor: a TypeError) are ignored, as JSON-RPC allows."""
    converter = default_converter()  # type: ignore[no-untyped-call]
    converter.register_structure_hook(JsonRPCRequestMessage, lambda obj, cls: cls(
        id=obj.get("id"), method=obj.get("method"), jsonrpc=obj.get("jsonrpc"), params=obj.get("params")))
    converter.register_structure_hook(JsonRPCNotification, lambda obj, cls: cls(
        method=obj.get("method"), jsonrpc=obj.get("jsonrpc"), params=obj.get("params")))
    return converter


class PimemServer(LanguageServer):
    """Holds the server's state; the handlers are registered by :func:`pimem.lsp.main.create_server`."""

    def __init__(self) -> None:
        super().__init__("pimem", __version__, converter_factory=_converter, protocol_cls=PimemProtocol)
        self.options = ServerOptions()
        self.problems: list[str] = []   # bad initializationOptions, shown once the client is ready
        self.db_path = str(default_db_path())
        self.roots = source_roots()
        self.loop: asyncio.AbstractEventLoop | None = None
        self.watcher: TranscriptWatcher | None = None
        self.syncing = 0
        # Reads run on one thread while it is free, so that request after request finds its connection's page
        # cache warm (a pool handed them to whichever thread woke first: each connection's 16 MB cache warmed
        # apart); a read that comes while it is busy runs at once on the others.
        self._reader = ThreadPoolExecutor(max_workers=1, thread_name_prefix="pimem-read")
        self._readers = ThreadPoolExecutor(max_workers=3, thread_name_prefix="pimem-read")
        self._reader_busy = threading.Lock()   # held while self._reader runs a read
        self._writer = ThreadPoolExecutor(max_workers=1, thread_name_prefix="pimem-sync")
        self._local = threading.local()
        self._cancels: set[threading.Event] = set()
        self._tasks: set[asyncio.Future[Any]] = set()
        self._closed = False

    # -- threads and connections ------------------------------------------------------------------
    def connection(self) -> sqlite3.Connection:
        """This reader thread's own connection (SQLite connections are per thread), opened again
        when the store file was removed or replaced since (a reset, a restore) or its layout changed.
        A store a newer pimem wrote is opened for reading only (syncs are refused)."""
        conn: sqlite3.Connection | None = getattr(self._local, "conn", None)
        if conn is not None and (getattr(self._local, "path", None) != self.db_path or connection_is_stale(conn)):
            self._local.conn = None
            conn.close()
            conn = None
        if conn is None:
            conn = connect(self.db_path, for_writing=False)
            self._local.conn, self._local.path = conn, self.db_path
        return conn

    async def read(self, function: Callable[..., T], *args: Any) -> T:
        call = functools.partial(function, *args)
        if not self._reader_busy.acquire(blocking=False):
            return await asyncio.get_running_loop().run_in_executor(self._readers, call)

        def run() -> T:
            try:
                return call()
            finally:
                self._reader_busy.release()   # when the read ends, even if its request was cancelled meanwhile

        try:
            future = self._reader.submit(run)
        except BaseException:   # shut down: nothing will run it
            self._reader_busy.release()
            raise
        future.add_done_callback(lambda done: self._reader_busy.release() if done.cancelled() else None)
        return await asyncio.wrap_future(future)

    def spawn(self, awaitable: Awaitable[Any]) -> None:
        """Run in the background, keeping a reference and logging (not raising) failures."""
        task = asyncio.ensure_future(awaitable)
        self._tasks.add(task)

        def done(finished: asyncio.Future[Any]) -> None:
            self._tasks.discard(finished)
            if not finished.cancelled() and finished.exception() is not None:
                error = finished.exception()
                log.warning("background task failed: %s", type(error).__name__)

        task.add_done_callback(done)

    # -- sync ---------------------------------------------------------------------------------------
    async def sync(self, *, force: bool = False, paths: list[str] | None = None, report: bool = True) -> SyncStats:
        """Run one sync on the writer thread, with progress and notifications. If the awaiting
        request is cancelled, the sync stops at its next commit point (the store stays consistent)."""
        loop = asyncio.get_running_loop()
        cancel = threading.Event()
        self._cancels.add(cancel)
        token = await self._begin_progress(cancel) if report else None
        reporter = SyncReporter(self, token, force, report)
        request = SyncRequest(db_path=self.db_path, roots=self.roots, sources=set(self.options.sources),
                              force=force, paths=paths)

        def work() -> SyncStats:
            self.syncing += 1
            try:
                return run_sync(request, progress=reporter.threadsafe(loop), cancel=cancel)
            finally:
                self.syncing -= 1

        reporter.started()
        future = loop.run_in_executor(self._writer, work)

        def finished(done: asyncio.Future[SyncStats]) -> None:
            self._cancels.discard(cancel)
            stats = None if done.cancelled() or done.exception() else done.result()
            failure = None if done.cancelled() else done.exception()
            # The store could not be used (locked, full, read-only, damaged, newer): the client says so once.
            reporter.finished(stats, str(failure) if isinstance(failure, StoreError) else None)
            if stats is not None and stats.turns:
                self.spawn(self._announce(stats))

        future.add_done_callback(finished)
        try:
            return await asyncio.shield(future)
        except asyncio.CancelledError:
            cancel.set()
            raise

    async def _begin_progress(self, cancel: threading.Event) -> str | None:
        capabilities = self.client_capabilities
        if not (capabilities.window and capabilities.window.work_done_progress):
            return None
        token = f"pimem-sync-{uuid.uuid4()}"
        try:
            await asyncio.wait_for(self.work_done_progress.create_async(token), timeout=5)
        except Exception:  # the client refused or did not answer: sync without a progress bar
            return None
        self.work_done_progress.tokens[token].add_done_callback(
            lambda future: cancel.set() if future.cancelled() else None)
        self.work_done_progress.begin(token, types.WorkDoneProgressBegin(
            title="Pi Memory", message="syncing transcripts", percentage=0, cancellable=True))
        return token

    async def _announce(self, stats: SyncStats) -> None:
        status = await self.read(lambda: store_status(self.connection(), self.db_path))
        self.protocol.notify(methods.INDEX_CHANGED, wire.index_changed(stats, status.total_turns))

    def live_update(self, paths: list[str]) -> None:
        """Called from the watcher thread with changed transcript files."""
        if self.loop is not None and not self._closed:
            self.loop.call_soon_threadsafe(lambda: self.spawn(self.sync(paths=paths, report=False)))

    def start_watching(self) -> None:
        roots = [root for source, roots in self.roots.items() if source in self.options.sources for root in roots]
        shallow = [root for source, roots in self.roots.items() if source in self.options.sources
                   and source in TRANSCRIPT_FILES and not TRANSCRIPT_FILES[source].watch_subfolders for root in roots]
        # Roots holding other programs' folders (VS Code's workspaceStorage, Cursor's globalStorage): watched
        # only where their importer's rule enters, folder by folder (pimem.watch), not every folder below.
        guided = {root: TRANSCRIPT_FILES[source].enters for source, roots in self.roots.items()
                  if source in self.options.sources and source in TRANSCRIPT_FILES
                  and type(TRANSCRIPT_FILES[source]).enters is not TranscriptFiles.enters for root in roots}
        self.watcher = TranscriptWatcher(roots, self.live_update, is_history_name, shallow, guided)
        try:
            self.watcher.start()
        except Exception as error:  # no watching is a degraded mode, not a failure
            log.warning("live watching is off: %s", error)
            self.watcher = None

    def close(self) -> None:
        """Stop everything we started: watcher, syncs, threads. Idempotent."""
        if self._closed:
            return
        self._closed = True
        if self.watcher is not None:
            self.watcher.stop()
        for cancel in list(self._cancels):
            cancel.set()
        self._reader.shutdown(wait=False, cancel_futures=True)
        self._readers.shutdown(wait=False, cancel_futures=True)
        self._writer.shutdown(wait=False, cancel_futures=True)

    def shutdown(self) -> None:  # pygls calls this when the connection ends, with or without `exit`
        self.close()
        super().shutdown()  # type: ignore[no-untyped-call]

    def report_server_error(self, error: Exception, source: Any) -> None:
        # Out-of-band errors: log the type only (messages may quote transcript text).
        if isinstance(error, JsonRpcException) and error.code in CLIENT_ERRORS:
            return
        log.error("server error (%s): %s", getattr(source, "__name__", source), type(error).__name__)
