#!/usr/bin/env python3
"""Experiment (issue 21, round r6): passage-level evidence for the conversation ranking, offline, on
LongMemEval-S day-zero **dev** questions only (``data.split``'s dev; the held-out first 100 are never read).

``dump``: for every dev question, pimem's full candidate list (``ranking._rank_all``: the fused order of
the ~150 sessions scored in full) with, per candidate session, every turn and where the question's words
sit in its user text and reply (token offsets, the word index's own tokenizer: FTS5 ``detail=full`` in
memory). ``score``: rerank variants from the dump, hit@1 / hit@5 / found@50 / MRR and both halves, per
type: ``--mode rrf`` ((1 − share) × the fused rank + share × the passage rank, RRF k 60), ``--mode add``
(the fused score + share / (k + passage rank): what ``ranking._add_passages`` does), ``--mode mult``;
``--window N`` the best window of N words (distinct words' idf), ``--window -S`` the Gaussian kernel of
σ = S words (``ranking.passage_score``); ``--top`` sessions reranked; ``--tshare`` adds a ranking by
BM25 with true term counts over each session's user texts.

    nice -n 5 .venv/bin/python bench/experiments/lme_passage.py dump --dir /work/data/r1/real --out /tmp/p.pkl
    .venv/bin/python bench/experiments/lme_passage.py score --dump /tmp/p.pkl --mode add --window -10 --share 0.5
"""

from __future__ import annotations

import argparse
import json
import math
import pickle
import sqlite3
import sys
import time
from collections import defaultdict
from dataclasses import replace
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "lme"))

import data  # noqa: E402
import evaluate  # noqa: E402

from pimem import words  # noqa: E402
from pimem.recall import make_query, ranking  # noqa: E402
from pimem.recall.freetext import _shortlist, parse_text, stop_words  # noqa: E402
from pimem.store import connect  # noqa: E402
from pimem.store.schema import WORD_TOKENIZER  # noqa: E402


def dump(args: argparse.Namespace) -> int:
    dev, _ = data.split(data.load_questions(args.data))
    if args.limit:
        dev = dev[:args.limit]
    mapping: dict[str, str] = json.loads((args.dir / "mapping.json").read_text(encoding="utf-8"))
    conn = connect(args.dir / "memory.db", create=False, for_writing=False)
    store_key = ranking._store_key(conn)
    ranking.PASSAGE_SHARE = 0.0   # the fused order before the passages (what this experiment reranks)
    mem = sqlite3.connect(":memory:")
    mem.execute(f"CREATE VIRTUAL TABLE t USING fts5(user, reply, tokenize = '{WORD_TOKENIZER}')")
    mem.execute("CREATE VIRTUAL TABLE tv USING fts5vocab(t, 'instance')")
    out: list[dict[str, Any]] = []
    started = time.perf_counter()
    for number, question in enumerate(dev):
        found = parse_text(question["question"])
        qwords = ranking.query_words(_shortlist(list(found)), stop_words())
        base = make_query([c.term for c in found[:8]], 50, None, None, 0)
        ranked = ranking._rank_all(conn, qwords, replace(base, limit=100), store_key)
        idf = {w.token: value for w, _df, value in ranked.searched}
        sessions = [c.session for c in ranked.conversations]
        sid = dict(conn.execute(
            "SELECT s.rowid, s.session_id FROM json_each(?) j JOIN sessions s ON s.rowid = j.value",
            (json.dumps(sessions),)).fetchall())
        docs = ranking._session_docs(conn, sessions)
        all_docs = [d for s in sessions for d, _, _ in docs[s]]
        texts = dict((int(k), (u, r)) for k, u, r in conn.execute(
            "SELECT d.doc_key, t.user_text, t.reply_text FROM json_each(?) j JOIN pimem_docs d ON d.doc_key = j.value "
            "JOIN turns t ON t.turn_id = d.turn_id", (json.dumps(all_docs),)))
        mem.execute("DELETE FROM t")
        mem.executemany("INSERT INTO t(rowid, user, reply) VALUES (?, ?, ?)",
                        ((d, words.word_text(u), words.word_text(r)) for d, (u, r) in texts.items()))
        hits: dict[int, list[tuple[str, int, int]]] = defaultdict(list)
        tokens = list(idf)
        if tokens:
            for doc, term, col, offset in mem.execute(
                    f"SELECT doc, term, col, offset FROM tv WHERE term IN ({','.join('?' * len(tokens))})", tokens):
                hits[int(doc)].append((str(term), 0 if col == "user" else 1, int(offset)))
        lengths = {int(d): (len(u.split()), len(r.split())) for d, (u, r) in texts.items()}
        convs = []
        for c in ranked.conversations:
            convs.append({"session": c.session, "lme": mapping.get(sid.get(c.session, "")), "score": c.score,
                          "turn": c.best_turn_score, "best_doc": c.best_doc,
                          "docs": [(d, uc, rc, lengths.get(d, (0, 0)), hits.get(d, []))
                                   for d, uc, rc in docs[c.session]]})
        out.append({"id": question["question_id"], "type": question["question_type"],
                    "answers": question["answer_session_ids"], "idf": idf, "convs": convs})
        if number % 50 == 0:
            print(number, f"{time.perf_counter() - started:.0f}s", file=sys.stderr)
    args.out.write_bytes(pickle.dumps(out))
    return 0


