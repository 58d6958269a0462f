"""``pimem recall --text``: free-text recall on the command line, as a user runs it."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from support.env import env_for


def pimem(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "pimem", *args], env=env, capture_output=True, text=True,
                          timeout=120)


def test_recall_text_says_what_it_searched(history: Path, tmp_path: Path) -> None:
    env = env_for(history, tmp_path / "memory.db")
    assert pimem("sync", env=env).returncode == 0
    found = pimem("recall", "--text", "Why does the flamingo bug happen again?", "--json", "--limit", "2", env=env)
    assert found.returncode == 0, found.stderr
    answer = json.loads(found.stdout)
    assert set(answer) == {"entities", "terms", "results"}
    assert "flamingo" in answer["entities"] and "the" not in answer["entities"]
    assert [term["term"] for term in answer["terms"]] == answer["entities"]
    assert answer["results"] and "flamingo" in answer["results"][0]["matched"]

    readable = pimem("recall", "--text", "Why does the flamingo bug happen again?", env=env)
    assert readable.stdout.startswith("Searched: ") and "flamingo" in readable.stdout.splitlines()[0]
    assert "Matched: " in readable.stdout

    both = pimem("recall", "flamingo", "--text", "flamingo", env=env)
    neither = pimem("recall", env=env)
    assert both.returncode == neither.returncode == 2 and "either" in both.stderr and "either" in neither.stderr
    empty = pimem("recall", "--text", " ,, ", env=env)
    assert empty.returncode == 2 and "no word" in empty.stderr
