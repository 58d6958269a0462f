"""The push's write path on layout 8 (the narrow table of lowered texts, kept by statement triggers, with the GIN
over both lowered texts and the grams on it) against layout 7's (that GIN on turns, no narrow table),
alternated in one run.

    nice -n 10 .venv/bin/python bench/share_layout8_push.py --turns 5000 --runs 3

bench/share_push.py's ``part_costs``: as member ``alice`` on a fresh store each, binary ``COPY`` into the
push's staging table and its upsert, 2,000 rows a transaction, triggers on; the pushing backend's CPU per
turn, then the admin's to clean every GIN's pending list (work deferred, not saved). The two layouts run
alternately (which goes first flips each round); medians of ``--runs`` rounds.

``--repush``: the re-push of every row with its reply changed instead (the push's upsert updating each row:
on layout 8 the trigger deletes its narrow row and inserts it again); the first push is not timed.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

import psycopg

from share.pgserver import running_server
from share_push import _LAYOUT_7_GIN, _backend_cpu, _member_writes, _rows, corpus, part_costs

LAYOUTS = (("layout 8 (turn_lowered)", (), (), True), ("layout 7 (turns_lowered on turns)", _LAYOUT_7_GIN, (), True))


def repush_costs(server: Any, turns: list[Any], chosen: tuple[Any, ...], batch: int = 2_000
                 ) -> list[tuple[str, float, float]]:
    """Per layout, on a fresh store: every row pushed (not timed), then pushed again with its reply changed
    (a new content hash: the upsert updates every row), as member ``alice``: the pushing backend's CPU per
    turn for the second push, and the admin's to clean the GINs' pending lists after it."""
    from pimem.share.db import apply_init
    from pimem.share.schema import row_grams

    first = _rows(turns)
    again = [(*r[:8], f"{r[8]} edited", r[9], f"{r[10]} edited", *r[11:14], int(str(r[14])) + 7, r[15],
              f"{r[16]}e", row_grams(str(r[9]), f"{r[10]} edited")) for r in first]
    found = []
    for label, ddl, _settings, _grams in chosen:
        dbname = server.new_database()
        admin = server.conninfo(dbname=dbname)
        apply_init(admin, members=("alice",))
        with psycopg.connect(admin, autocommit=True) as conn:
            for statement in ddl:
                conn.execute(statement)
        with psycopg.connect(server.conninfo(user="alice", dbname=dbname)) as conn:
            conn.execute("CREATE TEMP TABLE stage (LIKE pimem.turns INCLUDING DEFAULTS) ON COMMIT DELETE ROWS")
            conn.commit()
            row = conn.execute("SELECT pg_backend_pid()").fetchone()
            assert row is not None
            pid, spent = int(row[0]), 0.0
            conn.commit()      # each batch its own transaction (bench/share_push.py part_costs)
            for rows, timed in ((first, False), (again, True)):
                before = _backend_cpu(pid)
                _member_writes(conn, "pimem.turns", rows, batch)
                if timed:
                    spent = _backend_cpu(pid) - before
        with psycopg.connect(admin, autocommit=True) as conn:
            row = conn.execute("SELECT pg_backend_pid()").fetchone()
            assert row is not None
            before = _backend_cpu(int(row[0]))
            for (name,) in conn.execute("SELECT c.relname FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid "
                                        "JOIN pg_am a ON a.oid = c.relam JOIN pg_namespace n ON n.oid = c.relnamespace "
                                        "WHERE n.nspname = 'pimem' AND a.amname = 'gin'").fetchall():
                conn.execute("SELECT gin_clean_pending_list(%s::regclass)", (f"pimem.{name}",))
            deferred = _backend_cpu(int(row[0])) - before
            edited = conn.execute("SELECT count(*) FROM pimem.turns WHERE reply_lower LIKE '% edited'").fetchone()
            assert edited is not None and int(edited[0]) == len(turns), edited
        found.append((label, spent / len(turns), deferred / len(turns)))
    return found


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--turns", type=int, default=5_000)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--repush", action="store_true", help="time a second push updating every row instead")
    args = parser.parse_args(argv)
    turns = corpus(args.turns, args.seed)
    totals: dict[str, list[float]] = {label: [] for label, *_ in LAYOUTS}
    with tempfile.TemporaryDirectory(prefix="pimem-bench-") as tmp:
        Path(tmp).chmod(0o755)
        with running_server(Path(tmp) / "pg") as server:
            for run in range(args.runs):
                chosen = LAYOUTS if run % 2 == 0 else LAYOUTS[::-1]
                costs = repush_costs(server, turns, chosen) if args.repush else part_costs(server, turns, chosen=chosen)
                for label, pushed, deferred in costs:
                    totals[label].append((pushed + deferred) * 1000)
                    print(f"round {run + 1}: {label}: push {pushed * 1000:.3f} + deferred "
                          f"{deferred * 1000:.3f} ms/turn", flush=True)
    print("| store | server ms per turn (push + deferred), each round | median |")
    print("|---|---|---|")
    for label, values in totals.items():
        print(f"| {label} | {' / '.join(f'{v:.3f}' for v in values)} | {statistics.median(values):.3f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
