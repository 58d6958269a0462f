"""Progress of a sync, throttled for the client (files parsed, then docs indexed)."""

from __future__ import annotations

import time
from collections.abc import Callable

from pimem.models import SyncProgress

ProgressCallback = Callable[[SyncProgress], None]


class ProgressReporter:
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
