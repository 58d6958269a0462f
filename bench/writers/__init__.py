"""The agent writers of bench/generate.py: one module per agent, each writing sessions in that agent's
real on-disk format (records, bookkeeping and file layout as the current version writes them).

A writer is made for one session (``Writer(pool, rng, spec)``) and gives the lines of its file:
``header(ts)``, ``turn(turn, first)`` for each turn, ``footer(ts)``; ``tiny(turn)`` for a minimal
one-turn session; ``path(home)`` is where the agent keeps it under a home directory, ``session_id``
its id, ``tools`` the tool names its turns call. Every random choice comes from ``rng``, so the
same seed gives the same bytes.
"""

from __future__ import annotations

from typing import Any

from .claude import ClaudeWriter
from .codex import CodexWriter
from .pi import PiWriter

WRITERS: dict[str, Any] = {"claude": ClaudeWriter, "codex": CodexWriter, "pi": PiWriter}
