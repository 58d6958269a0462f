"""OpenCode sessions: the SQLite store ``<XDG_DATA_HOME or ~/.local/share>/opencode/opencode.db`` (other
release channels: ``opencode-<channel>.db``), read while OpenCode runs.

Format facts this reader relies on (docs/formats.md section 6; checked against the real OpenCode 1.18.33
run against the mock model, and the schema compiled into it):

* ``session(id, parent_id, directory, time_created, time_updated, version, …)``: ``directory`` is the cwd,
  times are Unix ms; a session with a ``parent_id`` is a sub-agent's (the ``task`` tool), whose "user"
  messages the agent wrote: not imported. A 2.x store may name the table ``session_v2``.
* 1.x messages: ``message(id, session_id, time_created, time_updated, data)`` with ``data.role`` ``user``
  or ``assistant`` (an assistant's ``parentID`` is the user message it answers; ``summary: true`` marks a
  compaction summary), and their parts ``part(id, message_id, session_id, time_created, time_updated,
  data)`` in id order: ``text`` (``synthetic: true`` when OpenCode wrote it, e.g. a compaction's
  "continue" or the output of a command the user ran), ``reasoning``, ``tool`` (``tool``, ``state.input``),
  ``file``, ``step-start``/``step-finish``, ``patch``, ``compaction``, ``subtask``.
* 2.x messages: ``session_message(id, session_id, type, seq, time_created, time_updated, data)`` in
  ``seq`` order; ``type`` ``user`` (``data.text``), ``assistant`` (``data.content[]`` of ``text``,
  ``reasoning`` and ``tool`` items: ``name``, ``state.input``), and ``synthetic``, ``system``,
  ``shell``, ``compaction``, ``model-switched``, ``agent-switched``, … which are no conversation. A
  session with rows there is read from them (the 1.x tables then are stale).
* File tools: ``read``, ``write``, ``edit``, ``multiedit`` with ``filePath`` (1.x) or ``path`` (2.x);
  ``bash`` is ``shell`` in 2.x and ``apply_patch`` is ``patch``. The text they wrote (:func:`_edits`):
  ``edit`` ``oldString`` → ``newString``, each of ``multiedit``'s ``edits``, ``write``'s ``content``
  (the whole file); the part's ``callID``. (2.x ``patch`` text is not read yet.)

What pimem makes of it: one turn per user message with typed (not synthetic) text, the assistant text
answering it as its reply (reasoning left out), tool names and file touches; ids are OpenCode's. Only
sessions whose newest time (session, message or part) is later than the last read are read again, whole.
The older JSON tree (before 1.2, ``storage/``) is read the same way, a session file at a time (its
messages and parts are not walked: a session is read again when its file changes).
"""

from __future__ import annotations

import json
import os
import sqlite3
from collections.abc import Iterator
from typing import Any

from pimem.foreign_db import open_foreign, table_names
from pimem.importers.base import (
    Chunk,
    DatabaseReader,
    EditCall,
    FileAction,
    FileTouch,
    NotThisFormat,
    SessionInfo,
    TranscriptFiles,
    TranscriptParser,
    version_hint,
)
from pimem.jsonl import open_regular
from pimem.textutil import as_dict, as_list, clean_text, nonempty_str, number_to_ms

# 2: edit spans (the text edit/multiedit/write calls wrote, pimem.editspans). 3: a write whose result
# says the file did not exist replaced nothing.
# 4: the line diff of an edit keeps indentation (a line it reindented is its own) and compares the
# lines next to the change (pimem.editspans).
# 5: the lines an edit kept next to the lines it added are stored with its spans (pimem.editspans
# ``context_of``, store layout 9).
RULES_VERSION = 5

_RECORD_MAX_BYTES = 8 * 1024 * 1024   # one message or part of the older JSON tree
FILE_TOOLS: dict[str, FileAction] = {"read": "read", "write": "write", "edit": "edit", "multiedit": "edit"}
_PATH_INPUTS = ("filePath", "path")


