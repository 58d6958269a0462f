"""GitHub Copilot CLI sessions: ``$COPILOT_HOME/session-state/<sessionId>/events.jsonl`` (``~/.copilot``).

The events are the "copilot-agent" runtime's, one JSON object a line: ``{type, data, id, timestamp (ISO),
parentId}`` (docs/formats.md section 7; the same shape as the Copilot Chat extension's transcripts, which
:mod:`pimem.importers.copilot_chat` reads with :class:`CopilotEventsParser`):

* ``session.start`` ``{sessionId, copilotVersion, startTime, context: {cwd, repository, branch}}``: the
  session id, cwd and version; without it the folder name is the id and ``workspace.yaml``'s ``cwd`` the
  folder;
* ``session.resume`` ``{context: {cwd}}``: a ``--resume`` appends to the same file; its cwd when none yet;
* ``user.message`` ``{content}`` (``transformedContent``, the same with injected context, is not read): a
  turn, its id the line's ``id``. One with a ``source`` (a message the CLI itself sent: a command's
  expansion, a notification) or an ``agentId`` (a sub-agent's) is not one;
* ``assistant.message`` ``{content, toolRequests: [{toolCallId, name, arguments}], reasoningText}``: a reply
  part (the reasoning is never text) and its tool names;
* ``tool.execution_start`` ``{toolCallId, toolName, arguments}``: the same call again (its name and files
  are counted once); ``tool.execution_complete`` (the result), ``assistant.turn_*``, ``assistant.usage``,
  ``session.*`` bookkeeping and ``ephemeral`` lines are not text.

Files come from the file tools' path arguments (:data:`PATH_ARGUMENTS`) and ``apply_patch`` patches;
the text the calls wrote from :data:`EDIT_ARGUMENTS`, ``multi_replace_string_in_file`` and the patches
(:func:`tool_edits`), each call once though it is written twice.
"""

from __future__ import annotations

import json
import os
import re
from typing import Any

from pimem.importers.base import (
    Chunk,
    EditCall,
    FileAction,
    FileTouch,
    NotThisFormat,
    SessionInfo,
    TranscriptFiles,
    TranscriptParser,
    saved,
    version_hint,
)
from pimem.importers.codex import patch_edits, patch_touches
from pimem.jsonl import UnsupportedFile, open_regular
from pimem.models import Source
from pimem.textutil import as_dict, as_list, clean_text, iso_to_ms, nonempty_str


class CopilotCliFiles(TranscriptFiles):
    """``session-state/<id>/events.jsonl``; the sidecars (``workspace.yaml``, ``checkpoints/``, ``files/``…)
    are not transcripts and their folders are not walked."""

    def enters(self, parts: tuple[str, ...]) -> bool:
        return len(parts) <= 1

    def holds(self, parts: tuple[str, ...]) -> bool:
        return len(parts) == 1

    def wants(self, name: str) -> bool:
        return name == "events.jsonl"


FILES = CopilotCliFiles()

# 2: edit spans (the text edit calls wrote, pimem.editspans). 3: the line diff of an edit keeps
# indentation (a line it reindented is its own) and compares the lines next to the change (pimem.editspans).
# 4: the lines an edit kept next to the lines it added are stored with its spans (pimem.editspans
# ``context_of``, store layout 9).
RULES_VERSION = 4

# Tool name -> (argument keys that may hold its path, what it does to the file). Copilot CLI's own tools
# (view/create/edit/str_replace_editor) and the Copilot Chat agent's (read_file, create_file, …).
PATH_ARGUMENTS: dict[str, tuple[tuple[str, ...], FileAction]] = {
    "view": (("path",), "read"),
    "read_file": (("filePath", "path", "file_path"), "read"),
    "create": (("path",), "write"),
    "create_file": (("filePath", "path"), "write"),
    "edit": (("path",), "edit"),
    "str_replace_editor": (("path",), "edit"),
    "str_replace": (("path",), "edit"),
    "insert": (("path",), "edit"),
    "replace_string_in_file": (("filePath", "path"), "edit"),
    "insert_edit_into_file": (("filePath", "path"), "edit"),
    "edit_notebook_file": (("filePath",), "edit"),
}
# Tools whose arguments list several edits, each with its own path.
LIST_ARGUMENTS: dict[str, tuple[str, str, FileAction]] = {
    "multi_replace_string_in_file": ("replacements", "filePath", "edit"),
}

_INTERESTING = re.compile(
    rb'"type"\s*:\s*"(?:session\.start|session\.resume|user\.message|assistant\.message|tool\.execution_start)"')
_SIDECAR_MAX_BYTES = 64 * 1024


def _arguments(value: Any) -> dict[str, Any]:
    """A tool call's arguments: an object, or a JSON string of one (toolRequests)."""
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except ValueError:
            return {"input": value}
    return as_dict(value) or {}


