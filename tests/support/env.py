"""The environment a pimem process (CLI, language server, MCP server) gets in a test."""

from __future__ import annotations

import os
from pathlib import Path


def env_for(base: Path, db_path: Path, **extra: str) -> dict[str, str]:
    """This process's environment with every agent root pointed at ``base`` (laid out as in
    samples/history), the store at ``db_path``, and ``extra`` on top."""
    return {
        **os.environ,
        "CLAUDE_CONFIG_DIR": str(base / "claude"),
        "CODEX_HOME": str(base / "codex"),
        "PI_CODING_AGENT_DIR": str(base / "pi" / "agent"),
        "MEMORY_DB_PATH": str(db_path),
        **extra,
    }


def history_env(base: Path) -> dict[str, str]:
    """For a server on a copy made by history.copy_samples: HOME is ``base/home``, the store
    ``base/memory.db``, and the log shows warnings only."""
    return env_for(base, base / "memory.db", HOME=str(base / "home"), PIMEM_LOG_LEVEL="WARNING")
