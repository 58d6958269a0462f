"""Recall: the benchmark query set answered by the oracle (``recall_scan``), in process, by a warm
``pimem serve`` (with its RSS), by cold ``pimem recall`` processes, and by the seed's LIKE scan."""

from __future__ import annotations

import json
import sqlite3
import statistics
import sys
import time
from typing import Any

from pimem.recall import make_query, recall
from pimem.store import connect
from queries import QUERIES, Query
from support.jsonrpc import LspError, LspProcess

from .context import Bench
from .measure import percentile, run_measured, summary, vm_hwm
from .oracle import oracle_answers
from .paths import REPO
from .report import mb, ms, ratio_text
from .rows import recall_row
from .seed import seed_recall


def run(bench: Bench) -> None:
    bench.header("Recall", "recall")
    say = bench.report.say
    bench.ensure_db()
    runs = bench.args.runs
    conn = connect(bench.db)
    queries = list(QUERIES)
    recall_queries = [make_query(list(q.entities), q.limit, list(q.sources) if q.sources else None, q.cwd)
                      for q in queries]
    oracle, oracle_seconds = oracle_answers(bench, conn, "recall",
                                            [(q.params(), rq) for q, rq in zip(queries, recall_queries, strict=True)])
    # In-process fast path (pimem.recall.recall), for equality and as a reference time
    inproc: list[list[float]] = []
    for index, query in enumerate(recall_queries):
        times = []
        for _ in range(runs):
            started = time.perf_counter()
            rows = recall(conn, query)
            times.append(time.perf_counter() - started)
        inproc.append(times)
        bench.compare("pimem.recall.recall", queries[index], [recall_row(row) for row in rows], oracle[index])
    conn.close()
    warm, server_rss, server_hwm = _warm(bench, queries, oracle)
    cold = _cold(bench, queries, oracle)
    seed = _seed_like(bench, queries, oracle)
    rows = []
    per_query: list[dict[str, Any]] = []
    for index, query in enumerate(queries):
        warm_median = statistics.median(warm[index])
        seed_median = statistics.median(seed[index]["times"]) if seed else None
        ratio = seed_median / warm_median if seed_median is not None else None
        rows.append([
            query.name, " ".join(query.entities) if len(" ".join(query.entities)) < 40 else "…",
            len(oracle[index]), ms(warm_median), ms(max(warm[index])), ms(statistics.median(cold[index])),
            ms(statistics.median(inproc[index])),
            ms(seed_median) if seed_median is not None else "-",
            ratio_text(ratio) if ratio is not None else "-",
            ("yes" if seed[index]["same_hits"] else "NO") if seed else "-",
            ms(oracle_seconds[index]),
        ])
        per_query.append({"name": query.name, "params": query.params(), "results": len(oracle[index]),
                          "warm_s": warm[index], "cold_s": cold[index], "inprocess_s": inproc[index],
                          "seed_like_s": seed[index]["times"] if seed else None,
                          "seed_same_hits": seed[index]["same_hits"] if seed else None,
                          "oracle_s": oracle_seconds[index]})
    bench.report.table(["query", "entities", "rows", "warm ms (median)", "warm max", "cold CLI ms",
                       "in-process ms", "seed LIKE ms", "seed / warm", "seed hits = oracle", "oracle scan ms"],
                      rows)
    all_warm = [value for values in warm for value in values]
    all_cold = [value for values in cold for value in values]
    warm_stats, cold_stats = summary(all_warm), summary(all_cold)
    say(f"Warm (pimem/recall through `pimem serve`, {len(all_warm)} requests = {len(queries)} queries x {runs} "
        f"runs after one warm-up pass): p50 {ms(warm_stats['p50'])} ms, p95 {ms(warm_stats['p95'])} ms, max "
        f"{ms(warm_stats['max'])} ms; server RSS after the query set {mb(server_rss)} (peak {mb(server_hwm)}).")
    say(f"Cold (`pimem recall … --json` process, {len(all_cold)} runs): p50 {ms(cold_stats['p50'])} ms, p95 "
        f"{ms(cold_stats['p95'])} ms, max {ms(cold_stats['max'])} ms.")
    result: dict[str, Any] = {"warm": warm_stats, "cold": cold_stats, "server_rss": server_rss,
                              "server_peak_rss": server_hwm, "queries": per_query}
    if seed:
        unfiltered = [index for index, query in enumerate(queries) if not query.filtered]
        seed_all = [value for index in unfiltered for value in seed[index]["times"]]
        warm_unfiltered = [value for index in unfiltered for value in warm[index]]
        seed_stats = summary(seed_all)
        ratios = [statistics.median(seed[index]["times"]) / statistics.median(warm[index]) for index in unfiltered]
        result["seed_like"] = seed_stats
        result["ratio_p50"] = seed_stats["p50"] / percentile(warm_unfiltered, 0.5)
        result["ratio_min_per_query"] = min(ratios)
        result["ratio_median_per_query"] = statistics.median(ratios)
        say(f"Seed LIKE scan on the same store (Python sqlite3, the SQL of retriever.ts, {len(seed_all)} runs of "
            f"the {len(unfiltered)} unfiltered queries): p50 {ms(seed_stats['p50'])} ms, p95 "
            f"{ms(seed_stats['p95'])} ms, max {ms(seed_stats['max'])} ms. p50 ratio seed / pimem warm: "
            f"{ratio_text(result['ratio_p50'])}; per query: min {ratio_text(min(ratios))}, median "
            f"{ratio_text(statistics.median(ratios))} (target >= 50x).")
    say()
    bench.report.results["recall"] = result

