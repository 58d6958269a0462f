"""VS Code's chat (GitHub Copilot Chat), from two stores under ``<User>/workspaceStorage/<wsId>/``
(docs/formats.md section 8), for VS Code, Insiders and VSCodium alike:

* **the core chat session log** ``chatSessions/<sessionId>.jsonl`` (VS Code ≥ 1.109; empty windows:
  ``globalStorage/emptyWindowChatSessions/``): a mutation log. Line 1 ``{kind: 0, v: snapshot}``, then
  ``{kind: 1, k: path, v}`` sets, ``{kind: 2, k: path, v?, i?}`` pushes (``i``: truncate the array there
  first: a request edited or undone, the ones after it dropped), ``{kind: 3, k: path}`` deletes. The
  log is replayed whole (:func:`replay_log`) into the snapshot a ``.json`` file of the older layout
  (March 2025 to 1.108) holds as it is, and read by :meth:`CopilotChatParser.feed_document`. The
  ``state.vscdb`` layout before it is not read. The folder is the sibling ``workspace.json``'s ``folder``;
* **the Copilot extension's transcripts** ``GitHub.copilot-chat/transcripts/<sessionId>.jsonl``, the
  copilot-agent event stream of :mod:`pimem.importers.copilot_cli` (kept 20 per workspace), read by
  :class:`CopilotChatTranscriptParser`.

The snapshot: ``{version, sessionId, creationDate (ms), customTitle, requests: [...]}``. A turn is one
request: its id ``requestId``, its text ``message.text`` (a plain string in old files), its time
``timestamp`` (ms). The reply is the request's ``response`` parts: markdown (a ``{value}`` without ``kind``,
or ``markdownContent``/``markdownVuln``) and ``inlineReference`` names, each run between other parts joined
as streamed (no separator) and one reply part; ``thinking``, progress and confirmation parts are not
text. Tool names are ``toolInvocationSerialized.toolId``; files are ``textEditGroup``/``codeblockUri`` uris
(edits) and the file uris of a read tool's messages (reads).

**One conversation, one session.** Both stores name the conversation by the same session id when both
have it, and the source is the same (``copilot-chat``): a transcript whose id has a chat session log in
the same workspace is not imported (the log has every request, its edits and the ones older than the
transcripts' 20). A transcript alone (VS Code 1.137 writes no ``chatSessions`` on some machines) is the
conversation.
"""

from __future__ import annotations

import os
import posixpath
import re
from typing import Any
from urllib.parse import unquote

from pimem.importers.base import (
    Chunk,
    FileAction,
    FileTouch,
    NotThisFormat,
    SessionInfo,
    TranscriptFiles,
    TranscriptParser,
    version_hint,
)
from pimem.importers.copilot_cli import CopilotEventsParser, read_sidecar
from pimem.jsonl import Line, loads, open_regular
from pimem.textutil import as_dict, as_list, clean_text, nonempty_str, number_to_ms

SESSIONS_DIR = "chatSessions"
EMPTY_WINDOW_DIR = "emptyWindowChatSessions"
TRANSCRIPTS_DIR = "transcripts"
EXTENSION_DIR = "GitHub.copilot-chat"


class CopilotChatFiles(TranscriptFiles):
    """``<wsId>/chatSessions/*.jsonl|*.json`` and ``<wsId>/GitHub.copilot-chat/transcripts/*.jsonl`` under a
    ``workspaceStorage`` root, and the files of an ``emptyWindowChatSessions`` root; no other folder of a
    workspace (other extensions' data) is walked. The logs are read whole."""

    document_max_bytes = 256 * 1024 * 1024
    document_name = "a chat session log"

    def enters(self, parts: tuple[str, ...]) -> bool:
        if len(parts) == 2:
            return parts[1] in (SESSIONS_DIR, EXTENSION_DIR)
        if len(parts) == 3:
            return parts[1:] == (EXTENSION_DIR, TRANSCRIPTS_DIR)
        return len(parts) == 1

    def holds(self, parts: tuple[str, ...]) -> bool:
        # (): the emptyWindowChatSessions root itself (a workspaceStorage root holds only folders)
        return (not parts or (len(parts) == 2 and parts[1] == SESSIONS_DIR)
                or (len(parts) == 3 and parts[1:] == (EXTENSION_DIR, TRANSCRIPTS_DIR)))

    def wants(self, name: str) -> bool:
        return name.endswith(".jsonl") or name.endswith(".json")

    def is_document(self, path: str) -> bool:
        return os.path.basename(os.path.dirname(path)) in (SESSIONS_DIR, EMPTY_WINDOW_DIR)

    def read_document(self, path: str, size: int | None = None) -> tuple[Any, int]:
        if not path.endswith(".jsonl"):
            return super().read_document(path, size)
        limit = self.document_max_bytes
        if size is not None and size > limit:
            raise NotThisFormat(f"{self.document_name} larger than {limit >> 20} MiB is not read")
        with open_regular(path) as handle:
            data = handle.read(limit + 1)
        if len(data) > limit:
            raise NotThisFormat(f"{self.document_name} larger than {limit >> 20} MiB is not read")
        return replay_log(data), len(data)


