#!/usr/bin/env python3
"""Experiment (issue 21, round 13): why pimem misses the answer of a LongMemEval-S day-zero **dev** proxy
question (``lme_user_evidence.py``'s user-evidence and single-user subsets). Per question: its query words
(token, df, read or only checked, held by the evidence turn's user text), where the answer session stands in
each of ``ranking._rank_all``'s orders (first pass by best turn, typed sums, full best turn, session document,
final) and the BM25 reference's rank (from an ``lme_user_evidence.py --bm25 --out`` file). The held-out
questions (the first 100 non-abstention ones) are never read: ``data.split`` gives the dev set only.

    nice -n 10 .venv/bin/python bench/experiments/lme_misses.py --dir /work/data/r1/real --base base.json
"""

from __future__ import annotations

import argparse
import builtins
import json
import sys
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "lme"))
sys.path.insert(0, str(HERE))

import data  # noqa: E402
import proxy  # noqa: E402
from lme_ranking import apply_settings  # noqa: E402
from lme_user_evidence import single_user, user_evidence  # noqa: E402

from pimem import words  # noqa: E402
from pimem.recall import make_query, ranking  # noqa: E402
from pimem.recall.freetext import _shortlist, parse_text, prose_stop_words  # noqa: E402
from pimem.store import connect  # noqa: E402

_RECORDED: list[tuple[str, list[Any]]] = []
_real_sorted = builtins.sorted
_real_top = ranking._top


def _recording_sorted(items: Any, *a: Any, **k: Any) -> list[Any]:
    out = _real_sorted(items, *a, **k)
    if out and isinstance(out[0], ranking.Conversation):
        _RECORDED.append(("conv", [c.session for c in out]))
    elif isinstance(items, dict) and "key" in k:
        _RECORDED.append(("best", out))
    return out


def _recording_top(scores: dict[int, float], count: int) -> list[int]:
    out = _real_top(scores, count)
    if count != ranking.CANDIDATE_TURNS:
        _RECORDED.append(("typed", out))
    return out


def position(order: Sequence[int], wanted: set[int]) -> int | None:
    return next((i + 1 for i, s in enumerate(order) if s in wanted), None)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=Path("/work/data/lme/longmemeval_s_cleaned.json"))
    parser.add_argument("--dir", type=Path, required=True)
    parser.add_argument("--base", type=Path, required=True,
                        help="lme_user_evidence.py --bm25 --out file, or run.py evaluate --results file (pimem, bm25)")
    parser.add_argument("--questions", type=Path,
                        help="a proxy question file (bench/lme/proxy_ssu.json): its questions instead of dev's subsets")
    parser.add_argument("--subset", choices=("single-user", "user-evidence"), default="user-evidence")
    parser.add_argument("--all", action="store_true", help="every question of the subset, not only the misses")
    parser.add_argument("--set", action="append", default=[])
    args = parser.parse_args()
    apply_settings(args.set)
    base = json.loads(args.base.read_text(encoding="utf-8"))
    if "perQuestion" in base:   # the harness's --results
        base = {"ranks": {e["id"]: e["rank"] for e in base["perQuestion"]["pimem"]},
                "bm25_ranks": {e["id"]: e["rank"] for e in base["perQuestion"]["bm25"]}}
    questions = data.load_questions(args.data)
    dev, _ = data.split(questions)
    evidence_of: dict[str, str] = {}
    if args.questions is not None:
        # A proxy question's evidence is its one turn, read from the source question's haystack (dev only).
        items = json.loads(args.questions.read_text(encoding="utf-8"))["questions"]
        by_id = {q["question_id"]: q for q in dev}
        for item in items:
            source = by_id[item["source_question_id"]]
            turns = source["haystack_sessions"][source["haystack_session_ids"].index(item["answer_session_id"])]
            evidence_of[item["id"]] = turns[item["evidence_turn"]]["content"]
        dev = proxy.load(args.questions, questions)
    mapping: dict[str, str] = json.loads((args.dir / "mapping.json").read_text(encoding="utf-8"))
    conn = connect(args.dir / "memory.db", create=False, for_writing=False)
    rowid_of = {str(sid): int(r) for r, sid in conn.execute("SELECT rowid, session_id FROM sessions")}
    sessions_of_lme: dict[str, set[int]] = {}
    for sid, lme in mapping.items():
        if sid in rowid_of:
            sessions_of_lme.setdefault(lme, set()).add(rowid_of[sid])
    store_key = ranking._store_key(conn)
    docs = ranking._totals(conn, store_key)[0]
    ranking.sorted = _recording_sorted      # type: ignore[attr-defined]
    ranking._top = _recording_top           # type: ignore[assignment]
    keep = single_user if args.subset == "single-user" else user_evidence
    for question in dev:
        if args.questions is None and not keep(question):
            continue
        qid = question["question_id"]
        p, b = base["ranks"].get(qid), base["bm25_ranks"].get(qid)
        if not args.all and p is not None and (b is None or p <= b) and p <= 5:
            continue
        found = parse_text(question["question"])
        qwords = ranking.query_words(_shortlist(list(found)), prose_stop_words())
        _RECORDED.clear()
        base_query = make_query([c.term for c in found[:8]], 50, None, None, 0)
        page = ranking.rank(conn, qwords, replace(base_query, limit=150))
        wanted: set[int] = set()
        for lme in question["answer_session_ids"]:
            wanted |= sessions_of_lme.get(lme, set())
        evidence = evidence_of.get(qid) or " ".join(
            t["content"] for sid, turns in zip(question["haystack_session_ids"], question["haystack_sessions"],
                                               strict=True)
            if sid in question["answer_session_ids"] for t in turns if t.get("has_answer") and t["role"] == "user")
        held = set(words.tokens(evidence))
        lower = evidence.lower()
        df = {w.token: ranking._doc_count(conn, store_key, w.token, docs, w.match) for w in qwords}
        spent, read = 0, []
        for w in sorted((w for w in qwords if df[w.token] > 0), key=lambda w: df[w.token]):
            if read and spent + df[w.token] > ranking.READ_BUDGET:
                break
            read.append(w.token)
            spent += df[w.token]
        cells = []
        for w in qwords:
            mark = ("R" if w.token in read else "c") + ("+" if w.token in held else "-")
            exact = "=" if w.surface.lower() in lower else ""
            cells.append(f"{w.surface}/{w.token}:{df[w.token]}{mark}{exact}")
        orders = dict(_RECORDED)
        convs = [o for n, o in _RECORDED if n == "conv"]
        by_turn = convs[0] if convs else []
        by_session = convs[1] if len(convs) > 1 else []
        rows = [rowid_of.get(r.session_id) for r in page.rows]
        final = [s for s in rows if s is not None]
        print(f"{qid} [{question['question_type'][:12]}] pimem {p} bm25 {b} | first-pass "
              f"{position(orders.get('best', []), wanted)}/{len(orders.get('best', []))} typed "
              f"{position(orders.get('typed', []), wanted)} turn {position(by_turn, wanted)} session "
              f"{position(by_session, wanted)} final {position(final, wanted)}")
        print(f"   Q: {question['question']}")
        print(f"   words: {'  '.join(cells)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