class OpenCodeFiles(TranscriptFiles):
    """``opencode.db`` and ``opencode-<channel>.db`` (with their ``-wal`` as companions), and the sessions of
    the older JSON tree, ``storage/session/<project>/ses_*.json`` (each read whole, with its messages and
    parts from ``storage/message`` and ``storage/part``, which are never walked: thousands of files)."""

    skip_dirs = frozenset({"message", "part", "project", "session_diff", "todo", "share", "snapshot", "log",
                           "repos", "bin", "tool-output", "worktree"})
    document_max_bytes = 16 * 1024 * 1024
    document_name = "an OpenCode session file (storage/session)"
    # The database is at the top of the data folder; its subfolders are OpenCode's logs and snapshot git
    # repositories (thousands of folders, busy): not watched live. The legacy JSON tree no longer changes.
    watch_subfolders = False

    def wants(self, name: str) -> bool:
        return (name == "opencode.db" or (name.startswith("opencode-") and name.endswith(".db"))
                or (name.startswith("ses_") and name.endswith(".json")))

    def is_database(self, path: str) -> bool:
        return path.endswith(".db") and self.wants(os.path.basename(path))

    def is_document(self, path: str) -> bool:
        return path.endswith(".json") and self.wants(os.path.basename(path))

    def companions(self, name: str) -> tuple[str, ...]:
        return (name + "-wal",)

    def owner_of(self, name: str) -> str | None:
        if name.endswith(".db-wal"):
            owner = name[: -len("-wal")]
            return owner if self.wants(owner) else None
        return None


FILES = OpenCodeFiles()


def _json(value: Any) -> dict[str, Any] | None:
    if not isinstance(value, str):
        return None
    try:
        return as_dict(json.loads(value))
    except (ValueError, RecursionError):
        return None


def _touch(name: str, tool_input: Any) -> FileTouch | None:
    action = FILE_TOOLS.get(name)
    arguments = as_dict(tool_input)
    if action is None or arguments is None:
        return None
    path = next((arguments[key] for key in _PATH_INPUTS if isinstance(arguments.get(key), str) and arguments[key]),
                None)
    return (path, action) if path is not None else None


def _edits(name: str, tool_input: Any, call_id: Any, metadata: Any = None) -> list[EditCall]:
    """The text an ``edit`` (``oldString`` → ``newString``), ``multiedit`` (each of ``edits``) or
    ``write`` (``content``, the whole file) call wrote. A ``write`` whose result's ``metadata.exists``
    is false created the file: it replaced nothing (``""``); else what it replaced is unknown."""
    arguments = as_dict(tool_input)
    if arguments is None or name not in ("edit", "multiedit", "write"):
        return []
    path = nonempty_str(arguments.get("filePath")) or nonempty_str(arguments.get("path"))
    call = nonempty_str(call_id)
    if path is None:
        return []
    if name == "write":
        content = arguments.get("content")
        created = (as_dict(metadata) or {}).get("exists") is False
        return [EditCall(path, name, call, "" if created else None, content, whole=True)] \
            if isinstance(content, str) else []
    pairs = [arguments] if name == "edit" else [edit for edit in map(as_dict, as_list(arguments.get("edits")))
                                                 if edit is not None]
    calls = []
    for pair in pairs:
        new, old = pair.get("newString"), pair.get("oldString")
        if isinstance(new, str):
            calls.append(EditCall(path, name, call, old if isinstance(old, str) else None, new))
    return calls


class _Turn:
    __slots__ = ("edits", "files", "message_id", "replies", "text", "tools", "ts")

    def __init__(self, message_id: str, ts: int, text: str) -> None:
        self.message_id, self.ts, self.text = message_id, ts, text
        self.replies: list[str] = []
        self.tools: list[str] = []
        self.files: list[FileTouch] = []
        self.edits: list[EditCall] = []

    def add(self, text: str, tool: str | None = None, touch: FileTouch | None = None,
            edits: list[EditCall] | None = None) -> None:
        if text:
            self.replies.append(text)
        if tool and tool not in self.tools:
            self.tools.append(tool)
        if touch is not None and touch not in self.files:
            self.files.append(touch)
        self.edits.extend(edits or ())


