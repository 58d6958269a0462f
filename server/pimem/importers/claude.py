"""Claude Code sessions: ``<config dir>/projects/<project-dir>/<sessionId>.jsonl``.

Format facts this parser relies on (docs/formats.md section 1):

* only ``type: "user"`` / ``"assistant"`` lines carry conversation, plus one kind of ``attachment``
  (below); every other type (summary, file-history-snapshot, other attachments, progress,
  queue-operation, api-request…) is bookkeeping, and new types appear every release, so anything
  unknown is skipped silently;
* a ``user`` line is a human prompt unless it is ``isMeta``, ``isSidechain``, ``isCompactSummary``,
  only tool results, or client markup (slash/local commands, task notifications, bash mode,
  compaction continuations, interruptions); ``<system-reminder>`` blocks are dropped, the rest of the
  prompt kept;
* assistant responses are split one content block per line; each text line is one reply part, and
  it belongs to the latest turn before it, with the three exceptions below;
* sub-agent transcripts (``subagents/agent-*.jsonl``, legacy ``agent-*.jsonl``) are not
  transcripts of their own (:data:`FILES`: discovery skips them); their lines are also ``isSidechain``;
* file tools are ``tool_use`` blocks (:data:`FILE_TOOLS`): ``Read``, ``Write``, ``Edit``, ``MultiEdit``
  with ``input.file_path``, ``NotebookEdit`` with ``input.notebook_path`` (absolute paths as Claude
  Code requires; a call the user denied is still a call the turn made, and is recorded);
* the text edit calls wrote (:func:`edit_calls`, the line memory of pimem.lineblame): ``Edit``
  ``old_string`` → ``new_string``, each of ``MultiEdit``'s ``edits``, ``Write``'s ``content`` (the whole
  file), ``NotebookEdit``'s ``new_source`` (the replaced cell is not in the call); the ``tool_use`` id;
  a ``Write``'s result line (``toolUseResult`` ``type: update`` with ``originalFile``, the file before
  it; ``type: create``) gives the text it replaced, so a rewrite claims only the lines it changed.

What the interactive client (2.1.x) adds, and what pimem makes of it:

* **A prompt typed while a tool runs** is written only as an ``attachment`` of type
  ``queued_command`` (``commandMode: "prompt"``, ``humanTurn: true``, the text in ``prompt``), after
  the tool result; no ``user`` line repeats it. It is a turn of its own (id = the attachment's
  ``uuid``), and the assistant text after it is its reply. Two prompts queued during one tool call are
  two turns; the model answers them in one message, which goes to the later one. A prompt queued
  while a text-only answer streams is written afterwards as a normal ``user`` line (and no
  attachment), so it is counted once. The ``queue-operation`` lines that also carry the text are
  never turns.
* **The report a background task's completion triggers**: a ``<task-notification>`` user line
  (the client sends it when the agent is idle) names the ``<tool-use-id>`` of the ``Agent``/``Task``
  call (or ``run_in_background`` call) that started the task. The assistant text after it is
  attached to the reply of the turn that made that call, where the user asked for the report; it is
  not a turn of its own (its "prompt" was written by the client). An unknown tool-use id attaches it
  to the latest turn. A notification absorbed while the agent is busy (a ``queued_command``
  attachment with ``commandMode: "task-notification"``) changes nothing: the text after it continues
  the running turn, which is the answer the user is waiting for.
* **Bash mode** (``!cmd``): the ``<bash-input>`` line is a turn with the user text ``!cmd`` once the
  assistant answers it (2.1.x sends the command's output to the model, which replies); the
  ``<bash-stdout>``/``<bash-stderr>`` output is not part of the turn. A bash-mode command nobody
  answers (older clients never did) is no turn, as before.

Minimal transcripts (converters, deja-vu's day-zero benchmark; docs/formats.md 1.8) have only
``type``, ``sessionId``, ``timestamp`` and ``message``: without ``uuid`` a turn's id is ``L<line>``,
without ``cwd`` the cwd is unknown. Assistant text before any ``user`` line (a conversation that opens
with the assistant) is a turn of its own with an empty user text: the store's rows are exchanges, and
this keeps the text findable, in its place, without mixing it into the first prompt. A user message that
carries nothing (content ``""``: converters write a chat's empty prompts as they find them) is no line at
all: it is no prompt, and assistant text after it still opens the conversation (as in a minimal Codex
rollout, where an empty ``input_text`` is no user message either) or continues the current reply.
"""

