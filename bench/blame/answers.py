#!/usr/bin/env python3
"""Same answers before and after a rewrite of the line memory (issue 23): dump what
``pimem.lineblame.line_history`` answers (git off) over scored histories and the hot file, then compare.

    python bench/blame/answers.py --history bench/blame/fixtures/real /tmp/blame-work \\
        --history /tmp/syn-s11 /tmp/work-syn-s11 --hot /tmp/blame-perf --out /tmp/answers-new.json
    python bench/blame/answers.py --compare /tmp/answers-old.json /tmp/answers-new.json

A history is a fixture and the WORK of a ``score.py`` run on it (its synced ``memory.db``; its projects
rebuilt at the fixture's root): every final file whole, each of its lines alone and each window of 3
lines. The hot file (``perf.py``'s WORK: ``memory.db``, ``hot/big.py``): whole, 300 random ranges of
1 to 500 lines, and a copy a person edited (200 lines rewritten, 50 blocks of 5 lines moved). Run the
old code by putting its ``server`` first on PYTHONPATH (e.g. an exported commit).
"""

from __future__ import annotations

import argparse
import json
import random
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from score import build_repos, load


def dump(conn: Any, path: str, text: str, start: int, end: int | None) -> list[list[Any]]:
    from pimem.lineblame import line_history

    return [[a.line, a.confidence, a.turn_id, a.tool_call_id, a.edit_start_line, a.prompt, a.ts]
            for a in line_history(conn, path, text, start, end, git=False).lines]


def collect(histories: list[list[str]], hot: Path | None) -> dict[str, list[list[Any]]]:
    from pimem.store import connect

    out: dict[str, list[list[Any]]] = {}
    for fixture, work in histories:
        script, truth = load(Path(fixture))
        root = Path(script["root"])
        build_repos(root, script["steps"], script.get("initial"), script.get("repoDepth", 1))
        conn = connect(Path(work) / "memory.db", create=False, for_writing=False)
        for rel in sorted(truth):
            text = (root / rel).read_text(encoding="utf-8")
            out[f"{fixture}:{rel}"] = dump(conn, str(root / rel), text, 0, None)
            for k in range(text.count("\n") + 1):
                out[f"{fixture}:{rel}:{k}"] = dump(conn, str(root / rel), text, k, k + 1)
                out[f"{fixture}:{rel}:{k}+3"] = dump(conn, str(root / rel), text, k, k + 3)
        conn.close()
    if hot is not None:
        big = hot / "hot" / "big.py"
        text = big.read_text(encoding="utf-8")
        conn = connect(hot / "memory.db", create=False, for_writing=False)
        out["hot"] = dump(conn, str(big), text, 0, None)
        rng = random.Random(5)
        count = text.count("\n")
        for _ in range(300):
            start = rng.randrange(count)
            end = start + rng.choice([1, 2, 5, 50, 500])
            out[f"hot:{start}-{end}"] = dump(conn, str(big), text, start, end)
        lines = text.splitlines()
        rng = random.Random(7)
        for k in range(200):
            lines[rng.randrange(len(lines))] = f"    person_line_{k} = 1"
        for _ in range(50):
            at = rng.randrange(len(lines) - 10)
            block = lines[at:at + 5]
            del lines[at:at + 5]
            to = rng.randrange(len(lines))
            lines[to:to] = block
        out["hot-edited"] = dump(conn, str(big), "\n".join(lines) + "\n", 0, None)
        conn.close()
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--history", nargs=2, action="append", default=[], metavar=("FIXTURE", "WORK"))
    parser.add_argument("--hot", type=Path, help="a perf.py WORK")
    parser.add_argument("--out", type=Path)
    parser.add_argument("--compare", nargs=2, type=Path, metavar=("OLD", "NEW"))
    args = parser.parse_args()
    if args.compare:
        old, new = (json.loads(path.read_text()) for path in args.compare)
        differ = sorted(key for key in old.keys() | new.keys() if old.get(key) != new.get(key))
        print(f"{len(old)} / {len(new)} requests, {sum(map(len, old.values()))} / {sum(map(len, new.values()))} "
              f"attributed lines; {len(differ)} requests differ" + (f": {differ[:5]}" if differ else ""))
        return 1 if differ else 0
    if args.out is None:
        parser.error("--out is needed (or --compare)")
    answers = collect(args.history, args.hot)
    args.out.write_text(json.dumps(answers) + "\n")
    print(f"{len(answers)} requests, {sum(map(len, answers.values()))} attributed lines -> {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
