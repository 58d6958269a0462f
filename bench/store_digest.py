#!/usr/bin/env python3
"""What a store holds, table by table, as digests: to check that a change of the import leaves every
row as it was (issue 21, import cost).

    python bench/store_digest.py STORE.db [OTHER.db]

Every table of ``sqlite_master`` (FTS5's shadow tables included: the index's segments, byte for byte;
the virtual tables themselves are read through them), each row with its rowid where the table has one,
rows sorted; per table the row count and a sha256, then one sha256 over all. Left out, because a sync
makes them anew every time: ``pimem_meta``'s ``last_sync`` (its finishing time) and ``store_id`` (a
random id), and the random mark each index build writes into ``pimem_index_log`` (``doc_key < 0``,
compared as -1). With two stores, the tables that differ are named and the exit status is 1.

Two syncs of the same corpus with ``--workers 1`` give identical digests (files are parsed newest
first, one at a time); with worker processes the files' turns interleave in a different order from
run to run, so row ids differ.
"""

from __future__ import annotations

import hashlib
import sqlite3
import sys

SYNC_OWN_META = ("last_sync", "store_id")


def table_digests(path: str) -> dict[str, tuple[int, str]]:
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    found: dict[str, tuple[int, str]] = {}
    try:
        tables = conn.execute("SELECT name, sql FROM sqlite_master WHERE type = 'table' ORDER BY name").fetchall()
        for name, sql in tables:
            if sql and sql.upper().startswith("CREATE VIRTUAL"):
                continue   # read through its shadow tables
            try:
                rows = conn.execute(f'SELECT rowid, * FROM "{name}"').fetchall()
            except sqlite3.OperationalError:   # WITHOUT ROWID
                rows = conn.execute(f'SELECT * FROM "{name}"').fetchall()
            if name == "pimem_meta":
                rows = [row for row in rows if row[1] not in SYNC_OWN_META]
            if name == "pimem_index_log":
                rows = [(row[0], row[1], -1 if row[2] < 0 else row[2]) for row in rows]
            digest = hashlib.sha256()
            for text in sorted(repr(row) for row in rows):
                digest.update(text.encode("utf-8", "surrogatepass"))
                digest.update(b"\n")
            found[name] = (len(rows), digest.hexdigest())
    finally:
        conn.close()
    return found


def overall(digests: dict[str, tuple[int, str]]) -> str:
    total = hashlib.sha256()
    for name, (count, digest) in sorted(digests.items()):
        total.update(f"{name} {count} {digest}\n".encode())
    return total.hexdigest()


def main(argv: list[str]) -> int:
    if len(argv) not in (1, 2):
        print(__doc__.strip().splitlines()[3].strip(), file=sys.stderr)
        return 2
    stores = [table_digests(path) for path in argv]
    for name in sorted(stores[0]):
        count, digest = stores[0][name]
        print(f"{name:32} {count:>10,} {digest[:16]}")
    print(f"all tables: {overall(stores[0])}")
    if len(stores) == 1:
        return 0
    differ = sorted(name for name in set(stores[0]) | set(stores[1]) if stores[0].get(name) != stores[1].get(name))
    print(f"second store: {overall(stores[1])}")
    print("identical" if not differ else f"DIFFERENT: {', '.join(differ)}")
    return 1 if differ else 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
