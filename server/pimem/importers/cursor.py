"""Cursor (a VS Code fork), from two stores (docs/formats.md section 9):

* **the agent transcripts** ``~/.cursor/projects/<slug>/agent-transcripts/<id>/<id>.jsonl`` (older:
  ``agent-transcripts/<id>.jsonl``), written by the IDE's agent and the CLI ``agent``, read by
  :class:`CursorTranscriptParser`. A line is ``{role: "user"|"assistant", message: {content: [blocks]}}``
  with Claude-API blocks (``text``, ``tool_use {name, input}``, ``tool_result``), or a control line
  ``{type: "turn_ended"}``. No ids and no times: a turn's id is ``U<n>`` (the n-th typed message, the id
  the database gives it too), its time the file's modification time when pimem first read it. The
  person's words are the ``<user_query>`` of a user message when it has one (the rest is context Cursor
  adds), else its text blocks without the ``<user_info>``/``<attached_files>``… blocks. The folder is the slug decoded
  against the file system (the slug is the path with every non-alphanumeric character a ``-``: lossy),
  '' when no folder matches;
* **the IDE's database** ``<Cursor User>/globalStorage/state.vscdb`` (table ``cursorDiskKV``), read by
  :class:`CursorDatabase` (opened as pimem.foreign_db opens another program's database: no lock that
  could block Cursor, no byte changed):
  ``composerData:<composerId>`` (a conversation: ``createdAt`` ms,
  ``workspaceIdentifier.uri.fsPath``, ``fullConversationHeadersOnly[{bubbleId, type}]`` in order, 1 = user,
  2 = assistant) and ``bubbleId:<composerId>:<bubbleId>`` (a message: ``text``, ``createdAt`` ISO,
  ``toolFormerData{name, params, rawArgs}``, ``thinking``). A user bubble with text is a turn (id ``U<n>``,
  as in the transcript, so the two stores of one conversation are one session with the same turns); the
  assistant bubbles after it are its reply and tools. Orphan bubbles (not in the headers: regenerated or
  deleted) are not read.

The transcript's ``<id>`` is the composer id, and both are the session's id.
"""

from __future__ import annotations

import json
import os
import re
import sqlite3
from collections.abc import Iterator
from typing import Any

from pimem.foreign_db import open_foreign, table_names
from pimem.importers.base import (
    Chunk,
    DatabaseReader,
    FileAction,
    FileTouch,
    NotThisFormat,
    SessionInfo,
    TranscriptFiles,
    TranscriptParser,
    saved,
)
from pimem.textutil import as_dict, as_list, clean_text, iso_to_ms, nonempty_str, number_to_ms

TRANSCRIPTS_DIR = "agent-transcripts"
DATABASE_NAME = "state.vscdb"

RULES_VERSION = 1

# Cursor's file tools (IDE names and their ``_v2``s, CLI names) and what they do; the path is in one of
# :data:`PATH_KEYS`.
FILE_TOOLS: dict[str, FileAction] = {
    "read_file": "read", "read_file_v2": "read", "Read": "read",
    "edit_file": "edit", "edit_file_v2": "edit", "search_replace": "edit", "StrReplace": "edit", "Edit": "edit",
    "MultiEdit": "edit", "apply_patch": "edit",
    "write": "write", "Write": "write", "create_file": "write",
    "delete_file": "delete", "Delete": "delete",
}
PATH_KEYS = ("target_file", "targetFile", "relativeWorkspacePath", "file_path", "filePath", "path")

_USER_QUERY = re.compile(r"<user_query>(.*?)</user_query>", re.DOTALL)
_CONTEXT_BLOCK = re.compile(
    r"<(user_info|attached_files|system_reminder|additional_data|open_and_recently_viewed_files|rules|"
    r"agent_requestable_workspace_rules|project_layout|git_status|terminal_files_information)>.*?</\1>",
    re.DOTALL)
_INTERESTING = re.compile(rb'"role"\s*:\s*"(?:user|assistant)"')


class CursorFiles(TranscriptFiles):
    """``agent-transcripts/**/*.jsonl`` under the projects root, and ``state.vscdb`` (with its ``-wal``)
    under the IDE's ``globalStorage``."""

    def enters(self, parts: tuple[str, ...]) -> bool:
        # <slug> (or another extension's folder of globalStorage: listed, not entered further),
        # <slug>/agent-transcripts, <slug>/agent-transcripts/<id>
        return len(parts) == 1 or (len(parts) in (2, 3) and parts[1] == TRANSCRIPTS_DIR)

    def holds(self, parts: tuple[str, ...]) -> bool:
        return not parts or (len(parts) in (2, 3) and parts[1] == TRANSCRIPTS_DIR)

    def wants(self, name: str) -> bool:
        return name.endswith(".jsonl") or name == DATABASE_NAME

    def is_database(self, path: str) -> bool:
        return os.path.basename(path) == DATABASE_NAME

    def companions(self, name: str) -> tuple[str, ...]:
        return (name + "-wal",) if name == DATABASE_NAME else ()

    def owner_of(self, name: str) -> str | None:
        return DATABASE_NAME if name == DATABASE_NAME + "-wal" else None


