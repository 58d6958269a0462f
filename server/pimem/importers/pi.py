"""Pi coding agent sessions: ``<agent dir>/sessions/--<cwd>--/<timestamp>_<id>.jsonl``.

Format facts this parser relies on (docs/formats.md section 3):

* line 1 is the header ``{"type":"session", "version"?, "id", "timestamp", "cwd"}``; v1 has no
  ``version`` and its entries have no ``id``/``parentId`` (each entry's parent is the previous one,
  and we derive the id ``L<line>`` from the position);
* v2/v3 entries form a tree via ``id``/``parentId``; abandoned branches stay in the file, so a reply
  belongs to its **nearest user-message ancestor**, not to the previous user message in the file;
* real user text is ``message`` entries with ``role: "user"``; assistant text is the ``text`` blocks
  of ``role: "assistant"`` (never ``thinking``); tool calls are ``toolCall`` blocks. ``toolResult``,
  ``bashExecution``, ``custom`` (v2: ``hookMessage``), ``system`` messages and all other entry types
  are not turns but still tree nodes;
* ``message.timestamp`` is Unix ms, the entry ``timestamp`` is ISO;
* when Pi opens a session older than v3 it rewrites the file in place as v3 (section 3.2); a v1 file
  gets a new random 8-hex id for every entry, so the same user message would now be ``c5965ca9``
  instead of ``L5``. A turn stored from the v1 file keeps its ``L<line>`` id: in a v2/v3 file, the
  n-th turn of a session whose n-th stored turn has a v1 id and the same text is that turn (by
  position, not line: Pi drops blank and unreadable lines when it rewrites). Before/after pairs
  written by the real Pi 1.6.0 are in tests/fixtures/pi-v1-rewrite/.

File tools are ``toolCall`` blocks named ``read``, ``write``, ``edit`` (:data:`FILE_TOOLS`) whose
``arguments.path`` is relative to the session's cwd or absolute. The text they wrote
(:func:`edit_calls`): each ``edit`` replacement (``edits: [{oldText, newText}]``, also sent as a JSON
string or one object, and the older top-level ``oldText``/``newText``, as Pi's edit tool accepts them)
and ``write``'s ``content`` (the whole file); the ``toolCall`` id. Pi's ``write`` result does not say
whether the file existed ("Successfully wrote to PATH"); its ``read`` result (a ``toolResult`` message
with the call's ``toolCallId``, ``toolName: "read"``) is the file's text as it was, verbatim, unless it
says it is partial (``details.truncation``, or a closing ``[Showing lines A-B of N…]`` / ``[N more lines in
file…]`` notice; Pi 1.6.0 ``dist/core/tools/read.js``). So a ``write`` after a ``read`` of the whole file
in the **same turn** (no ``offset``/``limit``; no ``edit`` of the file, and no ``bash`` command naming it,
in between; not called in a message that also changes the file, whose results' order is not the calls')
is an edit of the whole file: the call carries the hashes of the lines read
(``EditCall.before``, pimem.editspans.line_keys; never the text) and claims only the lines it added. What
the session saw of a file is kept across its turns (round 11): a whole read, a write, an ``edit`` whose
result's display diff (``details.diff``) leaves no line out (:func:`shown_whole`), or whose ``patch``
applies to what the session saw before it (:func:`patched`). A view of an earlier turn is not what the file
held when written (a person may have edited it since): the write carries it as ``EditCall.earlier`` and
claims only the runs of lines it added to it (pimem.editspans.span_since); the rest of its lines are a
write over unknown content, and pimem.lineblame's creation rule reads from the file touches that the
file existed. Read results larger than
:data:`READ_RESULT_MAX_BYTES` are not parsed (most tool-result bytes are skipped unparsed, see
:data:`_NODE_HEAD`).

Transcripts are every ``.jsonl`` file under the sessions folder (:data:`FILES`).
"""

from __future__ import annotations

import dataclasses
import json
import re
from collections.abc import Iterator
from typing import Any

from pimem import editspans
from pimem.importers.base import (
    Chunk,
    EditCall,
    FileAction,
    FileTouch,
    NotThisFormat,
    SessionInfo,
    TranscriptFiles,
    TranscriptParser,
    absolute_touch_path,
    saved,
)
from pimem.jsonl import Line
from pimem.textutil import (
    as_dict,
    as_list,
    clean_text,
    is_storable,
    iso_to_ms,
    nonempty_str,
    number_to_ms,
    storable_id,
)

