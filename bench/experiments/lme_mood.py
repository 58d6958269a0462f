#!/usr/bin/env python3
"""Experiment (issue 21, round 27): the mood of the sentence a question's words sit in, in the passage step.

A question about the person ("Which video editing software do I like using?") is answered by a sentence that
states a fact ("… Adobe Premiere Pro, which I enjoy to use."), and often outranked by one in which the person
asks the assistant something with the same words ("Can you recommend some good video editing software for
beginners?"). Variants (the passage score of :func:`pimem.recall.ranking.passage_score`, nothing else):

* ``question``: a query word's occurrence inside a sentence of the user text that ends with ``?`` counts
  ``--weight`` × its idf in the passage (its nearest occurrence decides);
* ``intent``: also a sentence holding a request or an intent cue (:data:`CUES`: *thinking of*, *considering*,
  *planning*, *looking for*, *want to*, *recommend*, *can you* …), unless the question itself holds one
  ("Which guitar am I thinking of upgrading to?");
* ``question-self``: ``question``, but not for a question that addresses the assistant (*you*, *your*: "Can you
  remind me of the restaurant you recommended?", answered where the person asked for it).

``run`` asks dev (370) and the proxy files with the harness's pimem ranker (paged as ``run.py evaluate``) and
writes every question's rank; ``compare`` prints hit@1 / hit@5 / found@50 / MRR per set and half, the answers
entering / leaving the first 5, the rank moves with a two-sided sign test, and a 2-fold cross-validation of the
weight by question-index parity. The held-out questions are never read (``data.split``'s dev only).

    nice -n 10 .venv/bin/python bench/experiments/lme_mood.py run --variant none --out base.json
    nice -n 10 .venv/bin/python bench/experiments/lme_mood.py run --variant question --weight 0.5 --out q05.json
    .venv/bin/python bench/experiments/lme_mood.py compare base.json q05.json q025.json
    nice -n 10 .venv/bin/python bench/experiments/lme_mood.py evaluate --variant question-self --weight 0.5 -- \
        --data DATA --dir STORE --ranker pimem --ranker bm25 --questions FILE --results R.json
"""

from __future__ import annotations

import argparse
import bisect
import json
import math
import re
import runpy
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "lme"))

import data  # noqa: E402
import evaluate  # noqa: E402
import proxy  # noqa: E402

from pimem import words  # noqa: E402
from pimem.recall import freetext, ranking  # noqa: E402

SPANS = "#mood"   # a placed text's key of its discounted sentences' token spans (no index token holds a "#")
CUES = re.compile(r"\b(thinking (of|about)|considering|planning|plan to|looking (for|to|into)|want(ed)? to|"
                  r"would like|i'd like|wondering|recommend\w*|suggest\w*|can you|could you|should i|help me)\b")
_SENTENCE = re.compile(r"(?<=[.!?])\s+|\n+")

YOU = re.compile(r"\b(you|your|yours)\b")

STATE: dict[str, Any] = {"variant": "none", "weight": 1.0, "asks_intent": False, "asks_you": False}


def discounted_spans(text: str, intent: bool) -> list[tuple[int, int]]:
    """The token spans [start, end) of ``text``'s sentences that ask (end with ``?``) or, with ``intent``,
    hold a cue; token offsets as :func:`pimem.words.positions` counts them in ASCII text."""
    spans: list[tuple[int, int]] = []
    at = 0
    for sentence in _SENTENCE.split(text):
        count = len(words._ASCII_WORD.findall(sentence))
        stripped = sentence.rstrip(" \"')]*")
        lower = sentence.lower()
        if count and (stripped.endswith("?") or (intent and CUES.search(lower))):
            spans.append((at, at + count))
        at += count
    return spans


_real_positions = ranking._positions
_real_passage_score = ranking.passage_score


def _positions(texts: Sequence[str], wanted: frozenset[str], pick: Any, forms: dict[str, tuple[str, ...]]
               ) -> list[dict[str, list[int]]]:
    placed = _real_positions(texts, wanted, pick, forms)
    if STATE["variant"] == "none" or (STATE["variant"] == "question-self" and STATE["asks_you"]):
        return placed
    intent = STATE["variant"] == "intent" and not STATE["asks_intent"]
    for text, found in zip(texts, placed, strict=True):
        text = text[:words.POSITIONS_CHARS]
        if text.isascii():
            spans = discounted_spans(text, intent)
            if spans:
                found[SPANS] = [edge for span in spans for edge in span]   # type: ignore[assignment]
    return placed


def _passage_score(found: dict[str, list[int]], idf: dict[str, float], sigma: float) -> float:
    edges = found.get(SPANS)
    if not edges:
        return float(_real_passage_score(found, idf, sigma))
    weight_in = float(STATE["weight"])

    def factor(offset: int) -> float:   # inside [start, end) of a span: an odd count of edges at or below it
        return weight_in if bisect.bisect_right(edges, offset) % 2 else 1.0

    spread = 2 * sigma * sigma
    occurrences = [(idf[token], spots) for token, spots in found.items() if token in idf and spots]
    best = 0.0
    for _, spots in occurrences:
        for centre in spots:
            value = 0.0
            for weight, others in occurrences:
                at = bisect.bisect_left(others, centre)
                nearest = others[at] if at < len(others) else None
                if at and (nearest is None or centre - others[at - 1] < nearest - centre):
                    nearest = others[at - 1]
                if nearest is None:
                    continue
                near = nearest - centre
                value += weight * factor(nearest) * math.exp(-near * near / spread)
            best = max(best, value)
    return best


