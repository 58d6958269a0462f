#!/usr/bin/env python3
"""Round q8: what a question that asks for a number or a time costs the passage step (pimem.recall.answers,
round 14) when its one word is in many long user texts and no number is near it (every such text's passage
is then read). A store of ``--sessions`` Pi sessions of ``--turns`` turns, each user text ``--chars``
characters of filler words holding the word once (made once under ``--work``); CPU time of free text
``How many tomatoes did I grow?`` (asks a number) against ``Did I grow tomatoes?`` (asks nothing: the same word, the
reference), alternated, the ranked lists forgotten before each query; the median of ``--runs``.

    python bench/recall_asked_hostile.py --work /tmp/q8/asked [--sessions 50] [--turns 60] [--chars 20000]
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from pimem.recall import docmap, freetext, ranking
from pimem.recall.query import make_query
from pimem.store import connect
from support.edits import write_pi
from support.sync import sync

FILLER = ["garden", "soil", "water", "sunlight", "compost", "mulch", "seedling", "weeding", "trellis", "harvest",
          "basil", "pepper", "cucumber", "lettuce", "spinach", "carrot", "radish", "onion", "garlic", "squash"]


def make_store(work: Path, sessions: int, turns: int, chars: int) -> Path:
    db = work / "memory.db"
    if db.exists():
        return db
    rng = random.Random(7)
    base = work / "agents"
    for s in range(sessions):
        said = []
        for _ in range(turns):
            words = []
            while sum(len(w) + 1 for w in words) < chars:
                words.append(rng.choice(FILLER))
            words.insert(rng.randrange(len(words)), "tomatoes")
            said.append((" ".join(words), []))
        write_pi(base, f"s{s}", work, said, minute=s)
    sync(base, db, timeout=3600)
    return db


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--work", type=Path, required=True)
    parser.add_argument("--sessions", type=int, default=50)
    parser.add_argument("--turns", type=int, default=60)
    parser.add_argument("--chars", type=int, default=20_000)
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    args.work.mkdir(parents=True, exist_ok=True)
    db = make_store(args.work, args.sessions, args.turns, args.chars)
    conn = connect(db, create=False, for_writing=False)
    docmap.enable()
    texts = {"asks a number": "How many tomatoes did I grow?", "reference": "Did I grow tomatoes?"}
    times: dict[str, list[float]] = {name: [] for name in texts}
    for run in range(args.runs + 1):
        for name, text in texts.items():
            ranking._RANKED.clear()
            found = freetext.parse_text(text)
            query = make_query([c.term for c in found[:freetext.MAX_TERMS]], 10)
            start = time.process_time()
            freetext.recall_conversations(conn, found, query)
            if run:   # the first run warms
                times[name].append((time.process_time() - start) * 1000)
    result = {name: round(statistics.median(values), 1) for name, values in times.items()}
    result["ratio"] = round(result["asks a number"] / max(result["reference"], 1e-3), 1)
    print(json.dumps({"sessions": args.sessions, "turns": args.turns, "chars": args.chars, "cpu_ms": result}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
