"""Shared entity recall, this tree's ``entity_rows`` against an older commit's, in one run on one loaded
server (the store ``bench/share_recall.py --data DIR`` loaded and kept), every answer checked.

    .venv/bin/python bench/share_entity_ab.py --data DIR --base COMMIT [--repeat 3] [--cold] [--json out.json]

The older ``server/pimem/share/recall.py`` is imported beside this one (bench/share_text_ab.py's
``base_module``). The shapes are bench/share_recall.py's (k = 1..8 entities, ``--variants`` rotations of
the planted ones); each is run ``--repeat`` times by both, alternately (new first on odd rounds), on one
connection as member ``reader`` with nothing prepared (as in use), after one warm-up round. Reported per
side: wall p50/p95 over all shapes, by kind (``indexed``: every entity has a trigram; ``short``: one has none, as
bench/share_recall.py splits them) and by number of entities, and the CPU per query of the client and of
the server's processes. Both answers must equal the plain SQL oracle of bench/share_recall.py (every
row scored by ``strpos``); mismatches are counted.

``--narrow-table NAME``: this tree's side reads the lowered texts from NAME (layout 8's narrow table, built as a
scratch copy on an older store) instead of ``pimem.turn_lowered``.

``--expected FILE``: the oracle's pages kept between runs on the same rows (read when FILE exists, else written).

``--cold``: no warm-up round, and the server is stopped and started again before each side's round
(its shared buffers empty; the operating system's file cache is not emptied: that needs root and
would slow every other job on the machine), so every shape is a first ask for that side.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))
sys.path.insert(0, str(ROOT / "tests"))


import psycopg  # noqa: E402

from pimem.recall import make_query  # noqa: E402
from pimem.share import recall as shared  # noqa: E402
from share_recall import pct, plain_sql_oracle, shapes  # noqa: E402
from share_text_ab import base_module, loaded_server, reader_session, server_cpu  # noqa: E402


def _summary(values: list[float]) -> dict[str, float]:
    return {"p50Ms": round(statistics.median(values), 1), "p95Ms": round(pct(values, 0.95), 1)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, required=True, help="a folder bench/share_recall.py --data loaded")
    parser.add_argument("--base", required=True, help="the commit whose entity_rows is measured against this tree's")
    parser.add_argument("--variants", type=int, default=3)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--cold", action="store_true", help="each side's round on a freshly started server")
    parser.add_argument("--json", type=Path)
    parser.add_argument("--expected", type=Path,
                        help="the oracle's pages, read from this file when it exists, else written to it (the oracle "
                             "scans every row once per shape: minutes at 2M rows; its pages depend on the rows only)")
    parser.add_argument("--narrow-table", help="the narrow table of lowered texts this tree's side reads (default "
                        "pimem.turn_lowered, layout 8's; a scratch copy on an older store, see docs/benchmarks.md "
                        "s15-narrow)")
    parser.add_argument("--base-narrow", action="store_true",
                        help="the base's side reads --narrow-table too (a base that knows layout 8's table)")
    args = parser.parse_args(argv)
    if args.narrow_table:
        shared.NARROW_TABLE = args.narrow_table

    sides: dict[str, Any] = {"new": shared, "old": base_module(args.base)}
    if args.base_narrow and args.narrow_table:
        sides["old"].NARROW_TABLE = args.narrow_table
    wall: dict[str, list[float]] = {"new": [], "old": []}
    by_kind: dict[str, dict[str, list[float]]] = {"indexed": {"new": [], "old": []}, "short": {"new": [], "old": []}}
    by_k: dict[int, dict[str, list[float]]] = {}
    client: dict[str, list[float]] = {"new": [], "old": []}
    backend: dict[str, list[float]] = {"new": [], "old": []}
    mismatches = {"new": 0, "old": 0}
    slowest: list[tuple[float, str, tuple[str, ...]]] = []
    chosen = shapes(args.variants)
    queries = [make_query(list(entities), 5) for _k, entities in chosen]
    expected: list[list[tuple[Any, ...]]] = []

    def ask(pg: Any, postmaster: int, order: tuple[str, ...]) -> None:
        for (k, entities), query, want in zip(chosen, queries, expected, strict=True):
            kind = "short" if any(not shared.trigram_indexable(e) for e in entities) else "indexed"
            for side in order:
                server0 = server_cpu(postmaster)
                cpu0, t0 = time.process_time(), time.perf_counter()
                rows = sides[side].entity_rows(pg, query, sides[side].Who(), query.limit)
                elapsed, cpu = (time.perf_counter() - t0) * 1000, (time.process_time() - cpu0) * 1000
                wall[side].append(elapsed)
                by_kind[kind][side].append(elapsed)
                by_k.setdefault(k, {"new": [], "old": []})[side].append(elapsed)
                slowest.append((elapsed, side, entities))
                client[side].append(cpu)
                backend[side].append((server_cpu(postmaster) - server0) * 1000)
                mismatches[side] += [(r.author, r.machine, r.turn_id, r.hits) for r in rows] != want

    with reader_session(args.data) as (pg, postmaster, loaded):
        # Nothing prepared, as in use (a connection per recall, pimem.share.scope): psycopg prepares a
        # statement run five times on a connection, and PostgreSQL's generic plan of an older
        # entity_rows' statements scans the table (this tree's are never prepared).
        pg.prepare_threshold = None
        if args.expected is not None and args.expected.exists():
            expected.extend([tuple(row) for row in page] for page in json.loads(args.expected.read_text("utf-8")))
        else:
            expected.extend(plain_sql_oracle(pg, query) for query in queries)
            if args.expected is not None:
                args.expected.write_text(json.dumps([[list(row) for row in page] for page in expected]) + "\n",
                                         encoding="utf-8")
        if not args.cold:
            for query in queries:                 # warm-up: both once
                for module in sides.values():
                    module.entity_rows(pg, query, module.Who(), query.limit)
            for round_ in range(args.repeat):
                ask(pg, postmaster, ("new", "old") if round_ % 2 == 0 else ("old", "new"))
    if args.cold:
        with loaded_server(args.data) as (server, _):
            for round_ in range(args.repeat):
                for side in ("new", "old") if round_ % 2 == 0 else ("old", "new"):
                    server.stop("fast")
                    server.start()
                    with psycopg.connect(server.conninfo(user="reader", dbname=loaded["dbname"]),
                                         autocommit=True) as pg:
                        pg.prepare_threshold = None
                        ask(pg, int((server.datadir / "postmaster.pid").read_text().split()[0]), (side,))
    load = os.getloadavg()
    report: dict[str, Any] = {"rows": loaded["rows"], "base": args.base, "cold": args.cold,
                              "queries": len(wall["new"]),
                              "loadAverage": [round(x, 1) for x in load]}
    for side in ("old", "new"):
        report[side] = {**_summary(wall[side]),
                        "byKind": {kind: _summary(times[side]) for kind, times in by_kind.items() if times[side]},
                        "clientCpuMsPerQuery": round(statistics.mean(client[side]), 1),
                        "serverCpuMsPerQuery": round(statistics.mean(backend[side]), 1),
                        "oracleMismatches": mismatches[side]}
    report["byEntitiesP95Ms"] = {str(k): {side: round(pct(times[side], 0.95), 1) for side in ("old", "new")}
                                 for k, times in sorted(by_k.items())}
    report["slowest"] = [{"ms": round(ms, 1), "side": side, "entities": list(entities)}
                         for ms, side, entities in sorted(slowest, reverse=True)[:3]]
    report["slowestNew"] = [{"ms": round(ms, 1), "entities": list(entities)}
                            for ms, side, entities in sorted(slowest, reverse=True) if side == "new"][:5]
    report["ratios"] = {
        "p50": round(report["old"]["p50Ms"] / max(report["new"]["p50Ms"], 1e-6), 1),
        "p95": round(report["old"]["p95Ms"] / max(report["new"]["p95Ms"], 1e-6), 1),
        "shortP95": round(report["old"]["byKind"]["short"]["p95Ms"]
                          / max(report["new"]["byKind"]["short"]["p95Ms"], 1e-6), 1),
        "cpu": round((report["old"]["clientCpuMsPerQuery"] + report["old"]["serverCpuMsPerQuery"])
                     / max(report["new"]["clientCpuMsPerQuery"] + report["new"]["serverCpuMsPerQuery"], 1e-6), 1)}
    print(json.dumps(report, indent=2))
    if args.json:
        args.json.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
