"""Transcript parsers, one per agent. Each module documents the record format it reads."""

from __future__ import annotations

from typing import Any

from pimem.importers.base import NodeLookup, StoredTurnLookup, TranscriptParser
from pimem.importers.claude import ClaudeParser
from pimem.importers.codex import CodexParser
from pimem.importers.pi import PiParser
from pimem.models import Source

PARSERS: dict[Source, type[TranscriptParser]] = {"pi": PiParser, "claude": ClaudeParser, "codex": CodexParser}


def make_parser(source: Source, path: str, state: dict[str, Any] | None,
                lookup: NodeLookup | None = None, stored_turns: StoredTurnLookup | None = None) -> TranscriptParser:
    parser = PARSERS[source](path, state, lookup)
    parser.stored_turns = stored_turns
    return parser
