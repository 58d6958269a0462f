"""Finding the agents' transcripts on disk: which files under the roots are transcripts, with their stat.

Which names are transcripts, which compressed copies give way to a plain twin, and which folders are
never entered is each importer's rule (``importers.TRANSCRIPT_FILES``); this module only walks. Used
by the sync (every root, or the few paths of a live update) and by the Codex → Pi migration.

* Symlinked directories are followed (as Pi's own listing does), but a directory is walked once per
  agent, another root of the same agent is only walked as itself, and a file reached twice (by two
  paths) is taken once, under the first path, so nothing is parsed twice.
* Only regular files are taken (a FIFO, socket or device is passed by silently); an unreadable
  directory or file becomes an issue, a missing root is not one.
* Cheap over 150k files: one ``scandir`` per directory, one stat per candidate, names checked without
  I/O (a compressed copy costs one more ``exists``).
"""

from __future__ import annotations

import contextlib
import os
import stat
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import NamedTuple

from pimem.importers import TRANSCRIPT_FILES
from pimem.importers.base import TranscriptFiles
from pimem.models import SOURCES, Source, SyncIssue, import_issue
from pimem.paths import SourceRoots
from pimem.textutil import storable_path


class SourceFile(NamedTuple):
    """A transcript file found on disk, with its stat (a tuple: discovery makes 150k of them)."""

    source: Source
    path: str
    size: int
    mtime_ns: int
    inode: int
    key: str
    """The path as stored (pimem_files, sessions, issues): see textutil.storable_path."""

    @classmethod
    def at(cls, source: Source, path: str, info: os.stat_result, rules: TranscriptFiles | None = None) -> SourceFile:
        """The file with its stat; with ``rules``, its companions' sizes and times are folded in (a WAL
        database changes in its ``-wal`` first: the sum of the sizes and the latest time change with it)."""
        size, mtime_ns = info.st_size, info.st_mtime_ns
        if rules is not None:
            directory, name = os.path.split(path)
            for companion in rules.companions(name):
                try:
                    extra = os.stat(os.path.join(directory, companion))
                except OSError:
                    continue  # absent (a database closed cleanly has none)
                size += extra.st_size
                mtime_ns = max(mtime_ns, extra.st_mtime_ns)
        return cls(source, path, size, mtime_ns, info.st_ino, storable_path(path))


def discover(roots: SourceRoots, sources: set[Source], issues: list[SyncIssue]) -> list[SourceFile]:
    """All transcript files under the roots of ``sources``, with their stat. Unreadable parts become issues."""
    found: list[SourceFile] = []
    for source in SOURCES:
        if source not in sources or source not in TRANSCRIPT_FILES:
            continue  # not asked for, or no importer yet
        rules = TRANSCRIPT_FILES[source]
        root_keys: set[tuple[int, int]] = set()
        for root in roots.for_source(source):
            with contextlib.suppress(OSError):
                info = os.stat(root)
                root_keys.add((info.st_dev, info.st_ino))
        visited: set[tuple[int, int]] = set()
        seen_files: set[tuple[int, int]] = set()
        for root in roots.for_source(source):
            root_str = str(root)
            if not os.path.isdir(root_str):
                continue  # a missing root is not an error
            for dirpath, entries in _walk(root_str, visited, root_keys - _key_set(root_str), source, rules, issues):
                with _folder_stat(dirpath) as stat_in_folder:
                    found.extend(_files(source, rules, dirpath, entries, stat_in_folder, seen_files, issues))
    return found


def _files(source: Source, rules: TranscriptFiles, dirpath: str, entries: list[os.DirEntry[str]],
           stat_in_folder: Callable[[os.DirEntry[str]], os.stat_result], seen_files: set[tuple[int, int]],
           issues: list[SyncIssue]) -> list[SourceFile]:
    """The transcripts among one folder's files, with their stat."""
    # The per-file work is what a no-change sync of a large history costs (a stat, a name test, a
    # tuple): the rules' hooks that do nothing for this source are not called per file.
    wants, plain_twin = rules.wants, rules.plain_twin
    has_twins = type(rules).plain_twin is not TranscriptFiles.plain_twin
    has_companions = type(rules).companions is not TranscriptFiles.companions
    is_reg = stat.S_ISREG
    found: list[SourceFile] = []
    for entry in entries:
        name = entry.name
        if not wants(name):
            continue
        if has_twins:
            twin = plain_twin(name)
            if twin is not None and os.path.exists(os.path.join(dirpath, twin)):
                continue
        try:
            info = stat_in_folder(entry)
        except OSError as error:
            issues.append(import_issue(source, storable_path(entry.path),
                                       f"cannot read the file ({error.strerror})"))
            continue
        if not is_reg(info.st_mode):
            continue
        file_key = (info.st_dev, info.st_ino)
        if file_key in seen_files:
            continue
        seen_files.add(file_key)
        path = entry.path
        if has_companions:
            found.append(SourceFile.at(source, path, info, rules))
        else:
            found.append(SourceFile(source, path, info.st_size, info.st_mtime_ns, info.st_ino,
                                    path if path.isascii() else storable_path(path)))
    return found


_STAT_IN_FOLDER = os.stat in os.supports_dir_fd and hasattr(os, "O_DIRECTORY")


