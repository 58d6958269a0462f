"""Multi-entity recall: queries of 2–8 entities drawn from measured term frequencies
(bench/multi_queries.py), per shape, warm through ``pimem serve``; optionally a second server running
``--baseline-rev`` on the same store in the same run (requests interleaved, so both see the same
machine), and the seed's LIKE scan. Every answer of every server is compared with the oracle."""

from __future__ import annotations

import os
import sqlite3
import statistics
import time
from typing import Any

from multi_queries import describe, load_terms, multi_queries
from pimem.recall import make_query, recall
from pimem.store import connect
from queries import Query
from support.jsonrpc import LspError, LspProcess

from .context import Bench
from .measure import summary
from .oracle import oracle_answers
from .paths import REPO
from .pinning import archive_pimem
from .report import ms, ratio_text
from .rows import recall_row
from .seed import seed_recall


def run(bench: Bench) -> None:
    bench.header("Multi-entity recall", "multi")
    say = bench.report.say
    bench.ensure_db()
    started = time.perf_counter()
    terms = load_terms(bench.db, bench.work / "multi-terms.json")
    say(f"(terms measured on all {terms['turns']} turns in {time.perf_counter() - started:.1f} s or read from "
        f"{bench.work / 'multi-terms.json'}; candidates from a sample of {terms['sample']} turns in turn-id order)")
    say()
    plan = multi_queries(terms)
    queries = [query for _, query, _ in plan]
    shapes = list(dict.fromkeys(shape for shape, _, _ in plan))
    term_rows = []
    for shape in shapes:
        chosen = next(chosen for name, _, chosen in plan if name == shape)
        term_rows.append([shape, len(chosen), ", ".join(describe(term) for term in chosen)])
    bench.report.table(["shape", "entities", "terms (share of turns holding each, measured)"], term_rows)

    conn = connect(bench.db)
    try:
        oracle, oracle_seconds = oracle_answers(bench, conn, "multi",
                                                [(query.params(), _recall_query(query)) for query in queries])
        for index, query in enumerate(queries):
            recall_query = _recall_query(query)
            bench.compare("pimem.recall.recall", query, [recall_row(row) for row in recall(conn, recall_query)],
                          oracle[index])
    finally:
        conn.close()

    servers: list[tuple[str, dict[str, str]]] = [(bench.pimem_sha[:7] if bench.pimem_sha else "working tree",
                                                  bench.agent_env(bench.home, bench.db))]
    baseline_rev = getattr(bench.args, "baseline_rev", None)
    if baseline_rev:
        source, sha = archive_pimem(baseline_rev)
        env = bench.agent_env(bench.home, bench.db)
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(source), os.environ.get("PYTHONPATH")]))
        servers.append((sha[:7], env))
    warm, first = _warm(bench, queries, oracle, servers)
    seed = _seed_like(bench, queries)

    names = [name for name, _ in servers]
    header = ["shape", "queries", *(f"{name} p50 / p95 / max ms" for name in names)]
    if seed:
        header += ["seed LIKE p50 ms", f"seed / {names[0]} (p50)"]
    header.append("oracle scan p50 ms")
    rows = []
    result_shapes: list[dict[str, Any]] = []
    for shape in shapes:
        members = [index for index, (name, _, _) in enumerate(plan) if name == shape]
        row: list[object] = [shape, len(members)]
        stats = []
        for server in range(len(servers)):
            values = [value for index in members for value in warm[server][index]]
            stats.append(summary(values))
            row.append(f"{ms(stats[-1]['p50'])} / {ms(stats[-1]['p95'])} / {ms(stats[-1]['max'])}")
        seed_values = [value for index in members for value in seed.get(index, [])]
        if seed:
            seed_p50 = statistics.median(seed_values)
            row += [ms(seed_p50), ratio_text(seed_p50 / stats[0]["p50"])]
        row.append(ms(statistics.median(oracle_seconds[index] for index in members)))
        rows.append(row)
        result_shapes.append({"shape": shape, "warm": dict(zip(names, stats, strict=True)),
                              "seed_like": summary(seed_values) if seed_values else None})
    bench.report.table(header, rows)
    all_rows: list[object] = ["whole multi-entity set", len(queries)]
    overall = {}
    for server, name in enumerate(names):
        values = [value for times in warm[server] for value in times]
        overall[name] = summary(values)
        all_rows.append(f"{ms(overall[name]['p50'])} / {ms(overall[name]['p95'])} / {ms(overall[name]['max'])}")
    say("| " + " | ".join(str(cell) for cell in all_rows) + " |")
    say()
    say("First pass: each query's first request to a fresh server, queries in the order above (a shape's five "
        "queries share their entities, so its first query finds nothing kept and the next four reuse what "
        "it read), p50 / p95 / max ms:")
    say()
    first_rows = []
    first_overall = {}
    for server, name in enumerate(names):
        first_overall[name] = summary(first[server])
    for shape in shapes:
        members = [index for index, (name, _, _) in enumerate(plan) if name == shape]
        cells: list[object] = [shape]
        for server in range(len(servers)):
            stats_first = summary([first[server][index] for index in members])
            cells.append(f"{ms(stats_first['p50'])} / {ms(stats_first['p95'])} / {ms(stats_first['max'])}")
        first_rows.append(cells)
    first_rows.append(["whole multi-entity set", *(
        f"{ms(first_overall[name]['p50'])} / {ms(first_overall[name]['p95'])} / {ms(first_overall[name]['max'])}"
        for name in names)])
    bench.report.table(["shape", *(f"{name} first pass" for name in names)], first_rows)
    say(f"Warm: pimem/recall through `pimem serve`, {bench.args.runs} runs of each query after one warm-up pass "
        f"(which is compared with the oracle); the servers' requests alternate query by query. Per-query "
        f"figures are in the results JSON.")
    say()
    bench.report.results["multi"] = {
        "servers": names, "terms": terms, "shapes": result_shapes, "overall": overall,
        "first_pass": {name: summary(first[server]) for server, name in enumerate(names)},
        "queries": [{"shape": shape, "name": query.name, "params": query.params(), "results": len(oracle[index]),
                     "warm_s": {name: warm[server][index] for server, name in enumerate(names)},
                     "first_s": {name: first[server][index] for server, name in enumerate(names)},
                     "seed_like_s": seed.get(index), "oracle_s": oracle_seconds[index]}
                    for index, (shape, query, _) in enumerate(plan)]}


