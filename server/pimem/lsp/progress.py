"""A sync's progress as the client sees it: LSP work-done progress (``$/progress``, cancellable) and
the ``pimem/syncStatus`` notification, sent from the event loop at most four times a second."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import TYPE_CHECKING

from lsprotocol import types

from pimem import wire
from pimem.lsp import methods
from pimem.models import SyncProgress, SyncStats

if TYPE_CHECKING:   # the type only: the server creates its reporters
    from pimem.lsp.server import PimemServer


class SyncReporter:
    """Turns a sync's progress callbacks (on the writer thread) into LSP progress and
    ``pimem/syncStatus`` notifications (on the event loop), at most four a second."""

    def __init__(self, server: PimemServer, token: str | None, force: bool, report: bool) -> None:
        self.server, self.token, self.force, self.report = server, token, force, report
        self.latest = SyncProgress(0, 0)

    def _status(self, syncing: bool) -> None:
        self.server.protocol.notify(methods.SYNC_STATUS, wire.sync_status(
            self.latest, syncing=syncing, force=self.force, token=self.token))

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

    def finished(self, stats: SyncStats | None) -> None:
        if not self.report:
            return
        if self.token is not None:
            message = "cancelled" if stats is None or stats.cancelled else f"{stats.turns} turns updated"
            self.server.work_done_progress.end(self.token, types.WorkDoneProgressEnd(message=message))
        self._status(False)