@contextlib.contextmanager
def _folder_stat(dirpath: str) -> Iterator[Callable[[os.DirEntry[str]], os.stat_result]]:
    """How a file of this folder is stat'ed: relative to the open folder (``fstatat``: the kernel does not
    walk the whole path again for each of a folder's 400 files, a tenth of a no-change sync), or by its
    path where that is not available. Both follow symlinks, as discovery does."""
    fd = -1
    if _STAT_IN_FOLDER:
        with contextlib.suppress(OSError):
            fd = os.open(dirpath, os.O_RDONLY | os.O_DIRECTORY)
    if fd < 0:
        yield os.DirEntry.stat
        return
    try:
        yield lambda entry: os.stat(entry.name, dir_fd=fd)
    finally:
        os.close(fd)


def stat_paths(paths: list[str], roots: SourceRoots, sources: set[Source], issues: list[SyncIssue]) -> list[SourceFile]:
    """:func:`discover` for a few paths (a live update): those that are transcripts of ``sources``
    under their roots, with their stat. A path that is gone is passed by; an unreadable one is an issue."""
    files = []
    taken: set[str] = set()
    for path in paths:
        source = source_of(path, roots)
        if source is None or source not in sources or source not in TRANSCRIPT_FILES:
            continue
        rules = TRANSCRIPT_FILES[source]
        owner = rules.owner_of(os.path.basename(path))
        if owner is not None:  # a database's -wal changed: the database did
            path = os.path.join(os.path.dirname(path), owner)
        if path in taken:
            continue  # both a database and its -wal changed, or a path given twice
        root = next((str(r) for r in roots.for_source(source) if _is_under(path, str(r))), None)
        if root is None or not _wanted(rules, root, path):
            continue
        try:
            info = os.stat(path)
        except FileNotFoundError:
            continue
        except OSError as error:
            issues.append(import_issue(source, storable_path(path), f"cannot read the file ({error.strerror})"))
            continue
        if stat.S_ISREG(info.st_mode):
            taken.add(path)
            files.append(SourceFile.at(source, path, info, rules))
    return files


def is_history_name(name: str) -> bool:
    """Whether a file of this name may be (part of) some source's history: a transcript, a compressed
    copy, or a companion such as a database's ``-wal`` (what live watching passes on to a sync)."""
    return any(rules.wants(name) or rules.owner_of(name) is not None for rules in TRANSCRIPT_FILES.values())


def source_of(path: str, roots: SourceRoots) -> Source | None:
    """The agent under one of whose roots ``path`` lies."""
    for source, source_roots in roots.items():
        if any(_is_under(path, str(root)) for root in source_roots):
            return source
    return None


def _wanted(rules: TranscriptFiles, root: str, path: str) -> bool:
    """Would :func:`discover` take this file under ``root``? (It never enters a skipped folder.)"""
    dirpath, name = os.path.split(path)
    relative = os.path.relpath(dirpath, root)
    parts = () if relative == "." else Path(relative).parts
    if not rules.skip_dirs.isdisjoint(parts) or not rules.holds(parts):
        return False
    if not all(rules.enters(parts[:depth]) for depth in range(1, len(parts) + 1)):
        return False
    if not rules.wants(name):
        return False
    twin = rules.plain_twin(name)
    return twin is None or not os.path.exists(os.path.join(dirpath, twin))


def _is_under(path: str, root: str) -> bool:
    root = root.rstrip(os.sep)
    return path == root or path.startswith(root + os.sep)


def _key_set(path: str) -> set[tuple[int, int]]:
    try:
        info = os.stat(path)
    except OSError:
        return set()
    return {(info.st_dev, info.st_ino)}


def _walk(directory: str, visited: set[tuple[int, int]], other_roots: set[tuple[int, int]], source: Source,
          rules: TranscriptFiles, issues: list[SyncIssue],
          parts: tuple[str, ...] = ()) -> Iterator[tuple[str, list[os.DirEntry[str]]]]:
    """The files under ``directory`` (at ``parts`` below its root) that the rules' folders may hold, a
    folder's at once (a generator step per file, through every level of the recursion, cost more than
    the stat of the file)."""
    try:
        info = os.stat(directory)
    except OSError as error:
        issues.append(import_issue(source, storable_path(directory), f"cannot read the directory ({error.strerror})"))
        return
    key = (info.st_dev, info.st_ino)
    if key in visited or key in other_roots:
        return  # a symlink loop, a directory reached twice, or another root (walked as itself)
    visited.add(key)
    try:
        with os.scandir(directory) as entries:
            children = list(entries)
    except OSError as error:
        issues.append(import_issue(source, storable_path(directory), f"cannot read the directory ({error.strerror})"))
        return
    holds = rules.holds(parts)
    files: list[os.DirEntry[str]] = []
    folders: list[os.DirEntry[str]] = []
    for entry in children:
        try:
            is_dir = entry.is_dir()  # follows symlinks, like Pi's own listing
        except OSError:
            continue
        if is_dir:
            folders.append(entry)
        elif holds:
            files.append(entry)
    if files:
        yield directory, files
    for entry in folders:
        child = (*parts, entry.name)
        if entry.name in rules.skip_dirs or not rules.enters(child):
            continue
        yield from _walk(entry.path, visited, other_roots, source, rules, issues, child)
