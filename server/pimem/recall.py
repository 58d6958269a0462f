"""Recall past turns from a few entity words.

Semantics (defined by :func:`recall_scan`, the oracle, and kept exactly by the fast path):

* text and entities are lowercased with Python's ``str.lower``; an entity hits a field when it is a
  literal substring of it (``%``, ``_``, ``\\`` are plain characters);
* score = 2 per entity found in ``user_text`` + 1 per entity found in ``reply_text``; rows with
  score 0 are dropped; order: score desc, ``ts`` desc, ``turn_id`` asc;
* a query may weigh its entities (free-text recall, see pimem/freetext.py): an entity of weight ``w``
  counts ``2w`` in ``user_text`` and ``w`` in the reply; without weights every entity weighs 1;
* a copy of an exchange (same user text, reply text and ts: forks, clones, migrated sessions) is
  returned once (its first row in that order);
* ``sources`` keeps those agents; ``cwd`` keeps turns whose session cwd is that folder or below it.

Limits (docs/lsp-extensions.md, "Limits"; the CLI and the language server share them because they are
checked here): a query has 1 to ``MAX_ENTITIES`` entities of at most ``MAX_ENTITY_CHARS`` characters, a
free ``text`` at most ``MAX_TEXT_CHARS``, a ``cwd`` at most ``MAX_PATH_CHARS``; an answer holds at most
``limit`` rows whose long fields are cut (:meth:`RecallRow.to_dict`, ``truncated`` says so), and
:func:`get_turn` gives one turn in full.

The fast path (:func:`recall`) takes candidates from the trigram index newest first and verifies each
against the stored text with the very same scoring; it stops as soon as no unseen turn can enter the
top ``limit`` (a MaxScore-style bound over the per-entity lists), so its cost follows what the top
results need rather than how many turns match.
"""

from __future__ import annotations

import itertools
import os
import re
import shlex
import sqlite3
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import datetime

from pimem import index
from pimem.models import SOURCES, Source, is_source
from pimem.paths import in_folder, normalize_folder
from pimem.store import parse_tool_names

MAX_ENTITIES = 8
MAX_LIMIT = 50
DEFAULT_LIMIT = 5
# Request limits. An entity costs a lowercase and a substring search per candidate turn, a text is
# split into words: both stay in milliseconds at these sizes (bench/limits.py has the figures).
MAX_ENTITY_CHARS = 1_000
MAX_TEXT_CHARS = 100_000
MAX_PATH_CHARS = 4_096           # PATH_MAX: the longest cwd a request may give or an answer may hold
MAX_TURN_ID_CHARS = 1_024        # the longest turn id an answer holds uncut and pimem/turn accepts
# Answer limits: what one row of a recall answer holds at most (the whole turn: get_turn).
TEXT_CUT_CHARS = 4_000           # userText, replyText
TOOL_NAMES_CUT = 64              # toolNames: at most this many names ...
TOOL_NAME_CUT_CHARS = 128        # ... of at most this many characters (the model APIs allow 64)