from __future__ import annotations

import dataclasses
import re
from typing import Any

from pimem import editspans
from pimem.importers.base import (
    BadState,
    Chunk,
    EditCall,
    FileAction,
    FileTouch,
    SessionInfo,
    TranscriptFiles,
    TranscriptParser,
    is_row,
    saved,
    version_hint,
)
from pimem.jsonl import Line
from pimem.textutil import as_dict, as_list, clean_text, iso_to_ms, nonempty_str, strip_system_reminders


class ClaudeFiles(TranscriptFiles):
    """``<project>/<session>.jsonl``, without sub-agent transcripts: those under a ``subagents`` folder
    (>= 2.1.2) or named ``agent-*.jsonl`` (older)."""

    skip_dirs = frozenset({"subagents"})

    def wants(self, name: str) -> bool:
        return name.endswith(".jsonl") and not name.startswith("agent-")


FILES = ClaudeFiles()

# What the parser reads from a transcript changed: files parsed with an older version are parsed
# again once (pimem.sync). 2: file touches; queued prompts are turns of their own. 3: assistant text
# that opens a conversation is a turn. 4: edit spans (the text edit calls wrote, pimem.editspans).
# 5: a Write's result line gives the text it replaced (a rewrite claims only the lines it changed).
# 6: an empty user message does not keep the assistant text after it from opening the conversation.
# 7: the line diff of an edit keeps indentation (a line it reindented is its own) and compares the
# lines next to the change (pimem.editspans).
# 8: the lines an edit kept next to the lines it added are stored with its spans (pimem.editspans
# ``context_of``, store layout 9).
RULES_VERSION = 8

# tool name -> (the input key of its path, what it does to the file)
FILE_TOOLS: dict[str, tuple[str, FileAction]] = {
    "Read": ("file_path", "read"), "Write": ("file_path", "write"), "Edit": ("file_path", "edit"),
    "MultiEdit": ("file_path", "edit"), "NotebookEdit": ("notebook_path", "edit"),
}

_CONVERSATION = re.compile(rb'"type"\s*:\s*"(?:user|assistant|queued_command)"')
_TOOL_RESULT_LINE = re.compile(rb'"toolUseResult"\s*:')
# the result of a Write: says what the file held before (``originalFile``) or that it was created
_WRITE_RESULT = re.compile(rb'"toolUseResult"\s*:\s*\{\s*"type"\s*:\s*"(?:update|create)"')
# the result of an Edit: the file before it (``originalFile``) says which lines were next to the replaced text
# (its head, then its file after it: two searches, each one scan of the line, where one pattern with
# ``[^\n]*`` between would scan the rest of the line again from each repeat of the head)
_EDIT_RESULT = re.compile(rb'"toolUseResult"\s*:\s*\{\s*"filePath"\s*:')
_ORIGINAL_FILE = re.compile(rb'"originalFile"\s*:\s*"')
# a larger Edit result line (the file it holds is past the bound rule, twice with the patch) is not parsed
EDIT_RESULT_MAX_BYTES = 4 * editspans.MAX_CALL_BYTES

# Prefixes of user-role text that the client wrote, not the person (formats.md 1.5).
CLIENT_MARKUP_PREFIXES = (
    "<command-name>",
    "<command-message>",
    "<command-args>",
    "<local-command-",
    "<task-notification>",
    "<bash-input>",
    "<bash-stdout>",
    "<bash-stderr>",
    "[Request interrupted by user",
    "This session is being continued from a previous conversation",
    "Caveat: The messages below were generated by the user",
)
# Of those, the ones that start something new (a command, a notification, an interruption): the
# assistant text that follows answers them, not the previous prompt. A compaction continuation does
# not close the turn: after an automatic compaction the assistant goes on with the same request.
TURN_CLOSING_PREFIXES = CLIENT_MARKUP_PREFIXES[:9]