def _warm(bench: Bench, queries: list[Query], oracle: list[list[dict[str, Any]]]) -> tuple[list[list[float]], int, int]:
    runs = bench.args.runs
    client = LspProcess(bench.agent_env(bench.home, bench.db), cwd=str(REPO), ensure_ascii=False)
    try:
        client.initialize(options={"dbPath": str(bench.db), "autoSync": False}, capabilities={})
        times: list[list[float]] = [[] for _ in queries]
        for run in range(runs + 1):   # run 0 warms up
            for index, query in enumerate(queries):
                started = time.perf_counter()
                result = client.call("pimem/recall", query.params())
                elapsed = time.perf_counter() - started
                if run > 0:
                    times[index].append(elapsed)
                else:
                    bench.compare("pimem/recall (server)", query, result["results"], oracle[index])
        import psutil

        rss = psutil.Process(client.pid).memory_info().rss
        hwm = vm_hwm(client.pid)
    except LspError as error:
        bench.fail("pimem serve", str(error))
        raise
    finally:
        client.close()
    return times, rss, hwm

def _cold(bench: Bench, queries: list[Query], oracle: list[list[dict[str, Any]]]) -> list[list[float]]:
    env = bench.agent_env(bench.home, bench.db)
    times: list[list[float]] = []
    for index, query in enumerate(queries):
        values = []
        for run in range(bench.args.runs):
            command = [sys.executable, "-m", "pimem", "recall", "--db", str(bench.db), *query.cli_args()]
            result = run_measured(command, env, sample=False)
            values.append(result.seconds)
            if result.returncode != 0:
                bench.fail("pimem recall (CLI)", f"{query.name}: exit {result.returncode}: {result.stderr[-500:]}")
            elif run == 0:
                bench.compare("pimem recall --json (CLI)", query, json.loads(result.stdout), oracle[index])
        times.append(values)
    return times

def _seed_like(bench: Bench, queries: list[Query], oracle: list[list[dict[str, Any]]]) -> list[dict[str, Any]]:
    if bench.args.no_seed:
        return []
    conn = sqlite3.connect(f"file:{bench.db}?mode=ro", uri=True)
    out = []
    try:
        for index, query in enumerate(queries):
            times = []
            rows: list[tuple[Any, ...]] = []
            for _ in range(bench.args.seed_runs or bench.args.runs):
                started = time.perf_counter()
                rows = seed_recall(conn, query.entities, query.limit)
                times.append(time.perf_counter() - started)
            # The seed has no dedup of copies and breaks score/time ties differently; the scores of
            # its top rows must still equal the oracle's when there are no copies.
            same = [row[5] for row in rows] == [row["hits"] for row in oracle[index]]
            out.append({"times": times, "same_hits": same or query.filtered})
    finally:
        conn.close()
    return out
