#!/usr/bin/env python3
"""Ranking variants of free-text recall on the LongMemEval day-zero dev set (never the holdout).

    python bench/experiments/lme_rank.py --data DATA.json --dir CORPUS_DIR [--variant NAME=k:v,...]

``DATA.json`` and ``CORPUS_DIR`` (its ``memory.db`` and ``mapping.json``) come from ``bench/lme/run.py``.
"""

from __future__ import annotations

import argparse
import json
import sqlite3
import statistics
import sys
import time
from pathlib import Path

from pimem.recall import freetext
from pimem.recall.conversations import Params, gather, score
from pimem import words

HOLDOUT = 100


def dev_questions(path: Path) -> list[dict]:
    questions = json.loads(path.read_text())
    answerable = [q for q in questions if not q["question_id"].endswith("_abs")]
    return answerable[HOLDOUT:]


def query_tokens(text: str) -> list[str]:
    found = freetext.candidates(text)
    toks: list[str] = []
    for c in found:
        for t in words.tokens(c.term):
            if t not in toks:
                toks.append(t)
    return toks


def evaluate(evidence: list, questions: list[dict], lme_of: dict[int, str], params: Params) -> dict:
    hit1 = hit5 = found50 = 0
    rr = 0.0
    times = []
    per_type: dict[str, list[int]] = {}
    for q, ev in zip(questions, evidence, strict=True):
        started = time.perf_counter()
        ranked = score(ev, 400, params)
        times.append((time.perf_counter() - started) * 1000)
        seen: list[str] = []
        for r in ranked:
            lme = lme_of.get(r.session)
            if lme is not None and lme not in seen:
                seen.append(lme)
            if len(seen) >= 50:
                break
        answers = set(q["answer_session_ids"])
        rank_of = next((i for i, s in enumerate(seen) if s in answers), None)
        t = per_type.setdefault(q["question_type"], [0, 0, 0, 0])
        t[3] += 1
        if rank_of is not None:
            found50 += 1
            t[2] += 1
            rr += 1 / (rank_of + 1)
            if rank_of < 5:
                hit5 += 1
                t[1] += 1
            if rank_of == 0:
                hit1 += 1
                t[0] += 1
    return {"n": len(questions), "hit1": hit1, "hit5": hit5, "found50": found50, "mrr": rr / len(questions),
            "p50": statistics.median(times), "types": per_type}


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--data", type=Path, required=True)
    parser.add_argument("--dir", type=Path, required=True)
    parser.add_argument("--variant", action="append", default=[])
    parser.add_argument("--dump", type=Path, help="write the first variant's top 100 conversations per question")
    args = parser.parse_args()
    conn = sqlite3.connect(args.dir / "memory.db")
    mapping = json.loads((args.dir / "mapping.json").read_text())
    lme_of = {int(rowid): mapping[sid.split(":", 1)[-1]] for rowid, sid in
              conn.execute("SELECT rowid, session_id FROM sessions") if sid.split(":", 1)[-1] in mapping}
    questions = dev_questions(args.data)
    started = time.perf_counter()
    evidence = [gather(conn, query_tokens(q["question"])) for q in questions]
    print(f"gathered in {time.perf_counter() - started:.1f} s", flush=True)
    variants = args.variant or ["default="]
    for variant in variants:
        name, _, spec = variant.partition("=")
        params = Params()
        for item in filter(None, spec.split(",")):
            key, _, value = item.partition(":")
            setattr(params, key, value if key == "mode" else float(value))
        result = evaluate(evidence, questions, lme_of, params)
        types = " ".join(f"{k[:12]}={v[0]}/{v[1]}/{v[2]}of{v[3]}" for k, v in sorted(result["types"].items()))
        if args.dump is not None and variant == variants[0]:
            dump(conn, questions, evidence, lme_of, params, args.dump)
        print(f"{name:28} hit1 {result['hit1']:3} hit5 {result['hit5']:3} f50 {result['found50']:3} "
              f"mrr {result['mrr']:.3f} p50 {result['p50']:.0f}ms  {types}", flush=True)
    return 0



def dump(conn: sqlite3.Connection, questions: list[dict], evidence: list, lme_of: dict[int, str], params: Params,
         out: Path, per_question: int = 100, cut: int = 3000) -> None:
    """The lexical top ``per_question`` conversations of every dev question, with their texts (for
    bench/experiments/semantic_rerank.py)."""
    with out.open("w", encoding="utf-8") as handle:
        for q, ev in zip(questions, evidence, strict=True):
            ranked = score(ev, 1000, params)
            candidates: list[dict] = []
            seen: set[str] = set()
            for r in ranked:
                lme = lme_of.get(r.session)
                if lme is None or lme in seen:
                    continue
                seen.add(lme)
                best = conn.execute("SELECT t.user_text, t.reply_text FROM pimem_docs d JOIN turns t "
                                    "ON t.turn_id = d.turn_id WHERE d.doc_key = ?", (r.best_doc,)).fetchone()
                users = [u for (u,) in conn.execute(
                    "SELECT t.user_text FROM turns t JOIN sessions s ON s.session_id = t.session_id "
                    "WHERE s.rowid = ? ORDER BY t.turn_index", (r.session,))]
                candidates.append({"lme_id": lme, "score": r.score, "best_user": (best[0] or "")[:cut],
                                   "best_reply": (best[1] or "")[:cut],
                                   "user_texts": [u[:cut] for u in users]})
                if len(candidates) >= per_question:
                    break
            handle.write(json.dumps({"question": q["question"], "question_type": q["question_type"],
                                     "question_id": q["question_id"],
                                     "answer_session_ids": q["answer_session_ids"], "candidates": candidates},
                                    ensure_ascii=False) + "\n")


if __name__ == "__main__":
    sys.exit(main())
