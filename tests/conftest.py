"""Shared fixtures: the repository's transcript fixtures as agent roots, temporary stores."""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from pimem.paths import SourceRoots

REPO = Path(__file__).resolve().parent.parent
SAMPLES = REPO / "samples" / "history"
LEGACY = REPO / "tests" / "fixtures" / "legacy"
# Real transcripts of Claude Code's interactive TUI (tools/agentgen --agents claude-tui), a root of their own so
# that samples/history (and every count derived from it) stays as it is.
CLAUDE_INTERACTIVE = REPO / "tests" / "fixtures" / "claude-interactive"
EXPECTED = REPO / "tests" / "fixtures" / "expected"


def roots_under(base: Path) -> SourceRoots:
    """Agent roots laid out as in samples/history: claude/projects, codex/{sessions,archived_sessions},
    pi/agent/sessions."""
    return SourceRoots(
        pi=(base / "pi" / "agent" / "sessions",),
        claude=(base / "claude" / "projects",),
        codex=(base / "codex" / "sessions", base / "codex" / "archived_sessions"),
    )


def env_for(base: Path, db_path: Path) -> dict[str, str]:
    """Environment variables pointing every agent root (and the store) at ``base``."""
    return {
        **os.environ,
        "CLAUDE_CONFIG_DIR": str(base / "claude"),
        "CODEX_HOME": str(base / "codex"),
        "PI_CODING_AGENT_DIR": str(base / "pi" / "agent"),
        "MEMORY_DB_PATH": str(db_path),
    }


def load_expected() -> list[dict[str, object]]:
    cases = []
    for path in sorted(EXPECTED.glob("*/*.json")):
        case = json.loads(path.read_text(encoding="utf-8"))
        case["name"] = f"{path.parent.name}/{path.stem}"
        cases.append(case)
    return cases


@pytest.fixture
def db_path(tmp_path: Path) -> Path:
    return tmp_path / "store" / "memory.db"


@pytest.fixture
def history(tmp_path: Path) -> Iterator[Path]:
    """A writable copy of the sample history and the legacy fixtures merged under one base."""
    base = tmp_path / "history"
    shutil.copytree(SAMPLES, base, ignore=shutil.ignore_patterns("MANIFEST.md"))
    shutil.copytree(LEGACY, base, dirs_exist_ok=True)
    yield base
