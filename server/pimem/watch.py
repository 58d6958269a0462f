"""Live watching of the agents' transcript roots (they lie outside any editor workspace).

File-system events (inotify / FSEvents / ReadDirectoryChangesW through watchdog) are batched: a
batch is delivered 0.3 s after the last event, and at most 1 s after the first one, so a turn an
agent appends is imported within the 2 s bound even while the agent keeps writing. Unchanged trees
cost nothing; a root that does not exist yet is looked for again every 10 s (one stat).
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

log = logging.getLogger("pimem.watch")

QUIET_SECONDS = 0.3
MAX_DELAY_SECONDS = 1.0
MISSING_ROOT_RECHECK_SECONDS = 10.0
_SUFFIXES = (".jsonl", ".json", ".jsonl.zst")


def _by_suffix(name: str) -> bool:
    return name.endswith(_SUFFIXES)


class TranscriptWatcher:
    """Calls ``on_change(paths)`` from a background thread with batches of changed transcript files."""

    def __init__(self, roots: Iterable[Path], on_change: Callable[[list[str]], None],
                 wanted: Callable[[str], bool] = _by_suffix, shallow: Iterable[Path] = ()) -> None:
        """``wanted(name)``: whether a change to a file of this name may be a history's (the importers'
        names and their companions, such as a database's ``-wal``: pimem.discovery.is_history_name).
        ``shallow``: roots watched without their subfolders (a data folder whose history is at its top and
        whose subfolders are busy with other things: OpenCode's logs and snapshot repositories)."""
        self._roots = [Path(root) for root in roots]
        self._shallow = {Path(root) for root in shallow}
        self._on_change = on_change
        self._wanted = wanted
        self._pending: dict[str, None] = {}
        self._first_event = 0.0
        self._last_event = 0.0
        self._lock = threading.Lock()
        self._wake = threading.Event()
        self._stopped = threading.Event()
        self._observer: Any = None
        self._watched: set[Path] = set()
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        from watchdog.observers import Observer

        self._observer = Observer()
        self._observer.daemon = True
        self._schedule_existing_roots()
        self._observer.start()
        self._thread = threading.Thread(target=self._run, name="pimem-watch", daemon=True)
        self._thread.start()

    def _schedule_existing_roots(self) -> None:
        from watchdog.events import FileSystemEvent, FileSystemEventHandler

        watcher = self

        class Handler(FileSystemEventHandler):
            def on_any_event(self, event: FileSystemEvent) -> None:
                if event.is_directory or event.event_type in ("opened", "closed_no_write", "deleted"):
                    return
                for raw in (event.src_path, getattr(event, "dest_path", "")):
                    path = os.fsdecode(raw) if raw else ""
                    if path and watcher._wanted(os.path.basename(path)):
                        watcher.notice(path)

        for root in self._roots:
            if root in self._watched or not root.is_dir():
                continue
            try:
                self._observer.schedule(Handler(), str(root), recursive=root not in self._shallow)
                self._watched.add(root)
                log.info("watching %s", root)
            except OSError as error:  # e.g. the inotify watch limit
                log.warning("cannot watch %s: %s", root, error.strerror or error)

    def notice(self, path: str) -> None:
        now = time.monotonic()
        with self._lock:
            if not self._pending:
                self._first_event = now
            self._pending[path] = None
            self._last_event = now
        self._wake.set()

    def _run(self) -> None:
        next_root_check = time.monotonic() + MISSING_ROOT_RECHECK_SECONDS
        while not self._stopped.is_set():
            self._wake.wait(timeout=0.1 if self._pending else 1.0)
            self._wake.clear()
            now = time.monotonic()
            batch: list[str] = []
            with self._lock:
                if self._pending and (now - self._last_event >= QUIET_SECONDS
                                      or now - self._first_event >= MAX_DELAY_SECONDS):
                    batch = list(self._pending)
                    self._pending.clear()
            if batch:
                try:
                    self._on_change(batch)
                except Exception:  # the watcher must survive its consumer
                    log.exception("live update failed")
            if now >= next_root_check:
                next_root_check = now + MISSING_ROOT_RECHECK_SECONDS
                if len(self._watched) < len(self._roots):
                    self._schedule_existing_roots()

    def stop(self) -> None:
        self._stopped.set()
        self._wake.set()
        if self._observer is not None:
            self._observer.stop()
            self._observer.join(timeout=2)
        if self._thread is not None:
            self._thread.join(timeout=2)