FILES = CopilotChatFiles()

RULES_VERSION = 1

# Tools whose invocation messages name the files they read.
READ_TOOLS = frozenset({"copilot_readFile", "read_file", "copilot_readNotebookCellOutput"})
_MARKDOWN_KINDS = frozenset({"markdownContent", "markdownVuln"})
_DRIVE_PATH = re.compile(r"^/[A-Za-z]:")


class LogReplay(dict[str, Any]):
    """A replayed log: the snapshot, plus ``bad_lines`` (1-based numbers of the entries that could not be
    applied: not JSON, or a path that does not exist)."""

    bad_lines: list[int]


def _is_index(step: Any) -> bool:
    return isinstance(step, int) and not isinstance(step, bool) and step >= 0


def _container(state: Any, path: list[Any]) -> Any:
    current = state
    for step in path:
        if isinstance(current, dict) and isinstance(step, str):
            current = current[step]
        elif isinstance(current, list) and _is_index(step):
            current = current[step]   # IndexError past the end
        else:
            raise KeyError(step)
    return current


def _assign(target: Any, step: Any, value: Any, delete: bool) -> None:
    if isinstance(target, dict) and isinstance(step, str):
        if delete:
            target.pop(step, None)
        else:
            target[step] = value
    elif isinstance(target, list) and _is_index(step) and step < len(target):
        target[step] = None if delete else value
    elif isinstance(target, list) and step == len(target) and not delete:
        target.append(value)
    else:
        raise KeyError(step)


def replay_log(data: bytes) -> LogReplay:
    """The snapshot a chat session mutation log ends in (VS Code's ``ObjectMutationLog.read``), entries
    that cannot be applied skipped and counted. NotThisFormat when no line is an initial snapshot."""
    state: Any = None
    bad: list[int] = []
    for number, raw in enumerate(data.split(b"\n"), start=1):
        if not raw.strip():
            continue
        try:
            entry = loads(raw)
        except (ValueError, RecursionError):
            bad.append(number)
            continue
        entry = as_dict(entry)
        kind = entry.get("kind") if entry is not None else None
        if entry is None or kind not in (0, 1, 2, 3):
            bad.append(number)
            continue
        if kind == 0:
            state = entry.get("v")
            continue
        path = entry.get("k")
        if state is None or not isinstance(path, list):
            bad.append(number)
            continue
        try:
            if kind == 2:
                if not path:
                    raise KeyError("root")
                parent = _container(state, path[:-1])
                step = path[-1]
                array = parent.get(step) if isinstance(parent, dict) else _container(parent, [step])
                if array is None:   # VS Code pushes into a missing array by creating it
                    array = []
                    _assign(parent, step, array, False)
                if not isinstance(array, list):
                    raise KeyError(step)
                start = entry.get("i")
                if _is_index(start):
                    del array[start:]
                array.extend(as_list(entry.get("v")))
            elif not path:
                if kind == 3:
                    raise KeyError("root")
                state = entry.get("v")
            else:
                _assign(_container(state, path[:-1]), path[-1], entry.get("v"), kind == 3)
        except (KeyError, IndexError, TypeError):
            bad.append(number)
    if as_dict(state) is None:
        raise NotThisFormat("not a chat session log (no initial snapshot line)")
    replay = LogReplay(state)
    replay.bad_lines = bad
    return replay


