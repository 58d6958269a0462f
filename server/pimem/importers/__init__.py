"""Transcript parsers, one per agent. Each module documents the record format it reads."""

from __future__ import annotations

from typing import Any

from pimem.importers.base import NodeLookup, TranscriptParser
from pimem.importers.claude import ClaudeParser
from pimem.importers.codex import CodexParser
from pimem.importers.pi import PiParser
from pimem.models import Source

PARSERS: dict[Source, type[TranscriptParser]] = {"pi": PiParser, "claude": ClaudeParser, "codex": CodexParser}


def make_parser(source: Source, path: str, state: dict[str, Any] | None,
                lookup: NodeLookup | None = None) -> TranscriptParser:
    return PARSERS[source](path, state, lookup)
