"""Live watching of the agents' transcript roots (they lie outside any editor workspace).

File-system events (inotify / FSEvents / ReadDirectoryChangesW through watchdog) are batched: a
batch is delivered 0.3 s after the last event, and at most 1 s after the first one, so a turn an
agent appends is imported within the 2 s bound even while the agent keeps writing. Unchanged trees
cost nothing; a root that does not exist yet is looked for again every 10 s (one stat).

A root that holds other programs' folders (VS Code's ``workspaceStorage``: every extension's data of every
workspace) is not watched recursively, which would take an inotify watch per folder of every extension and
could exhaust the user's limit (VS Code itself needs it): it is *guided* by its importer's rule of which
folders hold history (``enters``), and only those are watched, each without its subfolders (the root,
each workspace folder, its ``chatSessions``, …). Folders created later are added as they appear. Past
:data:`MAX_FOLDER_WATCHES` watches, the rest of such folders is polled every :data:`POLL_SECONDS`: their
files' size and time are compared with the last look (one ``scandir`` and a stat per file).
"""

from __future__ import annotations

import contextlib
import logging
import os
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

log = logging.getLogger("pimem.watch")

QUIET_SECONDS = 0.3
MAX_DELAY_SECONDS = 1.0
MISSING_ROOT_RECHECK_SECONDS = 10.0
_SUFFIXES = (".jsonl", ".json", ".jsonl.zst")
MAX_FOLDER_WATCHES = 4096   # folder watches of the guided roots, all together; the rest is polled
POLL_SECONDS = 10.0

Enters = Callable[[tuple[str, ...]], bool]
"""Whether the folder at these names below a guided root may hold history (TranscriptFiles.enters)."""
Listing = dict[str, tuple[int, int]]


def _by_suffix(name: str) -> bool:
    return name.endswith(_SUFFIXES)