def uri_path(value: Any) -> str | None:
    """The local path of a ``file`` URI, given as a string or as URI components (``{scheme, path}``);
    ``c:\\…`` for a Windows drive. None for any other scheme."""
    if isinstance(value, str):
        if not value.startswith("file://"):
            return None
        rest = value[len("file://"):].split("#", 1)[0].split("?", 1)[0]
        slash = rest.find("/")
        path = unquote(rest[slash:]) if slash >= 0 else ""
    else:
        components = as_dict(value)
        if components is None or components.get("scheme") != "file":
            return None
        raw = nonempty_str(components.get("path")) or nonempty_str(components.get("fsPath"))
        if raw is None:
            return None
        path = raw
    if not path:
        return None
    if _DRIVE_PATH.match(path):
        return path[1:].replace("/", "\\")
    return clean_text(path)


def _markdown(part: dict[str, Any]) -> str | None:
    kind = part.get("kind")
    if kind is None and isinstance(part.get("value"), str):
        return str(part["value"])
    if kind in _MARKDOWN_KINDS:
        content = as_dict(part.get("content")) or {}
        value = content.get("value")
        return value if isinstance(value, str) else ""
    if kind == "inlineReference":
        reference = as_dict(part.get("inlineReference")) or {}
        name = nonempty_str(part.get("name")) or nonempty_str(reference.get("name"))
        if name is None:
            location = as_dict(reference.get("uri")) or reference
            path = uri_path(location)
            name = posixpath.basename(path.replace("\\", "/")) if path else None
        return f"`{name}`" if name else ""
    return None


def _message_uris(part: dict[str, Any]) -> list[str]:
    paths: list[str] = []
    for key in ("pastTenseMessage", "invocationMessage"):
        message = as_dict(part.get(key)) or {}
        for value in (as_dict(message.get("uris")) or {}).values():
            path = uri_path(value)
            if path and path not in paths:
                paths.append(path)
        if paths:
            break
    return paths


def response_of(response: Any) -> tuple[list[str], list[str], list[FileTouch]]:
    """A request's reply parts, tool names and file touches (see the module doc)."""
    parts: list[str] = []
    names: list[str] = []
    files: list[FileTouch] = []
    run: list[str] = []

    def close_run() -> None:
        text = clean_text("".join(run)).strip()
        if text:
            parts.append(text)
        run.clear()

    for part in as_list(response):
        part = as_dict(part)
        if part is None:
            continue
        text = _markdown(part)
        if text is not None:
            run.append(text)
            continue
        kind = part.get("kind")
        if kind in ("thinking", "progressMessage", "progressTask", "progressTaskSerialized", "undoStop",
                    "prepareToolInvocation", "codeCitation", "warning", "confirmation", "elicitation"):
            continue   # not reply text, and not a break in it
        close_run()
        touch: tuple[str | None, FileAction] = (None, "edit")
        if kind in ("toolInvocation", "toolInvocationSerialized"):
            name = nonempty_str(part.get("toolId"))
            if name and name not in names:
                names.append(name)
            if name in READ_TOOLS:
                for path in _message_uris(part):
                    if (path, "read") not in files:
                        files.append((path, "read"))
        elif kind in ("textEditGroup", "notebookEditGroup", "codeblockUri"):
            touch = (uri_path(part.get("uri")), "edit")
        if touch[0] and (touch[0], touch[1]) not in files:
            files.append((touch[0], touch[1]))
    close_run()
    return parts, names, files


def request_text(message: Any) -> str:
    """What the person typed: ``message.text`` (old files: the message is the string)."""
    if isinstance(message, str):
        return clean_text(message).strip()
    message = as_dict(message)
    if message is None:
        return ""
    text = message.get("text")
    if not isinstance(text, str):
        texts = [str(part["text"]) for part in as_list(message.get("parts"))
                 if isinstance(as_dict(part), dict) and isinstance(part.get("text"), str)]
        text = "".join(texts)
    return clean_text(text).strip()


def workspace_folder(workspace_dir: str) -> str:
    """The folder of a workspace storage directory: ``workspace.json``'s ``folder`` (a file URI); '' for a
    multi-root workspace, a remote folder or none."""
    text = read_sidecar(os.path.join(workspace_dir, "workspace.json"))
    if not text:
        return ""
    try:
        value = as_dict(loads(text.encode("utf-8")))
    except (ValueError, RecursionError):
        return ""
    return uri_path((value or {}).get("folder")) or ""