_TASK_TOOL_USE_ID = re.compile(r"<tool-use-id>\s*([^<\s]+)\s*</tool-use-id>")
_BASH_INPUT = re.compile(r"<bash-input>(.*?)</bash-input>", re.DOTALL)
# Tools whose call can start a background task that later reports through a <task-notification>.
BACKGROUND_TOOLS = frozenset({"Agent", "Task"})
# How many such calls the saved state remembers (oldest forgotten first): a notification for a call
# older than that attaches its report to the latest turn instead.
MAX_BACKGROUND_CALLS = 256


def user_prompt_text(message: dict[str, Any]) -> str:
    """The text of a user message without tool results, images and ``<system-reminder>`` blocks."""
    content = message.get("content")
    if isinstance(content, str):
        text = strip_system_reminders(content).strip()
    else:
        texts = []
        for block in as_list(content):
            block = as_dict(block)
            if block is None or block.get("type") != "text" or not isinstance(block.get("text"), str):
                continue  # tool_result, image, document… blocks are not typed text
            piece = strip_system_reminders(block["text"])
            if piece.strip():
                texts.append(piece)
        text = "\n".join(texts).strip()
    return text


def is_empty_message(message: dict[str, Any]) -> bool:
    """A user message that carries nothing: content ``""`` (or only white space), ``[]``, or only text blocks
    that are empty. Converters write these for a chat's empty prompts (docs/formats.md 1.8); an image, a tool
    result or any other block is something."""
    content = message.get("content")
    if isinstance(content, str):
        return not content.strip()
    if not isinstance(content, list):
        return False
    for block in content:
        block = as_dict(block)
        text = block.get("text") if block is not None and block.get("type") == "text" else None
        if not isinstance(text, str) or text.strip():
            return False
    return True


def assistant_text_and_tools(message: dict[str, Any]) -> tuple[str, list[str]]:
    content = message.get("content")
    if isinstance(content, str):
        return content.strip(), []
    texts: list[str] = []
    tools: list[str] = []
    for block in as_list(content):
        block = as_dict(block)
        if block is None:
            continue
        kind = block.get("type")
        if kind == "text" and isinstance(block.get("text"), str):
            texts.append(block["text"])
        elif kind == "tool_use":
            name = nonempty_str(block.get("name"))
            if name and name not in tools:
                tools.append(name)
    return "\n".join(texts).strip(), tools


def file_touches(message: dict[str, Any]) -> list[FileTouch]:
    """The files an assistant message's tool calls touch (:data:`FILE_TOOLS`), as the calls give them."""
    touches: list[FileTouch] = []
    for block in as_list(message.get("content")):
        block = as_dict(block)
        if block is None or block.get("type") != "tool_use":
            continue
        tool = FILE_TOOLS.get(nonempty_str(block.get("name")) or "")
        if tool is None:
            continue
        key, action = tool
        path = nonempty_str((as_dict(block.get("input")) or {}).get(key))
        if path:
            touches.append((path, action))
    return touches


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def edit_calls(message: dict[str, Any]) -> list[EditCall]:
    """The text an assistant message's edit calls wrote: ``Edit`` (``old_string`` → ``new_string``),
    ``MultiEdit`` (each of ``edits``), ``Write`` (``content``, the whole file), ``NotebookEdit``
    (``new_source``, the cell; the replaced source is not in the call)."""
    calls: list[EditCall] = []
    for block in as_list(message.get("content")):
        block = as_dict(block)
        if block is None or block.get("type") != "tool_use":
            continue
        name = nonempty_str(block.get("name")) or ""
        tool_input = as_dict(block.get("input")) or {}
        call_id = nonempty_str(block.get("id"))
        path = nonempty_str(tool_input.get("notebook_path" if name == "NotebookEdit" else "file_path"))
        if path is None:
            continue
        if name == "Edit":
            pairs = [tool_input]
        elif name == "MultiEdit":
            pairs = [edit for edit in map(as_dict, as_list(tool_input.get("edits"))) if edit is not None]
        elif name == "Write":
            content = _text(tool_input.get("content"))
            if content is not None:
                calls.append(EditCall(path, name, call_id, None, content, whole=True))
            continue
        elif name == "NotebookEdit":
            source = _text(tool_input.get("new_source"))
            if source is not None and tool_input.get("edit_mode") != "delete":
                calls.append(EditCall(path, name, call_id, None, source))
            continue
        else:
            continue
        for pair in pairs:
            new = _text(pair.get("new_string"))
            if new is not None:
                calls.append(EditCall(path, name, call_id, _text(pair.get("old_string")), new))
    return calls


