#!/usr/bin/env python3
"""Experiment (issue 21, round 9): would another ranking fill pimem's tail (ranks ~6-50) better, on LongMemEval-S
day-zero **dev** questions? ``dump`` keeps, per question, pimem's whole conversation list (one ``ranking.rank``
call of 150 rows: the pool), the harness's FTS5 ``bm25()`` reference's first 200 conversations and, with
``--prf``, pimem's list for the question plus expansion words (RM3-like pseudo-relevance feedback: the words
weighing most in the first ``--feedback`` conversations' user text, tf share × log(docs / df), rarer than a
tenth of the turns). ``score`` replays, offline, pimem's first k conversations followed by the other list
interleaved (one each, deduplicated) or fused by reciprocal rank, and prints hit@1 / hit@5 / found@50 / MRR on
all dev, its even and odd halves and the two proxies of ``lme_user_evidence.py``, with a sign test of the
answers' rank moves against pimem. The held-out questions (the first 100 non-abstention ones) are never read:
``data.split`` gives the dev set only here.

    nice -n 10 .venv/bin/python bench/experiments/lme_tail.py dump --dir /work/data/r1/real --out /tmp/tail.json
    .venv/bin/python bench/experiments/lme_tail.py score --dump /tmp/tail.json
    nice -n 10 .venv/bin/python bench/experiments/lme_tail.py dump --dir /work/data/r1/real --prf 5 --out /tmp/prf.json
    .venv/bin/python bench/experiments/lme_tail.py score --dump /tmp/prf.json --other prf
"""

from __future__ import annotations

import argparse
import json
import math
import sqlite3
import sys
import tempfile
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "lme"))
sys.path.insert(0, str(HERE))

import data  # noqa: E402
import evaluate  # noqa: E402
from lme_ranking import apply_settings  # noqa: E402
from lme_user_evidence import single_user, user_evidence  # noqa: E402

from pimem import words  # noqa: E402
from pimem.recall import make_query, ranking  # noqa: E402
from pimem.recall.freetext import _shortlist, parse_text, prose_stop_words  # noqa: E402
from pimem.store import connect  # noqa: E402

POOL = 150          # rows of the one call: the sessions ranked in full (CANDIDATE_SESSIONS)


def dump(args: argparse.Namespace) -> int:
    apply_settings(args.set)
    dev, _ = data.split(data.load_questions(args.data))
    mapping: dict[str, str] = json.loads((args.dir / "mapping.json").read_text(encoding="utf-8"))
    conn = connect(args.dir / "memory.db", create=False, for_writing=False)
    store_key = ranking._store_key(conn)
    docs = ranking._totals(conn, store_key)[0]
    stop = prose_stop_words() | evaluate.english_stop_words()

    def listed(qwords: Sequence[ranking.QueryWord], base: Any) -> tuple[list[str], list[str]]:
        page = ranking.rank(conn, qwords, replace(base, limit=POOL))
        seen: list[str] = []
        evaluate.distinct((mapping.get(row.session_id) for row in page.rows), seen, depth=1_000)
        return seen, list(dict.fromkeys(row.session_id for row in page.rows))

    def expansion(sessions: Sequence[str], have: set[str]) -> list[str]:
        weight: Counter[str] = Counter()
        for session in sessions:
            text = "\n".join(str(t or "") for (t,) in conn.execute(
                "SELECT user_text FROM turns WHERE session_id = ?", (session,)))
            counts = Counter(tok for tok in words.tokens(text)
                             if tok not in stop and len(tok) > 2 and not tok.isdigit())
            total = sum(counts.values()) or 1
            for tok, n in counts.items():
                weight[tok] += n / total
        scored: list[tuple[float, str]] = []
        for tok, value in weight.most_common(40):
            df = 0 if tok in have else ranking._doc_count(conn, store_key, tok, docs, ranking._phrase(tok))
            if 0 < df <= docs / 10:
                scored.append((value * math.log(docs / df), tok))
        return [tok for _, tok in sorted(scored, reverse=True)[:args.prf]]

    out: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory() as scratch:
        evaluate.build_bm25(args.dir / "memory.db", mapping, Path(scratch) / "bm25.db")
        reference = sqlite3.connect(Path(scratch) / "bm25.db")
        english = evaluate.english_stop_words()
        for question in dev:
            found = parse_text(question["question"])
            qwords = ranking.query_words(_shortlist(list(found)), prose_stop_words())
            base = make_query([c.term for c in found[:8]], 50, None, None, 0)
            pimem, sessions = listed(qwords, base)
            match = evaluate.bm25_query(question["question"], english)
            rows = reference.execute("SELECT conversation FROM docs WHERE docs MATCH ? ORDER BY bm25(docs) LIMIT 200",
                                     (match,)).fetchall() if match else []
            bm25 = [str(row[0]) for row in rows]
            entry = {"id": question["question_id"], "type": question["question_type"],
                     "answers": question["answer_session_ids"], "pimem": pimem, "bm25": bm25,
                     "user_evidence": user_evidence(question), "single_user": single_user(question)}
            if args.prf:
                added = expansion(sessions[:2 * args.feedback], {w.token for w in qwords})
                entry["prf"], _ = listed(list(qwords) + [ranking.QueryWord(t, t, t) for t in added], base)
                entry["expansion"] = added
            out.append(entry)
    args.out.write_text(json.dumps(out), encoding="utf-8")
    return 0


