"""What every transcript parser produces, and the contract the sync engine relies on.

A parser reads one transcript as a stream of records (one JSON object per line), in file order, and
can stop at any line boundary and later continue from a saved ``state()`` when the file has grown.
That is what makes sync incremental: any sequence of appends and syncs must leave exactly the rows
that one full parse of the final file would (tested property-style in tests/sync/test_incremental.py).

Output goes into a :class:`Chunk`: turns that start in this chunk (``is_new``) carry the whole user
text; replies to turns that started in an earlier chunk are appended to the stored row by the sync
engine. A reply is the ``"\\n"``-join of its parts; each part is one assistant message's text. The files a
turn's tool calls read, wrote, edited or deleted come with its replies (``TurnDelta.files``), as the
calls give them; the sync makes them absolute against the session's cwd (:func:`absolute_touch_path`).

Each importer also declares which files are its transcripts (:class:`TranscriptFiles`): pimem.discovery
walks the agents' roots with these rules, and a transcript that is one JSON document rather than JSONL
is read whole through them (:meth:`TranscriptFiles.read_document`, then
:meth:`TranscriptParser.feed_document`).
"""

from __future__ import annotations

import ntpath
import posixpath
import re
from abc import ABC, abstractmethod
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, Literal

from pimem.jsonl import Line, loads, open_regular
from pimem.models import Source
from pimem.textutil import is_storable

# Looks up the nearest user-message ancestor of an entry parsed in an earlier chunk (Pi trees).
# Returns (found, anchor): found is False when the entry is unknown.
NodeLookup = Callable[[str], tuple[bool, str | None]]

# The turns already stored for a session (by its native id) whose message id matches a GLOB pattern:
# {turn_index: (user_message_id, user_text)}. Lets a parser keep the ids a turn was first stored under
# when the agent rewrote the file with new ids (a Pi v1 session migrated by Pi, importers/pi.py).
StoredTurnLookup = Callable[[str, str], dict[int, tuple[str, str]]]

_VERSION = re.compile(r"[0-9A-Za-z][0-9A-Za-z.+_-]{0,39}")


def version_hint(product: str, value: object) -> str | None:
    """"<product> <version>" for the version a transcript records, or None if it records none. Only a
    plain version string is quoted: the text ends up in issue messages that editors display."""
    if isinstance(value, str) and _VERSION.fullmatch(value):
        return f"{product} {value}"
    return None


# What a tool call did to a file: read it, wrote it whole (created or overwrote), edited it, deleted it.
FileAction = Literal["read", "write", "edit", "delete"]
# A file a turn's tool call touched: the path as the call gave it (perhaps relative), and the action.
FileTouch = tuple[str, FileAction]


@dataclass(frozen=True)
class EditCall:
    """The text one edit tool call wrote into a file, as the call gives it (one block of a multi-edit
    call each): the path (perhaps relative), the tool's name, the call's id, the text it replaced
    (``old``; None when the call does not say) and the text it wrote (``new``). ``whole``: the call
    wrote the whole file (a ``Write``, an added file). pimem.editspans turns it into lines.
    ``amends``: this call's whole-file write was stored earlier without ``old`` (its result came in a
    later parse); this one, with ``old``, replaces it. ``before``: for a whole-file write whose transcript
    shows what the file held but not as the call's replaced text (a Pi ``read`` of the whole file earlier
    in the same turn), the hashes of those lines (pimem.editspans.line_keys): the write is then an edit of
    the whole file, as with ``old``. ``earlier``: the same, when what the transcript shows is of an earlier
    turn (the session's last view of the file: a person may have changed it since;
    pimem.editspans.span_since). ``kept_before`` / ``kept_after``: the file's lines next to the
    replaced text, from the call's result (Claude Code's ``originalFile``): the context of the lines it
    added at the edges of ``new`` (pimem.editspans)."""

    path: str
    tool: str
    call_id: str | None
    old: str | None
    new: str
    whole: bool = False
    amends: bool = False
    before: tuple[int, ...] | None = None
    earlier: tuple[int, ...] | None = None
    kept_before: tuple[str, ...] = ()   # the file's lines right before / after the replaced text, where
    kept_after: tuple[str, ...] = ()    # the call's result says (pimem.editspans.kept_around)