def passage(doc_hits: list[tuple[str, int, int]], idf: dict[str, float], window: int, col: int) -> float:
    """The best window of ``window`` tokens: the idf of the distinct query words in it."""
    positions = sorted((offset, term) for term, c, offset in doc_hits if c == col)
    best = 0.0
    j = 0
    held: dict[str, int] = defaultdict(int)
    value = 0.0
    for i in range(len(positions)):
        while j < len(positions) and positions[j][0] < positions[i][0] + window:
            term = positions[j][1]
            if held[term] == 0:
                value += idf.get(term, 0.0)
            held[term] += 1
            j += 1
        best = max(best, value)
        term = positions[i][1]
        held[term] -= 1
        if held[term] == 0:
            value -= idf.get(term, 0.0)
    return best


def kernel(doc_hits: list[tuple[str, int, int]], idf: dict[str, float], sigma: float, col: int) -> float:
    """Positional: the best position (a hit) by sum over query words of idf x exp(-d^2 / 2 sigma^2), d the
    distance to that word's nearest occurrence."""
    by_term: dict[str, list[int]] = defaultdict(list)
    for term, c, offset in doc_hits:
        if c == col:
            by_term[term].append(offset)
    best = 0.0
    centres = sorted({o for offs in by_term.values() for o in offs})
    for centre in centres:
        value = 0.0
        for term, offs in by_term.items():
            d = min(abs(o - centre) for o in offs)
            value += idf.get(term, 0.0) * math.exp(-d * d / (2 * sigma * sigma))
        best = max(best, value)
    return best


def evaluate_order(questions: list[dict[str, Any]], orders: list[list[str | None]]) -> dict[str, Any]:
    outcomes = []
    for q, order in zip(questions, orders, strict=True):
        seen: list[str] = []
        evaluate.distinct(order, seen)
        outcomes.append(evaluate.Outcome(q["id"], q["type"], evaluate.rank_of(seen, q["answers"]), 0.0, 1, None))
    return {"types": evaluate.summarize(outcomes), "all": evaluate.summarize(outcomes),
            "even": evaluate.summarize(outcomes[0::2])["all"],
            "odd": evaluate.summarize(outcomes[1::2])["all"], "ranks": [o.rank for o in outcomes]}


def line(name: str, result: dict[str, Any]) -> str:
    a = result["all"]["all"]
    e, o = result["even"], result["odd"]
    return (f"{name:60s} {a['hit1']:4d} {a['hit5']:4d} {a['found50']:4d} {a['mrr']:.3f}  "
            f"even {e['hit1']}/{e['hit5']}/{e['found50']}  odd {o['hit1']}/{o['hit5']}/{o['found50']}  "
            + " ".join(f"{k[:6]} {v['hit1']}/{v['hit5']}/{v['found50']}"
                       for k, v in result["types"].items() if k != "all"))


def rerank(q: dict[str, Any], window: int, share: float, top: int, rrf_k: float, mode: str,
           reply: float = 0.0) -> list[str | None]:
    convs = q["convs"]
    idf = q["idf"]
    total = sum(idf.values()) or 1.0
    head = convs[:top]
    pscore: dict[int, float] = {}
    for c in head:
        best = 0.0
        for _d, _uc, _rc, _lens, doc_hits in c["docs"]:
            value = passage(doc_hits, idf, window, 0) if window > 0 else kernel(doc_hits, idf, -window, 0)
            if reply:
                value += reply * passage(doc_hits, idf, window, 1)
            best = max(best, value)
        pscore[c["session"]] = best / total
    if mode == "rrf":
        by_p = sorted(head, key=lambda c: -pscore[c["session"]])
        fused: dict[int, float] = {}
        for pos, c in enumerate(head):
            fused[c["session"]] = (1 - share) / (rrf_k + pos + 1)
        for pos, c in enumerate(by_p):
            fused[c["session"]] += share / (rrf_k + pos + 1)
        order = sorted(head, key=lambda c: -fused[c["session"]])
    elif mode == "add":    # a third ranking in the fused rank: the base fused score + share / (k + position)
        by_p = sorted(head, key=lambda c: -pscore[c["session"]])
        fused = {c["session"]: c["score"] for c in head}
        for pos, c in enumerate(by_p):
            fused[c["session"]] += share / (rrf_k + pos + 1)
        order = sorted(head, key=lambda c: -fused[c["session"]])
    elif mode == "mult":   # the base fused score × (1 + share × passage coverage)
        order = sorted(head, key=lambda c: -c["score"] * (1 + share * pscore[c["session"]]))
    else:
        raise SystemExit(mode)
    return [c["lme"] for c in order] + [c["lme"] for c in convs[top:]]