class RecallError(ValueError):
    """Invalid recall parameters; ``field`` names the offending parameter."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(message)
        self.field = field


@dataclass(frozen=True)
class RecallQuery:
    entities: tuple[str, ...]
    limit: int = DEFAULT_LIMIT
    sources: frozenset[Source] | None = None
    cwd: str | None = None
    weights: tuple[int, ...] | None = None    # one positive integer per entity; None: all 1


def make_query(entities: object, limit: object = None, sources: object = None,
               cwd: object = None) -> RecallQuery:
    """Validate raw parameters (from the CLI or a JSON request) into a query, or raise RecallError."""
    if not isinstance(entities, list | tuple) or not entities:
        raise RecallError("entities", f"entities must be a list of 1 to {MAX_ENTITIES} strings")
    if len(entities) > MAX_ENTITIES:
        raise RecallError("entities", f"at most {MAX_ENTITIES} entities, got {len(entities)}")
    for position, entity in enumerate(entities):
        if not isinstance(entity, str):
            raise RecallError("entities", f"entities[{position}] must be a string")
        if not entity.strip():
            raise RecallError("entities", f"entities[{position}] is blank")
        if len(entity) > MAX_ENTITY_CHARS:
            raise RecallError("entities", f"entities[{position}] is longer than {MAX_ENTITY_CHARS} characters "
                                          f"({len(entity)})")
    if limit is None:
        limit = DEFAULT_LIMIT
    if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= MAX_LIMIT:
        raise RecallError("limit", f"limit must be an integer between 1 and {MAX_LIMIT}")
    source_set: frozenset[Source] | None = None
    if sources is not None:
        if not isinstance(sources, list | tuple | set | frozenset):
            raise RecallError("sources", "sources must be a list of 'pi', 'claude', 'codex'")
        for source in sources:
            if not is_source(source):
                raise RecallError("sources", f"unknown source {source!r} (expected one of {', '.join(SOURCES)})")
        source_set = frozenset(sources) or None
    folder: str | None = None
    if cwd is not None:
        if not isinstance(cwd, str) or not cwd.strip():
            raise RecallError("cwd", "cwd must be a non-empty path")
        if len(cwd) > MAX_PATH_CHARS:
            raise RecallError("cwd", f"cwd is longer than {MAX_PATH_CHARS} characters ({len(cwd)})")
        folder = normalize_folder(cwd)
    return RecallQuery(tuple(entities), limit, source_set, folder)


def check_turn_id(turn_id: object) -> str:
    """A turn id as :func:`get_turn` takes it, or RecallError naming ``turnId``."""
    if not isinstance(turn_id, str) or not turn_id.strip():
        raise RecallError("turnId", "turnId must be a non-empty string")
    if len(turn_id) > MAX_TURN_ID_CHARS:
        raise RecallError("turnId", f"turnId is longer than {MAX_TURN_ID_CHARS} characters ({len(turn_id)})")
    return turn_id


@dataclass
class RecallRow:
    turn_id: str
    session_id: str
    source: str
    cwd: str
    ts: int
    user_text: str
    reply_text: str
    tool_names: list[str]
    hits: int
    jsonl_path: str
    line: int | None
    matched: list[str] = field(default_factory=list)   # the query's entities found in this turn

    @property
    def sort_key(self) -> tuple[int, int, str]:
        return (-self.hits, -self.ts, self.turn_id)

    @property
    def copy_key(self) -> tuple[str, str, int]:
        return (self.user_text, self.reply_text, self.ts)

    @property
    def resume_command(self) -> str | None:
        """The shell command that resumes this session in its own agent, or None.

        Everything in it comes from a transcript, so nothing may become an option or a second
        command: the session id must have its agent's real shape (a UUID for Claude Code and Codex;
        for Pi, Pi's own session-id rule, though only the file path is passed), paths must be
        absolute (an argument starting with ``/`` is never an option) and free of control
        characters, and ``cd`` gets ``--``. Anything else gets no command.
        """
        native = self.session_id.split(":", 1)[1] if ":" in self.session_id else ""
        if self.source == "pi":
            if not (_PI_SESSION_ID.fullmatch(native) and _safe_absolute(self.jsonl_path)):
                return None
            return f"pi --session {shlex.quote(self.jsonl_path)}"
        if self.source == "claude":
            if not _UUID.fullmatch(native):
                return None
            resume = f"claude --resume {native}"
            if not self.cwd:
                return resume
            return f"cd -- {shlex.quote(self.cwd)} && {resume}" if _safe_absolute(self.cwd) else None
        if self.source == "codex":
            return f"codex resume {native}" if _UUID.fullmatch(native) else None
        return None

    @property
    def truncated(self) -> bool:
        """Whether :meth:`to_dict` cuts a field of this row."""
        return (len(self.user_text) > TEXT_CUT_CHARS or len(self.reply_text) > TEXT_CUT_CHARS
                or len(self.cwd) > MAX_PATH_CHARS or len(self.jsonl_path) > MAX_PATH_CHARS
                or len(self.turn_id) > MAX_TURN_ID_CHARS or len(self.session_id) > MAX_TURN_ID_CHARS
                or len(self.tool_names) > TOOL_NAMES_CUT
                or any(len(name) > TOOL_NAME_CUT_CHARS for name in self.tool_names))

    def to_dict(self, *, full: bool = False) -> dict[str, object]:
        """The row as the protocol sends it. In a recall answer (RecallRow) every long field is cut to
        its limit (a prefix; ``truncated`` is then true). ``full`` is the whole turn (TurnRow, for
        pimem/turn and ``pimem show``): nothing cut, no ``hits`` and no ``truncated``."""
        result: dict[str, object] = {
            "turnId": self.turn_id, "sessionId": self.session_id, "source": self.source, "cwd": self.cwd,
            "ts": self.ts, "userText": self.user_text, "replyText": self.reply_text, "toolNames": self.tool_names,
            "hits": self.hits, "jsonlPath": self.jsonl_path, "line": self.line,
            "resumeCommand": self.resume_command, "matched": self.matched, "truncated": False,
        }
        if full:
            del result["hits"], result["truncated"], result["matched"]
            return result
        if not self.truncated:
            return result
        result.update(
            turnId=self.turn_id[:MAX_TURN_ID_CHARS], sessionId=self.session_id[:MAX_TURN_ID_CHARS],
            cwd=self.cwd[:MAX_PATH_CHARS], jsonlPath=self.jsonl_path[:MAX_PATH_CHARS],
            userText=self.user_text[:TEXT_CUT_CHARS], replyText=self.reply_text[:TEXT_CUT_CHARS],
            toolNames=[name[:TOOL_NAME_CUT_CHARS] for name in self.tool_names[:TOOL_NAMES_CUT]],
            truncated=True)
        return result


# Claude Code session ids are UUIDs (v4), Codex thread ids UUIDs (v7 now, v4 in older rollouts).
_UUID = re.compile(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}")
# Pi's assertValidSessionId (UUIDv7 ids, and the custom ids `--session-id` accepts).
_PI_SESSION_ID = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?")
_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def _safe_absolute(path: str) -> bool:
    """A path a resume command may hold: absolute, no longer than a real path can be, and without
    control characters (a newline would end the command where a terminal shows one line)."""
    return bool(path) and len(path) <= MAX_PATH_CHARS and os.path.isabs(path) and _CONTROL.search(path) is None


def score(user_lower: str, reply_lower: str, entities_lower: Sequence[str],
          weights: Sequence[int] | None = None) -> int:
    total = 0
    if weights is None:
        for entity in entities_lower:
            if entity in user_lower:
                total += 2
            if entity in reply_lower:
                total += 1
        return total
    for entity, weight in zip(entities_lower, weights, strict=True):
        if entity in user_lower:
            total += 2 * weight
        if entity in reply_lower:
            total += weight
    return total


def matched_entities(row: RecallRow, entities: Sequence[str]) -> list[str]:
    """The entities found in a row's user text or reply (what the row was found by)."""
    user, reply = row.user_text.lower(), row.reply_text.lower()
    return [entity for entity in entities if entity.lower() in user or entity.lower() in reply]