_WINDOWS_ABSOLUTE = re.compile(r"(?:[A-Za-z]:[\\/]|\\\\)")


def absolute_touch_path(path: str, cwd: str) -> str | None:
    """The absolute form of a path a tool call gave, against the session's ``cwd`` (normalised, ``..``
    resolved; symlinks are not: agents record the path they were given). None when it cannot be made
    absolute: relative without a cwd, ``~`` (whose home is unknown here), empty, or holding a NUL or a lone
    surrogate (JSON allows one; the store, UTF-8, cannot hold it)."""
    if not path or "\0" in path or path.startswith("~") or not is_storable(path):
        return None
    if _WINDOWS_ABSOLUTE.match(path):
        return ntpath.normpath(path)
    if path.startswith("/"):
        return posixpath.normpath(path)
    if _WINDOWS_ABSOLUTE.match(cwd):
        return ntpath.normpath(ntpath.join(cwd, path))
    if not cwd.startswith("/"):
        return None
    return posixpath.normpath(posixpath.join(cwd, path))


@dataclass
class TurnDelta:
    user_message_id: str
    is_new: bool
    ts: int = 0
    user_text: str = ""
    turn_index: int = 0
    line: int | None = None
    reply_parts: list[str] = field(default_factory=list)
    tools: list[str] = field(default_factory=list)
    files: list[FileTouch] = field(default_factory=list)   # files its tool calls touched, in call order
    edits: list[EditCall] = field(default_factory=list)     # the text its edit calls wrote, in call order
    replaces: str | None = None   # a message id this turn was stored under by an older pimem (removed)
    # what tools, files and edits holds, for add_reply to add each once in time linear in the calls (a
    # line of a transcript can hold hundreds of thousands of them)
    _held: set[object] = field(default_factory=set, repr=False, compare=False)
    # whole-file writes without ``old``, by call id, in order (see unanswered_write); _seen: edits indexed
    _unanswered: dict[str, deque[int]] = field(default_factory=dict, repr=False, compare=False)
    _seen: int = field(default=0, repr=False, compare=False)
    # positions in ``edits`` by call id (see edits_of); _indexed: edits indexed
    _by_call: dict[str, list[int]] = field(default_factory=dict, repr=False, compare=False)
    _indexed: int = field(default=0, repr=False, compare=False)

    def add_once(self, kind: str, items: list[Any], item: Any) -> None:
        """Append ``item`` to ``items`` (this delta's ``kind`` list) unless it holds it already."""
        if (kind, item) not in self._held:
            self._held.add((kind, item))
            items.append(item)

    def unanswered_write(self, call_id: str) -> int | None:
        """The position in ``edits`` of the first whole-file write of this call whose replaced text is not
        known yet (``old`` None; its result may give it), or None. Linear in the edits over all calls (a
        turn may hold thousands of writes, each answered by its result)."""
        for position in range(self._seen, len(self.edits)):
            edit = self.edits[position]
            if edit.whole and edit.old is None and edit.call_id is not None:
                self._unanswered.setdefault(edit.call_id, deque()).append(position)
        self._seen = len(self.edits)
        waiting = self._unanswered.get(call_id)
        while waiting:   # a write answered since (replace_edit) leaves the queue here
            edit = self.edits[waiting[0]]
            if edit.whole and edit.old is None and edit.call_id == call_id:
                return waiting[0]
            waiting.popleft()
        return None

    def edits_of(self, call_id: str) -> list[int]:
        """The positions in ``edits`` of this call's edits, in order: a call's result finds them in time
        linear in the turn's edits over all its results (a turn may hold thousands of edits, each answered
        by its result). ``replace_edit`` keeps a call's edits where they are."""
        for position in range(self._indexed, len(self.edits)):
            found = self.edits[position].call_id
            if found is not None:
                self._by_call.setdefault(found, []).append(position)
        self._indexed = len(self.edits)
        return self._by_call.get(call_id, [])

    def replace_edit(self, index: int, edit: EditCall) -> None:
        """Replace ``edits[index]`` (a call amended by a later record)."""
        self._held.discard(("edit", self.edits[index]))
        self._held.add(("edit", edit))
        self.edits[index] = edit


