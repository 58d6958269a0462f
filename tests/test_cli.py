"""The `pimem` command line, run as a user would (a subprocess with the agents' environment variables)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from pimem import wire
from pimem.models import SOURCES
from pimem.recall import make_query, recall_scan
from pimem.store import connect
from support.env import env_for


def pimem(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "pimem", *args], env=env, capture_output=True, text=True,
                          timeout=120)


@pytest.fixture
def env(history: Path, tmp_path: Path) -> dict[str, str]:
    return env_for(history, tmp_path / "memory.db")


def test_sync_recall_status(env: dict[str, str], tmp_path: Path) -> None:
    first = pimem("sync", "--json", env=env)
    assert first.returncode == 0, first.stderr
    stats = json.loads(first.stdout)
    assert set(stats) == {"pi", "claude", "codex", "sources", "turns", "scannedFiles", "skippedFiles", "issues",
                          "cancelled", "durationMs", "storedMs"}
    # Every source has its count; the three old keys are the same numbers.
    assert set(stats["sources"]) == set(SOURCES)
    assert [stats["sources"][name] for name in ("pi", "claude", "codex")] == [stats["pi"], stats["claude"],
                                                                               stats["codex"]]
    assert stats["turns"] > 40 and stats["issues"] == [] and not stats["cancelled"]
    assert "syncing [" not in first.stderr  # no progress bar when stderr is not a terminal
    again = json.loads(pimem("sync", "--json", env=env).stdout)
    assert again["turns"] == 0 and again["skippedFiles"] == stats["scannedFiles"]

    found = pimem("recall", "flamingo", "--limit", "3", "--json", env=env)
    rows = json.loads(found.stdout)
    oracle = recall_scan(connect(tmp_path / "memory.db"), make_query(["flamingo"], 3))
    assert rows == [wire.recall_row(row) for row in oracle] and len(rows) == 3

    text = pimem("recall", "flamingo", "--limit", "1", env=env).stdout
    assert text.startswith("## Relevant past conversations") and "You: " in text and "Resume: " in text

    only_pi = json.loads(pimem("recall", "flamingo", "--source", "pi", "--json", env=env).stdout)
    assert only_pi and {row["source"] for row in only_pi} == {"pi"}
    in_folder = json.loads(pimem("recall", "缓存", "--cwd", "/tmp/pimem-demo/中文项目", "--json", "--limit", "50",
                                 env=env).stdout)
    assert in_folder and {row["cwd"] for row in in_folder} == {"/tmp/pimem-demo/中文项目"}

    status = json.loads(pimem("status", "--json", env=env).stdout)
    assert status["totalTurns"] == stats["turns"] and status["lastSync"]["turns"] == 0
    assert status["turnsToIndex"] == 0


def test_db_option_overrides_the_environment(env: dict[str, str], tmp_path: Path) -> None:
    other = tmp_path / "elsewhere" / "other.db"
    assert pimem("sync", "--db", str(other), env=env).returncode == 0
    assert other.exists() and not (tmp_path / "memory.db").exists()


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["recall", "x", "--limit", "0"], "limit must be an integer between 1 and 50"),
        (["recall", "x", "--limit", "51"], "limit must be an integer between 1 and 50"),
        (["recall", " "], "entities[0] is blank"),
        (["recall", *[f"e{i}" for i in range(9)]], "at most 8 entities"),
    ],
)
def test_bad_recall_arguments_exit_2(env: dict[str, str], args: list[str], message: str) -> None:
    result = pimem(*args, env=env)
    assert result.returncode == 2 and message in result.stderr


def test_unusable_store_exits_1(env: dict[str, str], tmp_path: Path) -> None:
    (tmp_path / "dir.db").mkdir()
    result = pimem("recall", "x", "--db", str(tmp_path / "dir.db"), env=env)
    assert result.returncode == 1 and "is a directory" in result.stderr


def test_issues_go_to_stderr_and_do_not_fail_the_sync(env: dict[str, str], history: Path) -> None:
    broken = history / "pi" / "agent" / "sessions" / "--tmp-broken--" / "x.jsonl"
    broken.parent.mkdir(parents=True)
    broken.write_text('{"type":"not-a-header"}\n', encoding="utf-8")
    result = pimem("sync", "--json", env=env)
    assert result.returncode == 0
    assert str(broken) in result.stderr and "Pi session header" in result.stderr
    issues = json.loads(result.stdout)["issues"]
    assert [issue["jsonlPath"] for issue in issues] == [str(broken)]
    assert "verified against" in issues[0]["error"]
