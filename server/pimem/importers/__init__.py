"""Transcript parsers, one per agent. Each module documents the record format it reads and declares
which files are its transcripts (``FILES``, a :class:`~pimem.importers.base.TranscriptFiles`)."""

from __future__ import annotations

from typing import Any

from pimem.importers import claude, codex, pi
from pimem.importers.base import NodeLookup, StoredTurnLookup, TranscriptFiles, TranscriptParser
from pimem.models import Source

PARSERS: dict[Source, type[TranscriptParser]] = {"pi": pi.PiParser, "claude": claude.ClaudeParser,
                                                 "codex": codex.CodexParser}
TRANSCRIPT_FILES: dict[Source, TranscriptFiles] = {"pi": pi.FILES, "claude": claude.FILES, "codex": codex.FILES}


def make_parser(source: Source, path: str, state: dict[str, Any] | None,
                lookup: NodeLookup | None = None, stored_turns: StoredTurnLookup | None = None) -> TranscriptParser:
    parser = PARSERS[source](path, state, lookup)
    parser.stored_turns = stored_turns
    return parser
