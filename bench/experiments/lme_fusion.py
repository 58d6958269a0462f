#!/usr/bin/env python3
"""Score-level fusion against reciprocal-rank fusion, offline (issue 21, round 15).

``dump`` asks every LongMemEval dev question (never the holdout) and every proxy question
(bench/lme/proxy_ssu.json) in process and writes, for every candidate conversation the ranking scores in full
(up to CANDIDATE_SESSIONS + half of it), the signals it already computes: the best turn's score, the session's
BM25 over its typed text, the best passage's score (computed here for every candidate, not only the first
PASSAGE_SESSIONS), the best turn's coverage (its matched words' share of the query's idf), and today's order
(before and after the passage step). It reads them from ``_rank_all``'s frame at its passage step: nothing in
pimem changes.

``fit`` (numpy; the system python3 has it, the venv does not) learns a linear score over normalised signals
with a listwise softmax loss, by 5-fold cross-validation whose folds are split by LongMemEval source question
(a proxy question and the dev question it was written from are in the same fold), and prints out-of-fold
hit@1 / hit@5 / found@50 against today's order on the same dumps, per set and per half.

    .venv/bin/python bench/experiments/lme_fusion.py dump --data DATA.json --dir CORPUS --out fusion.jsonl
    python3 bench/experiments/lme_fusion.py fit --dump fusion.jsonl

``heads`` (round 19) scores the passage head's shipped rule (ranking.fused_head_order) and a few variants of it
(the head's size, the coverage weight, a word only the reply holds at less than 1) from the same dump, per set and
half: the dump also holds the passage step's own passage score for the first HEAD_MAX conversations and the
coverage with such a word at ranking.REPLY_WEIGHT.

    .venv/bin/python bench/experiments/lme_fusion.py heads --dump fusion.jsonl
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "lme"))

DEPTH = 50
FOLDS = 5
HEAD_MAX = 80   # round 19: the largest passage head scored offline


# ---------------------------------------------------------------------------------------------
# dump (the venv: pimem)
# ---------------------------------------------------------------------------------------------

def _passage_best(conn: Any, sessions: list[int], session_docs: dict[int, list[tuple[int, int, int]]],
                  holds_user: dict[str, set[int]], idf: dict[str, float], asks: str) -> dict[int, float]:
    """Every candidate's best passage score (pimem.recall.ranking.passage_bonus's ``best``, without its bound
    cut-off: every typed text holding two query words or more, or one with an answer-kind question, is read)."""
    from pimem import words
    from pimem.recall import answers, ranking

    extra = ranking.ANSWER_WEIGHT * min(idf.values()) if asks and idf else 0.0
    weights = [(holding, idf[token]) for token, holding in holds_user.items()]
    best: dict[int, float] = {}
    wanted: dict[int, int] = {}
    for session in sessions:
        floor = 0.0
        for doc, _, _ in session_docs.get(session, ()):
            held = [w for holding, w in weights if doc in holding]
            floor = max([floor, *held])
            if len(held) > 1 or (extra and held):
                wanted[doc] = session
        best[session] = floor
    if wanted:
        rows = conn.execute(
            "SELECT d.doc_key, t.user_text FROM json_each(?) j JOIN pimem_docs d ON d.doc_key = j.value "
            "JOIN turns t ON t.turn_id = d.turn_id", (json.dumps(list(wanted)),)).fetchall()
        texts = {int(doc): str(text or "") for doc, text in rows}
        scored = {**idf, words.ANSWER: extra} if extra else idf
        pick = (lambda word: answers.is_answer(asks, word)) if extra else None
        placed = words.positions(list(texts.values()), frozenset(idf), pick)
        for doc, found in zip(texts, placed, strict=True):
            session = wanted[doc]
            best[session] = max(best[session], ranking.passage_score(found, scored, ranking.PASSAGE_SIGMA))
    return best


def dump(args: argparse.Namespace) -> None:
    import data
    import proxy

    from pimem.recall import make_query, ranking
    from pimem.recall.freetext import MAX_TERMS, parse_text, recall_conversations
    from pimem.store import connect

    questions = data.load_questions(args.data)
    dev, _ = data.split(questions)
    proxied = proxy.load(args.questions, questions)
    source = {item["id"]: item["source_question_id"]
              for item in json.loads(args.questions.read_text(encoding="utf-8"))["questions"]}
    asked = [("dev", q, q["question_id"]) for q in dev] + [("proxy", q, source[q["question_id"]]) for q in proxied]
    mapping: dict[str, str] = json.loads((args.dir / "mapping.json").read_text(encoding="utf-8"))
    conn = connect(args.dir / "memory.db", create=False, for_writing=False)
    lme = {rowid: mapping.get(session_id)
           for rowid, session_id in conn.execute("SELECT rowid, session_id FROM sessions")}
    captured: list[list[dict[str, Any]]] = []
    original = ranking._add_passages

    def hooked(conn_: Any, conversations: list[Any], session_docs: dict[int, list[tuple[int, int, int]]],
               holds_user: dict[str, set[int]], idf: dict[str, float], asks: str, *rest: Any) -> None:
        frame = sys._getframe(1).f_locals
        session_scores: dict[int, float] = frame["session_scores"]
        query_weight: float = frame["query_weight"]
        before = {c.session: i for i, c in enumerate(conversations)}
        passage = _passage_best(conn_, [c.session for c in conversations], session_docs, holds_user, idf, asks)
        holds_reply: dict[str, set[int]] = frame["holds_reply"]
        # round 19: the passage step's own best passage (its bound cut-off) for the first HEAD_MAX of the order
        # before it, and the coverage with a word only the reply holds at REPLY_WEIGHT (the turn score's rule)
        weights = [(holding, idf[token]) for token, holding in holds_user.items()]

        def held(session: int) -> Any:
            for doc, _, _ in session_docs.get(session, ()):
                yield doc, [weight for holding, weight in weights if doc in holding]

        def user_texts(docs: list[int]) -> dict[int, str]:
            got = conn_.execute(
                "SELECT d.doc_key, t.user_text FROM json_each(?) j JOIN pimem_docs d ON d.doc_key = j.value "
                "JOIN turns t ON t.turn_id = d.turn_id", (json.dumps(docs),)).fetchall()
            return {int(doc): str(text or "") for doc, text in got}

        head = [c.session for c in conversations[:HEAD_MAX]]
        shipped = dict(zip(head, ranking.passage_best(head, held, idf, user_texts, asks), strict=True))
        rows = [{"s": c.session, "lme": lme.get(c.session), "turn": c.best_turn_score,
                 "session": session_scores[c.session], "passage": passage[c.session],
                 "passage_head": shipped.get(c.session),
                 "coverage": sum(idf.get(t, 0.0) for t in c.matched_tokens) / query_weight,
                 "coverage_user": sum(idf.get(t, 0.0) * (1.0 if c.best_doc in holds_user.get(t, ()) else
                                                         ranking.REPLY_WEIGHT if c.best_doc in holds_reply.get(t, ())
                                                         else 0.0) for t in c.matched_tokens) / query_weight,
                 "rrf": before[c.session], "words": len(idf), "asks": bool(asks)} for c in conversations]
        original(conn_, conversations, session_docs, holds_user, idf, asks, *rest)
        after = {c.session: i for i, c in enumerate(conversations)}
        for row in rows:
            row["today"] = after[row["s"]]
        captured.append(rows)

    ranking._add_passages = hooked   # type: ignore[assignment]
    with args.out.open("w", encoding="utf-8") as handle:
        for kind, q, group in asked:
            captured.clear()
            ranking._RANKED.clear()   # two dev questions share their words with an earlier one: rank them again
            found = parse_text(q["question"])
            recall_conversations(conn, found, make_query([c.term for c in found[:MAX_TERMS]], DEPTH, None, None, 0))
            rows = captured[0] if captured else []
            handle.write(json.dumps({"set": kind, "id": q["question_id"], "group": group,
                                     "answers": q["answer_session_ids"], "candidates": rows}) + "\n")


# ---------------------------------------------------------------------------------------------
# fit (system python3: numpy)
# ---------------------------------------------------------------------------------------------

def _ranks(values: list[float]) -> list[int]:
    order = sorted(range(len(values)), key=lambda i: -values[i])
    out = [0] * len(values)
    for position, i in enumerate(order):
        out[i] = position
    return out


FEATURES = ["turn/max", "session/max", "passage/max", "coverage", "rrf(turn)", "rrf(session)", "rrf(passage)",
            "log rank turn", "log rank session", "log rank passage", "turn/max×coverage",
            "log turn/max", "log session/max", "log passage/max"]


def features(candidates: list[dict[str, Any]]) -> list[list[float]]:
    turn = [c["turn"] for c in candidates]
    session = [c["session"] for c in candidates]
    passage = [c["passage"] for c in candidates]
    rt, rs, rp = _ranks(turn), _ranks(session), _ranks(passage)
    mt, ms, mp = max(turn) or 1.0, max(session) or 1.0, max(passage) or 1.0
    out = []
    for i, c in enumerate(candidates):
        out.append([turn[i] / mt, session[i] / ms, passage[i] / mp, c["coverage"],
                    60 / (60 + rt[i] + 1), 60 / (60 + rs[i] + 1), 60 / (60 + rp[i] + 1),
                    -math.log1p(rt[i]), -math.log1p(rs[i]), -math.log1p(rp[i]), turn[i] / mt * c["coverage"],
                    math.log(turn[i] / mt + 0.01), math.log(session[i] / ms + 0.01), math.log(passage[i] / mp + 0.01)])
    return out


def _figures(orders: list[list[str | None]], answers: list[set[str]]) -> tuple[int, int, int]:
    h1 = h5 = f50 = 0
    for order, wanted in zip(orders, answers, strict=True):
        seen: list[str] = []
        for conversation in order:
            if conversation is not None and conversation not in seen:
                seen.append(conversation)
            if len(seen) >= DEPTH:
                break
        rank = next((i for i, conversation in enumerate(seen, 1) if conversation in wanted), None)
        h1 += rank == 1
        h5 += rank is not None and rank <= 5
        f50 += rank is not None
    return h1, h5, f50


def fit(args: argparse.Namespace) -> None:
    import numpy as np

    records = [json.loads(line) for line in args.dump.read_text(encoding="utf-8").splitlines()]
    tails: list[list[dict[str, Any]]] = []
    for r in records:   # --head N: only the first N of the order before the passage step are reordered (as today)
        everything = sorted(r["candidates"], key=lambda c: c["rrf"])
        r["candidates"], tail = (everything[:args.head], everything[args.head:]) if args.head else (everything, [])
        tails.append(sorted(tail, key=lambda c: c["today"]))
    chosen = [i for i, f in enumerate(FEATURES) if not args.only or f in args.only.split(",")]
    width = max(len(r["candidates"]) for r in records)
    n, k = len(records), len(chosen)
    x = np.zeros((n, width, k))
    mask = np.zeros((n, width), dtype=bool)
    label = np.zeros((n, width))
    for qi, r in enumerate(records):
        cands = r["candidates"]
        if not cands:
            continue
        f = np.array(features(cands))[:, chosen]
        x[qi, :len(cands)] = f
        mask[qi, :len(cands)] = True
        label[qi, :len(cands)] = [c["lme"] in r["answers"] for c in cands]
    fold = np.array([int(hashlib.sha1((args.seed + r["group"]).encode()).hexdigest(), 16) % FOLDS for r in records])
    oof = np.zeros((n, width))
    weights_seen = []
    for f_out in range(FOLDS):
        train = (fold != f_out) & (label.sum(1) > 0)
        w = _train(np, x[train], mask[train], label[train], args.l2, args.steps)
        weights_seen.append(w)
        test = fold == f_out
        oof[test] = x[test] @ w
    print("weights per fold (" + ", ".join(FEATURES[i] for i in chosen) + "):")
    for w in weights_seen:
        print("  " + " ".join(f"{v:+.2f}" for v in w))
    for kind in ("dev", "proxy"):
        idx = [i for i, r in enumerate(records) if r["set"] == kind]
        for half_name, part in (("all", idx), ("even", idx[0::2]), ("odd", idx[1::2])):
            today, learned = [], []
            for qi in part:
                cands = records[qi]["candidates"]
                tail = [c["lme"] for c in tails[qi]]
                today.append([c["lme"] for c in sorted(cands, key=lambda c: c["today"])] + tail)
                scores = oof[qi, :len(cands)]
                order = sorted(range(len(cands)), key=lambda i: (-scores[i], cands[i]["today"]))
                learned.append([cands[i]["lme"] for i in order] + tail)
            answers = [set(records[qi]["answers"]) for qi in part]
            moves = [_figures([b], [a])[1] - _figures([t], [a])[1]
                     for t, b, a in zip(today, learned, answers, strict=True)]
            won, lost = moves.count(1), moves.count(-1)
            print(f"{kind:5} {half_name:4} n={len(part):3}  today {_figures(today, answers)}  "
                  f"learned (out of fold) {_figures(learned, answers)}  hit@5 won {won} lost {lost}")


# ---------------------------------------------------------------------------------------------
# heads (round 19: the shipped head's rule, its variants, no fitting)
# ---------------------------------------------------------------------------------------------

SHIPPED = (1.5, 2.65, 5.75, 5.75)   # ranking.FUSED_WEIGHTS when round 19 ran


def _head_order(r: dict[str, Any], head: int = 50, weights: tuple[float, ...] = SHIPPED,
                reply: float = 1.0) -> list[str | None]:
    """ranking.fused_head_order over the first ``head`` of the order before the passage step (the passage step's
    own passage score), the coverage counting a word only the best turn's reply holds at ``reply``; the rest
    in that order."""
    every = sorted(r["candidates"], key=lambda c: c["rrf"])
    first, rest = every[:head], every[head:]
    if len(first) > 1:
        ranks = [_ranks([c[key] for c in first]) for key in ("turn", "session", "passage_head")]
        # coverage_user counts a reply-only word at 0.3 (ranking.REPLY_WEIGHT when dumped), coverage at 1
        coverage = [c["coverage"] - (c["coverage"] - c["coverage_user"]) / 0.7 * (1 - reply) for c in first]
        score = [sum(w * 60 / (61 + ranks[k][i]) for k, w in enumerate(weights[:3])) + weights[3] * coverage[i]
                 for i in range(len(first))]
        first = [first[i] for i in sorted(range(len(first)), key=lambda i: -score[i])]
    return [c["lme"] for c in first + rest]


def heads(args: argparse.Namespace) -> None:
    records = [json.loads(line) for line in args.dump.read_text(encoding="utf-8").splitlines()]
    today = [[c["lme"] for c in sorted(r["candidates"], key=lambda c: c["today"])] for r in records]
    shipped = [_head_order(r) for r in records]
    print(f"the shipped rule gives today's order on {sum(a == b for a, b in zip(today, shipped, strict=True))} "
          f"of {len(records)} questions")
    variants: list[tuple[str, dict[str, Any]]] = [("shipped: head 50, coverage 5.75, reply-only words 1", {})]
    variants += [(f"head {n}", {"head": n}) for n in (30, 40, 60, 70, 80)]
    variants += [(f"coverage weight {w}", {"weights": (*SHIPPED[:3], w)}) for w in (3.0, 4.5, 7.0, 8.0)]
    variants += [(f"reply-only words {x}, coverage {w}", {"reply": x, "weights": (*SHIPPED[:3], w)})
                 for x in (0.3,) for w in (3.0, 5.75, 8.0)]
    variants += [(f"reply-only words {x}, coverage 5.75", {"reply": x}) for x in (0.0, 0.5, 0.7)]
    for name, options in variants:
        cells = []
        for kind in ("dev", "proxy"):
            idx = [i for i, r in enumerate(records) if r["set"] == kind]
            for part in (idx, idx[0::2], idx[1::2]):
                orders = [_head_order(records[i], **options) for i in part]
                h1, h5, f50 = _figures(orders, [set(records[i]["answers"]) for i in part])
                cells.append(f"{h1} / {h5} / {f50}")
        print(f"| {name} | " + " | ".join(cells) + " |")


def _train(np: Any, x: Any, mask: Any, label: Any, l2: float, steps: int) -> Any:
    """Listwise softmax: minimise −log Σ_answers softmax(x·w) per question (Adam, full batch)."""
    w = np.zeros(x.shape[2])
    m = np.zeros_like(w)
    v = np.zeros_like(w)
    for step in range(1, steps + 1):
        s = x @ w
        s = np.where(mask, s, -1e9)
        s = s - s.max(1, keepdims=True)
        p = np.exp(s) * mask
        p = p / p.sum(1, keepdims=True)
        pos = p * label
        q = pos / np.maximum(pos.sum(1, keepdims=True), 1e-300)
        grad = ((p - q)[:, :, None] * x).sum((0, 1)) / x.shape[0] + l2 * w
        m = 0.9 * m + 0.1 * grad
        v = 0.999 * v + 0.001 * grad * grad
        w -= 0.05 * (m / (1 - 0.9 ** step)) / (np.sqrt(v / (1 - 0.999 ** step)) + 1e-8)
    return w


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    d = commands.add_parser("dump")
    d.add_argument("--data", type=Path, required=True)
    d.add_argument("--dir", type=Path, required=True)
    d.add_argument("--questions", type=Path, default=Path(__file__).resolve().parent.parent / "lme" / "proxy_ssu.json")
    d.add_argument("--out", type=Path, required=True)
    f = commands.add_parser("fit")
    f.add_argument("--dump", type=Path, required=True)
    f.add_argument("--only", default="", help="comma-separated feature names (default: all)")
    f.add_argument("--l2", type=float, default=1e-3)
    f.add_argument("--steps", type=int, default=500)
    f.add_argument("--head", type=int, default=0, help="reorder only the first N of the order before passages")
    f.add_argument("--seed", default="", help="a prefix to the fold hash (another split of the same groups)")
    h = commands.add_parser("heads", help="round 19: the passage head's rule and its variants, offline")
    h.add_argument("--dump", type=Path, required=True)
    args = parser.parse_args()
    {"dump": dump, "fit": fit, "heads": heads}[args.command](args)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