FILES = CursorFiles()


def slugify(path: str) -> str:
    """Cursor's project folder name for a path: every character but ASCII letters and digits is ``-``,
    leading ones dropped."""
    return re.sub(r"[^A-Za-z0-9]", "-", path).lstrip("-")


def decode_slug(slug: str, root: str = "/", max_dirs: int = 2000) -> str:
    """The folder whose :func:`slugify` is ``slug``, found by walking down from ``root`` through the folders
    whose slugs are prefixes of it (at most ``max_dirs`` folders listed); '' when none (or several) match."""
    matches: list[str] = []
    listed = 0
    stack = [root]
    while stack and listed < max_dirs:
        folder = stack.pop()
        prefix = slugify(folder)
        try:
            with os.scandir(folder) as entries:
                children = [entry.path for entry in entries if entry.is_dir(follow_symlinks=False)]
        except OSError:
            continue
        listed += 1
        for child in children:
            child_slug = slugify(child)
            if child_slug == slug:
                matches.append(child)
            elif slug.startswith(child_slug + "-") and len(child_slug) > len(prefix):
                stack.append(child)
    return matches[0] if len(matches) == 1 else ""


def user_words(text: str) -> str:
    """What the person typed, from a user message's text (see the module doc)."""
    queries = _USER_QUERY.findall(text)
    if queries:
        return "\n".join(query.strip() for query in queries).strip()
    return _CONTEXT_BLOCK.sub("", text).strip()


def tool_touches(name: str, arguments: Any) -> list[FileTouch]:
    """The file a Cursor tool call names (its arguments as an object or a JSON string)."""
    action = FILE_TOOLS.get(name)
    if action is None:
        return []
    if isinstance(arguments, str):
        try:
            arguments = json.loads(arguments)
        except (ValueError, RecursionError):
            return []
    args = as_dict(arguments) or {}
    for key in PATH_KEYS:
        path = nonempty_str(args.get(key))
        if path:
            return [(clean_text(path), action)]
    return []


def _blocks(message: Any) -> list[dict[str, Any]]:
    content = (as_dict(message) or {}).get("content")
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    return [block for block in as_list(content) if isinstance(block, dict)]


class CursorTranscriptParser(TranscriptParser):
    """An agent transcript (see the module doc)."""

    source = "cursor"
    interesting = _INTERESTING
    interesting_in_head = True   # the record's type comes before its payload

    def __init__(self, path: str, state: dict[str, Any] | None, lookup: Any = None) -> None:
        super().__init__(path, state, lookup)
        state = state or {}
        self._info = SessionInfo.from_state(state)
        self._turns: int = saved(state, "turns", int, 0)
        self._current: str | None = saved(state, "current", str)
        try:
            # No times in the file: a turn gets the file's modification time when it is first read
            # (a live sync reads an appended turn soon after it was written).
            self._mtime: int = os.stat(path).st_mtime_ns // 1_000_000
        except OSError:
            self._mtime = 0
        if state:
            return
        folder = os.path.dirname(path)
        if os.path.basename(folder) != TRANSCRIPTS_DIR:
            folder = os.path.dirname(folder)   # agent-transcripts/<id>/<id>.jsonl
        self._info.native_id = nonempty_str(os.path.splitext(os.path.basename(path))[0])
        if os.path.basename(folder) == TRANSCRIPTS_DIR:
            self._info.cwd = decode_slug(os.path.basename(os.path.dirname(folder)))
        self._info.started_at = self._mtime

    def feed(self, record: Any, line_number: int, chunk: Chunk) -> None:
        record = as_dict(record)
        if record is None:
            chunk.note_bad_line(line_number)
            return
        role = record.get("role")
        blocks = _blocks(record.get("message"))
        if role == "user":
            texts = [str(block["text"]) for block in blocks if block.get("type") == "text"
                     and isinstance(block.get("text"), str)]
            if not texts:
                if line_number == 1 and not blocks:
                    raise NotThisFormat("not a Cursor agent transcript (no message content)")
                return   # tool results only
            text = clean_text(user_words("\n".join(texts)))
            if not text:
                return
            message_id = f"U{self._turns}"
            chunk.start_turn(message_id, self._mtime, text, self._turns, line_number)
            self._turns += 1
            self._current = message_id
        elif role == "assistant" and self._current is not None:
            parts = [str(block["text"]) for block in blocks if block.get("type") == "text"
                     and isinstance(block.get("text"), str)]
            names: list[str] = []
            files: list[FileTouch] = []
            for block in blocks:
                if block.get("type") == "tool_use":
                    name = nonempty_str(block.get("name"))
                    if name:
                        names.append(name)
                        files.extend(tool_touches(name, block.get("input")))
            chunk.add_reply(self._current, clean_text("\n".join(parts)).strip(), names, files)

    def session(self) -> SessionInfo:
        return self._info

    def state(self) -> dict[str, Any]:
        return {**self._info.to_state(), "turns": self._turns, "current": self._current}