def tool_touches(name: str, arguments: Any) -> list[FileTouch]:
    """The files one tool call gives, as it gives them (see the module doc)."""
    args = _arguments(arguments)
    touches: list[FileTouch] = []
    if name in PATH_ARGUMENTS:
        keys, action = PATH_ARGUMENTS[name]
        for key in keys:
            path = nonempty_str(args.get(key))
            if path:
                if name == "str_replace_editor" and args.get("command") in ("view", "create"):
                    action = "read" if args["command"] == "view" else "write"
                touches.append((path, action))
                break
    elif name in LIST_ARGUMENTS:
        list_key, path_key, action = LIST_ARGUMENTS[name]
        for item in as_list(args.get(list_key)):
            path = nonempty_str((as_dict(item) or {}).get(path_key))
            if path and (path, action) not in touches:
                touches.append((path, action))
    else:
        for value in args.values():
            if isinstance(value, str):
                touches.extend(patch_touches(value))
    return touches


# Tool name -> (path keys, replaced-text key or None, written-text key, wrote the whole file).
EDIT_ARGUMENTS: dict[str, tuple[tuple[str, ...], str | None, str, bool]] = {
    "create": (("path",), None, "file_text", True),
    "create_file": (("filePath", "path"), None, "content", True),
    "edit": (("path",), "old_str", "new_str", False),
    "str_replace": (("path",), "old_str", "new_str", False),
    "str_replace_editor": (("path",), "old_str", "new_str", False),
    "insert": (("path",), None, "new_str", False),
    "replace_string_in_file": (("filePath", "path"), "oldString", "newString", False),
}


def tool_edits(name: str, arguments: Any, call_id: Any) -> list[EditCall]:
    """The text one tool call wrote (:data:`EDIT_ARGUMENTS`, ``multi_replace_string_in_file``'s
    replacements, an ``apply_patch`` patch in any string argument)."""
    args = _arguments(arguments)
    call = nonempty_str(call_id)
    if name == "str_replace_editor" and args.get("command") == "create":
        name, args = "create", {"path": args.get("path"), "file_text": args.get("file_text")}
    if name in EDIT_ARGUMENTS:
        keys, old_key, new_key, whole = EDIT_ARGUMENTS[name]
        path = next((value for key in keys if (value := nonempty_str(args.get(key)))), None)
        new, old = args.get(new_key), args.get(old_key) if old_key else None
        if path is None or not isinstance(new, str):
            return []
        return [EditCall(path, name, call, old if isinstance(old, str) else None, new, whole)]
    if name == "multi_replace_string_in_file":
        found = []
        for item in map(as_dict, as_list(args.get("replacements"))):
            path = nonempty_str((item or {}).get("filePath"))
            new, old = (item or {}).get("newString"), (item or {}).get("oldString")
            if path and isinstance(new, str):
                found.append(EditCall(path, name, call, old if isinstance(old, str) else None, new))
        return found
    if name in PATH_ARGUMENTS:
        return []
    return [edit for value in args.values() if isinstance(value, str) for edit in patch_edits(value, name, call)]


def read_sidecar(path: str) -> str:
    """A small sidecar file's text ('' when missing, not a regular file, or larger than 64 KiB)."""
    try:
        with open_regular(path) as handle:
            data = handle.read(_SIDECAR_MAX_BYTES + 1)
    except (OSError, UnsupportedFile):
        return ""   # a sidecar that cannot be read only costs the cwd
    if len(data) > _SIDECAR_MAX_BYTES:
        return ""
    return data.decode("utf-8", "replace")


def yaml_scalar(text: str, key: str) -> str | None:
    """A top-level ``key: value`` of a flat YAML file (plain, single- or double-quoted), or None."""
    match = re.search(rf"^{re.escape(key)}:[ \t]*(.*?)[ \t]*$", text, re.MULTILINE)
    if match is None:
        return None
    value = match.group(1)
    if len(value) >= 2 and value[0] == value[-1] == "'":
        return value[1:-1].replace("''", "'") or None
    if len(value) >= 2 and value[0] == value[-1] == '"':
        try:
            decoded = json.loads(value)
        except ValueError:
            return None
        return decoded if isinstance(decoded, str) and decoded else None
    return value or None