def session_bm25(q: dict[str, Any], top: int, col: int = 0, k1: float = 1.2, b: float = 0.75) -> dict[int, float]:
    """BM25 of each candidate session as one document of its user texts, with true term counts."""
    idf = q["idf"]
    head = q["convs"][:top]
    lengths = {c["session"]: sum(lens[col] for _d, _u, _r, lens, _h in c["docs"]) for c in head}
    avg = max(sum(lengths.values()) / max(len(lengths), 1), 1.0)
    out: dict[int, float] = {}
    for c in head:
        tf: dict[str, int] = defaultdict(int)
        for _d, _u, _r, _lens, doc_hits in c["docs"]:
            for term, cc, _off in doc_hits:
                if cc == col:
                    tf[term] += 1
        norm = 1 - b + b * lengths[c["session"]] / avg
        out[c["session"]] = sum(idf.get(t, 0.0) * n * (k1 + 1) / (n + k1 * norm) for t, n in tf.items())
    return out


def rerank3(q: dict[str, Any], window: int, pshare: float, tshare: float, top: int, rrf_k: float,
            b: float = 0.75) -> list[str | None]:
    convs = q["convs"]
    idf = q["idf"]
    head = convs[:top]
    fused = {c["session"]: c["score"] for c in head}
    if pshare:
        pscore = {c["session"]: max((passage(h, idf, window, 0) for *_x, h in c["docs"]), default=0.0) for c in head}
        for pos, c in enumerate(sorted(head, key=lambda c: -pscore[c["session"]])):
            fused[c["session"]] += pshare / (rrf_k + pos + 1)
    if tshare:
        tscore = session_bm25(q, top, b=b)
        for pos, c in enumerate(sorted(head, key=lambda c: -tscore[c["session"]])):
            fused[c["session"]] += tshare / (rrf_k + pos + 1)
    order = sorted(head, key=lambda c: -fused[c["session"]])
    return [c["lme"] for c in order] + [c["lme"] for c in convs[top:]]


def score(args: argparse.Namespace) -> int:
    questions = pickle.loads(args.dump.read_bytes())
    base = evaluate_order(questions, [[c["lme"] for c in q["convs"]] for q in questions])
    print(line("base", base))
    if args.tshare:
        for window in args.window:
            for share in args.share:
                for tshare in args.tshare:
                    for top in args.top:
                        result = evaluate_order(questions, [rerank3(q, window, share, tshare, top, args.rrf_k, args.b)
                                                            for q in questions])
                        print(line(f"3 w{window} p{share} t{tshare} top{top}", result))
        return 0
    for mode in args.mode:
        for window in args.window:
            for share in args.share:
                for top in args.top:
                    for reply in args.reply:
                        result = evaluate_order(questions, [rerank(q, window, share, top, args.rrf_k, mode, reply)
                                                            for q in questions])
                        print(line(f"{mode} w{window} s{share} top{top} reply{reply}", result))
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    d = sub.add_parser("dump")
    d.add_argument("--data", type=Path, default=Path("/work/data/lme/longmemeval_s_cleaned.json"))
    d.add_argument("--dir", type=Path, required=True)
    d.add_argument("--limit", type=int, default=0)
    d.add_argument("--out", type=Path, required=True)
    s = sub.add_parser("score")
    s.add_argument("--dump", type=Path, required=True)
    s.add_argument("--window", type=int, action="append")
    s.add_argument("--share", type=float, action="append")
    s.add_argument("--top", type=int, action="append")
    s.add_argument("--reply", type=float, action="append")
    s.add_argument("--mode", action="append")
    s.add_argument("--tshare", type=float, action="append")
    s.add_argument("--b", type=float, default=0.75)
    s.add_argument("--rrf-k", type=float, default=60.0)
    args = parser.parse_args()
    if args.command == "score":
        args.window = args.window or [8, 16, 32]
        args.share = args.share or [0.3, 0.5]
        args.top = args.top or [50]
        args.reply = args.reply or [0.0]
        args.mode = args.mode or ["rrf", "mult"]
    return dump(args) if args.command == "dump" else score(args)


if __name__ == "__main__":
    sys.exit(main())