def background_call_ids(message: dict[str, Any]) -> list[str]:
    """Ids of the tool calls in an assistant message that may start a background task."""
    ids = []
    for block in as_list(message.get("content")):
        block = as_dict(block)
        if block is None or block.get("type") != "tool_use":
            continue
        tool_input = as_dict(block.get("input")) or {}
        call_id = nonempty_str(block.get("id"))
        if call_id and (nonempty_str(block.get("name")) in BACKGROUND_TOOLS
                        or tool_input.get("run_in_background") is True):
            ids.append(call_id)
    return ids


def queued_prompt(attachment: dict[str, Any]) -> str | None:
    """The text of a prompt the user typed while the agent was busy (a ``queued_command`` the client
    delivered mid-turn), or None for any other attachment (notifications, rewritten or meta prompts)."""
    if attachment.get("type") != "queued_command" or attachment.get("commandMode") != "prompt":
        return None
    if attachment.get("isMeta") is True or attachment.get("promptRewritten") is True:
        return None
    origin = as_dict(attachment.get("origin"))
    if origin is not None and origin.get("kind") != "human":
        return None
    if attachment.get("humanTurn") is not True and attachment.get("hostsOwnTurn") is not True:
        return None
    prompt = attachment.get("prompt")
    if isinstance(prompt, list):  # pasted images come as content blocks
        return user_prompt_text({"content": prompt})
    return strip_system_reminders(prompt).strip() if isinstance(prompt, str) else None


def _is_edit_result(data: bytes) -> bool:
    """Whether a tool-result line is an Edit's result with the file before it (``originalFile``)."""
    head = _EDIT_RESULT.search(data)
    return head is not None and _ORIGINAL_FILE.search(data, head.end()) is not None


