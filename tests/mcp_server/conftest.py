"""Fixtures: a store holding the bundled sample history plus the planted session (history.py)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from pimem.paths import SourceRoots
from pimem.sync import SyncRequest, run_sync

from .history import Planted, write_history

REPO = Path(__file__).resolve().parents[2]
SAMPLES = REPO / "samples" / "history"
PIMEM = Path(sys.executable).with_name("pimem")   # the console script of this venv


@dataclass(frozen=True)
class Memory:
    base: Path          # agent roots laid out as in samples/history
    db: Path
    planted: Planted

    @property
    def roots(self) -> SourceRoots:
        return SourceRoots(pi=(self.base / "pi" / "agent" / "sessions",), claude=(self.base / "claude" / "projects",),
                           codex=(self.base / "codex" / "sessions", self.base / "codex" / "archived_sessions"))

    def env(self, **extra: str) -> dict[str, str]:
        """An environment in which every pimem command uses this memory (and nothing of the user's)."""
        env = {key: value for key, value in os.environ.items() if not key.startswith("PIMEM_")}
        env.update(CLAUDE_CONFIG_DIR=str(self.base / "claude"), CODEX_HOME=str(self.base / "codex"),
                   PI_CODING_AGENT_DIR=str(self.base / "pi" / "agent"), MEMORY_DB_PATH=str(self.db))
        env.update(extra)
        return env

    def sync(self) -> None:
        run_sync(SyncRequest(db_path=str(self.db), roots=self.roots, workers=1))

    def cli_recall(self, *args: str) -> list[dict[str, Any]]:
        """``pimem recall --json`` rows, from the real command."""
        done = subprocess.run([str(PIMEM), "recall", *args, "--json"], env=self.env(), capture_output=True,
                              text=True, timeout=60, check=True)
        rows: list[dict[str, Any]] = json.loads(done.stdout)
        return rows


def make_memory(base_dir: Path) -> Memory:
    base = base_dir / "history"
    shutil.copytree(SAMPLES, base, ignore=shutil.ignore_patterns("MANIFEST.md"))
    memory = Memory(base, base_dir / "store" / "memory.db", write_history(base))
    memory.sync()
    return memory


@pytest.fixture(scope="module")
def memory(tmp_path_factory: pytest.TempPathFactory) -> Memory:
    """Shared by a module's tests, which only read it."""
    return make_memory(tmp_path_factory.mktemp("memory"))