FILES = TranscriptFiles()   # every .jsonl file

# What the parser reads from a session changed: files parsed with an older version are parsed again
# once (pimem.sync). 2: file touches; a v1 session Pi rewrote keeps its turns' first ids. 3: edit spans
# (the text edit calls wrote, pimem.editspans). 4: a write after a read of the whole file in its turn
# claims only the lines it added (EditCall.before).
# 5: the line diff of an edit keeps indentation (a line it reindented is its own) and compares the
# lines next to the change (pimem.editspans).
# 6: the lines an edit kept next to the lines it added are stored with its spans (pimem.editspans
# ``context_of``, store layout 9).
# 7: what the session saw of a file stays known across its turns (a read, a write, an edit's result that
# shows the whole file or a patch applied to what it saw): a write over a file seen in an earlier turn
# claims the lines it added to that view in a run (EditCall.earlier, pimem.editspans.span_since).
RULES_VERSION = 7

FILE_TOOLS: dict[str, FileAction] = {"read": "read", "write": "write", "edit": "edit"}

# Entry lines Pi writes with these leading keys; lets tool results (most of a file's bytes) be
# recorded as tree nodes without a JSON parse.
_NODE_HEAD = re.compile(
    rb'^\{"type":"message","id":"([^"\\]{1,64})","parentId":(?:null|"([^"\\]{1,64})"),'
    rb'"timestamp":"[^"]*","message":\{"role":"(toolResult|bashExecution|custom|system|hookMessage)"'
)
# the call id of a tool result, right after its role (as Pi writes it): a read's result is parsed only
# when it answers a read of a whole file in the turn (the rest stay unparsed tree nodes)
MAX_CALL_ID_CHARS = 128     # longer call ids are not awaited (nor kept in the parser's state)
MAX_PATH_CHARS = 4_096      # PATH_MAX: files with longer paths are not remembered
_RESULT_ID = re.compile(rb',"toolCallId":"([^"\\]{1,%d})"' % MAX_CALL_ID_CHARS)
READ_RESULT_MAX_BYTES = 4 * editspans.MAX_CALL_BYTES   # a larger result line is not parsed (JSON escapes)
MAX_PENDING_READS = 32      # read calls whose results are awaited, kept per session
MAX_KNOWN_FILES = 8         # files whose lines the session saw, kept per session (hashed in the state)
# the notices Pi's read appends to a partial result
_PARTIAL_READ = re.compile(r"\n\n\[(?:Showing lines \d+-\d+ of \d+|\d+ more lines in file)[^\]\n]*\]\s*\Z")
V1_ID_PATTERN = "L[0-9]*"   # GLOB of the ids derived from positions in v1 files (f"L{line}")
_V1_ID = re.compile(r"L[0-9]+")


def message_text(content: Any) -> str:
    """User or assistant text: the string content, or the text blocks joined by newlines."""
    if isinstance(content, str):
        return content.strip()
    texts = []
    for block in as_list(content):
        block = as_dict(block)
        if block is not None and block.get("type") == "text" and isinstance(block.get("text"), str):
            texts.append(block["text"])
    return "\n".join(texts).strip()


def tool_calls(content: Any) -> Iterator[tuple[str | None, dict[str, Any], dict[str, Any]]]:
    """Each ``toolCall`` block of an assistant message, in order: its name, its arguments ({} when they are
    not an object) and the block."""
    for block in as_list(content):
        block = as_dict(block)
        if block is not None and block.get("type") == "toolCall":
            yield nonempty_str(block.get("name")), as_dict(block.get("arguments")) or {}, block


def tool_call_names(content: Any) -> list[str]:
    names: dict[str, None] = {}   # in call order, each once
    for name, _arguments, _block in tool_calls(content):
        if name:
            names[name] = None
    return list(names)


def file_touches(content: Any) -> list[FileTouch]:
    """The files an assistant message's tool calls touch (:data:`FILE_TOOLS`), as the calls give them."""
    touches: list[FileTouch] = []
    for name, arguments, _block in tool_calls(content):
        action = FILE_TOOLS.get(name or "")
        path = nonempty_str(arguments.get("path"))
        if action is not None and path:
            touches.append((path, action))
    return touches


