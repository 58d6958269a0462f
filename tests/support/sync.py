"""A sync of a test history that fails instead of hanging the suite."""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from pimem.models import SyncStats
from pimem.sync import SyncRequest, run_sync

from .history import roots_under

SYNC_TIMEOUT = 180.0
T = TypeVar("T")


def run_guarded(function: Callable[[], T], *, timeout: float = SYNC_TIMEOUT,
                on_timeout: Callable[[], object] | None = None) -> T:
    """``function()`` in a thread; an AssertionError if it has not returned within ``timeout`` seconds
    (``on_timeout`` runs first, e.g. to unblock it). Its exception, if any, is raised here."""
    result: dict[str, Any] = {}

    def work() -> None:
        try:
            result["value"] = function()
        except BaseException as error:  # handed to the caller below
            result["error"] = error

    thread = threading.Thread(target=work, daemon=True, name="guarded-sync")
    thread.start()
    thread.join(timeout)
    if thread.is_alive():
        if on_timeout is not None:
            on_timeout()
        raise AssertionError(f"the sync did not return within {timeout:.0f} s")
    if "error" in result:
        raise result["error"]
    value: T = result["value"]
    return value


def sync(base: Path, db: Path, *, timeout: float = SYNC_TIMEOUT, **kwargs: Any) -> SyncStats:
    """``run_sync`` over the agent roots under ``base`` into ``db`` (``kwargs``: more SyncRequest
    fields), failing (not hanging) if it does not return."""
    return run_guarded(lambda: run_sync(SyncRequest(db_path=str(db), roots=roots_under(base), **kwargs)),
                       timeout=timeout)
