"""The registry of sources: every place that names sources knows every one (models, paths, the importers,
the protocol doc), roots come from each agent's own environment overrides, a source without an importer
costs nothing, and resume commands take ids of each agent's real shape only."""

from __future__ import annotations

import re
import threading
from pathlib import Path

import pytest

from pimem import discovery
from pimem.discovery import discover, source_of
from pimem.importers import IMPORTERS
from pimem.models import SOURCE_REGISTRY, SOURCES, SyncIssue, SyncStats, import_issue, is_source, source_label
from pimem.paths import ROOTS, SourceRoots, source_roots
from pimem.recall.format import session_resume_command
from support.history import REPO

UUID = "0b6a2f1e-9c8d-4e7f-a6b5-c4d3e2f1a0b9"
OPENCODE = "ses_1a2b3c4d5e6fAbCdEfGhIjKlMn"


def test_every_source_is_registered_everywhere() -> None:
    assert SOURCES == ("pi", "claude", "codex", "gemini", "opencode", "copilot-cli", "copilot-chat", "cursor")
    assert set(ROOTS) == set(SOURCE_REGISTRY) == set(SOURCES)
    assert set(IMPORTERS) <= set(SOURCES)
    doc = (REPO / "docs" / "lsp-extensions.md").read_text("utf-8")
    declared = re.search(r"^type Source = (.+);$", doc, flags=re.MULTILINE)
    assert declared is not None
    assert re.findall(r'"([a-z-]+)"', declared.group(1)) == list(SOURCES)
    for source in SOURCES:
        assert is_source(source) and source_label(source) != source
        assert source in import_issue(source, None, "x").error   # every source has its checked versions
    assert not is_source("vim") and source_label("vim") == "vim"


def test_stats_count_every_source_and_keep_the_three_old_fields() -> None:
    stats = SyncStats()
    for source in ("pi", "gemini", "gemini", "codex"):
        stats.count_file(source)
    assert (stats.pi, stats.claude, stats.codex) == (1, 0, 1)
    assert stats.files_by_source == {**dict.fromkeys(SOURCES, 0), "pi": 1, "gemini": 2, "codex": 1}


def test_source_roots_by_keyword_or_mapping(tmp_path: Path) -> None:
    roots = SourceRoots(pi=(tmp_path / "p",), copilot_cli=(tmp_path / "c",))
    assert roots == SourceRoots({"pi": (tmp_path / "p",), "copilot-cli": (tmp_path / "c",)})
    assert roots.for_source("copilot-cli") == (tmp_path / "c",) and roots.for_source("claude") == ()
    assert [source for source, _ in roots.items()] == list(SOURCES)
    with pytest.raises(ValueError, match="unknown source 'vim'"):
        SourceRoots(vim=(tmp_path,))


def test_default_roots_follow_each_agents_own_overrides(tmp_path: Path) -> None:
    home = tmp_path / "home"
    plain = source_roots({"HOME": str(home)})
    assert plain.for_source("gemini") == (home / ".gemini" / "tmp",)
    assert plain.for_source("opencode") == (home / ".local" / "share" / "opencode",)
    moved = source_roots({"HOME": str(home), "GEMINI_CLI_HOME": str(tmp_path / "g"),
                          "XDG_DATA_HOME": str(tmp_path / "data")})
    assert moved.for_source("gemini") == (tmp_path / "g" / ".gemini" / "tmp",)
    assert moved.for_source("opencode") == (tmp_path / "data" / "opencode",)
    assert moved.for_source("claude") == (home / ".claude" / "projects",)


def test_a_source_without_an_importer_is_not_walked(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Every source has an importer since issue 22's second part: one is withdrawn here, as while a source is
    # registered before its importer lands (the state this guards), so the test never skips.
    unread = SOURCES[-1]
    monkeypatch.delitem(discovery.TRANSCRIPT_FILES, unread)
    root = tmp_path / "unread"
    root.mkdir()
    (root / "a.jsonl").write_text("{}\n")
    roots = SourceRoots({unread: (root,)})
    issues: list[SyncIssue] = []
    assert discover(roots, set(SOURCES), issues) == [] and issues == []
    assert source_of(str(root / "a.jsonl"), roots) == unread


@pytest.mark.parametrize(("source", "native", "cwd", "expected"), [
    ("gemini", UUID, "/w/a b", f"cd -- '/w/a b' && gemini --resume {UUID}"),
    ("gemini", UUID, "", None),   # Gemini CLI finds a session only from its project folder
    ("gemini", "--yolo", "/w", None),
    ("gemini", UUID, "relative/dir", None),
    ("opencode", OPENCODE, "/w", f"cd -- /w && opencode --session {OPENCODE}"),
    ("opencode", "ses_1a2b;rm -rf ~", "/w", None),
    ("opencode", "-ses_1a2b3c4d5e6fAbCdEfGh", "/w", None),
    ("copilot-cli", UUID, "/w", f"cd -- /w && copilot --resume={UUID}"),
    ("copilot-cli", UUID, "", f"copilot --resume={UUID}"),
    ("copilot-chat", UUID, "/w", None),
    ("copilot-cli", "$(id)", "/w", None),
    ("cursor", UUID, "/w", None),
])
def test_resume_commands_take_ids_of_the_agents_shape_only(source: str, native: str, cwd: str,
                                                            expected: str | None) -> None:
    assert session_resume_command(source, f"{source}:{native}", cwd, "/x/store.db") == expected


def test_live_watching_passes_on_every_sources_history_names_and_a_databases_wal(tmp_path: Path) -> None:
    from pimem.discovery import is_history_name
    from pimem.watch import TranscriptWatcher

    assert is_history_name("opencode.db") and is_history_name("opencode.db-wal")
    assert is_history_name("session-2026-12-01T09-00-4c1d9a52.jsonl") and is_history_name("rollout-x.jsonl.zst")
    assert not is_history_name("opencode.db-shm") and not is_history_name("opencode.log")
    batches: list[list[str]] = []
    changed = threading.Event()

    def on_change(paths: list[str]) -> None:
        batches.append(paths)
        changed.set()

    (tmp_path / "snapshot").mkdir()
    # OpenCode's data folder is watched without its subfolders (logs, snapshot repositories).
    watcher = TranscriptWatcher([tmp_path], on_change, is_history_name, shallow=[tmp_path])
    watcher.start()
    try:
        (tmp_path / "opencode.log").write_text("noise")
        (tmp_path / "snapshot" / "opencode.db-wal").write_bytes(b"not the history")
        (tmp_path / "opencode.db-wal").write_bytes(b"frames")
        assert changed.wait(10)
    finally:
        watcher.stop()
    assert [Path(path).name for batch in batches for path in batch] == ["opencode.db-wal"]