class ClaudeParser(TranscriptParser):
    source = "claude"
    interesting = _CONVERSATION

    def __init__(self, path: str, state: dict[str, Any] | None, lookup: Any = None) -> None:
        super().__init__(path, state, lookup)
        state = state or {}
        self._info = SessionInfo.from_state(state)
        self._turns: int = saved(state, "turns", int, 0)
        self._current: str | None = saved(state, "current", str)   # the turn assistant text goes to
        # the turn started last
        self._latest: str | None = saved(state, "latest", str) if "latest" in state else self._current
        # tool-call id -> turn, for calls that may report later through a <task-notification>
        self._background: dict[str, str] = dict(saved(state, "background", dict, {}))
        if not all(isinstance(turn, str) for turn in self._background.values()):
            raise BadState("background")
        # a bash-mode command not answered yet: [message id, ts, "!cmd", line]
        bash = saved(state, "bash", list)
        if bash is not None and not (is_row(str, None, str, int)(bash) and isinstance(bash[1], int | None)):
            raise BadState("bash")
        self._bash: list[Any] | None = bash
        self._user_seen: bool = saved(state, "userSeen", bool, False)   # any main-thread user line yet
        self._version_seen: object = None

    def wants(self, line: Line) -> bool:
        # Tool-result lines (most of a file's bytes) have a top-level toolUseResult: never a prompt; only
        # a Write's result is read (what the file held before it), and an Edit's within EDIT_RESULT_MAX_BYTES.
        if line.data is None:
            return False
        if _TOOL_RESULT_LINE.search(line.data) is not None:
            return _WRITE_RESULT.search(line.data) is not None or (
                len(line.data) <= EDIT_RESULT_MAX_BYTES and _is_edit_result(line.data))
        return _CONVERSATION.search(line.data) is not None

    def feed(self, record: Any, line_number: int, chunk: Chunk) -> None:
        record = as_dict(record)
        if record is None:
            chunk.note_bad_line(line_number)
            return
        kind = record.get("type")
        if kind not in ("user", "assistant", "attachment"):
            return
        if self._info.native_id is None:
            self._info.native_id = nonempty_str(record.get("sessionId"))
        version = record.get("version")  # the CLI version, on every line (the latest one is quoted in issues)
        if version != self._version_seen:
            self._version_seen = version
            self._info.agent_version = version_hint("Claude Code", version) or self._info.agent_version
        if not self._info.cwd and isinstance(record.get("cwd"), str):
            self._info.cwd = clean_text(record["cwd"])
        ts = iso_to_ms(record.get("timestamp"))
        if self._info.started_at is None and ts is not None:
            self._info.started_at = ts
        if record.get("isSidechain") is True:
            return
        if kind == "attachment":
            attachment = as_dict(record.get("attachment"))
            text = queued_prompt(attachment) if attachment is not None else None
            if text is not None:
                self._user_text(clean_text(text), record, ts, line_number, chunk)
            return
        message = as_dict(record.get("message"))
        if message is None:
            return
        if kind == "user":
            if "toolUseResult" in record:   # a Write's or Edit's result (wants): not a user line of the conversation
                result = as_dict(record.get("toolUseResult")) or {}
                if "oldString" in result:
                    self._edit_result(result, message, chunk)
                else:
                    self._write_result(record, message, chunk)
                return
            if is_empty_message(message):
                return   # carries nothing (converters write "" prompts): no prompt, opens nothing, closes nothing
            self._user_seen = True
            if record.get("isMeta") is True or record.get("isCompactSummary") is True:
                return
            self._user_text(clean_text(user_prompt_text(message)), record, ts, line_number, chunk)
            return
        model = nonempty_str(message.get("model"))
        if self._info.model_id is None and model and model != "<synthetic>":
            self._info.model_id = model
        if self._current is None and self._bash is not None and model != "<synthetic>":
            message_id, bash_ts, command, bash_line = self._bash
            self._start_turn(message_id, bash_ts, command, bash_line, chunk)
        if self._current is None and not self._opening(model):
            return
        text, tools = assistant_text_and_tools(message)
        current = self._current
        if current is None:   # the opening assistant text: a turn of its own (docs/formats.md 1.8)
            if not clean_text(text):
                return
            current = nonempty_str(record.get("uuid")) or f"L{line_number}"
            self._start_turn(current, ts, "", line_number, chunk)
        for call_id in background_call_ids(message):
            self._background.pop(call_id, None)
            self._background[call_id] = current
            while len(self._background) > MAX_BACKGROUND_CALLS:
                del self._background[next(iter(self._background))]
        chunk.add_reply(current, clean_text(text), tools, file_touches(message), edit_calls(message))

    def _write_result(self, record: dict[str, Any], message: dict[str, Any], chunk: Chunk) -> None:
        """A ``Write``'s result gives what the file held before it (``originalFile``; ``type: create``:
        nothing): the write's call gets it as its replaced text, so only the lines it changed are its
        own (pimem.editspans). A result whose call was stored by an earlier parse (a live sync between
        the two lines) amends it: the write again, from the result's ``filePath`` and ``content``."""
        result = as_dict(record.get("toolUseResult")) or {}
        kind = result.get("type")
        old = "" if kind == "create" else _text(result.get("originalFile"))
        block = next((b for b in map(as_dict, as_list(message.get("content")))
                      if b is not None and b.get("type") == "tool_result"), None)
        call_id = nonempty_str((block or {}).get("tool_use_id"))
        if old is None or call_id is None or self._current is None:
            return
        delta = chunk.turns.get(self._current)
        position = delta.unanswered_write(call_id) if delta is not None else None
        if delta is not None and position is not None:
            delta.replace_edit(position, dataclasses.replace(delta.edits[position], old=old))
            return
        path, content = nonempty_str(result.get("filePath")), _text(result.get("content"))
        if path is not None and content is not None:
            chunk.add_reply(self._current, "", [], (), [EditCall(path, "Write", call_id, old, content, whole=True,
                                                                  amends=True)])

    def _edit_result(self, result: dict[str, Any], message: dict[str, Any], chunk: Chunk) -> None:
        """An ``Edit``'s result gives the file before it (``originalFile``): the lines right before and
        after the text it replaced (pimem.editspans.kept_around), the context of the lines it added at the
        edges of its new text. Given to the call in this parse; a call stored by an earlier parse (a live
        sync between the two lines) is amended: the edit again, with them. Not for ``replace_all`` (the
        text replaced at several places) nor a replaced text the file does not hold once."""
        original, old, new = (_text(result.get(key)) for key in ("originalFile", "oldString", "newString"))
        block = next((b for b in map(as_dict, as_list(message.get("content")))
                      if b is not None and b.get("type") == "tool_result"), None)
        call_id = nonempty_str((block or {}).get("tool_use_id"))
        path = nonempty_str(result.get("filePath"))
        if (original is None or not old or new is None or path is None or call_id is None
                or self._current is None or result.get("replaceAll") is True):
            return
        start = original.find(old)
        if start < 0 or original.find(old, start + 1) >= 0:
            return
        kept_before, kept_after = editspans.kept_around(original, start, start + len(old))
        if not (kept_before or kept_after):
            return
        delta = chunk.turns.get(self._current)
        if delta is not None:
            for position in delta.edits_of(call_id):
                edit = delta.edits[position]
                if edit.tool == "Edit" and edit.path == path and edit.old == old and edit.new == new:
                    delta.replace_edit(position, dataclasses.replace(edit, kept_before=kept_before,
                                                                     kept_after=kept_after))
                    return
        chunk.add_reply(self._current, "", [], (), [EditCall(path, "Edit", call_id, old, new, amends=True,
                                                              kept_before=kept_before, kept_after=kept_after)])

    def _opening(self, model: str | None) -> bool:
        """Assistant text before any user line opens the conversation: a turn with an empty user text."""
        return (self._turns == 0 and not self._user_seen and self._info.native_id is not None
                and model != "<synthetic>")

    def _user_text(self, text: str, record: dict[str, Any], ts: int | None, line_number: int,
                   chunk: Chunk) -> None:
        """A user line's (or queued prompt's) accepted text: a prompt, client markup, or nothing."""
        if text.startswith(CLIENT_MARKUP_PREFIXES):
            self._client_event(text, record, ts, line_number)
            return
        message_id = nonempty_str(record.get("uuid")) or f"L{line_number}"
        if not text or self._info.native_id is None:
            return
        self._start_turn(message_id, ts, text, line_number, chunk)

    def _start_turn(self, message_id: str, ts: int | None, text: str, line_number: int, chunk: Chunk) -> None:
        chunk.start_turn(message_id, ts if ts is not None else (self._info.started_at or 0), text,
                         self._turns, line_number)
        self._turns += 1
        self._current = self._latest = message_id
        self._bash = None

    def _client_event(self, text: str, record: dict[str, Any], ts: int | None, line_number: int) -> None:
        if text.startswith("<bash-input>"):
            self._current = None
            match = _BASH_INPUT.match(text)
            command = match.group(1).strip() if match else ""
            message_id = nonempty_str(record.get("uuid")) or f"L{line_number}"
            answerable = command and self._info.native_id is not None
            self._bash = [message_id, ts, "!" + command, line_number] if answerable else None
        elif text.startswith(("<bash-stdout>", "<bash-stderr>")):
            self._current = None  # the command's output: its answer still starts the bash turn
        elif text.startswith("<task-notification>"):
            self._bash = None
            match = _TASK_TOOL_USE_ID.search(text)
            launcher = self._background.get(match.group(1)) if match else None
            self._current = launcher or self._latest
        elif text.startswith(TURN_CLOSING_PREFIXES):
            self._current = None
            self._bash = None

    def session(self) -> SessionInfo:
        return self._info

    def state(self) -> dict[str, Any]:
        return {**self._info.to_state(), "turns": self._turns, "current": self._current, "latest": self._latest,
                "background": dict(self._background), "bash": self._bash,
                "userSeen": self._user_seen}