def v1_turns(messages: list[tuple[str, Any, dict[str, Any]]], parts: dict[str, list[dict[str, Any]]],
             info: SessionInfo) -> list[_Turn]:
    """The turns of a 1.x session (the same records in the database and in the older JSON tree): its
    messages (id, time created, data) in time order and each message's parts in id order."""
    turns: list[_Turn] = []
    by_id: dict[str, _Turn] = {}
    for message_id, created, message in messages:
        role = message.get("role")
        if role == "user":
            text = "\n".join(str(part["text"]) for part in parts.get(message_id, [])
                             if part.get("type") == "text" and isinstance(part.get("text"), str)
                             and not part.get("synthetic") and not part.get("ignored"))
            text = clean_text(text).strip()
            if text:
                times = as_dict(message.get("time")) or {}
                ts = number_to_ms(times.get("created")) or number_to_ms(created) or 0
                turn = by_id[message_id] = _Turn(message_id, ts, text)
                turns.append(turn)
            continue
        if role != "assistant" or message.get("summary") is True:
            continue
        if info.model_id is None:
            info.model_id = nonempty_str(message.get("modelID"))
        parent = message.get("parentID")
        target = by_id.get(parent) if isinstance(parent, str) else None
        if target is None:
            continue   # answers a message that is no turn (a synthetic prompt, a compaction)
        for part in parts.get(message_id, []):
            kind = part.get("type")
            if kind == "text" and isinstance(part.get("text"), str) and not part.get("synthetic"):
                target.add(clean_text(part["text"]))
            elif kind == "tool" and isinstance(part.get("tool"), str):
                state = as_dict(part.get("state")) or {}
                target.add("", part["tool"], _touch(part["tool"], state.get("input")),
                           _edits(part["tool"], state.get("input"), part.get("callID"), state.get("metadata")))
    return turns


def emit_turns(turns: list[_Turn], chunk: Chunk) -> None:
    for index, turn in enumerate(turns):
        chunk.start_turn(turn.message_id, turn.ts, turn.text, index, None)
        chunk.add_reply(turn.message_id, "\n".join(turn.replies), turn.tools, turn.files, turn.edits)