@dataclass
class Chunk:
    """Everything parsed between two commit points."""

    turns: dict[str, TurnDelta] = field(default_factory=dict)
    nodes: list[tuple[str, str | None]] = field(default_factory=list)
    bad_lines: int = 0
    first_bad_line: int | None = None

    def start_turn(self, message_id: str, ts: int, text: str, turn_index: int, line: int | None,
                   replaces: str | None = None) -> None:
        # A second record with the same message id restarts the turn (last one wins), the same way
        # whether the two records arrive in one chunk or in two.
        self.turns.pop(message_id, None)
        self.turns[message_id] = TurnDelta(message_id, True, ts, text, turn_index, line, replaces=replaces)

    def add_reply(self, message_id: str, part: str, tools: list[str], files: Iterable[FileTouch] = (),
                  edits: Iterable[EditCall] = ()) -> None:
        delta = self.turns.get(message_id)
        if delta is None:
            delta = self.turns[message_id] = TurnDelta(message_id, False)
        if part:
            delta.reply_parts.append(part)
        for name in tools:
            delta.add_once("tool", delta.tools, name)
        for touch in files:
            delta.add_once("file", delta.files, touch)
        for edit in edits:   # a call some agents record twice (announced, then run)
            delta.add_once("edit", delta.edits, edit)

    def note_bad_line(self, line_number: int) -> None:
        self.bad_lines += 1
        if self.first_bad_line is None:
            self.first_bad_line = line_number

    def note_bad_record(self) -> None:
        """A record that has no line (a database row, a file of a JSON tree): counted, reported as records
        rather than as a line number."""
        self.bad_lines += 1


class BadState(Exception):
    """A saved parser state not of the types its parser writes. The store is shared (the Pi extension
    writes the same memory.db) and may have been damaged: such a state is forgotten, and the file parsed
    again from its start (pimem.sync.ingest), never fatal to its file."""


def saved(state: dict[str, Any], key: str, kind: type, default: Any = None) -> Any:
    """``state[key]`` for a parser's ``__init__``: ``default`` when absent or null, else a value of
    ``kind`` (an int is not a bool, nor a float an int); :class:`BadState` otherwise."""
    value = state.get(key)
    if value is None:
        return default
    if not (type(value) is kind if kind in (int, bool) else isinstance(value, kind)):
        raise BadState(key)
    return value


def saved_list(state: dict[str, Any], key: str, shape: Callable[[Any], bool]) -> list[Any] | None:
    """``state[key]`` when it is a list whose items each have ``shape`` (None when absent or null);
    :class:`BadState` otherwise."""
    value: list[Any] | None = saved(state, key, list)
    if value is not None and not all(shape(item) for item in value):
        raise BadState(key)
    return value


def is_row(*kinds: type | None) -> Callable[[Any], bool]:
    """The shape of a saved row: a list of ``len(kinds)`` items, each of its kind (None: any)."""
    def check(value: Any) -> bool:
        return isinstance(value, list) and len(value) == len(kinds) and all(
            kind is None or (type(item) is kind if kind in (int, bool) else isinstance(item, kind))
            for item, kind in zip(value, kinds, strict=True))
    return check


