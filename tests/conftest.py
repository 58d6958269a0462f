"""Shared fixtures: temporary stores and a writable copy of the repository's transcript fixtures
(the helpers themselves are in tests/support)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from support.history import copy_samples


@pytest.fixture
def db_path(tmp_path: Path) -> Path:
    return tmp_path / "store" / "memory.db"


@pytest.fixture
def history(tmp_path: Path) -> Iterator[Path]:
    """A writable copy of the sample history and the legacy fixtures merged under one base."""
    yield copy_samples(tmp_path / "history", legacy=True)
