#!/usr/bin/env python3
"""Experiment (issue 12, the first import): does any setting of pimem's own index build make it faster?

Copies an imported store, drops its postings (``index.rebuild``: every doc pending) and times
``index.build_pending`` as a first import runs it (bulk mode: automerge off, one ``optimize`` at the end),
once per variant, in the order given:

* ``base``: as pimem builds (batches of ``index.BUILD_BATCH`` docs, optimize at the end);
* ``batchN``: batches of N docs (one transaction each);
* ``noopt``: no final ``optimize`` (the segments stay unmerged: smaller build, slower lists);
* ``hashN``: FTS5's in-memory hash of N MB (pimem sets 32).

    .venv/bin/python bench/experiments/index_build_variants.py STORE base noopt batch10000 hash128 base

Give ``base`` twice (first and last) to see the machine's drift. Results are in docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import tempfile
import time
from pathlib import Path

from pimem import index
from pimem.store import connect, transaction


def run_variant(store: Path, variant: str, directory: Path) -> tuple[int, float]:
    copy = directory / "store.db"
    for suffix in ("", "-wal", "-shm"):
        (directory / f"store.db{suffix}").unlink(missing_ok=True)
    shutil.copy(store, copy)
    conn = connect(copy)
    with transaction(conn):
        index.rebuild(conn)
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    saved = index.BUILD_BATCH, index.optimize, index.set_bulk
    try:
        if variant.startswith("batch"):
            index.BUILD_BATCH = int(variant.removeprefix("batch"))
        elif variant == "noopt":
            index.optimize = lambda _conn: None
        elif variant.startswith("hash"):
            megabytes = int(variant.removeprefix("hash"))

            def set_bulk(connection: object, bulk: bool) -> None:
                saved[2](connection, bulk)  # type: ignore[arg-type]
                if bulk:
                    for table in index.FTS_TABLES:
                        connection.execute(  # type: ignore[attr-defined]
                            f"INSERT INTO {table}({table}, rank) VALUES ('hashsize', ?)", (megabytes << 20,))

            index.set_bulk = set_bulk  # type: ignore[assignment]
        elif variant != "base":
            raise SystemExit(f"unknown variant {variant!r}")
        started = time.perf_counter()
        done = index.build_pending(conn)
        return done, time.perf_counter() - started
    finally:
        index.BUILD_BATCH, index.optimize, index.set_bulk = saved
        conn.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("store", type=Path)
    parser.add_argument("variants", nargs="+")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        for variant in args.variants:
            done, seconds = run_variant(args.store, variant, Path(folder))
            size = os.path.getsize(Path(folder) / "store.db")
            peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
            print(f"{variant:12s} {done} docs in {seconds:6.1f} s ({seconds / max(done, 1) * 1e3:.2f} ms/doc), "
                  f"file {size / 1e6:.0f} MB, peak RSS so far {peak:.0f} MB", flush=True)


if __name__ == "__main__":
    main()
