"""The Targets table: the issue's targets evaluated on what this run measured (nothing else)."""

from __future__ import annotations

import statistics

from .context import Bench
from .report import mb, ms, ratio_text


def run(bench: Bench) -> None:
    """The issue's targets, evaluated on what this run measured (nothing else)."""
    results = bench.report.results
    rows: list[list[str]] = []

    def add(target: str, measured: str, met: bool | None) -> None:
        rows.append([target, measured, "-" if met is None else ("met" if met else "NOT met")])

    imp = results.get("import", {})
    if "pimem" in imp:
        pimem = imp["pimem"]
        if "speedup_vs_seed" in imp:
            ratio = imp["speedup_vs_seed"]
            add("full import >= 3x the seed's bytes/s", f"{ratio:.2f}x ({pimem['mb_per_s']:.1f} vs "
                f"{imp['seed']['mb_per_s']:.1f} MB/s)", ratio >= 3)
        add("import peak RSS <= 300 MB (process tree)", mb(pimem["peak_rss_sum"]), pimem["peak_rss_sum"] <= 300e6)
        add("store <= 4x the turn text", f"{pimem['db_per_text_byte']:.2f}x ({mb(pimem['db_bytes'])} for "
            f"{mb(pimem['text_bytes'])})", pimem["db_per_text_byte"] <= 4)
    rec = results.get("recall", {})
    if rec:
        add("warm recall p50 <= 20 ms", f"{ms(rec['warm']['p50'])} ms", rec["warm"]["p50"] <= 0.020)
        add("warm recall p95 <= 150 ms", f"{ms(rec['warm']['p95'])} ms (max {ms(rec['warm']['max'])} ms)",
            rec["warm"]["p95"] <= 0.150)
        if "ratio_p50" in rec:
            add(">= 50x the seed's LIKE scan (p50 / p50)", f"{ratio_text(rec['ratio_p50'])} (per query: min "
                f"{ratio_text(rec['ratio_min_per_query'])}, median {ratio_text(rec['ratio_median_per_query'])})",
                rec["ratio_p50"] >= 50)
        add("cold CLI recall <= 0.5 s", f"p50 {ms(rec['cold']['p50'])} ms, p95 {ms(rec['cold']['p95'])} ms, max "
            f"{ms(rec['cold']['max'])} ms", rec["cold"]["p95"] <= 0.5)
        add("server RSS <= 150 MB while serving", f"{mb(rec['server_rss'])} (peak {mb(rec['server_peak_rss'])})",
            rec["server_peak_rss"] <= 150e6)
    syn = results.get("sync", {})
    if "append" in syn:
        worst = max(max(entry["searchable_s"]) for entry in syn["append"].values())
        medians = max(statistics.median(entry["searchable_s"]) for entry in syn["append"].values())
        add("appended turn searchable <= 100 ms after sync starts (100 MB file)",
            f"worst agent median {ms(medians)} ms, max {ms(worst)} ms", worst <= 0.100)
    if "tiny" in syn:
        add("no-change sync over 150k files <= 2 s", f"{syn['tiny']['median']:.2f} s ({syn['tiny']['files']:,} "
            f"files, process wall time)", syn["tiny"]["median"] <= 2)
    if "no_change" in syn:
        add("(no-change sync of this corpus, for reference)", f"{syn['no_change']['median']:.2f} s "
            f"({syn['no_change']['files']:,} files)", None)
    if not rows:
        return
    say = bench.report.say
    say("## Targets")
    say()
    say(f"Evaluated on this run only: {bench.manifest['totals']['turns']:,} turns, pimem at "
        f"{bench.machine['pimem_commit']}. The targets are stated for 1M turns on 2 cores; p95 is used for the "
        "cold CLI and the peak for the server RSS; the append target is checked on the slowest run.")
    say()
    bench.report.table(["target", "measured", "status"], rows)
    results["targets"] = [dict(zip(("target", "measured", "status"), row, strict=True)) for row in rows]
