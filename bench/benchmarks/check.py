"""``--check-only`` (CI, tests/test_bench_small.py): import the corpus, check the generator's planted
counts, and compare every query of the set (and its variants) and the multi-entity shapes with the
oracle; no timing."""

from __future__ import annotations

import sqlite3
import time

from multi_queries import load_terms, multi_queries
from pimem.recall import make_query, recall, recall_scan
from pimem.store import connect
from queries import CHECK_VARIANTS, QUERIES, Query

from .context import Bench
from .report import describe_corpus, describe_machine
from .rows import recall_row


def run(bench: Bench) -> None:
    say = bench.report.say
    say("## Oracle check (--check-only)")
    say()
    say(f"- corpus: {describe_corpus(bench.manifest)}")
    say(f"- machine: {describe_machine(bench.machine)}")
    say()
    started = time.perf_counter()
    run = bench.pimem_import(bench.db)
    say(f"import: {run.seconds:.1f} s")
    bench.check_counts("pimem import", bench.db)
    check_planted(bench)
    conn = connect(bench.db)
    compared = 0
    try:
        for query in QUERIES:
            variants: list[dict[str, object]] = [{}, *CHECK_VARIANTS]
            for variant in variants:
                params = {"entities": list(query.entities), "limit": query.limit,
                          "sources": list(query.sources) if query.sources else None, "cwd": query.cwd}
                params.update(variant)
                recall_query = make_query(params["entities"], params["limit"], params["sources"], params["cwd"])
                fast = [recall_row(row) for row in recall(conn, recall_query)]
                oracle = [recall_row(row) for row in recall_scan(conn, recall_query)]
                bench.compare("pimem.recall.recall", Query(query.name, query.entities, int(str(params["limit"])),
                              _tuple(params["sources"]), _str(params["cwd"])), fast, oracle)
                compared += 1
        # The multi-entity shapes (bench/multi_queries.py), terms measured on this store.
        for _, query, _ in multi_queries(load_terms(bench.db, bench.work / "multi-terms.json")):
            recall_query = make_query(list(query.entities), query.limit, list(query.sources) if query.sources else None,
                                      query.cwd)
            bench.compare("pimem.recall.recall", query, [recall_row(row) for row in recall(conn, recall_query)],
                          [recall_row(row) for row in recall_scan(conn, recall_query)])
            compared += 1
    finally:
        conn.close()
    say(f"compared {compared} queries with the oracle in {time.perf_counter() - started:.1f} s: "
        f"{'all equal' if not bench.failures else f'{len(bench.failures)} FAILURE(S)'}")

def check_planted(bench: Bench) -> None:
    """The generator's planted counts are exact: each entity is in exactly that many turns."""
    conn = sqlite3.connect(f"file:{bench.db}?mode=ro", uri=True)
    try:
        for entity, counts in bench.manifest["planted"].items():
            needle = entity.lower()
            found = conn.execute(
                "SELECT count(*) FROM turns WHERE instr(lower(user_text), ?) OR instr(lower(reply_text), ?)",
                (needle, needle)).fetchone()[0]
            if found != counts["turns"]:
                bench.fail("planted entity count", f"{entity!r} is in {found} turns, the generator planted "
                                                  f"{counts['turns']}")
    finally:
        conn.close()


def _tuple(value: object) -> tuple[str, ...] | None:
    return tuple(str(item) for item in value) if isinstance(value, list | tuple) else None


def _str(value: object) -> str | None:
    return value if isinstance(value, str) else None
