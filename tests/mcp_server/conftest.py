"""Fixtures: a store holding the bundled sample history plus the planted session (history.py)."""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from support.env import env_for
from support.history import copy_samples
from support.sync import sync

from .history import Planted, write_history

PIMEM = Path(sys.executable).with_name("pimem")   # the console script of this venv


@dataclass(frozen=True)
class Memory:
    base: Path          # agent roots laid out as in samples/history
    db: Path
    planted: Planted

    def env(self, **extra: str) -> dict[str, str]:
        """An environment in which every pimem command uses this memory (and nothing of the user's)."""
        env = {key: value for key, value in env_for(self.base, self.db).items() if not key.startswith("PIMEM_")}
        env.update(extra)
        return env

    def sync(self) -> None:
        sync(self.base, self.db, workers=1)

    def cli_recall(self, *args: str) -> list[dict[str, Any]]:
        """``pimem recall --json`` rows, from the real command."""
        done = subprocess.run([str(PIMEM), "recall", *args, "--json"], env=self.env(), capture_output=True,
                              text=True, timeout=60, check=True)
        rows: list[dict[str, Any]] = json.loads(done.stdout)
        return rows


def make_memory(base_dir: Path) -> Memory:
    base = copy_samples(base_dir / "history")
    memory = Memory(base, base_dir / "store" / "memory.db", write_history(base))
    memory.sync()
    return memory


@pytest.fixture(scope="module")
def memory(tmp_path_factory: pytest.TempPathFactory) -> Memory:
    """Shared by a module's tests, which only read it."""
    return make_memory(tmp_path_factory.mktemp("memory"))