ROW_COLUMNS = ("t.turn_id, t.session_id, s.source, s.cwd, t.ts, t.user_text, t.reply_text, t.tool_names, "
                "s.jsonl_path, d.line")


def _make_row(values: Sequence[object], hits: int) -> RecallRow:
    return RecallRow(
        turn_id=str(values[0]), session_id=str(values[1]), source=str(values[2]), cwd=str(values[3] or ""),
        ts=_int(values[4]), user_text=str(values[5] or ""), reply_text=str(values[6] or ""),
        tool_names=parse_tool_names(values[7]), hits=hits, jsonl_path=str(values[8] or ""),
        line=values[9] if isinstance(values[9], int) else None,
    )


def _int(value: object) -> int:
    try:
        return int(value)  # type: ignore[call-overload,no-any-return]
    except (TypeError, ValueError):
        return 0


def admit(values: Sequence[object], query: RecallQuery, entities_lower: Sequence[str]) -> RecallRow | None:
    if query.sources is not None and values[2] not in query.sources:
        return None
    if query.cwd is not None and not in_folder(str(values[3] or ""), query.cwd):
        return None
    hits = score(str(values[5] or "").lower(), str(values[6] or "").lower(), entities_lower, query.weights)
    return _make_row(values, hits) if hits > 0 else None


