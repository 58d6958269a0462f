#!/usr/bin/env python3
"""Round q10: what an entity with grams whose trigrams are all rare (``qzx.py``) costs the shared store's GIN
scan of layout 7 (``pimem.share.recall._EntitySql._match_lowered``) when pg_trgm gets none of them (main: the
grams alone, ``x.`` and ``.p``, which every Python path holds) against when it gets its rare trigrams (round q10).

A store of ``--rows`` rows in a real PostgreSQL started in a temporary directory (tests/share/pgserver.py), each
user text naming ``index.py`` and ``regex.py`` (the entity's grams, ``x.`` and ``.p``, are in every row),
``--holders`` of them naming ``qzx.py`` too; each
condition's ``EXPLAIN (ANALYZE, BUFFERS)`` of ``count(*)`` over the rows it matches, the two alternated
``--runs`` times: the server's execution time (median), the scan, the heap rows ``strpos`` tested, the buffers read.

    python bench/experiments/q10_rare_trigrams.py [--rows 200000] [--holders 5] [--runs 5]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "tests"))

import psycopg  # noqa: E402

from pimem.recall import make_query  # noqa: E402
from pimem.share import recall as shared  # noqa: E402
from pimem.share.db import apply_init  # noqa: E402
from pimem.share.schema import row_grams  # noqa: E402
from share.pgserver import running_server  # noqa: E402


def _fill(conninfo: str, rows: int, holders: int) -> None:
    every = max(rows // max(holders, 1), 1)
    with psycopg.connect(conninfo) as conn, conn.cursor() as cur:
        with cur.copy("COPY pimem.turns (author, machine, doc_key, session_id, turn_index, source, cwd, ts, user_text, "
                      "reply_text, user_lower, reply_lower, user_words, reply_words, user_chars, reply_chars, "
                      "content_hash, grams) FROM STDIN") as copy:
            for n in range(rows):
                text = f"open src/index_{n % 997}/index.py and lib/regex.py then run case {n}"
                if n % every == every // 2 and n // every < holders:
                    text += " with qzx.py"
                lower = text.lower()
                copy.write_row(("alice", "laptop", f"d{n}", f"s{n // 20}", n % 20, "pi", "/work/proj",
                                datetime.fromtimestamp(1_750_000_000 + n, UTC), text, "ok", lower, "ok", [], [],
                                len(text), 2, "h", row_grams(lower, "ok")))
        cur.execute("ANALYZE pimem.turns")


def _explain(conn: psycopg.Connection[tuple[Any, ...]], condition: str, values: list[object]) -> dict[str, Any]:
    plan = conn.execute("EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) SELECT count(*) FROM pimem.turns WHERE " + condition,
                        values, prepare=False).fetchone()
    assert plan is not None
    top = plan[0][0]
    tested = 0
    buffers = 0
    scans: list[str] = []

    def walk(node: dict[str, Any]) -> None:
        nonlocal tested, buffers
        if node.get("Node Type") in ("Bitmap Heap Scan", "Seq Scan"):
            scans.append(str(node["Node Type"]))
            tested += int(node.get("Actual Rows", 0)) + int(node.get("Rows Removed by Filter", 0)) \
                + int(node.get("Rows Removed by Index Recheck", 0))
            buffers += int(node.get("Shared Hit Blocks", 0)) + int(node.get("Shared Read Blocks", 0))
        for child in node.get("Plans", []):
            walk(child)

    walk(top["Plan"])
    return {"ms": float(top["Execution Time"]), "scan": "+".join(scans), "tested": tested, "heap_buffers": buffers}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=200_000)
    parser.add_argument("--holders", type=int, default=5)
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="pimem-q10-") as base:
        Path(base).chmod(0o755)
        with running_server(Path(base) / "pg") as server:
            dbname = server.new_database()
            admin = server.conninfo(dbname=dbname)
            apply_init(admin, members=("alice",))
            _fill(admin, args.rows, args.holders)
            sql = shared._EntitySql.of(make_query(["qzx.py"], 5), shared.Who(), True)
            sql.lowered = True
            conditions = {}
            for name, trigrams in (("grams alone (main)", [None]), ("grams + rare trigrams (q10)", [["qzx"]])):
                sql.trigrams, sql.tight = trigrams, [False]
                conditions[name] = sql.match(0, True)
            found: dict[str, list[dict[str, Any]]] = {name: [] for name in conditions}
            with psycopg.connect(server.conninfo(user="alice", dbname=dbname), autocommit=True) as conn:
                for run in range(args.runs + 1):
                    for name, (condition, values) in conditions.items():
                        result = _explain(conn, condition, values)
                        if run:   # the first run warms the cache
                            found[name].append(result)
    summary = {name: {"ms_median": round(statistics.median(r["ms"] for r in results), 2),
                      "scan": results[0]["scan"], "tested": results[0]["tested"],
                      "heap_buffers": results[0]["heap_buffers"]} for name, results in found.items()}
    print(json.dumps({"rows": args.rows, "holders": args.holders, "runs": args.runs, **summary}, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
