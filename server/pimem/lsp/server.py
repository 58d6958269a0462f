"""The pimem language server (pygls 2.x, stdio): an adapter between JSON-RPC and the services.

Handlers decode params (pimem.lsp.params), call a service in a worker thread, encode the result.
How messages are read, validated, answered and logged (the LSP lifecycle included) is in
pimem.lsp.runtime; this module is the handlers and the state they share.
Reads (recall, status, migration) run on a small reader pool, each thread with its own SQLite
connection; syncs run one at a time on a single writer thread, so a request is never answered from
a half-written file and never waits on "database is locked" (WAL readers do not block).
"""

from __future__ import annotations

import asyncio
import functools
import logging
import re
import sqlite3
import threading
import uuid
from collections.abc import Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

from lsprotocol import types
from pygls.exceptions import JsonRpcException, JsonRpcInvalidParams
from pygls.lsp.server import LanguageServer
from pygls.protocol import JsonRPCNotification, JsonRPCRequestMessage, default_converter

from pimem import __version__
from pimem.freetext import candidates, recall_candidates
from pimem.lsp import history, methods
from pimem.lsp.params import (
    ParamsError,
    ServerOptions,
    agent_recall_params,
    backfill_params,
    initialization_options,
    migrate_params,
    recall_params,
    status_params,
    turn_params,
    uri_to_path,
)
from pimem.lsp.runtime import CLIENT_ERRORS, REQUEST_FAILED, PimemProtocol, configure_logging, run_stdio
from pimem.migrate import (
    MigrationError,
    UnknownSession,
    migrate_codex_session,
    migrate_codex_sessions,
    normalize_folder,
    same_folder,
)
from pimem.models import SyncProgress, SyncStats
from pimem.paths import default_db_path, source_roots
from pimem.recall import format_markdown, get_turn, make_query, recall
from pimem.status import store_status
from pimem.store import StoreError, connect, connection_is_stale, store_failure
from pimem.sync import SyncRequest, run_sync
from pimem.watch import TranscriptWatcher

log = logging.getLogger("pimem.lsp")
T = TypeVar("T")
_WORD = re.compile(r"[\w.%\\:-]+|[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af]+")


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
    """Holds the server's state; the handlers are registered by :func:`create_server`."""

    def __init__(self) -> None:
        super().__init__("pimem", __version__, converter_factory=_converter, protocol_cls=PimemProtocol)
        self.options = ServerOptions()
        self.problems: list[str] = []   # bad initializationOptions, shown once the client is ready
        self.db_path = str(default_db_path())
        self.roots = source_roots()
        self.loop: asyncio.AbstractEventLoop | None = None
        self.watcher: TranscriptWatcher | None = None
        self.syncing = 0
        self._readers = ThreadPoolExecutor(max_workers=4, thread_name_prefix="pimem-read")
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
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._readers, functools.partial(function, *args))

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
        reporter = _SyncReporter(self, token, force, report)
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
        self.protocol.notify(methods.INDEX_CHANGED, {
            "turns": stats.turns, "sources": sorted(stats.changed_sources), "totalTurns": status["totalTurns"]})

    def live_update(self, paths: list[str]) -> None:
        """Called from the watcher thread with changed transcript files."""
        if self.loop is not None and not self._closed:
            self.loop.call_soon_threadsafe(lambda: self.spawn(self.sync(paths=paths, report=False)))

    def start_watching(self) -> None:
        roots = [root for source, roots in self.roots.items() if source in self.options.sources for root in roots]
        self.watcher = TranscriptWatcher(roots, self.live_update)
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


