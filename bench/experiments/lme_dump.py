#!/usr/bin/env python3
"""Dump pimem's free-text top 100 conversations of every LongMemEval dev question (never the holdout),
with their texts, for bench/experiments/semantic_rerank.py.

    python bench/experiments/lme_dump.py --data DATA.json --dir CORPUS_DIR --mapping mapping.json --out dump.jsonl
    lme_dump.py --data DATA.json --dir CORPUS_DIR --questions bench/lme/proxy_ssu.json --out P.jsonl

``--questions``: a proxy question file (bench/lme/proxy.py checks it and refuses held-out sources) instead
of the dev set.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "lme"))

import data
import proxy

from pimem.recall import make_query
from pimem.recall.freetext import MAX_TERMS, parse_text, recall_conversations
from pimem.store import connect

CUT = 3000


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--data", type=Path, required=True)
    parser.add_argument("--dir", type=Path, required=True)
    parser.add_argument("--mapping", default="mapping.json")
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--questions", type=Path, help="a proxy question file (bench/lme/proxy_ssu.json)")
    args = parser.parse_args()
    everything = data.load_questions(args.data)
    questions = proxy.load(args.questions, everything) if args.questions else data.split(everything)[0]
    mapping = json.loads((args.dir / args.mapping).read_text())
    conn = connect(args.dir / "memory.db", create=False, for_writing=False)
    with args.out.open("w", encoding="utf-8") as handle:
        for q in questions:
            found = parse_text(q["question"])
            rows = []
            for offset in (0, 50, 100, 150):
                base = make_query([c.term for c in found[:MAX_TERMS]], 50, None, None, offset)
                page = recall_conversations(conn, found, base).rows
                rows.extend(page)
                if len(page) < 50:
                    break
            candidates, seen = [], set()
            for rank, row in enumerate(rows):
                lme = mapping.get(row.session_id)
                if lme is None or lme in seen:
                    continue
                seen.add(lme)
                users = [u for (u,) in conn.execute("SELECT user_text FROM turns WHERE session_id = ? "
                                                     "ORDER BY turn_index", (row.session_id,))]
                candidates.append({"lme_id": lme, "score": -rank, "best_user": row.user_text[:CUT],
                                   "best_reply": row.reply_text[:CUT], "user_texts": [u[:CUT] for u in users]})
                if len(candidates) >= 100:
                    break
            handle.write(json.dumps({"question": q["question"], "question_type": q["question_type"],
                                     "question_id": q["question_id"], "answer_session_ids": q["answer_session_ids"],
                                     "candidates": candidates}, ensure_ascii=False) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