class OpenCodeDatabase(DatabaseReader):
    """The sessions of one ``opencode.db`` changed since the last read (``state``: each session's newest
    time, as read then)."""

    def __init__(self, path: str, state: dict[str, Any] | None) -> None:
        super().__init__(path, state)
        seen = (state or {}).get("sessions")
        self._seen: dict[str, int] = {key: value for key, value in (as_dict(seen) or {}).items()
                                      if isinstance(value, int)}

    def state(self) -> dict[str, Any]:
        return {"sessions": dict(self._seen)}

    def sessions(self) -> Iterator[tuple[SessionInfo, Chunk]]:
        with open_foreign(self.path) as conn:
            tables = table_names(conn)
            session_table = "session_v2" if "session_v2" in tables else "session"
            if session_table not in tables:
                raise NotThisFormat("not an OpenCode database (no session table)")
            columns = {str(row[1]) for row in conn.execute(f"PRAGMA table_info({session_table})")}
            if not {"id", "directory", "time_created"} <= columns:
                raise NotThisFormat(f"not an OpenCode database ({session_table} has no id, directory, time_created)")
            newest = self._newest(conn, session_table, columns, tables)
            # Sessions deleted from the database are forgotten here (their turns stay in the store).
            self._seen = {key: value for key, value in self._seen.items() if key in newest}
            for session_id, (updated, row) in newest.items():
                if self._seen.get(session_id) == updated:
                    continue
                info, chunk = self._read_session(conn, session_id, row, tables)
                self._seen[session_id] = updated
                yield info, chunk

    def _newest(self, conn: sqlite3.Connection, table: str, columns: set[str],
                tables: set[str]) -> dict[str, tuple[int, tuple[Any, ...]]]:
        """Every main session: its newest time (its own, its messages', its parts') and its row."""
        optional = [name if name in columns else "NULL" for name in ("parent_id", "time_updated", "version")]
        rows = conn.execute(f"SELECT id, directory, time_created, {', '.join(optional)} FROM {table}").fetchall()
        newest: dict[str, int] = {}
        for child in ("message", "part", "session_message"):
            if child in tables:
                for session_id, latest in conn.execute(
                        f"SELECT session_id, max(time_updated) FROM {child} GROUP BY session_id"):
                    if isinstance(latest, int):
                        newest[session_id] = max(newest.get(session_id, 0), latest)
        result: dict[str, tuple[int, tuple[Any, ...]]] = {}
        for row in rows:
            session_id, parent = row[0], row[3]
            if not isinstance(session_id, str) or parent:
                continue   # a sub-agent's session
            own = row[4] if isinstance(row[4], int) else 0
            result[session_id] = (max(own, newest.get(session_id, 0)), row)
        return result

    def _read_session(self, conn: sqlite3.Connection, session_id: str, row: tuple[Any, ...],
                      tables: set[str]) -> tuple[SessionInfo, Chunk]:
        _, directory, created, _, _, version = row
        info = SessionInfo(native_id=session_id, cwd=clean_text(directory) if isinstance(directory, str) else "",
                           started_at=number_to_ms(created), agent_version=version_hint("OpenCode", version))
        chunk = Chunk()
        conn.execute("BEGIN")   # one short read transaction: the session's rows as of one moment
        try:
            v2 = "session_message" in tables and conn.execute(
                "SELECT 1 FROM session_message WHERE session_id = ? LIMIT 1", (session_id,)).fetchone() is not None
            turns = self._v2_turns(conn, session_id, info, chunk) if v2 else self._v1_turns(conn, session_id, info,
                                                                                           chunk, tables)
        finally:
            conn.execute("COMMIT")
        emit_turns(turns, chunk)
        return info, chunk

    def _v1_turns(self, conn: sqlite3.Connection, session_id: str, info: SessionInfo, chunk: Chunk,
                  tables: set[str]) -> list[_Turn]:
        parts: dict[str, list[dict[str, Any]]] = {}
        if "part" in tables:
            for message_id, data in conn.execute(
                    "SELECT message_id, data FROM part WHERE session_id = ? ORDER BY message_id, id", (session_id,)):
                part = _json(data)
                if part is None:
                    chunk.note_bad_record()
                    continue
                parts.setdefault(message_id, []).append(part)
        messages: list[tuple[str, Any, dict[str, Any]]] = []
        for message_id, created, data in conn.execute(
                "SELECT id, time_created, data FROM message WHERE session_id = ? ORDER BY time_created, id",
                (session_id,)):
            message = _json(data)
            if message is None:
                chunk.note_bad_record()
                continue
            messages.append((message_id, created, message))
        return v1_turns(messages, parts, info)

    def _v2_turns(self, conn: sqlite3.Connection, session_id: str, info: SessionInfo, chunk: Chunk) -> list[_Turn]:
        turns: list[_Turn] = []
        current: _Turn | None = None
        for message_id, kind, created, data in conn.execute(
                "SELECT id, type, time_created, data FROM session_message WHERE session_id = ? ORDER BY seq",
                (session_id,)):
            message = _json(data)
            if message is None:
                chunk.note_bad_record()
                continue
            if kind == "user":
                text = clean_text(message["text"]).strip() if isinstance(message.get("text"), str) else ""
                current = None
                if text:
                    created_at = as_dict(message.get("time")) or {}
                    current = _Turn(message_id, number_to_ms(created_at.get("created")) or number_to_ms(created) or 0,
                                    text)
                    turns.append(current)
                continue
            if kind != "assistant" or current is None:
                continue
            if info.model_id is None:
                model = as_dict(message.get("model"))
                info.model_id = nonempty_str(model.get("id")) if model else None
            for item in as_list(message.get("content")):
                item = as_dict(item)
                if item is None:
                    continue
                if item.get("type") == "text" and isinstance(item.get("text"), str):
                    current.add(clean_text(item["text"]))
                elif item.get("type") == "tool" and isinstance(item.get("name"), str):
                    state = as_dict(item.get("state")) or {}
                    current.add("", item["name"], _touch(item["name"], state.get("input")),
                                _edits(item["name"], state.get("input"), item.get("callID") or item.get("id"),
                                       state.get("metadata")))
        return turns