@dataclass
class SessionInfo:
    native_id: str | None = None
    cwd: str = ""
    started_at: int | None = None
    model_id: str | None = None
    excluded: str | None = None   # why the whole file is not imported (e.g. a sub-agent transcript)
    agent_version: str | None = None   # which agent version wrote the file, as it says (version_hint)

    @classmethod
    def from_state(cls, state: dict[str, Any]) -> SessionInfo:
        """The keys :meth:`to_state` wrote (:class:`BadState` when one is not of its type)."""
        return cls(native_id=saved(state, "id", str), cwd=saved(state, "cwd", str, ""),
                   started_at=saved(state, "startedAt", int), model_id=saved(state, "model", str),
                   excluded=saved(state, "excluded", str), agent_version=saved(state, "agentVersion", str))

    def to_state(self) -> dict[str, Any]:
        """The keys :meth:`from_state` reads, for a parser's ``state()``."""
        return {"id": self.native_id, "cwd": self.cwd, "startedAt": self.started_at, "model": self.model_id,
                "excluded": self.excluded, "agentVersion": self.agent_version}


class NotThisFormat(Exception):
    """The file is not a transcript this parser understands; it becomes an isolated issue."""


class TranscriptFiles:
    """Which files under an agent's roots are its transcripts, by name (no I/O: discovery asks about
    every file, 150k of them in a large history). This default takes every ``.jsonl`` file."""

    skip_dirs: frozenset[str] = frozenset()
    """Folders that are never entered: what they hold is not the agent's conversations."""

    document_max_bytes = 0
    """A transcript that is one JSON document is read whole, so its size is bounded: a larger one is an
    issue, not read."""

    document_name = "a JSON transcript"
    """How an issue names a document transcript."""

    watch_subfolders = True
    """Live watching follows the roots' subfolders (False: only files at the top of a root change live;
    the rest is found by full syncs)."""

    def enters(self, parts: tuple[str, ...]) -> bool:
        """Is the folder at ``parts`` (its names below the root) walked? A root that holds other programs'
        folders (VS Code's ``workspaceStorage``) is walked only where the agent writes. Default: every
        folder (but :attr:`skip_dirs`)."""
        return True

    def holds(self, parts: tuple[str, ...]) -> bool:
        """May the files directly in the folder at ``parts`` be transcripts (:meth:`wants` then decides
        by name)? Default: every folder's."""
        return True

    def wants(self, name: str) -> bool:
        """Is a file of this name a transcript (or a compressed copy of one)?"""
        return name.endswith(".jsonl")

    def plain_twin(self, name: str) -> str | None:
        """For a compressed copy (``x.jsonl.zst``): the name of the plain file, which is read instead
        when both are in the same folder. None for any other name."""
        return None

    def is_database(self, path: str) -> bool:
        """Is this history a database of many sessions (read by the importer's
        :class:`DatabaseReader`, only the sessions changed since the last read)? By its name."""
        return False

    def companions(self, name: str) -> tuple[str, ...]:
        """Files beside a transcript of this name whose changes are its changes (a SQLite database's
        ``-wal``: a WAL database grows there, not in its own file). Their sizes and times are part of
        the transcript's stamp; a live update of one is an update of the transcript."""
        return ()

    def owner_of(self, name: str) -> str | None:
        """For a companion file's name (see :meth:`companions`): the name of its transcript. None for any
        other name."""
        return None

    def is_document(self, path: str) -> bool:
        """Is this transcript one JSON document (read whole, then :meth:`TranscriptParser.feed_document`)
        rather than JSONL (read line by line, resumable)? By its name."""
        return False

    def read_document(self, path: str, size: int | None = None) -> tuple[Any, int]:
        """The whole document and the number of bytes it took. NotThisFormat when it is larger than
        :attr:`document_max_bytes` (``size``: the size discovery saw; a file known to be larger is not
        even opened) or is not JSON. Opened without blocking, as a regular file only."""
        limit = self.document_max_bytes
        too_large = NotThisFormat(f"{self.document_name} larger than {limit >> 20} MiB is not read")
        if size is not None and size > limit:
            raise too_large
        with open_regular(path) as handle:
            data = handle.read(limit + 1)
        if len(data) > limit:
            raise too_large
        try:
            return loads(data), len(data)
        except (ValueError, RecursionError) as error:
            raise NotThisFormat(f"not valid JSON ({error})") from None