def install(variant: str, weight: float) -> None:
    """The variant on, for every question this process asks: the passage step's positions and score, and the
    question's own cues read where the harness parses it (``freetext.parse_text``)."""
    STATE["variant"], STATE["weight"] = variant, weight
    ranking._positions = _positions            # type: ignore[assignment]
    ranking.passage_score = _passage_score     # type: ignore[assignment]
    real_parse = freetext.parse_text

    def parse_text(text: str, *a: Any, **k: Any) -> Any:
        STATE["asks_intent"] = bool(CUES.search(text.lower()))
        STATE["asks_you"] = bool(YOU.search(text.lower()))
        return real_parse(text, *a, **k)

    freetext.parse_text = parse_text           # type: ignore[assignment]


def run(args: argparse.Namespace) -> int:
    install(args.variant, args.weight)
    questions = data.load_questions(args.data)
    dev, _ = data.split(questions)
    sets: dict[str, list[dict[str, Any]]] = {"dev": dev}
    for path in args.questions:
        sets[Path(path).stem] = proxy.load(Path(path), questions)
    mapping: dict[str, str] = json.loads((args.dir / "mapping.json").read_text(encoding="utf-8"))
    rank = evaluate.pimem_in_process(args.dir / "memory.db", mapping)

    out: dict[str, Any] = {"variant": args.variant, "weight": args.weight, "sets": {}}
    for name, chosen in sets.items():
        outcomes = evaluate.ask(rank, chosen)
        out["sets"][name] = [[o.question_id, o.rank] for o in outcomes]
        print(name, figures([o.rank for o in outcomes]), figures([o.rank for o in outcomes[0::2]]),
              figures([o.rank for o in outcomes[1::2]]), file=sys.stderr)
    args.out.write_text(json.dumps(out), encoding="utf-8")
    return 0


def figures(ranks: Sequence[int | None]) -> tuple[int, int, int, float]:
    return (sum(1 for r in ranks if r == 1), sum(1 for r in ranks if r is not None and r <= 5),
            sum(1 for r in ranks if r is not None and r <= 50),
            sum(1 / r for r in ranks if r is not None) / max(len(ranks), 1))


def sign_p(up: int, down: int) -> float:
    n, k = up + down, min(up, down)
    if n == 0:
        return 1.0
    return min(1.0, 2 * sum(math.comb(n, i) for i in range(k + 1)) / 2 ** n)


def compare(args: argparse.Namespace) -> int:
    runs = [json.loads(Path(p).read_text(encoding="utf-8")) for p in args.files]
    base = runs[0]
    groups = {"proxies": ("proxy_ssu", "proxy_ssu3"), "dev": ("dev",)}
    for run_ in runs:
        label = f"{run_['variant']} {run_['weight']}"
        for group, names in groups.items():
            ranks: dict[int, list[int | None]] = {0: [], 1: []}
            moves = [0, 0, 0, 0]   # up, down, enter first 5, leave
            for name in names:
                for i, ((_qid, r), (_, b)) in enumerate(zip(run_["sets"][name], base["sets"][name], strict=True)):
                    ranks[i % 2].append(r)
                    rr, bb = r or 999, b or 999
                    moves[0] += rr < bb
                    moves[1] += rr > bb
                    moves[2] += rr <= 5 < bb
                    moves[3] += bb <= 5 < rr
            every = figures(ranks[0] + ranks[1])
            even, odd = figures(ranks[0]), figures(ranks[1])
            print(f"{label:14} {group:8} all {every[0]}/{every[1]}/{every[2]} MRR {every[3]:.3f} | even "
                  f"{even[0]}/{even[1]}/{even[2]} | odd {odd[0]}/{odd[1]}/{odd[2]} | first 5 +{moves[2]} -{moves[3]}"
                  f" | moves {moves[0]} up {moves[1]} down p {sign_p(moves[0], moves[1]):.3f}")
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    r = sub.add_parser("run")
    r.add_argument("--data", type=Path, default=Path("/work/data/lme/longmemeval_s_cleaned.json"))
    r.add_argument("--dir", type=Path, default=Path("/work/data/r1/real"))
    r.add_argument("--questions", action="append",
                   default=["bench/lme/proxy_ssu.json", "bench/lme/proxy_ssu3.json"])
    r.add_argument("--variant", choices=("none", "question", "intent", "question-self"), default="none")
    r.add_argument("--weight", type=float, default=1.0)
    r.add_argument("--out", type=Path, required=True)
    e = sub.add_parser("evaluate", help="bench/lme/run.py evaluate with the variant on (the arguments after --)")
    e.add_argument("--variant", choices=("none", "question", "intent", "question-self"), required=True)
    e.add_argument("--weight", type=float, required=True)
    e.add_argument("rest", nargs=argparse.REMAINDER)
    c = sub.add_parser("compare")
    c.add_argument("files", nargs="+")
    args = parser.parse_args()
    if args.command == "evaluate":
        install(args.variant, args.weight)
        rest = [a for a in args.rest if a != "--"]
        sys.argv = [str(HERE.parent / "lme" / "run.py"), "evaluate", *rest]
        runpy.run_path(sys.argv[0], run_name="__main__")
        return 0
    return run(args) if args.command == "run" else compare(args)


if __name__ == "__main__":
    sys.exit(main())