def _json_files(folder: str) -> list[dict[str, Any]]:
    """The JSON objects of a folder of the older tree (one record per file), in file-name (id) order;
    None for a file that is not one."""
    try:
        names = sorted(name for name in os.listdir(folder) if name.endswith(".json"))
    except FileNotFoundError:
        return []
    records = []
    for name in names:
        try:
            with open_regular(os.path.join(folder, name)) as handle:
                data = handle.read(_RECORD_MAX_BYTES + 1)
        except FileNotFoundError:
            continue
        record = _json(data.decode("utf-8", "replace")) if len(data) <= _RECORD_MAX_BYTES else None
        records.append(record if record is not None else {})
    return records


class OpenCodeParser(TranscriptParser):
    """A session of the older JSON tree (before 1.2): ``storage/session/<project>/<id>.json``, read whole with
    its messages (``storage/message/<id>/*.json``) and their parts (``storage/part/<message id>/*.json``),
    the same records the database's ``data`` columns hold. The database itself is :class:`OpenCodeDatabase`."""

    source = "opencode"

    def __init__(self, path: str, state: dict[str, Any] | None, lookup: Any = None) -> None:
        super().__init__(path, state, lookup)
        self._info = SessionInfo.from_state(state or {})

    def feed(self, record: Any, line_number: int, chunk: Chunk) -> None:
        raise NotThisFormat("an OpenCode history is a database or a JSON tree, not JSONL")

    def feed_document(self, document: Any, chunk: Chunk) -> None:
        session = as_dict(document)
        if session is None or not isinstance(session.get("id"), str) or not session["id"].startswith("ses_"):
            raise NotThisFormat("not an OpenCode session (no ses_ id)")
        info = self._info
        info.native_id = session["id"]
        info.cwd = clean_text(session["directory"]) if isinstance(session.get("directory"), str) else ""
        info.started_at = number_to_ms((as_dict(session.get("time")) or {}).get("created"))
        info.agent_version = version_hint("OpenCode", session.get("version"))
        if session.get("parentID"):
            info.excluded = "an OpenCode sub-agent session"
            return
        storage = os.path.dirname(os.path.dirname(os.path.dirname(self.path)))
        messages: list[tuple[str, Any, dict[str, Any]]] = []
        parts: dict[str, list[dict[str, Any]]] = {}
        for message in _json_files(os.path.join(storage, "message", info.native_id)):
            message_id = message.get("id")
            if not isinstance(message_id, str) or os.sep in message_id or message_id.startswith("."):
                chunk.note_bad_record()
                continue
            messages.append((message_id, None, message))
            parts[message_id] = [part for part in _json_files(os.path.join(storage, "part", message_id)) if part]
        messages.sort(key=lambda item: (number_to_ms((as_dict(item[2].get("time")) or {}).get("created")) or 0,
                                        item[0]))
        emit_turns(v1_turns(messages, parts, info), chunk)

    def session(self) -> SessionInfo:
        return self._info

    def state(self) -> dict[str, Any]:
        return self._info.to_state()