class _SyncReporter:
    """Turns a sync's progress callbacks (on the writer thread) into LSP progress and
    ``pimem/syncStatus`` notifications (on the event loop), at most four a second."""

    def __init__(self, server: PimemServer, token: str | None, force: bool, report: bool) -> None:
        self.server, self.token, self.force, self.report = server, token, force, report
        self.latest = SyncProgress(0, 0)

    def _status(self, syncing: bool, error: str | None = None) -> None:
        latest = self.latest
        status: dict[str, Any] = {
            "syncing": syncing, "filesDone": latest.files_done, "filesTotal": latest.files_total,
            "turnsIndexed": latest.indexed, "turnsToIndex": latest.to_index, "force": self.force,
            "token": self.token}
        if error is not None:
            status["error"] = error
        self.server.protocol.notify(methods.SYNC_STATUS, status)

    def started(self) -> None:
        if self.report:
            self._status(True)

    def threadsafe(self, loop: asyncio.AbstractEventLoop) -> Callable[[SyncProgress], None]:
        last = [0.0]

        def on_progress(progress: SyncProgress) -> None:
            now = loop.time()
            final = progress.files_done == progress.files_total and progress.indexed == progress.to_index
            if not final and now - last[0] < 0.25:
                return
            last[0] = now
            loop.call_soon_threadsafe(self.progress, progress)

        return on_progress

    def progress(self, progress: SyncProgress) -> None:
        self.latest = progress
        if not self.report:
            return
        if self.token is not None:
            if progress.indexing:
                message = f"indexing {progress.indexed}/{progress.to_index} turns"
                percentage = 100 * progress.indexed // progress.to_index
            else:
                message = f"{progress.files_done}/{progress.files_total} files"
                percentage = 100 * progress.files_done // progress.files_total if progress.files_total else 100
            self.server.work_done_progress.report(self.token, types.WorkDoneProgressReport(
                message=message, percentage=percentage))
        self._status(True)

    def finished(self, stats: SyncStats | None, error: str | None = None) -> None:
        """``error``: the one line of a store failure that stopped the sync (sent even for a live
        update, which reports nothing else: an automatic sync's failure must reach the user)."""
        if not self.report:
            if error is not None:
                self._status(False, error)
            return
        if self.token is not None:
            message = ("stopped: the memory store cannot be used" if error is not None
                       else "cancelled" if stats is None or stats.cancelled else f"{stats.turns} turns updated")
            self.server.work_done_progress.end(self.token, types.WorkDoneProgressEnd(message=message))
        self._status(False, error)


def _failure(method: str, error: Exception, db_path: str | None = None) -> JsonRpcException:
    if isinstance(error, ParamsError):
        return JsonRpcInvalidParams(str(error))
    if isinstance(error, StoreError | MigrationError):
        return JsonRpcException(f"{method}: {error}", code=REQUEST_FAILED)
    if isinstance(error, sqlite3.Error):
        return JsonRpcException(f"{method}: {store_failure(error, db_path)}", code=REQUEST_FAILED)
    if isinstance(error, OSError):
        return JsonRpcException(f"{method}: {error.strerror or error}", code=REQUEST_FAILED)
    log.error("%s failed: %s", method, type(error).__name__)
    return JsonRpcException(f"{method}: internal error ({type(error).__name__})", code=REQUEST_FAILED)


def _guarded(method: str) -> Callable[[Callable[..., Awaitable[Any]]], Callable[..., Awaitable[Any]]]:
    """Map every failure of a handler to a clean JSON-RPC error; let cancellation through."""

    def decorate(handler: Callable[..., Awaitable[Any]]) -> Callable[..., Awaitable[Any]]:
        @functools.wraps(handler)
        async def wrapper(ls: PimemServer, params: Any) -> Any:
            try:
                return await handler(ls, params)
            except (asyncio.CancelledError, JsonRpcException):
                raise
            except Exception as error:
                raise _failure(method, error, ls.db_path) from None

        return wrapper

    return decorate


