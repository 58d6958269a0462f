#!/usr/bin/env python3
"""What the new sources cost a no-change sync (issue 22: "a source that is absent costs nothing measurable").

A history of FILES one-turn Claude Code transcripts (copies of one real sample) is imported once; then
no-change syncs are timed, interleaved, in three configurations:

* reference: only pi, claude and codex (what pimem read before the registry of sources);
* absent:    every source, the Gemini CLI and OpenCode roots missing (a machine without them);
* present:   every source, with the Gemini CLI fixtures and the real OpenCode store present and unchanged.

Prints each median and its ratio to the reference (same process, same run).

    .venv/bin/python bench/experiments/absent_sources.py [--files 20000] [--runs 15]
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "server"))

from pimem.paths import SourceRoots
from pimem.sync import SyncRequest, run_sync

REPO = Path(__file__).resolve().parents[2]

SAMPLE = next(p for p in (REPO / "samples" / "history" / "claude" / "projects").rglob("*.jsonl")
              if "subagents" not in p.parts)
GEMINI = REPO / "tests" / "fixtures" / "reconstructed" / "gemini"
OPENCODE = REPO / "tests" / "fixtures" / "opencode-real" / "opencode"


def build(base: Path, files: int) -> None:
    lines = SAMPLE.read_bytes().splitlines(keepends=True)
    first_turn = b"".join(lines[:8])
    for n in range(files):
        folder = base / "claude" / "projects" / f"-w-p{n // 500}"
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"{n:08d}-0000-4000-8000-000000000000.jsonl").write_bytes(first_turn)
    shutil.copytree(GEMINI, base / "present" / "gemini")
    shutil.copytree(OPENCODE, base / "present" / "opencode")


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--files", type=int, default=20_000)
    parser.add_argument("--runs", type=int, default=15)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="pimem-absent-") as tmp:
        base = Path(tmp)
        build(base, args.files)
        claude = (base / "claude" / "projects",)
        absent = {"gemini": (base / "missing" / "gemini" / "tmp",), "opencode": (base / "missing" / "opencode",)}
        present = {"gemini": (base / "present" / "gemini" / "tmp",), "opencode": (base / "present" / "opencode",)}
        configs = {
            "reference (pi, claude, codex)": (SourceRoots(claude=claude), {"pi", "claude", "codex"}),
            "every source, new ones absent": (SourceRoots({"claude": claude, **absent}), None),
            "every source, new ones present": (SourceRoots({"claude": claude, **present}), None),
        }
        db = str(base / "memory.db")
        for roots, sources in configs.values():   # the first import of each configuration
            run_sync(SyncRequest(db_path=db, roots=roots, **({"sources": sources} if sources else {})))
        times: dict[str, list[float]] = {name: [] for name in configs}
        for _ in range(args.runs):
            for name, (roots, sources) in configs.items():
                started = time.perf_counter()
                stats = run_sync(SyncRequest(db_path=db, roots=roots, **({"sources": sources} if sources else {})))
                times[name].append(time.perf_counter() - started)
                assert stats.turns == 0 and not stats.issues, (name, stats)
        reference = statistics.median(times[next(iter(configs))])
        print(f"no-change sync of {args.files:,} Claude files, median of {args.runs} runs (interleaved):")
        for name, values in times.items():
            median = statistics.median(values)
            print(f"  {name:32} {median * 1000:8.1f} ms   x{median / reference:.3f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
