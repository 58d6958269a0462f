#!/usr/bin/env python3
"""A first push into a loaded shared store: what a new member's push costs the server when ``turns`` and
its indexes already hold a team's rows (GIN inserts cost more in large indexes than in the empty store
of bench/share_push.py).

    nice -n 10 .venv/bin/python bench/share_push_loaded.py --data DIR [--turns 5000] [--machine m]

``DIR`` is a store ``bench/share_recall.py --data DIR`` loaded and kept (its server is started here and
stopped after). **The push writes into it**: use a copy (``cp -a``). A member ``pusher`` is added (the
admin's ``apply_init``, which also migrates the store to this pimem's layout: run an older pimem, its
``server/`` first on ``PYTHONPATH``, to measure an older layout); a local store of ``--turns`` turns of
bench/share_push.py's corpus is pushed as ``--machine`` (another name on each run of the same copy:
new rows), then pushed again unchanged. Reported: the push's wall time, the server's CPU (all its
processes, bench/share_push.py's ``server_cpu``) and pimem's, the pipelined rate on 2 idle cores
(n / max of the two) and the no-change push's wall time.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "bench"))
sys.path.insert(0, str(REPO / "tests"))

import psycopg  # noqa: E402

from pimem.share.db import apply_init  # noqa: E402
from pimem.share.push import push  # noqa: E402
from pimem.share.state import ShareConfig  # noqa: E402
from share.local import write  # noqa: E402
from share_push import FOLDER, corpus, server_cpu  # noqa: E402
from share_text_ab import loaded_server  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, required=True, help="a copy of a store bench/share_recall.py kept")
    parser.add_argument("--turns", type=int, default=5_000)
    parser.add_argument("--machine", default="m", help="the pushing machine's name (new rows on each new name)")
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args(argv)
    with loaded_server(args.data) as (server, loaded):
        admin = server.conninfo(dbname=loaded["dbname"])
        apply_init(admin, members=("pusher",))
        with psycopg.connect(admin) as conn:
            layout = conn.execute("SELECT value FROM pimem.pimem_share_meta WHERE key = 'layout'").fetchone()
            rows = conn.execute("SELECT count(*) FROM pimem.turns").fetchone()
        assert layout is not None and rows is not None
        with tempfile.TemporaryDirectory(prefix="pimem-bench-") as tmp:
            store = Path(tmp) / "memory.db"
            write(store, corpus(args.turns, args.seed))
            config = ShareConfig(conninfo=server.conninfo(user="pusher", dbname=loaded["dbname"]),
                                 machine=args.machine, folders=(FOLDER,))
            cpu, pg_cpu, started_at = time.process_time(), server_cpu(server.datadir), time.perf_counter()
            stats = push(store, config)
            wall = time.perf_counter() - started_at
            cpu, pg_cpu = time.process_time() - cpu, server_cpu(server.datadir) - pg_cpu
            started_at = time.perf_counter()
            again = push(store, config)
            no_change = time.perf_counter() - started_at
        sent = max(stats.sent, 1)
        print(f"layout {layout[0]}, {int(rows[0]):,} rows before, load {os.getloadavg()[0]:.1f}: {stats.sent:,} sent "
              f"({stats.held} held), wall {wall:.2f} s; server CPU {pg_cpu:.2f} s "
              f"({pg_cpu / sent * 1000:.2f} ms/turn), "
              f"pimem CPU {cpu:.2f} s ({cpu / sent * 1000:.2f} ms/turn); pipelined on 2 idle cores "
              f"{stats.sent / max(cpu, pg_cpu):,.0f} turns/s; no-change push {no_change:.3f} s ({again.sent} sent)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
