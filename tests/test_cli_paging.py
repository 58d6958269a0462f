"""``pimem recall --offset N --total``: the oracle's page, and the count in the JSON and the text."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pimem import wire
from pimem.recall import make_query, recall_scan_page
from pimem.store import connect
from support.env import env_for
from test_cli import pimem


@pytest.fixture
def env(history: Path, tmp_path: Path) -> dict[str, str]:
    return env_for(history, tmp_path / "memory.db")


def test_offset_and_total(env: dict[str, str], tmp_path: Path) -> None:
    assert pimem("sync", env=env).returncode == 0
    oracle = recall_scan_page(connect(tmp_path / "memory.db"), make_query(["the"], 4, offset=2, with_total=True))
    answer = json.loads(pimem("recall", "the", "--limit", "4", "--offset", "2", "--total", "--json", env=env).stdout)
    assert answer == {"results": [wire.recall_row(row) for row in oracle.rows], "total": oracle.total,
                      "totalCapped": False}
    rows = json.loads(pimem("recall", "the", "--limit", "4", "--offset", "2", "--json", env=env).stdout)
    assert rows == answer["results"]
    text = pimem("recall", "the", "--total", env=env).stdout
    assert text.rstrip().endswith(f"Matching turns: {oracle.total:,}")
    bad = pimem("recall", "the", "--offset", "999", "--limit", "5", env=env)
    assert bad.returncode == 2 and "offset + limit must be at most 1000" in bad.stderr