class CopilotChatParser(TranscriptParser):
    """A file of either store: a chat session log or ``.json`` snapshot (read whole,
    :meth:`feed_document`) or an extension transcript (read line by line by a
    :class:`CopilotChatTranscriptParser`, to which this one hands its lines)."""

    source = "copilot-chat"

    def __init__(self, path: str, state: dict[str, Any] | None, lookup: Any = None) -> None:
        super().__init__(path, state, lookup)
        self._info = SessionInfo.from_state(state or {})
        self._events = None if FILES.is_document(path) else CopilotChatTranscriptParser(path, state, lookup)
        self.interesting = self._events.interesting if self._events is not None else None

    def wants(self, line: Line) -> bool:
        return self._events.wants(line) if self._events is not None else False

    def feed(self, record: Any, line_number: int, chunk: Chunk) -> None:
        if self._events is None:
            raise NotThisFormat("a chat session log is read whole")
        self._events.feed(record, line_number, chunk)

    def feed_document(self, document: Any, chunk: Chunk) -> None:
        if self._events is not None:
            raise NotThisFormat("a Copilot Chat transcript is JSONL, not one document")
        snapshot = as_dict(document)
        if snapshot is None or not isinstance(snapshot.get("requests"), list):
            raise NotThisFormat('a chat session needs "requests"')
        for number in getattr(document, "bad_lines", []):
            chunk.note_bad_line(number)
        version = snapshot.get("version")
        self._info.agent_version = version_hint("VS Code chat session format", str(version)) if isinstance(
            version, int) and not isinstance(version, bool) else None
        stem = os.path.splitext(os.path.basename(self.path))[0]
        self._info.native_id = clean_text(nonempty_str(snapshot.get("sessionId")) or stem)
        self._info.started_at = number_to_ms(snapshot.get("creationDate"))
        folder = os.path.dirname(self.path)
        if os.path.basename(folder) == SESSIONS_DIR:
            self._info.cwd = workspace_folder(os.path.dirname(folder))
        index = 0
        for request in snapshot["requests"]:
            request = as_dict(request)
            if request is None:
                continue
            request_id = nonempty_str(request.get("requestId"))
            text = request_text(request.get("message"))
            if request_id is None or not text or request_id in chunk.turns:
                continue
            ts = number_to_ms(request.get("timestamp")) or self._info.started_at or 0
            if self._info.started_at is None:
                self._info.started_at = ts
            if self._info.model_id is None:
                self._info.model_id = nonempty_str(request.get("modelId"))
            chunk.start_turn(clean_text(request_id), ts, text, index, None)
            parts, names, files = response_of(request.get("response"))
            chunk.add_reply(clean_text(request_id), "\n".join(parts), names, files)
            index += 1

    def session(self) -> SessionInfo:
        return self._events.session() if self._events is not None else self._info

    def state(self) -> dict[str, Any]:
        return self._events.state() if self._events is not None else self._info.to_state()


class CopilotChatTranscriptParser(CopilotEventsParser):
    """The Copilot extension's transcript of a conversation: the copilot-agent events. Excluded when the
    chat session log of the same id is in the same workspace (see the module doc)."""

    source = "copilot-chat"
    product = "Copilot Chat"

    def __init__(self, path: str, state: dict[str, Any] | None, lookup: Any = None) -> None:
        super().__init__(path, state, lookup)
        if state is None:
            self._exclude_if_logged(self._info.native_id)

    def _workspace_dir(self) -> str:
        return os.path.dirname(os.path.dirname(os.path.dirname(self.path)))

    def _exclude_if_logged(self, session_id: str | None) -> None:
        if not session_id or "/" in session_id or "\\" in session_id:
            return   # not a file name (an id from the file is not trusted as a path)
        sessions = os.path.join(self._workspace_dir(), SESSIONS_DIR)
        if any(os.path.exists(os.path.join(sessions, session_id + ext)) for ext in (".jsonl", ".json")):
            self._info.excluded = "a Copilot Chat transcript whose chat session log is read instead"

    def fallback_id(self) -> str | None:
        return nonempty_str(os.path.splitext(os.path.basename(self.path))[0])

    def fallback_cwd(self) -> str:
        return workspace_folder(self._workspace_dir())

    def feed(self, record: Any, line_number: int, chunk: Chunk) -> None:
        if self._info.excluded:
            return
        before = self._info.native_id
        super().feed(record, line_number, chunk)
        if self._info.native_id != before:
            self._exclude_if_logged(self._info.native_id)
            if self._info.excluded:
                chunk.turns.clear()
