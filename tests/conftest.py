"""Shared fixtures: temporary stores and a writable copy of the repository's transcript fixtures
(the helpers themselves are in tests/support)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from pimem.recall import dense, docmap
from support.history import copy_samples


@pytest.fixture(autouse=True)
def _kept_lists_do_not_outlive_a_test() -> Iterator[None]:
    """Building a server in process turns on kept index lists for the whole process
    (pimem.recall.dense.enable) and the kept word index docs (pimem.recall.docmap.enable): the next
    test must get the walk and the joins it asks for."""
    yield
    dense.disable()
    docmap.disable()


@pytest.fixture
def db_path(tmp_path: Path) -> Path:
    return tmp_path / "store" / "memory.db"


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """An empty project folder, whose files the agents of a test's transcripts edit."""
    folder = tmp_path / "proj"
    folder.mkdir()
    return folder


@pytest.fixture
def history(tmp_path: Path) -> Iterator[Path]:
    """A writable copy of the sample history and the legacy fixtures merged under one base."""
    yield copy_samples(tmp_path / "history", legacy=True)