class TranscriptWatcher:
    """Calls ``on_change(paths)`` from a background thread with batches of changed transcript files."""

    def __init__(self, roots: Iterable[Path], on_change: Callable[[list[str]], None],
                 wanted: Callable[[str], bool] = _by_suffix, shallow: Iterable[Path] = (),
                 guided: Mapping[Path, Enters] | None = None, max_folder_watches: int = MAX_FOLDER_WATCHES,
                 poll_seconds: float = POLL_SECONDS) -> None:
        """``wanted(name)``: whether a change to a file of this name may be a history's (the importers'
        names and their companions, such as a database's ``-wal``: pimem.discovery.is_history_name).
        ``shallow``: roots watched without their subfolders (a data folder whose history is at its top and
        whose subfolders are busy with other things: OpenCode's logs and snapshot repositories).
        ``guided``: roots watched folder by folder where their rule enters (see the module doc)."""
        self._roots = [Path(root) for root in roots]
        self._shallow = {Path(root) for root in shallow}
        self._guided = {Path(root): enters for root, enters in (guided or {}).items()}
        self._max_folder_watches = max_folder_watches
        self._poll_seconds = poll_seconds
        self._folder_watches: dict[str, Any] = {}    # folder -> its ObservedWatch
        self._polled: dict[str, Listing] = {}         # folder -> its wanted files at the last look
        self._new_folders: dict[str, None] = {}       # created under a guided root, to be added by _run
        self._handler: Any = None
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
                if event.is_directory:
                    if event.event_type in ("created", "moved") and watcher._guided:
                        raw = getattr(event, "dest_path", "") or event.src_path
                        watcher.folder_created(os.fsdecode(raw))
                    return
                if event.event_type in ("opened", "closed_no_write", "deleted"):
                    return
                for raw in (event.src_path, getattr(event, "dest_path", "")):
                    path = os.fsdecode(raw) if raw else ""
                    if path and watcher._wanted(os.path.basename(path)):
                        watcher.notice(path)

        self._handler = self._handler or Handler()
        for root in self._roots:
            if root in self._watched or not root.is_dir():
                continue
            if root in self._guided:
                self._watched.add(root)
                self._guide(root, root, announce=False)
                log.info("watching %s where it holds history (%d folders watched, %d polled)",
                         root, len(self._folder_watches), len(self._polled))
                continue
            try:
                self._observer.schedule(Handler(), str(root), recursive=root not in self._shallow)
                self._watched.add(root)
                log.info("watching %s", root)
            except OSError as error:  # e.g. the inotify watch limit
                log.warning("cannot watch %s: %s", root, error.strerror or error)

    def folder_created(self, path: str) -> None:
        """A folder appeared (observer thread): added by the watcher's thread (it may need watches)."""
        with self._lock:
            self._new_folders[path] = None
        self._wake.set()

    def _guided_root_of(self, path: str) -> tuple[Path, tuple[str, ...]] | None:
        for root in self._guided:
            relative = os.path.relpath(path, root)
            if relative != os.curdir and not relative.startswith(os.pardir):
                return root, tuple(Path(relative).parts)
        return None

    def _guide(self, root: Path, folder: Path, *, announce: bool) -> None:
        """Watch ``folder`` (without subfolders) and every folder below it that the root's rule enters;
        past the bound, poll them. ``announce``: a new folder, whose files may have been written before
        its watch: they are noticed."""
        enters = self._guided[root]
        start = () if folder == root else tuple(folder.relative_to(root).parts)
        stack = [(str(folder), start)]
        while stack:
            current, parts = stack.pop()
            if current in self._folder_watches or current in self._polled:
                continue
            watched = False
            if len(self._folder_watches) < self._max_folder_watches:
                try:
                    self._folder_watches[current] = self._observer.schedule(self._handler, current, recursive=False)
                    watched = True
                except OSError as error:  # e.g. the inotify watch limit: this folder and the next are polled
                    self._max_folder_watches = len(self._folder_watches)
                    log.warning("cannot watch %s (%s): it and further history folders are polled every %g s",
                                current, error.strerror or error, self._poll_seconds)
            try:
                with os.scandir(current) as entries:
                    children = list(entries)
            except OSError:
                continue
            listing: Listing = {}
            for entry in children:
                try:
                    if entry.is_dir():
                        child = (*parts, entry.name)
                        if enters(child):
                            stack.append((entry.path, child))
                    elif self._wanted(entry.name):
                        if not watched:   # a watched folder's files need no stamps
                            info = entry.stat()
                            listing[entry.name] = (info.st_size, info.st_mtime_ns)
                        if announce:
                            self.notice(entry.path)
                except OSError:
                    continue
            if not watched:
                self._polled[current] = listing

    def _add_new_folders(self) -> None:
        with self._lock:
            folders = list(self._new_folders)
            self._new_folders.clear()
        for folder in folders:
            found = self._guided_root_of(folder)
            if found is None or found[0] not in self._watched or not self._guided[found[0]](found[1]):
                continue
            # A folder created again where one was watched: the old watch went with the old folder.
            gone = self._folder_watches.pop(folder, None)
            if gone is not None:
                with contextlib.suppress(KeyError, OSError):
                    self._observer.unschedule(gone)
            self._polled.pop(folder, None)
            self._guide(found[0], Path(folder), announce=True)

    def _poll(self) -> None:
        """The polled folders' files whose size or time changed since the last look are noticed."""
        for folder, before in list(self._polled.items()):
            try:
                with os.scandir(folder) as entries:
                    children = list(entries)
            except OSError:
                del self._polled[folder]   # gone; it is added again if it comes back
                continue
            now: Listing = {}
            found = self._guided_root_of(folder)
            for entry in children:
                try:
                    if entry.is_dir():
                        if (found is not None and entry.path not in self._folder_watches
                                and entry.path not in self._polled
                                and self._guided[found[0]]((*found[1], entry.name))):
                            self.folder_created(entry.path)   # a new folder in a polled one
                    elif self._wanted(entry.name):
                        info = entry.stat()
                        now[entry.name] = (info.st_size, info.st_mtime_ns)
                        if before.get(entry.name) != now[entry.name]:
                            self.notice(entry.path)
                except OSError:
                    continue
            self._polled[folder] = now

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
        next_poll = time.monotonic() + self._poll_seconds
        while not self._stopped.is_set():
            self._wake.wait(timeout=0.1 if self._pending else 1.0)
            self._wake.clear()
            if self._new_folders:
                self._add_new_folders()
            now = time.monotonic()
            if self._polled and now >= next_poll:
                next_poll = now + self._poll_seconds
                self._poll()
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
