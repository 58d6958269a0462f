"""Which files discovery takes (pimem.discovery, with each importer's TranscriptFiles), for a whole
sync and for a live update alike, and the bound on a transcript read whole (Codex's G0 ``.json``),
which the sync and the Codex → Pi migration share."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from pimem.discovery import discover, source_of, stat_paths
from pimem.importers import TRANSCRIPT_FILES
from pimem.migrate import migrate_codex_sessions
from pimem.models import SyncIssue
from pimem.sync import SyncRequest, run_sync
from support.history import roots_under

PI = "pi/agent/sessions/--tmp-demo--"
CLAUDE = "claude/projects/-tmp-demo"
CODEX = "codex/sessions/2026/12/01"

# (relative path, taken by discovery)
LAYOUT = [
    (f"{PI}/2026-12-01T00-00-00-000Z_a.jsonl", True),
    (f"{PI}/notes.txt", False),
    (f"{CLAUDE}/0f0f0f0f-0000-4000-8000-000000000001.jsonl", True),
    (f"{CLAUDE}/agent-1234.jsonl", False),                               # a legacy sub-agent transcript
    (f"{CLAUDE}/0f0f0f0f-0000-4000-8000-000000000001/subagents/agent-5678.jsonl", False),
    (f"{CLAUDE}/0f0f0f0f-0000-4000-8000-000000000001/subagents/other.jsonl", False),   # the folder is skipped
    (f"{CODEX}/rollout-2026-12-01T00-00-00-a.jsonl", True),
    (f"{CODEX}/rollout-2026-12-01T00-00-00-a.jsonl.zst", False),        # its plain twin is read instead
    (f"{CODEX}/rollout-2026-12-01T00-00-00-b.jsonl.zst", True),         # no plain twin
    (f"{CODEX}/rollout-2025-04-01-c.json", True),                       # G0, read whole
    (f"{CODEX}/history.jsonl", False),                                  # not a rollout
]


@pytest.fixture
def base(tmp_path: Path) -> Path:
    for relative, _taken in LAYOUT:
        path = tmp_path / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(b"")
    return tmp_path


def test_discovery_takes_each_agents_transcripts_and_nothing_else(base: Path) -> None:
    issues: list[SyncIssue] = []
    found = discover(roots_under(base), {"pi", "claude", "codex"}, issues)
    assert issues == []
    assert sorted(os.path.relpath(f.path, base) for f in found) == sorted(r for r, taken in LAYOUT if taken)
    assert {(f.source, os.path.relpath(f.path, base).split("/")[0]) for f in found} == \
        {("pi", "pi"), ("claude", "claude"), ("codex", "codex")}


def test_files_are_stated_alike_relative_to_their_folder_or_by_path(base: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """fstatat where the platform has it, a stat by path elsewhere: the same files, stamps and issues (a
    symlink to a transcript followed, a dangling one an issue naming it)."""
    from pimem import discovery

    target = base / CLAUDE / "0f0f0f0f-0000-4000-8000-000000000001.jsonl"
    target.write_text('{"type":"user"}\n')
    os.symlink(target, base / CLAUDE / "0f0f0f0f-0000-4000-8000-000000000002.jsonl")
    os.symlink(base / "gone", base / PI / "2026-12-01T00-00-00-000Z_dangling.jsonl")

    def run() -> tuple[list[tuple[str, ...]], list[str]]:
        issues: list[SyncIssue] = []
        found = discover(roots_under(base), {"pi", "claude", "codex"}, issues)
        return sorted((f.source, f.path, str(f.size), str(f.mtime_ns), str(f.inode), f.key) for f in found), \
            sorted(issue.error for issue in issues)

    relative = run()
    monkeypatch.setattr(discovery, "_STAT_IN_FOLDER", False)
    assert run() == relative
    files, issues = relative
    assert len(issues) == 1 and "_dangling.jsonl" in issues[0] and "cannot read the file" in issues[0]
    # the link and its target are one file of one agent: taken once
    assert sum(1 for f in files if f[4] == str(target.stat().st_ino)) == 1


def test_a_live_update_takes_the_same_files_as_discovery(base: Path) -> None:
    roots = roots_under(base)
    issues: list[SyncIssue] = []
    paths = [str(base / relative) for relative, _taken in LAYOUT] + [str(base / "elsewhere.jsonl")]
    taken = stat_paths(paths, roots, {"pi", "claude", "codex"}, issues)
    assert issues == []
    assert sorted(f.path for f in taken) == sorted(f.path for f in discover(roots, {"pi", "claude", "codex"}, []))
    assert stat_paths(paths, roots, {"claude"}, []) == [f for f in taken if f.source == "claude"]
    assert source_of(str(base / "elsewhere.jsonl"), roots) is None


def test_only_codex_transcripts_are_read_whole() -> None:
    assert [source for source, files in TRANSCRIPT_FILES.items() if files.is_document("rollout-x.json")] == ["codex"]
    assert TRANSCRIPT_FILES["codex"].document_max_bytes == 64 * 1024 * 1024


def test_a_g0_rollout_over_the_bound_is_one_issue_for_the_sync_and_for_the_migration(tmp_path: Path) -> None:
    rollout = tmp_path / CODEX / "rollout-2025-04-01-huge.json"
    rollout.parent.mkdir(parents=True)
    with rollout.open("wb") as handle:   # sparse: no 64 MiB written
        handle.truncate(TRANSCRIPT_FILES["codex"].document_max_bytes + 1)
    stats = run_sync(SyncRequest(db_path=str(tmp_path / "memory.db"), roots=roots_under(tmp_path)))
    assert [issue.jsonl_path for issue in stats.issues] == [str(rollout)]
    assert "a .json rollout larger than 64 MiB is not read" in stats.issues[0].error
    report = migrate_codex_sessions("/tmp/demo", env={"CODEX_HOME": str(tmp_path / "codex"),
                                                      "PI_CODING_AGENT_DIR": str(tmp_path / "pi" / "agent")})
    assert [issue.jsonl_path for issue in report.issues] == [str(rollout)]
    assert "a .json rollout larger than 64 MiB is not read" in report.issues[0].error


def test_sync_and_migration_read_documents_through_the_importers_bound(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The bound is Codex's declaration, not a copy in sync or migrate: lowered there, a real G0
    rollout is refused by both; raised to its size, both read it."""
    legacy = Path(__file__).parent / "fixtures/legacy/codex/sessions"
    [g0] = legacy.glob("rollout-*.json")
    rollout = tmp_path / CODEX / g0.name
    rollout.parent.mkdir(parents=True)
    rollout.write_bytes(g0.read_bytes())
    size = rollout.stat().st_size
    env = {"CODEX_HOME": str(tmp_path / "codex"), "PI_CODING_AGENT_DIR": str(tmp_path / "pi" / "agent")}

    def read_by_sync_and_migration() -> tuple[list[str], list[str], int]:
        stats = run_sync(SyncRequest(db_path=str(tmp_path / "memory.db"), roots=roots_under(tmp_path),
                                     force=True, workers=1))
        cwd = json.loads(g0.read_text(encoding="utf-8"))["session"].get("cwd") or "/tmp/demo"
        report = migrate_codex_sessions(cwd, env=env, dry_run=True)
        return [i.error for i in stats.issues], [i.error for i in report.issues], stats.turns

    monkeypatch.setattr(TRANSCRIPT_FILES["codex"], "document_max_bytes", size - 1)
    sync_errors, migrate_errors, _turns = read_by_sync_and_migration()
    assert len(sync_errors) == 1 and "is not read" in sync_errors[0]
    assert len(migrate_errors) == 1 and "is not read" in migrate_errors[0]
    monkeypatch.setattr(TRANSCRIPT_FILES["codex"], "document_max_bytes", size)
    sync_errors, migrate_errors, turns = read_by_sync_and_migration()
    assert (sync_errors, migrate_errors) == ([], []) and turns > 0
