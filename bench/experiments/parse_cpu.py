"""CPU time of one importer's parse of transcript files (no store): for before/after comparisons of a parser
change, run with each revision's ``server`` folder in turn, alternated.

    .venv/bin/python bench/experiments/parse_cpu.py --server /tmp/base/server --source pi FILE... --runs 30
"""

from __future__ import annotations

import argparse
import sys
import time


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--server", required=True, help="the revision's server folder (its pimem package)")
    parser.add_argument("--source", required=True, help="the importer: pi, claude, codex, …")
    parser.add_argument("--runs", type=int, default=30)
    parser.add_argument("files", nargs="+")
    args = parser.parse_args()
    sys.path.insert(0, args.server)
    from pimem.importers import IMPORTERS
    from pimem.importers.base import Chunk, feed_line
    from pimem.jsonl import LineReader

    make = IMPORTERS[args.source].parser

    def parse(path: str) -> int:
        reader, chunk = make(path, None), Chunk()
        with open(path, "rb") as handle:
            for line in LineReader(handle).scan(reader.interesting):
                feed_line(reader, line, chunk)
        return len(chunk.turns)

    for path in args.files:
        turns = parse(path)   # warm
        started = time.process_time()
        for _ in range(args.runs):
            parse(path)
        cpu = (time.process_time() - started) / args.runs * 1000
        print(f"{cpu:8.2f} ms CPU per parse  {turns:5d} turns  {path}")


if __name__ == "__main__":
    main()