def rank_of(ranked: Sequence[str], answers: Sequence[str]) -> int | None:
    return evaluate.rank_of(list(ranked), answers)


def interleaved(head: Sequence[str], other: Sequence[str], kept: int) -> list[str]:
    out: list[str] = []
    queues = (list(head[kept:]), list(other))
    evaluate.distinct(head[:kept], out, depth=1_000)
    for i in range(max(map(len, queues))):
        evaluate.distinct([q[i] for q in queues if i < len(q)], out, depth=1_000)
    return out


def fused_tail(head: Sequence[str], other: Sequence[str], kept: int, k: float = 60.0) -> list[str]:
    score: Counter[str] = Counter()
    for ranked in (head, other):
        for position, conversation in enumerate(ranked, start=1):
            score[conversation] += 1 / (k + position)
    first = list(head[:kept])
    return first + sorted((c for c in score if c not in set(first)), key=lambda c: -score[c])


def figures(ranks: Sequence[int | None]) -> str:
    found = [r for r in ranks if r is not None]
    mrr = sum(1 / r for r in found) / max(len(ranks), 1)
    return f"{sum(r <= 1 for r in found)} / {sum(r <= 5 for r in found)} / {len(found)}, {mrr:.3f}"


def sign_test(before: Sequence[int | None], after: Sequence[int | None]) -> str:
    up = sum((a or 99) < (b or 99) for b, a in zip(before, after, strict=True))
    down = sum((a or 99) > (b or 99) for b, a in zip(before, after, strict=True))
    n, k = up + down, min(up, down)
    p = min(1.0, 2 * sum(math.comb(n, i) for i in range(k + 1)) / 2 ** n) if n else 1.0
    entered = sum(b is None and a is not None for b, a in zip(before, after, strict=True))
    left = sum(b is not None and a is None for b, a in zip(before, after, strict=True))
    return f"up {up} down {down} (p {p:.3f}); within 50: +{entered} -{left}"


def score(args: argparse.Namespace) -> int:
    dumped: list[dict[str, Any]] = json.loads(args.dump.read_text(encoding="utf-8"))
    base = [rank_of(q["pimem"], q["answers"]) for q in dumped]
    variants: list[tuple[str, Callable[[dict[str, Any]], list[str]]]] = [
        ("pimem", lambda q: q["pimem"]), (args.other, lambda q: q[args.other])]
    for kept in args.kept:
        variants.append((f"pimem {kept}, then {args.other} interleaved",
                         lambda q, kept=kept: interleaved(q["pimem"], q[args.other], kept)))
        variants.append((f"pimem {kept}, then RRF with {args.other}",
                         lambda q, kept=kept: fused_tail(q["pimem"], q[args.other], kept)))
    print("| variant | all dev | even half | odd half | user-evidence | single-user | rank moves against pimem |")
    print("|---|---|---|---|---|---|---|")
    for name, make in variants:
        ranks = [rank_of(make(q), q["answers"]) for q in dumped]
        cells = [figures(ranks), figures(ranks[0::2]), figures(ranks[1::2]),
                 figures([r for q, r in zip(dumped, ranks, strict=True) if q["user_evidence"]]),
                 figures([r for q, r in zip(dumped, ranks, strict=True) if q["single_user"]]), sign_test(base, ranks)]
        print(f"| {name} | " + " | ".join(cells) + " |")
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    d = commands.add_parser("dump")
    d.add_argument("--data", type=Path, default=Path("/work/data/lme/longmemeval_s_cleaned.json"))
    d.add_argument("--dir", type=Path, required=True)
    d.add_argument("--set", action="append", default=[], help="NAME=VALUE, a ranking constant")
    d.add_argument("--prf", type=int, default=0, help="expansion words (0: no feedback list)")
    d.add_argument("--feedback", type=int, default=5, help="conversations the expansion words come from")
    d.add_argument("--out", type=Path, required=True)
    s = commands.add_parser("score")
    s.add_argument("--dump", type=Path, required=True)
    s.add_argument("--other", choices=("bm25", "prf"), default="bm25")
    s.add_argument("--kept", type=int, nargs="*", default=[5, 10, 20])
    args = parser.parse_args()
    return dump(args) if args.command == "dump" else score(args)


if __name__ == "__main__":
    sys.exit(main())
