#!/usr/bin/env python3
"""Experiment: how fast FTS5 builds pimem's trigram index, and whether its in-memory hash size matters.

Copies the lowercased reply text of the first ``--turns`` turns of an imported store into a fresh FTS5
table declared like pimem's (``store.py``: trigram, case-sensitive, ``detail=none``, contentless, no
``columnsize``), with automerge off as in a bulk build (``index.set_bulk``), in batches of
``index.BUILD_BATCH``, once per hash size given, and prints the insert and ``optimize`` times.

    .venv/bin/python bench/experiments/fts_hash_size.py bench/out/work-corpus-100000-s1/pimem.db 1 32 128

On the 100k corpus (docs/benchmarks.md), two runs: 42 MB of text, 5.5-5.8 s with 1 MB, 4.8-5.1 s with 32 MB
(pimem's choice), 4.6-5.2 s with 128 MB; ``optimize`` 0.6 s. FTS5 tokenizes about 8 MB of text per second in one
thread whatever the setting, which is why the full import cannot reach 3x the seed with this index.
"""

from __future__ import annotations

import argparse
import sqlite3
import tempfile
import time
from pathlib import Path

from pimem.index import BUILD_BATCH, SENTINEL


def build_once(texts: list[str], hash_mb: int, directory: Path) -> tuple[float, float, int]:
    path = directory / f"fts-{hash_mb}.db"
    conn = sqlite3.connect(path)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("PRAGMA synchronous=NORMAL")
    conn.execute("CREATE VIRTUAL TABLE f USING fts5(text, tokenize = 'trigram case_sensitive 1', detail = none, "
                 "content = '', columnsize = 0)")
    conn.execute("INSERT INTO f(f, rank) VALUES ('automerge', 0)")
    conn.execute("INSERT INTO f(f, rank) VALUES ('hashsize', ?)", (hash_mb << 20,))
    started = time.perf_counter()
    for first in range(0, len(texts), BUILD_BATCH):
        with conn:
            conn.executemany("INSERT INTO f(rowid, text) VALUES (?, ?)",
                             enumerate(texts[first:first + BUILD_BATCH], start=first + 1))
    inserted = time.perf_counter()
    with conn:
        conn.execute("INSERT INTO f(f) VALUES ('optimize')")
    optimized = time.perf_counter()
    conn.close()
    return inserted - started, optimized - inserted, path.stat().st_size


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("store", type=Path, help="an imported pimem store (read only)")
    parser.add_argument("hash_mb", type=int, nargs="+", help="FTS5 hashsize values to try, in MB")
    parser.add_argument("--turns", type=int, default=25_000)
    args = parser.parse_args()
    source = sqlite3.connect(f"file:{args.store}?mode=ro", uri=True)
    texts = [(reply or "").lower() + SENTINEL
             for (reply,) in source.execute("SELECT reply_text FROM turns LIMIT ?", (args.turns,))]
    print(f"{len(texts):,} replies, {sum(map(len, texts)) / 1e6:.1f} M characters")
    with tempfile.TemporaryDirectory() as directory:
        for hash_mb in args.hash_mb:
            insert_s, optimize_s, size = build_once(texts, hash_mb, Path(directory))
            print(f"hashsize {hash_mb:>4} MB: insert {insert_s:.2f} s, optimize {optimize_s:.2f} s, "
                  f"{size / 1e6:.0f} MB")


if __name__ == "__main__":
    main()
