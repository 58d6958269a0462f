#!/usr/bin/env python3
"""Experiment (issue 21): the conversation ranking's constants and variants on LongMemEval-S day-zero **dev**
questions, in process, one ``ranking.rank`` call of 100 rows a question (two pages of 50 rank the same
150 sessions: ``CANDIDATE_SESSIONS``), so a variant costs a minute, not four.

    nice -n 10 .venv/bin/python bench/experiments/lme_ranking.py --dir /work/data/r1/real \\
        --set READ_BUDGET=100000 --set RRF_K=30 --out /tmp/variant.json

``--set NAME=VALUE`` overrides a constant of :mod:`pimem.recall.ranking` (a number) for the run. The held-out
questions (the first 100 non-abstention ones) are never read: ``data.split`` gives the dev set only here.
Prints hit@1 / hit@5 / found@50 / MRR / p50 per question type; ``--out`` keeps every question's rank, to
compare two variants question by question (``--compare OTHER.json``).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "lme"))

import data  # noqa: E402
import evaluate  # noqa: E402

from pimem.recall import make_query, ranking  # noqa: E402
from pimem.recall.freetext import _shortlist, parse_text, prose_stop_words  # noqa: E402
from pimem.store import connect  # noqa: E402


def apply_settings(settings: Sequence[str]) -> None:
    """``NAME=VALUE`` overrides of :mod:`pimem.recall.ranking`'s numeric constants, for this run."""
    for setting in settings:
        name, _, value = setting.partition("=")
        if not hasattr(ranking, name):
            raise SystemExit(f"--set {setting}: pimem.recall.ranking has no {name}")
        setattr(ranking, name, type(getattr(ranking, name))(float(value)))


def pimem_ranker(store: Path, mapping: dict[str, str]) -> Callable[[str], list[str]]:
    """A question -> its distinct LongMemEval sessions, best first, from one ``ranking.rank`` call."""
    conn = connect(store, create=False, for_writing=False)

    def ask(text: str) -> list[str]:
        found = parse_text(text)
        qwords = ranking.query_words(_shortlist(list(found)), prose_stop_words())
        base = make_query([c.term for c in found[:8]], 50, None, None, 0)
        page = ranking.rank(conn, qwords, replace(base, limit=100))   # two pages of 50: the same 150 sessions
        seen: list[str] = []
        evaluate.distinct((mapping.get(row.session_id) for row in page.rows), seen)
        return seen

    return ask


def run(ask: Callable[[str], list[str]], dev: Sequence[dict[str, Any]]) -> list[evaluate.Outcome]:
    """Every question asked once (after one to warm up), its answer's rank and time."""
    ask(dev[0]["question"])
    outcomes: list[evaluate.Outcome] = []
    for question in dev:
        started = time.perf_counter()
        seen = ask(question["question"])
        ms = (time.perf_counter() - started) * 1000
        outcomes.append(evaluate.Outcome(question["question_id"], question["question_type"],
                                         evaluate.rank_of(seen, question["answer_session_ids"]), ms, 1, None,
                                         evaluate.rank_of(seen, [*question["answer_session_ids"],
                                                                 *question.get("answer_copies", [])])))
    return outcomes


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=Path("/work/data/lme/longmemeval_s_cleaned.json"))
    parser.add_argument("--dir", type=Path, required=True)
    parser.add_argument("--set", action="append", default=[], help="NAME=VALUE, a ranking constant")
    parser.add_argument("--limit", type=int, default=0)
    parser.add_argument("--out", type=Path)
    parser.add_argument("--compare", type=Path, help="another run's --out: the questions whose rank moved")
    args = parser.parse_args()
    apply_settings(args.set)
    dev, _ = data.split(data.load_questions(args.data))
    if args.limit:
        dev = dev[:args.limit]
    mapping: dict[str, str] = json.loads((args.dir / "mapping.json").read_text(encoding="utf-8"))
    outcomes = run(pimem_ranker(args.dir / "memory.db", mapping), dev)
    summary = evaluate.summarize(outcomes)
    print(evaluate.markdown({"pimem " + " ".join(args.set): summary}))
    # A change is kept only when it helps on both halves (even / odd question index), not just overall.
    for half, name in ((0, "even"), (1, "odd")):
        figures = evaluate.summarize(outcomes[half::2])["all"]
        print(f"{name} half: {figures['n']} questions, hit@1 {figures['hit1']}, hit@5 {figures['hit5']}, "
              f"found@50 {figures['found50']}, MRR {figures['mrr']:.3f}")
    ranks: dict[str, Any] = {o.question_id: o.rank for o in outcomes}
    if args.out:
        args.out.write_text(json.dumps({"set": args.set, "summary": summary, "ranks": ranks}), encoding="utf-8")
    if args.compare:
        other = json.loads(args.compare.read_text(encoding="utf-8"))["ranks"]
        texts = {q["question_id"]: q["question"] for q in dev}
        for qid, rank in ranks.items():
            if other.get(qid) != rank:
                print(f"{qid}: {other.get(qid)} -> {rank}  {texts[qid][:90]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
