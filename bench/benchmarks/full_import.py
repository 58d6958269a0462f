"""The full import: ``pimem sync`` into an empty store against the seed's ``backfillAll``, alternated,
with the peak RSS of each process tree, the store size and the per-agent turn counts."""

from __future__ import annotations

import json
import statistics
from typing import Any

import generate

from .context import Bench, db_bytes, json_or_empty, remove_db, store_counts
from .measure import ProcessRun
from .report import mb


def run(bench: Bench) -> None:
    bench.header("Full import", "import")
    say = bench.report.say
    runs = bench.args.import_runs or bench.args.runs
    total_bytes = bench.manifest["totals"]["bytes"]
    total_turns = bench.manifest["totals"]["turns"]
    pimem_runs: list[ProcessRun] = []
    seed_runs: list[ProcessRun] = []
    seed_db = bench.work / "seed.db"
    pimem_db = bench.db
    marker = bench.work / "pimem.db.corpus.json"
    marker.unlink(missing_ok=True)
    sizes: dict[str, int] = {}
    counts: dict[str, dict[str, int]] = {}
    stored_seconds: list[float] = []
    for number in range(runs):
        # Alternate the two so that both see the same page cache state on average.
        seed_run = bench.seed_import(seed_db) if number < bench.args.seed_import_runs else None
        if seed_run is not None:
            seed_runs.append(seed_run)
            say(f"run {number + 1}: seed  {seed_run.seconds:8.1f} s, peak RSS {mb(seed_run.peak_sum)} "
                f"({seed_run.stdout.strip()})")
            if number == 0:
                sizes["seed"] = db_bytes(seed_db)
                counts["seed"] = store_counts(seed_db)
            remove_db(seed_db)
        run = bench.pimem_import(pimem_db)
        pimem_runs.append(run)
        stats = json_or_empty(run.stdout)
        stored_seconds.append(stats.get("storedMs", 0) / 1000)
        issues = stats.get("issues", [])
        stored = f", all turns stored (recallable) after {stats['storedMs'] / 1000:.1f} s" \
            if stats.get("storedMs") else ""
        say(f"run {number + 1}: pimem {run.seconds:8.1f} s, peak RSS {mb(run.peak_sum)} (sum of "
            f"{_procs_note(run)}), max single {mb(run.peak_single)}, turns {stats.get('turns')}, "
            f"issues {len(issues)}{stored}")
        for issue in issues[:5]:
            say(f"    issue: {issue.get('jsonlPath')}: {issue.get('error')}")
    sizes["pimem"] = db_bytes(pimem_db)
    counts["pimem"] = bench.check_counts("pimem import", pimem_db)
    marker.write_text(json.dumps(bench.db_key()))
    say()
    rows = []
    result: dict[str, Any] = {}
    for name, runs_of in (("pimem", pimem_runs), ("seed 0.1.0", seed_runs)):
        if not runs_of:
            continue
        seconds = statistics.median(run.seconds for run in runs_of)
        peak = max(run.peak_sum for run in runs_of)
        single = max(run.peak_single for run in runs_of)
        key = "pimem" if name == "pimem" else "seed"
        text = counts[key]["text_bytes"]
        rows.append([name, f"{seconds:,.1f}", f"{total_turns / seconds:,.0f}",
                     f"{total_bytes / 1e6 / seconds:,.1f}",
                     mb(peak), mb(single), mb(sizes[key]), f"{sizes[key] / max(1, text):.2f}",
                     ", ".join(f"{run.seconds:.1f}" for run in runs_of)])
        result[key] = {"seconds": seconds, "all_seconds": [run.seconds for run in runs_of],
                       "turns_per_s": total_turns / seconds, "mb_per_s": total_bytes / 1e6 / seconds,
                       "peak_rss_sum": peak, "peak_rss_single": single, "db_bytes": sizes[key],
                       "text_bytes": text, "db_per_text_byte": sizes[key] / max(1, text),
                       "turns": {a: counts[key][a] for a in generate.AGENTS}}
    bench.report.table(["importer", "median s", "turns/s", "MB/s", "peak RSS (tree)", "max single proc",
                       "DB size", "DB / turn text", "all runs (s)"], rows)
    if any(stored_seconds):
        result["pimem"]["stored_s"] = stored_seconds
        say(f"pimem reports every turn stored and recallable (before its index is complete) after a median "
            f"{statistics.median(stored_seconds):.1f} s (`storedMs`).")
        say()
    if "seed" in result:
        ratio = result["pimem"]["mb_per_s"] / result["seed"]["mb_per_s"]
        result["speedup_vs_seed"] = ratio
        say(f"pimem imports {ratio:.2f}x the seed's bytes per second (target >= 3x); peak RSS "
            f"{mb(result['pimem']['peak_rss_sum'])} (target <= 300 MB); DB / turn text "
            f"{result['pimem']['db_per_text_byte']:.2f} (target <= 4).")
        say(f"Turns stored: pimem {result['pimem']['turns']}, seed {result['seed']['turns']}.")
        say()
    bench.report.results["import"] = result

def _procs_note(run: ProcessRun) -> str:
    return f"{run.samples} samples"
