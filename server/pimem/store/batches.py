"""Queries over many ids: one ``IN (…)`` per batch of at most :data:`IDS_PER_QUERY` ids.

SQLite limits the variables of one statement (999 before 3.32), so every lookup of an unbounded list
of ids goes through :func:`chunks`.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import TypeVar

IDS_PER_QUERY = 500

T = TypeVar("T")


def chunks(items: Sequence[T], size: int = IDS_PER_QUERY) -> Iterator[Sequence[T]]:
    """``items`` in consecutive slices of at most ``size``."""
    for start in range(0, len(items), size):
        yield items[start:start + size]


def placeholders(count: int) -> str:
    """``?,?,…`` for an ``IN (…)`` of ``count`` values."""
    return ",".join("?" * count)