class CopilotEventsParser(TranscriptParser):
    """The copilot-agent event stream (see the module doc); subclasses say where the id and cwd come from
    when ``session.start`` lacks them, and which product wrote it."""

    source: Source = "copilot-cli"
    interesting = _INTERESTING
    interesting_in_head = True   # the record's type comes before its payload
    product = "Copilot CLI"

    def __init__(self, path: str, state: dict[str, Any] | None, lookup: Any = None) -> None:
        super().__init__(path, state, lookup)
        state = state or {}
        self._info = SessionInfo.from_state(state)
        self._turns: int = saved(state, "turns", int, 0)
        self._current: str | None = saved(state, "current", str)
        self._seen_start: bool = saved(state, "seenStart", bool, False)
        if self._info.native_id is None:
            self._info.native_id = self.fallback_id()

    def fallback_id(self) -> str | None:
        """The session id when no ``session.start`` names it: the session folder's name."""
        return nonempty_str(os.path.basename(os.path.dirname(self.path)))

    def fallback_cwd(self) -> str:
        """The cwd when ``session.start`` gives none: ``workspace.yaml`` beside the events."""
        text = read_sidecar(os.path.join(os.path.dirname(self.path), "workspace.yaml"))
        return clean_text(yaml_scalar(text, "cwd") or yaml_scalar(text, "git_root") or "")

    def feed(self, record: Any, line_number: int, chunk: Chunk) -> None:
        record = as_dict(record)
        if record is None:
            chunk.note_bad_line(line_number)
            return
        kind = record.get("type")
        data = as_dict(record.get("data"))
        if not isinstance(kind, str) or data is None:
            if line_number == 1 and not isinstance(kind, str):
                raise NotThisFormat(f"not a {self.product} event stream (no event type on the first line)")
            chunk.note_bad_line(line_number)
            return
        if record.get("ephemeral") or record.get("agentId") is not None or data.get("agentId") is not None:
            return
        ts = iso_to_ms(record.get("timestamp"))
        if kind == "session.start":
            self._start(data, ts)
        elif kind == "session.resume" and not self._info.cwd:
            self._info.cwd = clean_text(nonempty_str((as_dict(data.get("context")) or {}).get("cwd")) or "")
        elif kind == "user.message":
            self._user(record, data, ts, line_number, chunk)
        elif kind == "assistant.message" and self._current is not None:
            text = data.get("content")
            if text is not None and not isinstance(text, str):
                raise TypeError("assistant.message content is not text")
            names: list[str] = []
            files: list[FileTouch] = []
            edits: list[EditCall] = []
            for request in as_list(data.get("toolRequests")):
                request = as_dict(request) or {}
                name = nonempty_str(request.get("name"))
                if name:
                    names.append(name)
                    files.extend(tool_touches(name, request.get("arguments")))
                    edits.extend(tool_edits(name, request.get("arguments"), request.get("toolCallId")))
            chunk.add_reply(self._current, clean_text(text or "").strip(), names, files, edits)
        elif kind == "tool.execution_start" and self._current is not None:
            name = nonempty_str(data.get("toolName"))
            if name:
                # the call its assistant.message announced, again: its edits count once (Chunk.add_reply)
                chunk.add_reply(self._current, "", [name], tool_touches(name, data.get("arguments")),
                                tool_edits(name, data.get("arguments"), data.get("toolCallId")))

    def _start(self, data: dict[str, Any], ts: int | None) -> None:
        if self._seen_start:
            return   # a resumed session repeats nothing; a second start changes nothing
        self._seen_start = True
        self._info.native_id = nonempty_str(data.get("sessionId")) or self._info.native_id
        context = as_dict(data.get("context")) or {}
        cwd = nonempty_str(context.get("cwd"))
        if cwd:
            self._info.cwd = clean_text(cwd)
        self._info.started_at = iso_to_ms(data.get("startTime")) or ts or self._info.started_at
        self._info.agent_version = version_hint(self.product, data.get("copilotVersion")) or self._info.agent_version

    def _user(self, record: dict[str, Any], data: dict[str, Any], ts: int | None, line_number: int,
              chunk: Chunk) -> None:
        if data.get("source") not in (None, "user"):
            return   # sent by the CLI, not typed
        content = data.get("content")
        if not isinstance(content, str):
            raise TypeError("user.message content is not text")
        text = clean_text(content).strip()
        if not text or self._info.native_id is None:
            return
        if not self._info.cwd:
            self._info.cwd = self.fallback_cwd()
        message_id = nonempty_str(record.get("id")) or f"L{line_number}"
        if message_id == self._current:
            return   # the same line written twice
        ts = ts or self._info.started_at or 0
        if self._info.started_at is None:
            self._info.started_at = ts
        chunk.start_turn(message_id, ts, text, self._turns, line_number)
        self._turns += 1
        self._current = message_id

    def session(self) -> SessionInfo:
        return self._info

    def state(self) -> dict[str, Any]:
        return {**self._info.to_state(), "turns": self._turns, "current": self._current,
                "seenStart": self._seen_start}


class CopilotCliParser(CopilotEventsParser):
    source = "copilot-cli"
    product = "Copilot CLI"
