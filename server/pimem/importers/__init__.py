"""Transcript parsers, one per agent. Each module documents the record format it reads and declares
which files are its transcripts (``FILES``, a :class:`~pimem.importers.base.TranscriptFiles`) and the
version of its parsing rules (``RULES_VERSION``: raised when what it makes of a file changes)."""

from __future__ import annotations

from typing import Any

from pimem.importers import claude, codex, pi
from pimem.importers.base import NodeLookup, StoredTurnLookup, TranscriptFiles, TranscriptParser
from pimem.models import Source

PARSERS: dict[Source, type[TranscriptParser]] = {"pi": pi.PiParser, "claude": claude.ClaudeParser,
                                                 "codex": codex.CodexParser}
TRANSCRIPT_FILES: dict[Source, TranscriptFiles] = {"pi": pi.FILES, "claude": claude.FILES, "codex": codex.FILES}
# Each importer's rules version: a file parsed under an older one is parsed again once (pimem.sync).
RULES_VERSIONS: dict[Source, int] = {"pi": pi.RULES_VERSION, "claude": claude.RULES_VERSION,
                                     "codex": codex.RULES_VERSION}


def make_parser(source: Source, path: str, state: dict[str, Any] | None,
                lookup: NodeLookup | None = None, stored_turns: StoredTurnLookup | None = None) -> TranscriptParser:
    parser = PARSERS[source](path, state, lookup)
    parser.stored_turns = stored_turns
    return parser
