"""The handlers of the pimem language server: each decodes its params (:mod:`pimem.lsp.params`), calls a
service on a reader thread or the sync on the writer thread (:class:`pimem.lsp.server.PimemServer`),
and encodes the result (:mod:`pimem.wire`); a failure becomes a one-line error (:mod:`pimem.lsp.errors`).
"""

from __future__ import annotations

import asyncio
import logging
import sqlite3
import threading
from pathlib import Path
from typing import Any

from lsprotocol import types

from pimem import wire
from pimem.lsp import methods
from pimem.lsp.errors import guarded
from pimem.lsp.params import (
    ParamsError,
    agent_recall_params,
    initialization_options,
    migrate_params,
    recall_params,
    sources_params,
    status_params,
    sync_params,
    turn_params,
    uri_to_path,
)
from pimem.lsp.server import PimemServer
from pimem.migrate import UnknownSession, migrate_codex_session, migrate_codex_sessions
from pimem.paths import normalize_folder, same_folder
from pimem.recall import get_turn, make_query, recall_page
from pimem.recall.format import format_markdown
from pimem.recall.freetext import candidates, recall_conversations, word_at
from pimem.share.scope import recall_scoped, recall_scoped_text
from pimem.status import source_states, store_status
from pimem.store import StoreError

log = logging.getLogger("pimem.lsp")


def register(server: PimemServer) -> None:
    """Register every handler of the server on ``server``."""

    @server.feature(types.INITIALIZE)
    def on_initialize(ls: PimemServer, params: types.InitializeParams) -> None:
        ls.options, problems = initialization_options(params.initialization_options)
        if ls.options.db_path:
            ls.db_path = ls.options.db_path
        ls.problems = problems
        if ls.options.hover == "word":
            ls.feature(types.TEXT_DOCUMENT_HOVER)(guarded(types.TEXT_DOCUMENT_HOVER)(hover))

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
    @guarded(methods.RECALL)
    async def on_recall(ls: PimemServer, params: Any) -> dict[str, Any]:
        request = recall_params(params)

        def run() -> dict[str, Any]:
            if request.scope != "local":
                return scoped()
            if request.text is not None:
                answer = recall_conversations(ls.connection(), request.text, request.query)
                return {**wire.recall_answer(answer.entities, answer.rows, answer.terms, answer.total,
                                             answer.total_capped),
                        "markdown": format_markdown(answer.rows)}
            page = recall_page(ls.connection(), request.query)
            return {**wire.recall_answer(request.query.entities, page.rows, None, page.total, page.total_capped),
                    "markdown": format_markdown(page.rows)}

        def scoped() -> dict[str, Any]:
            # The shared part runs under its own deadline (pimem.share.scope): local rows are never held back.
            if request.text is not None:
                answer, report = recall_scoped_text(ls.connection(), Path(ls.db_path), request.text, request.query,
                                                    request.scope)
                result = wire.recall_answer(answer.entities, answer.rows, answer.terms, answer.total,
                                            answer.total_capped)
                rows = answer.rows
            else:
                page, report = recall_scoped(ls.connection(), Path(ls.db_path), request.query, request.scope)
                result = wire.recall_answer(request.query.entities, page.rows, None, page.total, page.total_capped)
                rows = page.rows
            if report is not None:
                result["shared"] = wire.shared_report(report)
            return {**result, "markdown": format_markdown(rows)}

        return await ls.read(run)

    @server.feature(methods.TURN)
    @guarded(methods.TURN)
    async def on_turn(ls: PimemServer, params: Any) -> dict[str, Any]:
        turn_id = turn_params(params)
        row = await ls.read(lambda: get_turn(ls.connection(), turn_id))
        return {"turn": wire.turn_row(row) if row is not None else None}

    @server.feature(methods.AGENT_RECALL)
    @guarded(methods.AGENT_RECALL)
    async def on_agent_recall(ls: PimemServer, params: Any) -> dict[str, Any]:
        call = agent_recall_params(params)
        cancel = threading.Event()
        try:
            output = await ls.read(lambda: call.run(ls.connection(), cancel))
        except asyncio.CancelledError:   # $/cancelRequest: the reader stops at the next field
            cancel.set()
            raise
        return {**output.structured, "markdown": output.markdown}

    @server.feature(methods.SYNC)
    @guarded(methods.SYNC)
    async def on_sync(ls: PimemServer, params: Any) -> dict[str, Any]:
        stats = await ls.sync(force=sync_params(params))
        return wire.sync_stats(stats)

    @server.feature(methods.BACKFILL)
    @guarded(methods.BACKFILL)
    async def on_backfill(ls: PimemServer, params: Any) -> dict[str, Any]:
        """Deprecated alias of pimem/sync (docs/lsp-extensions.md), kept for older clients."""
        stats = await ls.sync(force=sync_params(params, methods.BACKFILL))
        return wire.sync_stats(stats)

    @server.feature(methods.MIGRATE_CODEX)
    @guarded(methods.MIGRATE_CODEX)
    async def on_migrate(ls: PimemServer, params: Any) -> dict[str, Any]:
        request = migrate_params(params)
        if request.codex_id is not None:   # "Continue in Pi": one session, into the Pi folder of its cwd
            codex_id = request.codex_id

            def run_one() -> dict[str, Any]:
                try:
                    report = migrate_codex_session(codex_id, dry_run=request.dry_run)
                except UnknownSession as error:
                    raise ParamsError(methods.MIGRATE_CODEX, "sessionId", f'"sessionId": {error}') from None
                return {"reports": [wire.migration_report(report)]}

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
            return {"reports": [wire.migration_report(report) for report in reports]}

        return await ls.read(run)

    @server.feature(methods.STATUS)
    @guarded(methods.STATUS)
    async def on_status(ls: PimemServer, params: Any) -> dict[str, Any]:
        status_params(params)
        status = await ls.read(lambda: store_status(ls.connection(), ls.db_path))
        return wire.store_status(status, syncing=ls.syncing > 0)

    @server.feature(methods.SOURCES)
    @guarded(methods.SOURCES)
    async def on_sources(ls: PimemServer, params: Any) -> dict[str, Any]:
        sources_params(params)
        return wire.source_states(await ls.read(lambda: source_states(ls.roots, ls.options.sources)))

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
        word = word_at(line, params.position.character)
        found = candidates(word) if word and len(word.strip(".:-")) >= 2 else []
        if not found:
            return None
        base = make_query([found[0].term], 3)
        try:
            rows = await ls.read(lambda: recall_conversations(ls.connection(), found, base).rows)
        except (StoreError, sqlite3.Error):   # no store to recall from: no hover (requests say why)
            return None
        if not rows:
            return None
        return types.Hover(contents=types.MarkupContent(kind=types.MarkupKind.Markdown, value=format_markdown(rows)))
