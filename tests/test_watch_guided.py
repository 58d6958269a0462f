"""Live watching of a root that holds other programs' folders (VS Code's workspaceStorage): only the folders
the importer's rule enters are watched, each without subfolders, a bounded number; the rest is polled."""

from __future__ import annotations

import logging
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from pimem.discovery import is_history_name
from pimem.importers import TRANSCRIPT_FILES
from pimem.watch import TranscriptWatcher

ENTERS = TRANSCRIPT_FILES["copilot-chat"].enters


class Batches:
    def __init__(self) -> None:
        self.paths: list[str] = []
        self.changed = threading.Event()

    def __call__(self, paths: list[str]) -> None:
        self.paths.extend(paths)
        self.changed.set()

    def wait_for(self, name: str, seconds: float = 15) -> bool:
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            if any(Path(p).name == name for p in self.paths):
                return True
            self.changed.wait(0.2)
            self.changed.clear()
        return False


def workspace_storage(tmp_path: Path, workspaces: int) -> Path:
    root = tmp_path / "User" / "workspaceStorage"
    for w in range(workspaces):
        ws = root / f"ws{w}"
        (ws / "chatSessions").mkdir(parents=True)
        (ws / "GitHub.copilot-chat" / "transcripts").mkdir(parents=True)
        for busy in range(20):   # another extension's tree: never watched
            (ws / "redhat.java" / "jdt_ws" / f"d{busy}").mkdir(parents=True)
    return root


def test_only_the_folders_that_hold_chats_are_watched_and_new_ones_are_added(tmp_path: Path) -> None:
    root = workspace_storage(tmp_path, 3)
    batches = Batches()
    watcher = TranscriptWatcher([root], batches, is_history_name, guided={root: ENTERS})
    watcher.start()
    try:
        watched = set(watcher._folder_watches)
        # the root, each workspace, its chatSessions, GitHub.copilot-chat and its transcripts: 1 + 3 * 4
        assert len(watched) == 13
        assert not any("redhat.java" in folder for folder in watched)
        (root / "ws1" / "chatSessions" / "a.jsonl").write_text('{"kind":0}\n')
        assert batches.wait_for("a.jsonl")
        (root / "ws0" / "redhat.java" / "jdt_ws" / "d1" / "b.json").write_text("{}")   # not a chat folder
        # a workspace created later, its chatSessions and a log written at once (before any watch on them)
        new = root / "ws9" / "chatSessions"
        new.mkdir(parents=True)
        (new / "c.jsonl").write_text('{"kind":0}\n')
        assert batches.wait_for("c.jsonl")
        (new / "d.jsonl").write_text('{"kind":0}\n')   # now watched
        assert batches.wait_for("d.jsonl")
        assert not any(Path(p).name == "b.json" for p in batches.paths)
    finally:
        watcher.stop()


def test_past_the_bound_folders_are_polled_by_their_files_stamps(tmp_path: Path) -> None:
    root = workspace_storage(tmp_path, 4)
    log = root / "ws3" / "chatSessions" / "old.jsonl"
    log.write_text('{"kind":0}\n')
    batches = Batches()
    watcher = TranscriptWatcher([root], batches, is_history_name, guided={root: ENTERS}, max_folder_watches=5,
                                poll_seconds=0.5)
    watcher.start()
    try:
        assert len(watcher._folder_watches) == 5
        assert len(watcher._polled) == 17 - 5
        assert batches.paths == []                      # what was there before is the full sync's
        polled = next(Path(folder) for folder in watcher._polled if folder.endswith("chatSessions"))
        (polled / "e.jsonl").write_text('{"kind":0}\n')
        assert batches.wait_for("e.jsonl")
        batches.paths.clear()
        with (polled / "e.jsonl").open("a") as handle:    # an append: same name, new size
            handle.write('{"kind":2}\n')
        assert batches.wait_for("e.jsonl")
        batches.paths.clear()
        time.sleep(1.5)                                   # nothing changed: nothing noticed
        assert batches.paths == []
    finally:
        watcher.stop()


def test_when_the_system_refuses_a_watch_the_rest_is_polled_with_one_warning(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    root = workspace_storage(tmp_path, 3)
    batches = Batches()
    watcher = TranscriptWatcher([root], batches, is_history_name, guided={root: ENTERS}, poll_seconds=0.5)
    from watchdog.observers import Observer

    real_schedule = Observer.schedule
    calls = {"n": 0}

    def schedule(self: Any, handler: Any, path: str, recursive: bool = False, **kw: Any) -> Any:
        calls["n"] += 1
        if calls["n"] > 4:   # the inotify limit reached after four folders
            raise OSError(28, "No space left on device")
        return real_schedule(self, handler, path, recursive=recursive, **kw)

    with caplog.at_level(logging.WARNING, logger="pimem.watch"):
        Observer.schedule = schedule   # type: ignore[method-assign]
        try:
            watcher.start()
        finally:
            Observer.schedule = real_schedule   # type: ignore[method-assign]
    try:
        assert len(watcher._folder_watches) == 4 and len(watcher._polled) == 13 - 4
        assert calls["n"] == 5                                  # not tried again for every folder
        assert len([r for r in caplog.records if "cannot watch" in r.getMessage()]) == 1
        polled = next(Path(folder) for folder in watcher._polled if folder.endswith("transcripts"))
        (polled / "f.jsonl").write_text('{"type":"session.start"}\n')
        assert batches.wait_for("f.jsonl")
    finally:
        watcher.stop()