def top_rows(rows: Iterable[RecallRow], limit: int) -> list[RecallRow]:
    chosen: list[RecallRow] = []
    seen: set[tuple[str, str, int]] = set()
    for row in sorted(rows, key=lambda r: r.sort_key):
        if row.copy_key in seen:
            continue
        seen.add(row.copy_key)
        chosen.append(row)
        if len(chosen) == limit:
            break
    return chosen


def get_turn(conn: sqlite3.Connection, turn_id: str) -> RecallRow | None:
    """One stored turn, whole (``hits`` is 0), or None when the store has no such turn."""
    values = conn.execute(
        f"SELECT {ROW_COLUMNS} FROM turns t JOIN sessions s ON s.session_id = t.session_id "
        "LEFT JOIN pimem_docs d ON d.turn_id = t.turn_id WHERE t.turn_id = ?", (check_turn_id(turn_id),)).fetchone()
    return _make_row(values, 0) if values is not None else None


def recall_scan(conn: sqlite3.Connection, query: RecallQuery) -> list[RecallRow]:
    """The reference implementation: score every stored turn. Defines the semantics."""
    entities_lower = [entity.lower() for entity in query.entities]
    rows = []
    for values in conn.execute(
        f"SELECT {ROW_COLUMNS} FROM turns t JOIN sessions s ON s.session_id = t.session_id "
        "LEFT JOIN pimem_docs d ON d.turn_id = t.turn_id"
    ):
        row = admit(values, query, entities_lower)
        if row is not None:
            rows.append(row)
    return _with_matches(top_rows(rows, query.limit), query)


def _with_matches(rows: list[RecallRow], query: RecallQuery) -> list[RecallRow]:
    for row in rows:
        row.matched = matched_entities(row, query.entities)
    return rows


# ---------------------------------------------------------------------------------------------
# Fast path
# ---------------------------------------------------------------------------------------------

# The two sets of turns the index cannot answer yet. Both must cost nothing when they are empty, which
# is almost always: CROSS JOIN pins pimem_pending as the outer loop (with a plain JOIN SQLite scanned
# every doc on each query, 90 ms at 100k turns), and the watermark bounds the orphan search by rowid.
PENDING_ROWS_SQL = (
    f"SELECT {ROW_COLUMNS} FROM pimem_pending p CROSS JOIN pimem_docs d ON d.doc_key = p.doc_key "
    "JOIN turns t ON t.turn_id = d.turn_id JOIN sessions s ON s.session_id = t.session_id")
ORPHAN_ROWS_SQL = (
    f"SELECT {ROW_COLUMNS} FROM turns t JOIN sessions s ON s.session_id = t.session_id "
    "LEFT JOIN pimem_docs d ON d.turn_id = t.turn_id WHERE t.rowid > ? AND d.turn_id IS NULL")


def _needs_scan(entities_lower: Sequence[str]) -> bool:
    # Control characters that the index uses itself (sentinels) or cannot store are answered exactly
    # by the scan; no real entity contains them.
    return any("\x00" in entity or "\x01" in entity for entity in entities_lower)


def recall(conn: sqlite3.Connection, query: RecallQuery) -> list[RecallRow]:
    """Recall with the index when it exists (same results as :func:`recall_scan`)."""
    return _with_matches(_recall(conn, query), query)


def _recall(conn: sqlite3.Connection, query: RecallQuery) -> list[RecallRow]:
    from pimem.search import recall_by_scan, recall_indexed

    entities_lower = [entity.lower() for entity in query.entities]
    if not index.fts_enabled(conn) or _needs_scan(entities_lower):
        return recall_by_scan(conn, query, entities_lower)

    def unindexed() -> Iterator[Sequence[object]]:
        """Turns not in the index yet, scanned exactly: docs whose postings are pending, and rows
        written behind pimem's back that have no doc yet."""
        pending = conn.execute(PENDING_ROWS_SQL)
        orphans = conn.execute(ORPHAN_ROWS_SQL, (index.watermark(conn),))
        return itertools.chain(pending, orphans)

    if conn.in_transaction:  # the caller holds the snapshot
        return recall_indexed(conn, query, entities_lower, unindexed)
    conn.execute("BEGIN")  # one snapshot for the whole query
    try:
        return recall_indexed(conn, query, entities_lower, unindexed)
    finally:
        conn.execute("COMMIT")


# ---------------------------------------------------------------------------------------------
# Presentation
# ---------------------------------------------------------------------------------------------

