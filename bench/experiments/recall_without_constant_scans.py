#!/usr/bin/env python3
"""Experiment (not a pimem version): recall on an imported store with the two per-query constant scans of
pimem b2fb0c8 (and 6d039bc…798cbf0) removed, to show what they cost.

At those commits ``pimem.recall.recall`` scans, on every query, (1) every turn row with
``t.rowid > index_watermark AND d.turn_id IS NULL`` — and a full ``pimem sync`` never sets
``index_watermark`` (only ``index.catch_up`` does, which ``reconcile`` calls only when docs != turns) — and
(2) ``pimem_pending JOIN pimem_docs …``, which SQLite plans as ``SCAN d`` over all of ``pimem_docs`` even
when ``pimem_pending`` is empty. This script sets ``index_watermark`` (as a live sync would) and drives the
pending query from ``pimem_pending`` (``CROSS JOIN``), checks that every query of bench/queries.py returns
exactly what pimem's own ``recall`` returns, and prints the times. It uses the internal API of those
commits (``pimem.search.recall_indexed``, ``pimem.recall.ROW_COLUMNS``).

    PYTHONPATH=bench/out/src-b2fb0c8faa2b/server .venv/bin/python \\
        bench/experiments/recall_without_constant_scans.py bench/out/work-corpus-1000000-s1/pimem.db

It leaves ``index_watermark`` set in the store (delete the pimem_meta row to undo).

Both scans were fixed in pimem itself afterwards: the watermark by 73ef212, the pending read by 87b0cec
(warm recall at 100k turns: p50 147 ms -> 8.4 ms, docs/benchmarks.md).
"""

from __future__ import annotations

import itertools
import statistics
import sys
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from pimem import index
from pimem import recall as pimem_recall
from pimem.search import recall_indexed  # type: ignore[import-not-found]
from pimem.store import connect, set_meta, transaction
from queries import QUERIES


def fixed_recall(conn: Any, query: Any) -> list[Any]:
    entities_lower = [entity.lower() for entity in query.entities]
    columns = pimem_recall.ROW_COLUMNS  # type: ignore[attr-defined]

    def unindexed() -> Iterator[Sequence[object]]:
        pending = conn.execute(
            f"SELECT {columns} FROM pimem_pending p CROSS JOIN pimem_docs d ON d.doc_key = p.doc_key "
            "JOIN turns t ON t.turn_id = d.turn_id JOIN sessions s ON s.session_id = t.session_id")
        orphans = conn.execute(
            f"SELECT {columns} FROM turns t JOIN sessions s ON s.session_id = t.session_id "
            "LEFT JOIN pimem_docs d ON d.turn_id = t.turn_id WHERE t.rowid > ? AND d.turn_id IS NULL",
            (index.watermark(conn),))
        return itertools.chain(pending, orphans)

    conn.execute("BEGIN")
    try:
        return list(recall_indexed(conn, query, entities_lower, unindexed))
    finally:
        conn.execute("COMMIT")


def main() -> int:
    conn = connect(sys.argv[1])
    if index.watermark(conn) == 0:
        with transaction(conn):
            set_meta(conn, "index_watermark", str(conn.execute("SELECT max(rowid) FROM turns").fetchone()[0]))
        print("set index_watermark = max(turns.rowid)")
    samples: list[float] = []
    for query in QUERIES:
        recall_query = pimem_recall.make_query(list(query.entities), query.limit,
                                               list(query.sources) if query.sources else None, query.cwd)
        expected = [row.to_dict() for row in pimem_recall.recall(conn, recall_query)]
        times = []
        for _ in range(3):
            started = time.perf_counter()
            rows = fixed_recall(conn, recall_query)
            times.append(time.perf_counter() - started)
        assert [row.to_dict() for row in rows] == expected, query.name
        samples += times
        print(f"{query.name:34s} median {statistics.median(times) * 1000:9.1f} ms  max {max(times) * 1000:9.1f} ms")
    samples.sort()
    print(f"p50 {samples[len(samples) // 2] * 1000:.1f} ms  p95 {samples[int(len(samples) * 0.95)] * 1000:.1f} ms  "
          f"max {samples[-1] * 1000:.1f} ms")
    return 0


if __name__ == "__main__":
    sys.exit(main())
