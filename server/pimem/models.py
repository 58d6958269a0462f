"""Plain data shared by the services. No I/O, no third-party imports; their JSON views are in pimem.wire."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

Source = Literal["pi", "claude", "codex", "copilot-cli", "copilot-chat", "cursor"]
SOURCES: tuple[Source, ...] = ("pi", "claude", "codex")

# The agent versions whose on-disk formats the importers were checked against (real files written by
# these versions, plus hand-made files for the older generations described in docs/formats.md).
# Quoted in every import issue so that a user can compare with the version they run.
HISTORY_SCHEMA_REFERENCE_VERSIONS: dict[Source, str] = {
    "pi": "Pi coding agent session format v1-v3 (checked with Pi 1.6.0)",
    "claude": "Claude Code 1.0.x-2.1.x (checked with Claude Code 2.1.332)",
    "codex": "Codex CLI rollouts from the 2025 TypeScript CLI to 0.171.0 (checked with Codex 0.171.0)",
}


def is_source(value: object) -> bool:
    return isinstance(value, str) and value in SOURCES


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

    def count_file(self, source: Source) -> None:
        if source == "pi":
            self.pi += 1
        elif source == "claude":
            self.claude += 1
        else:
            self.codex += 1