class DatabaseReader(ABC):
    """A history that is one database of many sessions (OpenCode's ``opencode.db``), read only where it
    changed. ``state`` is what :meth:`state` returned after the last read (None: read everything); it
    holds what that read saw, e.g. each session's update time. :meth:`sessions` yields each session
    changed since, whole: all its turns as new (``is_new``), so that a session read again replaces what
    was stored of it. After each yielded session, :meth:`state` counts it as read, so a sync stopped
    between two sessions continues with the next one.

    The database belongs to a running program: it is opened read-only without taking a lock that could
    block its writer (pimem.foreign_db). A reader raises NotThisFormat when the file is not such a
    database, and OSError or sqlite3.Error when it cannot be read now (tried again next sync)."""

    def __init__(self, path: str, state: dict[str, Any] | None) -> None:
        self.path = path

    @abstractmethod
    def sessions(self) -> Iterable[tuple[SessionInfo, Chunk]]: ...

    @abstractmethod
    def state(self) -> dict[str, Any]: ...


class TranscriptParser(ABC):
    source: Source
    # A pattern found in every line the parser needs (a superset is fine): other lines are skipped
    # in bulk by the reader without being split out (see LineReader.scan), and :meth:`wants` rejects
    # the lines it does not match. None: every line.
    interesting: re.Pattern[bytes] | None = None
    # Where :meth:`wants` looks for ``interesting``: the line's first HEAD_BYTES (a record whose kind is
    # named before its payload) or the whole line.
    interesting_in_head = False
    # Set by make_parser when the store can be asked (see StoredTurnLookup); None: it cannot.
    stored_turns: StoredTurnLookup | None = None

    def __init__(self, path: str, state: dict[str, Any] | None, lookup: NodeLookup | None = None) -> None:
        self.path = path
        self.lookup = lookup

    def wants(self, line: Line) -> bool:
        """Cheap pre-filter on the raw bytes: False when the record cannot carry turn text. By default,
        every line when there is no :attr:`interesting` pattern; else the lines it matches (in the head
        with :attr:`interesting_in_head`)."""
        if self.interesting is None:
            return True
        if line.data is None:
            return False
        return self.interesting.search(line.head if self.interesting_in_head else line.data) is not None

    def skip(self, line: Line, chunk: Chunk) -> None:  # noqa: B027 - optional hook
        """Called for lines the pre-filter rejected (Pi still records them as tree nodes)."""

    @abstractmethod
    def feed(self, record: Any, line_number: int, chunk: Chunk) -> None:
        """Handle one parsed record. Must not raise for malformed records; raise NotThisFormat
        only when the file as a whole is not of this format."""

    @abstractmethod
    def session(self) -> SessionInfo: ...

    @abstractmethod
    def state(self) -> dict[str, Any]:
        """A JSON-serialisable snapshot from which a new parser continues after the last line fed."""

    def feed_document(self, document: Any, chunk: Chunk) -> None:
        """Handle a transcript that is one JSON document (see TranscriptFiles.is_document)."""
        raise NotThisFormat("not a transcript of this agent (it is JSONL, not one JSON document)")


def feed_line(parser: TranscriptParser, line: Line, chunk: Chunk) -> None:
    """Pre-filter, decode and feed one line. A line that is not JSON, or that the parser cannot make
    sense of, is counted as broken (the sync reports it) and skipped; a blank line is skipped silently;
    only NotThisFormat (the whole file is wrong) propagates. Lines the pre-filter rejects are never
    decoded, so a broken one among them (it cannot carry a turn) is not counted."""
    if not parser.wants(line) or line.data is None:
        parser.skip(line, chunk)
        return
    try:
        record = loads(line.data)
    except (ValueError, RecursionError):
        if line.data.strip():
            chunk.note_bad_line(line.number)
        return
    try:
        parser.feed(record, line.number, chunk)
    except NotThisFormat:
        raise
    except (KeyError, TypeError, ValueError, AttributeError, RecursionError):
        chunk.note_bad_line(line.number)
