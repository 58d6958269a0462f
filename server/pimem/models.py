"""Plain data shared by the services. No I/O, no third-party imports; their JSON views are in pimem.wire."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal, TypeGuard

# The registry of sources: every agent whose history pimem reads. A new source is one name here (with its
# entry in SOURCE_REGISTRY), one importer module registered in pimem.importers, and its default roots
# in pimem.paths (tests/test_sources.py checks that every place knows every source).
Source = Literal["pi", "claude", "codex", "gemini", "opencode", "copilot-cli", "copilot-chat", "cursor"]


@dataclass(frozen=True)
class SourceSpec:
    """What the services know of one source besides its importer: how people name it, and the agent
    versions whose on-disk formats its importer was checked against (real files written by these versions,
    plus hand-made files for the older generations described in docs/formats.md), quoted in every import
    issue so that a user can compare with the version they run."""

    label: str
    checked_versions: str


SOURCE_REGISTRY: dict[Source, SourceSpec] = {
    "pi": SourceSpec("Pi", "Pi coding agent session format v1-v3 (checked with Pi 1.6.0)"),
    "claude": SourceSpec("Claude Code", "Claude Code 1.0.x-2.1.x (checked with Claude Code 2.1.332)"),
    "codex": SourceSpec("Codex", "Codex CLI rollouts from the 2025 TypeScript CLI to 0.171.0 "
                                 "(checked with Codex 0.171.0)"),
    "gemini": SourceSpec("Gemini CLI", "Gemini CLI chats, JSONL and legacy JSON (checked with Gemini CLI 0.61.0)"),
    "opencode": SourceSpec("OpenCode", "OpenCode's SQLite store, 1.x tables and 2.x session_message "
                                       "(checked with OpenCode 1.18.33)"),
    "copilot-cli": SourceSpec("Copilot CLI", "GitHub Copilot CLI session-state events (checked with Copilot "
                                             "CLI 1.0.102)"),
    "copilot-chat": SourceSpec("Copilot Chat", "VS Code chat session logs (format 3, .jsonl and .json) and "
                                               "Copilot Chat transcripts (reconstructed from VS Code's source)"),
    "cursor": SourceSpec("Cursor", "Cursor agent transcripts and state.vscdb conversations (composerData "
                                   "_v 13-16, bubbles _v 2-3; reconstructed from readers' descriptions, Cursor 3.x)"),
}
SOURCES: tuple[Source, ...] = tuple(SOURCE_REGISTRY)
# Kept for the callers that quote it (import_issue).
HISTORY_SCHEMA_REFERENCE_VERSIONS: dict[Source, str] = {name: spec.checked_versions
                                                         for name, spec in SOURCE_REGISTRY.items()}


def is_source(value: object) -> TypeGuard[Source]:
    return isinstance(value, str) and value in SOURCE_REGISTRY


def source_label(source: str) -> str:
    """How people name a source ("Claude Code"); an unknown name as it is."""
    return SOURCE_REGISTRY[source].label if is_source(source) else source


@dataclass
class SyncIssue:
    """A problem isolated to one file (or one root); everything else was imported."""

    source: Source
    jsonl_path: str | None
    error: str


def import_issue(source: Source, path: str | None, cause: str, *, partly: bool = False) -> SyncIssue:
    """The issue text for a file (``partly``: the file was imported except what ``cause`` names)."""
    where = f" ({path})" if path else ""
    outcome = "was incomplete" if partly else "failed"
    message = (
        f"{source} history import {outcome}{where}: {cause}. "
        f"pimem's importer was verified against {HISTORY_SCHEMA_REFERENCE_VERSIONS[source]}; "
        f"if your {source} version is newer, its format may have changed."
    )
    return SyncIssue(source=source, jsonl_path=path, error=message)


@dataclass(frozen=True)
class SyncProgress:
    """Where a sync is: files parsed, then turns indexed (the second phase of a large sync)."""

    files_done: int
    files_total: int
    indexed: int = 0
    to_index: int = 0

    @property
    def indexing(self) -> bool:
        return self.to_index > 0


@dataclass
class SyncStats:
    """What one sync did. Field names follow the seed's BackfillStats."""

    pi: int = 0
    claude: int = 0
    codex: int = 0
    turns: int = 0
    scanned_files: int = 0
    skipped_files: int = 0
    issues: list[SyncIssue] = field(default_factory=list)
    cancelled: bool = False
    duration_ms: int = 0
    stored_ms: int = 0          # until every turn was stored (and found by recall); then the index is built
    changed_sources: set[Source] = field(default_factory=set)
    # Files with changed turns per source (every source, 0 when none); pi/claude/codex above mirror the
    # first three for the clients that read those keys.
    files_by_source: dict[Source, int] = field(default_factory=lambda: dict.fromkeys(SOURCES, 0))

    def count_file(self, source: Source) -> None:
        self.files_by_source[source] = self.files_by_source.get(source, 0) + 1
        if source == "pi":
            self.pi += 1
        elif source == "claude":
            self.claude += 1
        elif source == "codex":
            self.codex += 1