def _recall_query(query: Query) -> Any:
    return make_query(list(query.entities), query.limit, list(query.sources) if query.sources else None, query.cwd)


def _warm(bench: Bench, queries: list[Query], oracle: list[list[dict[str, Any]]],
          servers: list[tuple[str, dict[str, str]]]) -> tuple[list[list[list[float]]], list[list[float]]]:
    """Per server: the timed runs of each query, and its first (checked, untimed-for-warm) request."""
    clients = []
    try:
        for _, env in servers:
            client = LspProcess(env, cwd=str(REPO), ensure_ascii=False)
            clients.append(client)
            client.initialize(options={"dbPath": str(bench.db), "autoSync": False}, capabilities={})
        times: list[list[list[float]]] = [[[] for _ in queries] for _ in servers]
        first: list[list[float]] = [[0.0 for _ in queries] for _ in servers]
        for run in range(bench.args.runs + 1):   # run 0 warms up and is checked against the oracle
            for index, query in enumerate(queries):
                order = list(range(len(clients)))
                if (run + index) % 2:
                    order.reverse()
                for server in order:
                    begun = time.perf_counter()
                    result = clients[server].call("pimem/recall", query.params())
                    elapsed = time.perf_counter() - begun
                    if run > 0:
                        times[server][index].append(elapsed)
                    else:
                        first[server][index] = elapsed
                        bench.compare(f"pimem/recall (server {servers[server][0]})", query, result["results"],
                                      oracle[index])
    except LspError as error:
        bench.fail("pimem serve", str(error))
        raise
    finally:
        for client in clients:
            client.close()
    return times, first


def _seed_like(bench: Bench, queries: list[Query]) -> dict[int, list[float]]:
    """The seed's scan of each unfiltered query (it has no filters)."""
    if bench.args.no_seed:
        return {}
    conn = sqlite3.connect(f"file:{bench.db}?mode=ro", uri=True)
    out: dict[int, list[float]] = {}
    try:
        for index, query in enumerate(queries):
            if query.filtered:
                continue
            times = []
            for _ in range(bench.args.seed_runs or bench.args.runs):
                begun = time.perf_counter()
                seed_recall(conn, query.entities, query.limit)
                times.append(time.perf_counter() - begun)
            out[index] = times
    finally:
        conn.close()
    return out