def composer_turns(composer_id: str, composer: dict[str, Any], bubbles: dict[str, Any]) -> tuple[SessionInfo, Chunk]:
    """One conversation of the database: its session and all its turns (see the module doc). ``bubbles``:
    the conversation's bubbles by id, as stored (JSON text or already decoded)."""
    info = SessionInfo(native_id=composer_id, started_at=number_to_ms(composer.get("createdAt")))
    workspace = as_dict(composer.get("workspaceIdentifier")) or {}
    info.cwd = clean_text(nonempty_str((as_dict(workspace.get("uri")) or {}).get("fsPath")) or "")
    info.model_id = nonempty_str((as_dict(composer.get("modelConfig")) or {}).get("modelName"))
    chunk = Chunk()
    current: str | None = None
    turns = 0
    for header in as_list(composer.get("fullConversationHeadersOnly")):
        header = as_dict(header) or {}
        bubble_id = nonempty_str(header.get("bubbleId"))
        raw = bubbles.get(bubble_id) if bubble_id else None
        if isinstance(raw, str | bytes):
            try:
                raw = json.loads(raw)
            except (ValueError, RecursionError):
                chunk.note_bad_line(turns + 1)
                continue
        bubble = as_dict(raw)
        if bubble is None:
            continue   # a header whose bubble is gone
        kind = bubble.get("type", header.get("type"))
        text = bubble["text"] if isinstance(bubble.get("text"), str) else ""
        if kind == 1:
            words = clean_text(user_words(text))
            if not words:
                continue
            current = f"U{turns}"
            ts = iso_to_ms(bubble.get("createdAt")) or number_to_ms(bubble.get("createdAt")) or info.started_at or 0
            chunk.start_turn(current, ts, words, turns, None)
            turns += 1
        elif kind == 2 and current is not None:
            tool = as_dict(bubble.get("toolFormerData")) or {}
            name = nonempty_str(tool.get("name"))
            files = tool_touches(name, tool.get("params") or tool.get("rawArgs")) if name else []
            chunk.add_reply(current, clean_text(text).strip(), [name] if name else [], files)
    return info, chunk


def read_composers(conn: sqlite3.Connection,
                   seen: dict[str, list[Any]]) -> Iterator[tuple[str, list[Any], SessionInfo, Chunk]]:
    """The conversations of a ``state.vscdb`` (an open read-only connection) whose signature (header count,
    last bubble id and its size, ``lastUpdatedAt``) differs from ``seen``'s: ``(composerId, signature,
    session, chunk)``. Each conversation is read in one short statement of its own."""
    rows = conn.execute(
        "SELECT substr(key, 14), json_array_length(value, '$.fullConversationHeadersOnly'), "
        "json_extract(value, '$.fullConversationHeadersOnly[#-1].bubbleId'), json_extract(value, '$.lastUpdatedAt') "
        "FROM cursorDiskKV WHERE key >= 'composerData:' AND key < 'composerData;' AND json_valid(value)").fetchall()
    for composer_id, count, last, updated in rows:
        if not isinstance(composer_id, str) or not count:
            continue   # a draft or an empty tab
        size_row = conn.execute("SELECT length(value) FROM cursorDiskKV WHERE key = ?",
                                (f"bubbleId:{composer_id}:{last}",)).fetchone()
        signature = [count, last, size_row[0] if size_row else None, updated]
        if seen.get(composer_id) == signature:
            continue
        row = conn.execute("SELECT value FROM cursorDiskKV WHERE key = ?", (f"composerData:{composer_id}",)).fetchone()
        if row is None:
            continue
        try:
            composer = as_dict(json.loads(row[0]))
        except (ValueError, RecursionError, TypeError):
            continue
        if composer is None:
            continue
        prefix = f"bubbleId:{composer_id}:"
        bubbles = {str(key)[len(prefix):]: value for key, value in conn.execute(
            "SELECT key, value FROM cursorDiskKV WHERE key >= ? AND key < ?", (prefix, prefix[:-1] + ";"))}
        info, chunk = composer_turns(composer_id, composer, bubbles)
        yield composer_id, signature, info, chunk


class CursorDatabase(DatabaseReader):
    """The IDE's ``state.vscdb``: the conversations whose signature changed since the saved state
    (:func:`read_composers`), each as its session with all its turns."""

    def __init__(self, path: str, state: dict[str, Any] | None) -> None:
        super().__init__(path, state)
        seen = as_dict((state or {}).get("composers")) or {}
        self._seen: dict[str, list[Any]] = {key: value for key, value in seen.items() if isinstance(value, list)}

    def sessions(self) -> Iterator[tuple[SessionInfo, Chunk]]:
        with open_foreign(self.path) as conn:   # its sqlite3 errors come out as ForeignDatabaseError
            if "cursorDiskKV" not in table_names(conn):
                raise NotThisFormat("not Cursor's state.vscdb (no cursorDiskKV table)")
            for composer_id, signature, info, chunk in read_composers(conn, self._seen):
                self._seen[composer_id] = signature   # state() after this session counts it as read
                yield info, chunk

    def state(self) -> dict[str, Any]:
        return {"composers": self._seen}
