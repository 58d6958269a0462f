#!/usr/bin/env python3
"""Experiment (issue 21): a dev proxy for LongMemEval's single-session-user questions (a fact the person said
in passing), which are all in the held-out set. The proxy is chosen by where the evidence is, not by the
question's type: LongMemEval marks each evidence turn ``has_answer: true``, so

* **user-evidence**: the dev questions whose evidence turns are all user turns (the answer is something the
  person typed, whatever the question asks of it);
* **single-user**: of those, the ones with one answer session holding one evidence turn (the shape of a
  single-session-user question: one thing said once).

Runs pimem as ``lme_ranking.py`` does (one ``ranking.rank`` call of 100 rows a question, ``--set NAME=VALUE``
overrides a ranking constant) and, with ``--bm25``, the harness's FTS5 ``bm25()`` reference over the same
store; prints hit@1 / hit@5 / found@50 / MRR per type on all dev, on each subset, and the even / odd halves
(question index in dev) of each. The held-out questions (the first 100 non-abstention ones) are never read:
``data.split`` gives the dev set only here.

    nice -n 5 .venv/bin/python bench/experiments/lme_user_evidence.py --dir /work/data/r1/real --bm25
    nice -n 5 .venv/bin/python bench/experiments/lme_user_evidence.py --dir /work/data/r1/real --set B=0.5
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "lme"))
sys.path.insert(0, str(HERE))

import data  # noqa: E402
import evaluate  # noqa: E402
import proxy  # noqa: E402
from lme_ranking import apply_settings, pimem_ranker, run  # noqa: E402


def evidence_roles(question: dict[str, Any]) -> list[tuple[str, str]]:
    """(answer session, role) of every evidence turn (``has_answer``) in the question's answer sessions."""
    answers = set(question["answer_session_ids"])
    found: list[tuple[str, str]] = []
    for lme_id, turns in zip(question["haystack_session_ids"], question["haystack_sessions"], strict=True):
        if lme_id in answers:
            found.extend((lme_id, turn["role"]) for turn in turns if turn.get("has_answer"))
    return found


def user_evidence(question: dict[str, Any]) -> bool:
    roles = evidence_roles(question)
    return bool(roles) and all(role == "user" for _, role in roles)


def single_user(question: dict[str, Any]) -> bool:
    roles = evidence_roles(question)
    return (len(question["answer_session_ids"]) == 1 and len(roles) == 1 and roles[0][1] == "user")


SUBSETS: dict[str, Callable[[dict[str, Any]], bool]] = {
    "all dev": lambda _q: True, "user-evidence": user_evidence, "single-user": single_user}


def report(name: str, dev: Sequence[dict[str, Any]], outcomes: Sequence[evaluate.Outcome],
           subsets: dict[str, Callable[[dict[str, Any]], bool]] = SUBSETS) -> dict[str, Any]:
    """Per subset: figures per type and the even / odd halves (by the question's index in dev)."""
    out: dict[str, Any] = {}
    for subset, keep in subsets.items():
        chosen = [(i, o) for i, (q, o) in enumerate(zip(dev, outcomes, strict=True)) if keep(q)]
        summary = evaluate.summarize([o for _, o in chosen])
        halves = {half: evaluate.summarize([o for i, o in chosen if i % 2 == parity])["all"]
                  for half, parity in (("even", 0), ("odd", 1))}
        out[subset] = {"summary": summary, "halves": halves}
        print(f"\n#### {name}: {subset} ({len(chosen)} questions)\n")
        print(evaluate.markdown({name: summary}))
        for half, figures in halves.items():
            print(f"{half} half: {figures['n']} questions, hit@1 {figures['hit1']}, hit@5 {figures['hit5']}, "
                  f"found@50 {figures['found50']}, MRR {figures['mrr']:.3f}")
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=Path("/work/data/lme/longmemeval_s_cleaned.json"))
    parser.add_argument("--dir", type=Path, required=True)
    parser.add_argument("--set", action="append", default=[], help="NAME=VALUE, a ranking constant")
    parser.add_argument("--bm25", action="store_true", help="the FTS5 bm25() reference too")
    parser.add_argument("--no-pimem", action="store_true")
    parser.add_argument("--out", type=Path, help="every question's rank and the figures, as JSON")
    parser.add_argument("--compare", type=Path, help="another run's --out: the proxy questions whose rank moved")
    parser.add_argument("--questions", type=Path,
                        help="a hand-written proxy file (bench/lme/proxy_ssu.json), asked too (proxy-ssu)")
    args = parser.parse_args()
    apply_settings(args.set)
    dev, _ = data.split(data.load_questions(args.data))
    mapping: dict[str, str] = json.loads((args.dir / "mapping.json").read_text(encoding="utf-8"))
    results: dict[str, Any] = {"set": args.set}
    extra = proxy.load(args.questions, data.load_questions(args.data)) if args.questions else []
    only_proxy: dict[str, Callable[[dict[str, Any]], bool]] = {"proxy-ssu": lambda _q: True}
    if not args.no_pimem:
        ranker = pimem_ranker(args.dir / "memory.db", mapping)
        outcomes = run(ranker, dev)
        results["pimem"] = report("pimem " + " ".join(args.set), dev, outcomes)
        results["ranks"] = {o.question_id: o.rank for o in outcomes}
        if extra:
            outcomes = run(ranker, extra)
            results["pimem"].update(report("pimem " + " ".join(args.set), extra, outcomes, only_proxy))
            results["ranks"].update({o.question_id: o.rank for o in outcomes})
            results["copy_ranks"] = {o.question_id: o.rank_or_copy for o in outcomes}
    if args.bm25:
        with tempfile.TemporaryDirectory() as scratch:
            evaluate.build_bm25(args.dir / "memory.db", mapping, Path(scratch) / "bm25.db")
            bm25 = evaluate.bm25_ranker(Path(scratch) / "bm25.db")
            outcomes = run(lambda text: bm25(text).conversations, dev)
            results["bm25"] = report("bm25", dev, outcomes)
            results["bm25_ranks"] = {o.question_id: o.rank for o in outcomes}
            if extra:
                outcomes = run(lambda text: bm25(text).conversations, extra)
                results["bm25"].update(report("bm25", extra, outcomes, only_proxy))
                results["bm25_ranks"].update({o.question_id: o.rank for o in outcomes})
    if args.out:
        args.out.write_text(json.dumps(results), encoding="utf-8")
    if args.compare and "ranks" in results:
        other = json.loads(args.compare.read_text(encoding="utf-8"))["ranks"]
        for question in [*dev, *extra]:
            qid = question["question_id"]
            if (qid.startswith("ssu-") or user_evidence(question)) and other.get(qid) != results["ranks"][qid]:
                print(f"{qid}: {other.get(qid)} -> {results['ranks'][qid]}  {question['question'][:90]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