def _edit_blocks(arguments: dict[str, Any]) -> list[dict[str, Any]]:
    """The replacements of an ``edit`` call: ``edits: [{oldText, newText}]`` (also sent as a JSON string
    or a single object by some models, which Pi accepts), and the older top-level ``oldText``/``newText``."""
    edits: Any = arguments.get("edits")
    if isinstance(edits, str):
        try:
            edits = json.loads(edits)
        except (ValueError, RecursionError):
            edits = None
    blocks = [edit for edit in map(as_dict, as_list(edits) if isinstance(edits, list) else [edits])
              if edit is not None]
    if isinstance(arguments.get("newText"), str):
        blocks.append(arguments)
    return blocks


def edit_calls(content: Any) -> list[EditCall]:
    """The text an assistant message's ``edit`` (each replacement) and ``write`` (the whole file) calls
    wrote."""
    calls: list[EditCall] = []
    for name, arguments, block in tool_calls(content):
        calls.extend(_call_edits(name, arguments, nonempty_str(block.get("id"))))
    return calls


def _call_edits(name: str | None, arguments: dict[str, Any], call_id: str | None) -> list[EditCall]:
    """What one ``edit`` or ``write`` call wrote (:func:`edit_calls`)."""
    path = nonempty_str(arguments.get("path"))
    if path is None:
        return []
    if name == "write" and isinstance(arguments.get("content"), str):
        return [EditCall(path, name, call_id, None, arguments["content"], whole=True)]
    calls: list[EditCall] = []
    if name == "edit":
        for edit in _edit_blocks(arguments):
            new, old = edit.get("newText"), edit.get("oldText")
            if isinstance(new, str):
                calls.append(EditCall(path, name, call_id, old if isinstance(old, str) else None, new))
    return calls