PREVIEW_CHARS = 500
MARKDOWN_PREVIEW_CHARS = 300
_MARKDOWN_SPECIALS = set("\\`*_{}[]()#+-.!|<>~&")


def escape_markdown(text: str) -> str:
    """Transcript text as inert Markdown: no links, no HTML, no emphasis."""
    return "".join("\\" + char if char in _MARKDOWN_SPECIALS else char for char in text)


def _when(ts: int) -> str:
    try:
        return datetime.fromtimestamp(ts / 1000).strftime("%Y-%m-%d %H:%M")
    except (OverflowError, OSError, ValueError):
        return "unknown time"


def _preview(text: str, limit: int = PREVIEW_CHARS) -> str:
    return text if len(text) <= limit else text[:limit] + "…"


def format_text(rows: Sequence[RecallRow]) -> str:
    """The readable form (the seed's formatRecallResults, plus where each turn came from), with the
    fields cut as in a recall answer. Plain text: the CLI makes control characters visible."""
    if not rows:
        return "No relevant past conversations found."
    lines = ["## Relevant past conversations", ""]
    for row in rows:
        cwd = _preview(row.cwd, MAX_PATH_CHARS) or "unknown folder"
        lines.append(f"### [{row.source} · {_when(row.ts)} · {cwd} · score {row.hits}]")
        lines.append(f"You: {_preview(row.user_text, TEXT_CUT_CHARS)}")
        if row.reply_text:
            lines.append(f"Assistant: {_preview(row.reply_text)}")
        if row.tool_names:
            names = [_preview(name, TOOL_NAME_CUT_CHARS) for name in row.tool_names[:TOOL_NAMES_CUT]]
            lines.append(f"Tools: {', '.join(names)}{', …' if len(row.tool_names) > TOOL_NAMES_CUT else ''}")
        if row.matched:
            lines.append(f"Matched: {', '.join(row.matched)}")
        where = _preview(row.jsonl_path, MAX_PATH_CHARS)
        lines.append(f"Source: {where}:{row.line}" if row.line else f"Source: {where}")
        if row.resume_command:
            lines.append(f"Resume: {row.resume_command}")
        if len(row.turn_id) <= MAX_TURN_ID_CHARS:
            lines.append(f"Turn: {row.turn_id}")
            if row.truncated or len(row.reply_text) > PREVIEW_CHARS:
                lines.append(f"(shortened; the whole turn: pimem show {shlex.quote(row.turn_id)})")
        lines.append("")
    return "\n".join(lines)


def format_turn_text(row: RecallRow) -> str:
    """One whole turn, readable (``pimem show``)."""
    lines = [f"### [{row.source} · {_when(row.ts)} · {row.cwd or 'unknown folder'}]", f"You: {row.user_text}"]
    if row.reply_text:
        lines.append(f"Assistant: {row.reply_text}")
    if row.tool_names:
        lines.append(f"Tools: {', '.join(row.tool_names)}")
    where = f"{row.jsonl_path}:{row.line}" if row.line else row.jsonl_path
    lines += [f"Source: {where}", f"Turn: {row.turn_id}"]
    if row.resume_command:
        lines.append(f"Resume: {row.resume_command}")
    return "\n".join(lines)


def format_markdown(rows: Sequence[RecallRow]) -> str:
    """Markdown for editors (hover, chat): all transcript text escaped, every field short."""
    if not rows:
        return "No relevant past conversations found."
    lines = ["## Relevant past conversations", ""]
    for row in rows:
        lines.append(f"### {escape_markdown(row.source)} · {_when(row.ts)} · "
                     f"{escape_markdown(_preview(row.cwd or '?', MARKDOWN_PREVIEW_CHARS))} · score {row.hits}")
        if row.matched:
            lines.append(f"matched: {escape_markdown(', '.join(row.matched))}")
        lines.append("")
        lines.append(f"**You:** {escape_markdown(_preview(row.user_text, MARKDOWN_PREVIEW_CHARS))}")
        if row.reply_text:
            lines.append("")
            lines.append(f"**Assistant:** {escape_markdown(_preview(row.reply_text, MARKDOWN_PREVIEW_CHARS))}")
        lines.append("")
    return "\n".join(lines)
