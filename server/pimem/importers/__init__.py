"""Transcript parsers, one per agent. Each module documents the record format it reads and declares
which files are its transcripts (``FILES``, a :class:`~pimem.importers.base.TranscriptFiles`) and the
version of its parsing rules (``RULES_VERSION``: raised when what it makes of a file changes).

:data:`IMPORTERS` is the one place a new importer is registered (its source's name and default roots are
in pimem.models and pimem.paths). A source without an importer here is known to the clients but not read.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pimem.importers import claude, codex, copilot_chat, copilot_cli, cursor, gemini, opencode, pi
from pimem.importers.base import (
    DatabaseReader,
    NodeLookup,
    StoredTurnLookup,
    TranscriptFiles,
    TranscriptParser,
)
from pimem.models import Source


@dataclass(frozen=True)
class Importer:
    """One source's importer: its parser of a transcript file (JSONL or one JSON document), which files
    are its histories, its rules version, and, for a history that is a database of many sessions, its
    reader (``TranscriptFiles.is_database`` says which files)."""

    parser: type[TranscriptParser]
    files: TranscriptFiles
    rules_version: int
    database: type[DatabaseReader] | None = None


IMPORTERS: dict[Source, Importer] = {
    "pi": Importer(pi.PiParser, pi.FILES, pi.RULES_VERSION),
    "claude": Importer(claude.ClaudeParser, claude.FILES, claude.RULES_VERSION),
    "codex": Importer(codex.CodexParser, codex.FILES, codex.RULES_VERSION),
    "gemini": Importer(gemini.GeminiParser, gemini.FILES, gemini.RULES_VERSION),
    "opencode": Importer(opencode.OpenCodeParser, opencode.FILES, opencode.RULES_VERSION,
                         opencode.OpenCodeDatabase),
    "copilot-cli": Importer(copilot_cli.CopilotCliParser, copilot_cli.FILES, copilot_cli.RULES_VERSION),
    "copilot-chat": Importer(copilot_chat.CopilotChatParser, copilot_chat.FILES, copilot_chat.RULES_VERSION),
    "cursor": Importer(cursor.CursorTranscriptParser, cursor.FILES, cursor.RULES_VERSION, cursor.CursorDatabase),
}

PARSERS: dict[Source, type[TranscriptParser]] = {source: imp.parser for source, imp in IMPORTERS.items()}
TRANSCRIPT_FILES: dict[Source, TranscriptFiles] = {source: imp.files for source, imp in IMPORTERS.items()}
# Each importer's rules version: a file parsed under an older one is parsed again once (pimem.sync).
RULES_VERSIONS: dict[Source, int] = {source: imp.rules_version for source, imp in IMPORTERS.items()}


def make_parser(source: Source, path: str, state: dict[str, Any] | None,
                lookup: NodeLookup | None = None, stored_turns: StoredTurnLookup | None = None) -> TranscriptParser:
    parser = PARSERS[source](path, state, lookup)
    parser.stored_turns = stored_turns
    return parser


def make_database_reader(source: Source, path: str, state: dict[str, Any] | None) -> DatabaseReader:
    reader = IMPORTERS[source].database
    if reader is None:
        raise KeyError(f"{source} has no database reader")
    return reader(path, state)