def kept_in_patch(patch: str, old: str) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The lines an ``edit`` kept right before and after the text ``old`` it replaced (at most
    pimem.editspans.CONTEXT_LINES non-blank lines a side, nearest last / first), read from its result's
    unified diff: the old side of the one hunk holding ``old``'s lines whole, its context lines (`` ``)
    next to them, up to a line the call removed. Nothing when ``old`` is not whole lines of one hunk, or
    is there twice (:class:`_Patch`)."""
    return _Patch(patch).kept(old)


class _Patch:
    """The old side of an ``edit`` result's hunks, read once for all the blocks of its call. Looking
    for the blocks' texts in it compares at most pimem.editspans.MAX_DIFF_WORK lines in all (a patch of
    thousands of ``}`` and a text of as many: past it, nothing is kept)."""

    def __init__(self, patch: str) -> None:
        self.lines: list[tuple[int, str, str]] = []   # (hunk, tag, text)
        self.starts: dict[str, list[int]] = {}        # text -> its positions in lines
        self.work = editspans.MAX_DIFF_WORK
        if len(patch) > READ_RESULT_MAX_BYTES:
            return
        hunk = -1
        for line in editspans.split_lines(patch):
            if line.startswith("@@"):
                hunk += 1
            elif hunk >= 0 and line[:1] in (" ", "-") and not line.startswith("--- "):
                self._add(hunk, line[:1], line[1:])
            elif hunk >= 0 and not line:   # a blank context line written without its space
                self._add(hunk, " ", "")

    def _add(self, hunk: int, tag: str, text: str) -> None:
        self.starts.setdefault(text, []).append(len(self.lines))
        self.lines.append((hunk, tag, text))

    def kept(self, old: str) -> tuple[tuple[str, ...], tuple[str, ...]]:
        wanted = editspans.split_lines(old)
        found: list[int] = []
        for at in self.starts.get(wanted[0], ()) if wanted else ():
            end = at + len(wanted)
            self.work -= 1
            if end > len(self.lines) or self.lines[end - 1][0] != self.lines[at][0]:
                continue   # not whole in one hunk
            same = 1
            while same < len(wanted) and self.lines[at + same][2] == wanted[same]:
                same += 1
            self.work -= same
            if self.work < 0:
                return (), ()
            if same == len(wanted):
                found.append(at)
                if len(found) > 1:
                    return (), ()
        if len(found) != 1:
            return (), ()
        at, hunk = found[0], self.lines[found[0]][0]

        def kept(indexes: range) -> list[str]:
            lines: list[str] = []
            for i in indexes:
                part, tag, text = self.lines[i]
                if part != hunk or tag != " " or len(lines) == editspans.CONTEXT_LINES:
                    break
                if editspans.normalize(text):
                    lines.append(text)
            return lines
        return (tuple(reversed(kept(range(at - 1, -1, -1)))),
                tuple(kept(range(at + len(wanted), len(self.lines)))))


# a line of an ``edit`` result's ``details.diff`` (Pi's display diff: ``dist/core/tools/edit-diff.js``
# ``formatDisplayDiff``): a kept (" "), added ("+") or removed ("-") line, its number padded, then its text;
# or the marker of lines left out (" " and padding, "..."), which a numbered line never is
_DIFF_LINE = re.compile(r"([ +-]) *[0-9]+ (.*)", re.DOTALL)
_HUNK = re.compile(r"@@ -[0-9]+(?:,([0-9]+))? \+[0-9]+(?:,([0-9]+))? @@.*", re.DOTALL)


def shown_whole(diff: str) -> str | None:
    """The file after an ``edit``, when its result's display diff shows every line of it: Pi shows at most 4
    unchanged lines at each end and 8 between two changes, and puts the marker ``...`` where it leaves
    lines out (also before and after the window a large file's diff is made in). None when a line is left
    out, a line is not of the diff's shape, nothing changed, or past the bound rule."""
    if len(diff) > READ_RESULT_MAX_BYTES:
        return None
    kept: list[str] = []
    changed = False
    for line in editspans.split_lines(diff):
        found = _DIFF_LINE.fullmatch(line)
        if found is None:
            return None    # a marker of lines left out, or not a diff of this shape
        if found.group(1) != "-":
            kept.append(found.group(2))
        changed = changed or found.group(1) != " "
    text = "".join(line + "\n" for line in kept)
    return text if changed and editspans.bounded(text) else None


def patched(seen: list[int] | None, patch: str) -> list[int] | None:
    """The lines (:func:`pimem.editspans.line_keys`) a file holds after an ``edit`` whose result's unified
    ``patch`` is applied to the lines it held before (``seen``): each hunk's old side (its kept and removed
    non-blank lines) must occur once, in order after the previous hunk, and becomes its new side. None when
    a hunk does not apply so (the file changed since it was seen, or a hunk of blank lines only), or past
    pimem.editspans.MAX_DIFF_WORK lines compared."""
    if seen is None or len(patch) > READ_RESULT_MAX_BYTES:
        return None
    hunks: list[tuple[list[str], list[str]]] = []
    old_left = new_left = 0    # the lines of the current hunk still to read (its header's counts)
    for line in editspans.split_lines(patch):
        if old_left <= 0 and new_left <= 0:
            header = _HUNK.fullmatch(line)
            if header is not None:
                old_left, new_left = (int(count) if count is not None else 1 for count in header.groups())
                hunks.append(([], []))
            continue
        tag, text = (line[:1], line[1:]) if line else (" ", "")
        if tag == "\\":   # "\ No newline at end of file"
            continue
        if tag not in (" ", "-", "+"):
            return None
        if tag != "+":
            hunks[-1][0].append(text)
            old_left -= 1
        if tag != "-":
            hunks[-1][1].append(text)
            new_left -= 1
    if old_left > 0 or new_left > 0:
        return None
    result = list(seen)
    at, work = 0, editspans.MAX_DIFF_WORK
    for old_side, new_side in hunks:
        old_keys = editspans.line_keys("".join(text + "\n" for text in old_side))
        new_keys = editspans.line_keys("".join(text + "\n" for text in new_side))
        if not old_keys or new_keys is None:
            return None
        found = -1
        for start in range(at, len(result) - len(old_keys) + 1):
            work -= 1
            if result[start] != old_keys[0]:
                if work < 0:
                    return None
                continue
            same = 1
            while same < len(old_keys) and result[start + same] == old_keys[same]:
                same += 1
            work -= same
            if work < 0:
                return None
            if same == len(old_keys):
                if found >= 0:
                    return None   # twice: which one the hunk is is not known
                found = start
        if found < 0:
            return None
        result[found:found + len(old_keys)] = new_keys
        at = found + len(new_keys)
    return result if hunks and len(result) < editspans.MAX_CALL_LINES else None


def _is_line_hash(value: Any) -> bool:
    """A value pimem.editspans.line_hash can give (a signed 64-bit integer)."""
    return type(value) is int and -(1 << 63) <= value < (1 << 63)


def _storable(text: str, limit: int) -> bool:
    """Whether a call id or path of the transcript can go to the saved state (written again at every commit
    of the file): at most ``limit`` characters, and as it is (UTF-8: no lone surrogate, which JSON allows)."""
    return len(text) <= limit and is_storable(text)


def _file_name(path: str) -> str:
    """The name of a file a call gave (a POSIX or a Windows path: Pi runs on both)."""
    return path[max(path.rfind("/"), path.rfind("\\")) + 1:]


def _keys(shown: list[int] | str) -> list[int] | None:
    """The hashes of the lines a read (or a write) showed (pimem.editspans.line_keys)."""
    return shown if isinstance(shown, list) else editspans.line_keys(shown)


class PiParser(TranscriptParser):
    source = "pi"

    def __init__(self, path: str, state: dict[str, Any] | None, lookup: Any = None) -> None:
        super().__init__(path, state, lookup)
        state = state or {}
        self._info = SessionInfo.from_state(state)
        self._have_header: bool = saved(state, "header", bool, False)
        self._version: int = saved(state, "version", int, 3)
        self._turns: int = saved(state, "turns", int, 0)
        self._previous: str | None = saved(state, "previous", str)   # id of the previous entry in the file
        # Turns stored from this session's v1 file, by turn index (looked up once, when a v2/v3 file's
        # first user turn is met); "v1Turns" saves how many there were, so an append needs no lookup.
        self._v1_turns: dict[int, tuple[str, str]] | None = None
        v1_count = state.get("v1Turns")
        self._v1_count: int | None = v1_count if isinstance(v1_count, int) else None
        # Anchors of the entries parsed in this run; older ones come from `lookup`.
        self._anchors: dict[str, str | None] = {}
        # This turn's reads of whole files: call id -> file (awaiting the result), and file -> (turn, what
        # the session last saw it hold: a read, a write, an edit's result; the text while parsing, hashed
        # only when a write of it comes or the state is saved, most reads being of files not written; the
        # state keeps the lines' hashes, never the text)
        # (a state another tool wrote may hold anything: what is not of these shapes is forgotten)
        reads, known = state.get("reads"), state.get("known")
        self._reads: dict[str, str] = {
            k: v for k, v in list(reads.items())[-MAX_PENDING_READS:]
            if isinstance(v, str) and _storable(k, MAX_CALL_ID_CHARS) and _storable(v, MAX_PATH_CHARS)
        } if isinstance(reads, dict) else {}
        self._known: dict[str, tuple[str, list[int] | str]] = {}
        # this parse's ``edit`` calls awaiting their results: call id -> (turn, file, what the session saw of
        # the file before the call). The result's patch gives the lines next to each replaced text, and what
        # the file holds after the call (_edit_result); not saved: a result parsed in a later sync than its
        # call gives neither
        self._edits: dict[str, tuple[str, str, tuple[str, list[int] | str] | None]] = {}
        for key, value in (list(known.items())[-MAX_KNOWN_FILES:] if isinstance(known, dict) else ()):
            if isinstance(value, list) and len(value) == 2 and isinstance(value[0], str) \
                    and isinstance(value[1], list) and len(value[1]) <= editspans.MAX_CALL_LINES \
                    and all(_is_line_hash(h) for h in value[1]) and _storable(key, MAX_PATH_CHARS):
                self._known[key] = (value[0], value[1])

    # -- tree ---------------------------------------------------------------------------------
    def _anchor_of(self, entry_id: str | None) -> tuple[bool, str | None]:
        if entry_id is None:
            return True, None
        if entry_id in self._anchors:
            return True, self._anchors[entry_id]
        if self.lookup is not None:
            return self.lookup(entry_id)
        return False, None

    def _parent_anchor(self, parent_id: str | None, has_parent_field: bool) -> str | None:
        if self._version < 2 or not has_parent_field:
            parent_id = self._previous
        found, anchor = self._anchor_of(parent_id)
        if not found:
            # Unknown parent (a lost line): fall back to the previous entry, deterministic either way.
            anchor = self._anchor_of(self._previous)[1]
        return anchor

    def _record_node(self, entry_id: str, anchor: str | None, chunk: Chunk) -> None:
        # a turn is named as the store keys it, as an anchor looked up later gives it (a read's turn is then
        # its write's turn however the syncs cut the file): an id with a lone surrogate has it escaped
        anchor = None if anchor is None else storable_id(anchor)
        self._anchors[entry_id] = anchor
        chunk.nodes.append((entry_id, anchor))
        self._previous = entry_id

    # -- records ------------------------------------------------------------------------------
    def wants(self, line: Line) -> bool:
        if not self._have_header or self._version < 2 or line.data is None:
            return True
        match = _NODE_HEAD.match(line.head)
        if match is None:
            return True
        # a tool result is parsed only when it answers a read of a whole file in this turn, or an edit
        return bool(self._reads or self._edits) and self._awaited(line.head, match.end()) is not None \
            and len(line.data) <= READ_RESULT_MAX_BYTES

    def _awaited(self, head: bytes, at: int) -> str | None:
        """The call id of a tool result (its head) when it answers a read this turn awaits, or an edit."""
        found = _RESULT_ID.match(head, at)
        call_id = found.group(1).decode("utf-8", "replace") if found is not None else None
        return call_id if call_id in self._reads or call_id in self._edits else None

    def skip(self, line: Line, chunk: Chunk) -> None:
        match = _NODE_HEAD.match(line.head)
        if match is None or not self._have_header:
            return
        if self._reads or self._edits:   # a read's result too large to parse: the file existed, its lines
            awaited = self._awaited(line.head, match.end()) or ""   # are not known
            self._reads.pop(awaited, None)
            self._edits.pop(awaited, None)
        entry_id = match.group(1).decode("utf-8", "replace")
        parent = match.group(2).decode("utf-8", "replace") if match.group(2) else None
        self._record_node(entry_id, self._parent_anchor(parent, True), chunk)

    def feed(self, record: Any, line_number: int, chunk: Chunk) -> None:
        record = as_dict(record)
        if record is None:
            chunk.note_bad_line(line_number)
            return
        if not self._have_header:
            if record.get("type") != "session":
                raise NotThisFormat("the first record is not a Pi session header")
            native_id = nonempty_str(record.get("id"))
            if native_id is None:
                raise NotThisFormat("the Pi session header has no id")
            version = record.get("version")
            self._version = version if isinstance(version, int) and not isinstance(version, bool) else 1
            self._info.agent_version = f"Pi (session format v{self._version})"   # Pi records no CLI version
            self._info.native_id = native_id
            self._info.cwd = clean_text(record.get("cwd")) if isinstance(record.get("cwd"), str) else ""
            self._info.started_at = iso_to_ms(record.get("timestamp"))
            self._have_header = True
            return
        if record.get("type") == "session":
            return  # a repeated header (concatenated files): not an entry
        entry_id = nonempty_str(record.get("id")) if self._version >= 2 else None
        if entry_id is None:
            entry_id = f"L{line_number}"
        has_parent = "parentId" in record
        parent_id = nonempty_str(record.get("parentId"))
        entry_type = record.get("type")
        if entry_type == "model_change" and self._info.model_id is None:
            self._info.model_id = nonempty_str(record.get("modelId"))
        message = as_dict(record.get("message")) if entry_type == "message" else None
        role = message.get("role") if message is not None else None
        if message is not None and role == "user":
            text = clean_text(message_text(message.get("content")))
            if text:
                ts = (number_to_ms(message.get("timestamp")) or iso_to_ms(record.get("timestamp"))
                      or self._info.started_at or 0)
                turn_id = storable_id(self._v1_turn_id(text) or entry_id)   # as its anchor names it
                replaces = entry_id if turn_id != storable_id(entry_id) else None
                chunk.start_turn(turn_id, ts, text, self._turns, line_number, replaces)
                self._reads.clear()   # a read awaited is of this turn (its result, of a later one, is not parsed)
                self._turns += 1
                self._record_node(entry_id, turn_id, chunk)
                return
        anchor = self._parent_anchor(parent_id, has_parent)
        if message is not None and role == "assistant":
            if self._info.model_id is None:
                self._info.model_id = nonempty_str(message.get("model"))
            if anchor is not None:
                content = message.get("content")
                chunk.add_reply(anchor, clean_text(message_text(content)), tool_call_names(content),
                                file_touches(content), self._file_calls(content, anchor))
        elif message is not None and role == "toolResult" and anchor is not None:
            call_id = nonempty_str(message.get("toolCallId"))
            path = self._reads.pop(call_id, None) if call_id is not None else None
            if path is not None:
                self._read_result(path, anchor, message)
            awaited = self._edits.pop(call_id, None) if call_id is not None else None
            if awaited is not None and call_id is not None:
                self._edit_result(call_id, awaited, message, chunk)
        self._record_node(entry_id, anchor, chunk)

    # -- what a turn's reads showed ---------------------------------------------------------------
    def _key(self, path: str) -> str:
        return absolute_touch_path(path, self._info.cwd) or path

    def _file_calls(self, content: Any, turn: str) -> list[EditCall]:
        """:func:`edit_calls`, in call order, with what this turn's reads showed: a ``write`` of a file read
        whole earlier in the turn carries the hashes of the lines read (``before``). Notes the whole-file
        reads (their results are parsed), and forgets a file an ``edit`` or a ``bash`` command naming it
        may have changed since (precision first: the write's lines are then unconfirmed, as without a read).
        A read of a file this message also changes is not awaited: its result comes after the message and
        may show the file before or after the change."""
        calls: list[EditCall] = []
        changed: set[str] = set()
        for name, arguments, block in tool_calls(content):
            path = nonempty_str(arguments.get("path"))
            if name == "bash":
                command = arguments.get("command")
                if isinstance(command, str) and (self._known or self._reads or self._edits):
                    named = {key for key in [*self._known, *self._reads.values()]
                             if _file_name(key) in command}
                    for key in named:
                        self._known.pop(key, None)
                    for awaited, (at, key, _seen) in list(self._edits.items()):
                        if key and _file_name(key) in command:   # its result may show the file before it
                            self._edits[awaited] = (at, "", None)
                    changed |= named
                continue
            if path is None:
                continue
            key = self._key(path)
            call_id = nonempty_str(block.get("id"))
            if name == "read":
                whole = arguments.get("offset") in (None, 0, 1) and arguments.get("limit") is None
                if whole and call_id is not None and _storable(call_id, MAX_CALL_ID_CHARS) \
                        and _storable(key, MAX_PATH_CHARS):
                    self._reads.pop(call_id, None)
                    self._reads[call_id] = key
                    while len(self._reads) > MAX_PENDING_READS:
                        del self._reads[next(iter(self._reads))]
                continue
            found = _call_edits(name, arguments, call_id)
            if found:
                # an earlier edit of the file in this message: its result no longer shows what the file holds
                for awaited, (at, other, _seen) in list(self._edits.items()):
                    if other == key:
                        self._edits[awaited] = (at, "", None)
            if name == "write" and found:
                known = self._known.pop(key, None)
                seen = _keys(known[1]) if known is not None else None
                if seen is not None and known is not None and known[0] == turn:
                    found = [EditCall(call.path, call.tool, call.call_id, None, call.new, whole=True,
                                      before=tuple(seen)) for call in found]
                elif seen is not None:   # seen in an earlier turn: a person may have changed the file since
                    found = [EditCall(call.path, call.tool, call.call_id, None, call.new, whole=True,
                                      earlier=tuple(seen)) for call in found]
                if editspans.bounded(found[-1].new):   # a second write of the file in the turn replaces this one's
                    self._remember(key, turn, found[-1].new)
                changed.add(key)
            elif found:
                seen_before = self._known.pop(key, None)
                changed.add(key)
                if call_id is not None and _storable(call_id, MAX_CALL_ID_CHARS):
                    self._edits.pop(call_id, None)
                    self._edits[call_id] = (turn, key, seen_before)
                    while len(self._edits) > MAX_PENDING_READS:
                        del self._edits[next(iter(self._edits))]
            calls.extend(found)
        if changed and self._reads:
            for call_id in [call_id for call_id, key in self._reads.items() if key in changed]:
                del self._reads[call_id]
        return calls

    def _edit_result(self, call_id: str, awaited: tuple[str, str, tuple[str, list[int] | str] | None],
                     message: dict[str, Any], chunk: Chunk) -> None:
        """An ``edit``'s result: its ``details.patch`` (a unified diff with a few lines of context) gives
        the lines of the file right before and after each replaced text (:func:`kept_in_patch`), given to
        the call's blocks still in this parse; and what the file holds after the call, when its
        ``details.diff`` shows every line of it (:func:`shown_whole`: a view of this turn), or when the
        session knew what it held before and the patch applies to that (:func:`patched`: a view as old
        as that one)."""
        turn, key, seen = awaited
        details = as_dict(message.get("details"))
        patch = details.get("patch") if details is not None else None
        diff = details.get("diff") if details is not None else None
        if message.get("isError") is True or not isinstance(patch, str):
            return
        whole = shown_whole(diff) if isinstance(diff, str) and key else None
        if whole is not None:
            self._remember(key, turn, whole)
        elif seen is not None and key:
            after = patched(_keys(seen[1]), patch)
            if after is not None:
                self._remember(key, seen[0], after)
        delta = chunk.turns.get(turn)
        if delta is None:
            return
        parsed = _Patch(patch)
        for position in delta.edits_of(call_id):
            edit = delta.edits[position]
            if edit.tool == "edit" and edit.old:
                kept_before, kept_after = parsed.kept(edit.old)
                if kept_before or kept_after:
                    delta.replace_edit(position, dataclasses.replace(edit, kept_before=kept_before,
                                                                     kept_after=kept_after))

    def _read_result(self, path: str, turn: str, message: dict[str, Any]) -> None:
        """A read's result: the hashes of the file's lines, when it is the whole file's text."""
        if message.get("isError") is True or (as_dict(message.get("details")) or {}).get("truncation"):
            return
        blocks = [as_dict(block) for block in as_list(message.get("content"))]
        if not blocks or any(block is None or block.get("type") != "text" or not isinstance(block.get("text"), str)
                             for block in blocks):
            return   # an image, or nothing
        text = "".join(str(block["text"]) for block in blocks if block is not None)
        if not _PARTIAL_READ.search(text) and editspans.bounded(text):
            self._remember(path, turn, text)

    def _remember(self, path: str, turn: str, shown: list[int] | str) -> None:
        if not _storable(path, MAX_PATH_CHARS):
            return
        self._known.pop(path, None)
        self._known[path] = (turn, shown)
        while len(self._known) > MAX_KNOWN_FILES:
            del self._known[next(iter(self._known))]

    def _v1_turn_id(self, text: str) -> str | None:
        """The v1 id under which this user turn (the next one, ``self._turns``) is already stored, if
        this v2/v3 file is Pi's rewrite of a v1 session pimem imported before."""
        if self._version < 2 or self.stored_turns is None or self._info.native_id is None:
            return None
        if self._v1_count is not None and self._turns >= self._v1_count:
            return None
        if self._v1_turns is None:
            self._v1_turns = self.stored_turns(self._info.native_id, V1_ID_PATTERN)
            self._v1_count = max(self._v1_turns, default=-1) + 1
        stored = self._v1_turns.get(self._turns)
        if stored is None or stored[1] != text or _V1_ID.fullmatch(stored[0]) is None:
            return None
        return stored[0]

    def session(self) -> SessionInfo:
        return self._info

    def state(self) -> dict[str, Any]:
        for key, (turn, shown) in list(self._known.items()):   # hashed once, kept hashed
            lines = _keys(shown)
            if lines is None:
                del self._known[key]
            else:
                self._known[key] = (turn, lines)
        return {**self._info.to_state(), "header": self._have_header, "version": self._version,
                "turns": self._turns, "previous": self._previous, "v1Turns": self._v1_count,
                "reads": dict(self._reads),
                "known": {key: [turn, shown] for key, (turn, shown) in self._known.items()}}