def create_server() -> PimemServer:
    server = PimemServer()

    @server.feature(types.INITIALIZE)
    def on_initialize(ls: PimemServer, params: types.InitializeParams) -> None:
        ls.options, problems = initialization_options(params.initialization_options)
        if ls.options.db_path:
            ls.db_path = ls.options.db_path
        ls.problems = problems
        if ls.options.hover == "word":
            ls.feature(types.TEXT_DOCUMENT_HOVER)(_guarded(types.TEXT_DOCUMENT_HOVER)(hover))

    @server.feature(types.INITIALIZED)
    async def on_initialized(ls: PimemServer, _params: types.InitializedParams) -> None:
        ls.loop = asyncio.get_running_loop()
        for problem in ls.problems:
            ls.window_show_message(types.ShowMessageParams(type=types.MessageType.Error, message=f"pimem: {problem}"))
        if ls.options.auto_sync:
            ls.start_watching()
            ls.spawn(ls.sync())

    @server.feature(types.SHUTDOWN)
    def on_shutdown(ls: PimemServer, _params: Any) -> None:
        ls.close()

    @server.feature(methods.RECALL)
    @_guarded(methods.RECALL)
    async def on_recall(ls: PimemServer, params: Any) -> dict[str, Any]:
        request = recall_params(params)

        def run() -> dict[str, Any]:
            if request.text is not None:
                answer = recall_candidates(ls.connection(), request.text, request.query)
                return {"entities": answer.entities, "terms": [term.to_dict() for term in answer.terms],
                        "results": [row.to_dict() for row in answer.rows], "markdown": format_markdown(answer.rows)}
            rows = recall(ls.connection(), request.query)
            return {"entities": list(request.query.entities), "results": [row.to_dict() for row in rows],
                    "markdown": format_markdown(rows)}

        return await ls.read(run)

    @server.feature(methods.TURN)
    @_guarded(methods.TURN)
    async def on_turn(ls: PimemServer, params: Any) -> dict[str, Any]:
        turn_id = turn_params(params)
        row = await ls.read(lambda: get_turn(ls.connection(), turn_id))
        return {"turn": row.to_dict(full=True) if row is not None else None}
    @server.feature(methods.AGENT_RECALL)
    @_guarded(methods.AGENT_RECALL)
    async def on_agent_recall(ls: PimemServer, params: Any) -> dict[str, Any]:
        call = agent_recall_params(params)
        output = await ls.read(lambda: call.run(ls.connection()))
        return {**output.structured, "markdown": output.markdown}

    @server.feature(methods.BACKFILL)
    @_guarded(methods.BACKFILL)
    async def on_backfill(ls: PimemServer, params: Any) -> dict[str, Any]:
        force = backfill_params(params)
        stats = await ls.sync(force=force)
        return stats.to_dict()

    @server.feature(methods.MIGRATE_CODEX)
    @_guarded(methods.MIGRATE_CODEX)
    async def on_migrate(ls: PimemServer, params: Any) -> dict[str, Any]:
        request = migrate_params(params)
        if request.codex_id is not None:   # "Continue in Pi": one session, into the Pi folder of its cwd
            codex_id = request.codex_id

            def run_one() -> dict[str, Any]:
                try:
                    report = migrate_codex_session(codex_id, dry_run=request.dry_run)
                except UnknownSession as error:
                    raise ParamsError(methods.MIGRATE_CODEX, "sessionId", f'"sessionId": {error}') from None
                return {"reports": [report.to_dict()]}

            return await ls.read(run_one)
        folders = [path for folder in ls.workspace.folders.values() if (path := uri_to_path(folder.uri))]
        if request.folder_uri is not None:
            wanted = uri_to_path(request.folder_uri) or ""
            matching = [folder for folder in folders if same_folder(folder, wanted)]
            if not matching:
                raise ParamsError(methods.MIGRATE_CODEX, "workspaceFolder",
                                  '"workspaceFolder" is not one of the current workspace folders')
            folders = matching[:1]
        if not folders:
            raise ParamsError(methods.MIGRATE_CODEX, "workspaceFolder", "there is no workspace folder to migrate")

        def run() -> dict[str, Any]:
            reports = [migrate_codex_sessions(normalize_folder(folder), dry_run=request.dry_run) for folder in folders]
            return {"reports": [report.to_dict() for report in reports]}

        return await ls.read(run)

    @server.feature(methods.STATUS)
    @_guarded(methods.STATUS)
    async def on_status(ls: PimemServer, params: Any) -> dict[str, Any]:
        status_params(params)
        status = await ls.read(lambda: store_status(ls.connection(), ls.db_path))
        return {**status, "syncing": ls.syncing > 0}

    history.register(server, _guarded)   # pimem/sessions, pimem/session, pimem/fileHistory

    @server.feature(types.WORKSPACE_DID_CHANGE_WORKSPACE_FOLDERS)
    def on_folders_changed(ls: PimemServer, _params: types.DidChangeWorkspaceFoldersParams) -> None:
        # pygls has already applied the change to ls.workspace.folders; migrateCodex reads it.
        log.info("workspace folders: %d", len(ls.workspace.folders))

    async def hover(ls: PimemServer, params: types.HoverParams) -> types.Hover | None:
        try:
            document = ls.workspace.get_text_document(params.text_document.uri)
            line = document.lines[params.position.line] if params.position.line < len(document.lines) else ""
        except Exception:
            return None
        word = next((m.group(0) for m in _WORD.finditer(line)
                     if m.start() <= params.position.character <= m.end()), None)
        found = candidates(word) if word and len(word.strip(".:-")) >= 2 else []
        if not found:
            return None
        base = make_query([found[0].term], 3)
        try:
            rows = await ls.read(lambda: recall_candidates(ls.connection(), found, base).rows)
        except (StoreError, sqlite3.Error):   # no store to recall from: no hover (requests say why)
            return None
        if not rows:
            return None
        return types.Hover(contents=types.MarkupContent(kind=types.MarkupKind.Markdown, value=format_markdown(rows)))

    return server


def serve() -> int:
    """Run the server on stdin/stdout until ``exit``; returns the exit code (pimem.lsp.runtime).
    Logs go to stderr, never transcript text at the default level."""
    configure_logging()
    return run_stdio(create_server())

