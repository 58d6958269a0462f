"""Fixtures of the reliability tests."""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from support.history import copy_samples

from ._support import SCRATCH


@pytest.fixture
def work() -> Iterator[Path]:
    """A scratch directory (on tmpfs when available), removed after the test."""
    path = Path(tempfile.mkdtemp(prefix="pimem-reliability-", dir=SCRATCH))
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


@pytest.fixture
def base(work: Path) -> Path:
    """The good transcripts: samples/history and the legacy fixtures under one base."""
    return copy_samples(work / "history", legacy=True)


@pytest.fixture
def db(work: Path) -> Path:
    return work / "store" / "memory.db"
