"""Sync latency: a no-change ``pimem sync`` of the corpus and of the one-turn files (their first import
once, for reference), then the appended-turn latency (append.py)."""

from __future__ import annotations

import json
import statistics
import sys
from typing import Any

from . import append
from .context import Bench, json_or_empty
from .measure import run_measured
from .report import mb


def run(bench: Bench) -> None:
    bench.header("Sync latency", "sync")
    bench.ensure_db()
    result: dict[str, Any] = {}
    env = bench.agent_env(bench.home, bench.db)
    runs = [run_measured([sys.executable, "-m", "pimem", "sync", "--json"], env) for _ in range(bench.args.runs)]
    for run in runs:
        stats = json_or_empty(run.stdout)
        if stats.get("turns"):
            bench.fail("no-change sync", f"it changed {stats.get('turns')} turns")
    seconds = [run.seconds for run in runs]
    durations = [json_or_empty(run.stdout).get("durationMs", 0) / 1000 for run in runs]
    files = bench.manifest["totals"]["files"]
    result["no_change"] = {"files": files, "seconds": seconds, "median": statistics.median(seconds),
                           "inside_ms": durations}
    rows = [[f"no-change `pimem sync`, main corpus ({files:,} files)", f"{statistics.median(seconds):.2f}",
             f"{statistics.median(durations):.2f}", ", ".join(f"{value:.2f}" for value in seconds)]]
    tiny = bench.manifest.get("tiny")
    if tiny:
        tiny_home = bench.corpus / tiny["home"]
        tiny_db = bench.work / "tiny.db"
        marker = bench.work / "tiny.db.corpus.json"
        key = {"corpus": str(bench.corpus), "tiny": tiny, "pimem": bench.machine["pimem_commit"]}
        stored = json.loads(marker.read_text()) if tiny_db.exists() and marker.exists() else None
        reuse = stored == key or (stored is not None and getattr(bench.args, "keep_store", False)
                                  and {**stored, "pimem": None} == {**key, "pimem": None})
        if not reuse:
            # The first import of the one-turn files is slow (one file at a time); it is measured once
            # and the store is kept for later runs of the same corpus and pimem version.
            marker.unlink(missing_ok=True)
            first = bench.pimem_import(tiny_db, tiny_home)
            first_stats = json_or_empty(first.stdout)
            marker.write_text(json.dumps(key))
            rows.append([f"first import of {tiny['files']:,} one-turn files (once, for reference)",
                         f"{first.seconds:.2f}", f"{first_stats.get('durationMs', 0) / 1000:.2f}",
                         f"{first.seconds:.2f} (peak RSS {mb(first.peak_sum)})"])
            result["tiny_first_import"] = {"seconds": first.seconds, "peak_rss_sum": first.peak_sum,
                                           "stats": first_stats}
        tiny_env = bench.agent_env(tiny_home, tiny_db)
        tiny_runs = [run_measured([sys.executable, "-m", "pimem", "sync", "--json"], tiny_env)
                     for _ in range(bench.args.runs)]
        for run in tiny_runs:
            if json_or_empty(run.stdout).get("turns"):
                bench.fail("no-change sync (one-turn files)", f"it changed {json_or_empty(run.stdout)['turns']} "
                                                             "turns")
        tiny_seconds = [run.seconds for run in tiny_runs]
        tiny_inside = [json_or_empty(run.stdout).get("durationMs", 0) / 1000 for run in tiny_runs]
        rows.append([f"no-change `pimem sync`, {tiny['files']:,} one-turn files",
                     f"{statistics.median(tiny_seconds):.2f}", f"{statistics.median(tiny_inside):.2f}",
                     ", ".join(f"{value:.2f}" for value in tiny_seconds)])
        result["tiny"] = {"files": tiny["files"], "seconds": tiny_seconds,
                          "median": statistics.median(tiny_seconds), "inside_ms": tiny_inside}
    bench.report.table(["sync", "median wall s (process)", "median durationMs/1000", "all runs (s)"], rows)
    huge = bench.manifest.get("huge") or []
    if huge:
        result["append"] = append.run(bench, huge)
    bench.report.results["sync"] = result
