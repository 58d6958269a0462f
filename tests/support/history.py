"""The transcript histories in the repository, and writable copies of them for a test."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from pimem.paths import SourceRoots

from .ids import fresh_ids

REPO = Path(__file__).resolve().parents[2]
SAMPLES = REPO / "samples" / "history"
LEGACY = REPO / "tests" / "fixtures" / "legacy"
# Real transcripts of Claude Code's interactive TUI (tools/agentgen --agents claude-tui), a root of their own so
# that samples/history (and every count derived from it) stays as it is.
CLAUDE_INTERACTIVE = REPO / "tests" / "fixtures" / "claude-interactive"
# Minimal shapes that converters and deja-vu's day0bench write (docs/formats.md 1.8, 2.10), a root of their own.
MINIMAL = REPO / "tests" / "fixtures" / "minimal"
EXPECTED = REPO / "tests" / "fixtures" / "expected"


def roots_under(base: Path) -> SourceRoots:
    """Agent roots laid out as in samples/history: claude/projects, codex/{sessions,archived_sessions},
    pi/agent/sessions (and gemini/tmp, opencode for the fixtures of those agents); and as in
    tests/fixtures/{copilot-cli,reconstructed}: copilot/session-state, vscode/Code/User/…,
    cursor-home/.cursor/projects, cursor/User/globalStorage."""
    vscode_user = base / "vscode" / "Code" / "User"
    return SourceRoots(
        pi=(base / "pi" / "agent" / "sessions",),
        claude=(base / "claude" / "projects",),
        codex=(base / "codex" / "sessions", base / "codex" / "archived_sessions"),
        gemini=(base / "gemini" / "tmp",),
        opencode=(base / "opencode",),
        copilot_cli=(base / "copilot" / "session-state",),
        copilot_chat=(vscode_user / "workspaceStorage", vscode_user / "globalStorage" / "emptyWindowChatSessions"),
        cursor=(base / "cursor-home" / ".cursor" / "projects", base / "cursor" / "User" / "globalStorage"),
    )


def copy_samples(base: Path, *, legacy: bool = False) -> Path:
    """A writable copy of samples/history under ``base`` (with ``legacy``: the hand-made files of older
    format generations merged in), and the empty ``base/home`` that env.history_env uses as HOME."""
    shutil.copytree(SAMPLES, base, dirs_exist_ok=True, ignore=shutil.ignore_patterns("MANIFEST.md"))
    if legacy:
        shutil.copytree(LEGACY, base, dirs_exist_ok=True)
    (base / "home").mkdir(exist_ok=True)
    return base


def grow_history(base: Path, copies: int) -> int:
    """Copies of every sample transcript with fresh session ids: a history big enough for a sync
    to take seconds (so it can be watched, cancelled and raced)."""
    count = 0
    for source in sorted(SAMPLES.rglob("*.jsonl")):
        if "subagents" in source.parts:
            continue
        text = source.read_text(encoding="utf-8")
        for copy in range(copies):
            target = base / source.relative_to(SAMPLES).parent / f"{copy:04d}" / fresh_ids(source.name, copy + 1)
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(fresh_ids(text, copy + 1), encoding="utf-8")
            count += 1
    return count


def load_expected() -> list[dict[str, object]]:
    """The hand-derived expectations of tests/fixtures/expected/<agent>/<case>.json, named ``agent/case``."""
    cases = []
    for path in sorted(EXPECTED.glob("*/*.json")):
        case = json.loads(path.read_text(encoding="utf-8"))
        case["name"] = f"{path.parent.name}/{path.stem}"
        cases.append(case)
    return cases
