"""Ask LongMemEval questions verbatim and score the conversations each ranker returns.

A conversation is an LME session: its Claude and its Codex copy count as one. A ranker gives pimem
session ids best first; they are mapped to conversations (``mapping.json`` of the built corpus) and
deduplicated in rank order, up to :data:`DEPTH`. Per question: hit@1, hit@5, found@50 (an answer
session among the first 50 distinct conversations), the reciprocal rank (0 when not found) and the wall
time of the ranker's answer. Rankers (``--ranker``, repeatable):

* ``pimem``: free-text recall as ``pimem recall --text`` does it (``parse_text`` + ``recall_candidates``),
  in process, or through a real ``pimem serve`` (``pimem/recall {text}``) with ``--via lsp``; pages of
  50 rows are read until 50 distinct conversations are seen or the rows end (at most offset + limit =
  1,000, the protocol's bound);
* ``pimem-fused`` / ``pimem-rrf``: the same with ``pimem.recall.ranking.FUSED_HEAD`` on / off for its questions
  (the passage head ordered by a weighted score, the default since round 17, or by the passage rank fused in
  by reciprocal rank, as before; docs/benchmarks.md, "Round 17");
* ``bm25``: the reference, plain SQLite FTS5 ``bm25()`` over one row per conversation (its user turns
  joined, read from the same store), English stop words removed, the other words OR-ed; built by the
  harness in a temporary database;
* ``module:function``: ``function(store_path, question) -> list of pimem session ids, best first``
  (the module is imported from ``sys.path`` plus the current folder).
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import re
import sqlite3
import sys
import tempfile
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field, replace
from importlib import resources
from pathlib import Path
from typing import Any

import data
import proxy
from writer import agent_env

DEPTH = 50
PAGE = 50
PAGE_END = 1000          # offset + limit at most 1,000 (docs/lsp-extensions.md)

Ranker = Callable[[str], "RankerAnswer"]


@dataclass
class RankerAnswer:
    conversations: list[str]        # LME session ids, best first, distinct, at most DEPTH
    pages: int = 1                  # recall pages read
    first_page_ms: float | None = None   # the wall time of the first page alone (pimem)


@dataclass
class Outcome:
    question_id: str
    question_type: str
    rank: int | None                # 1-based rank of the first answer conversation within DEPTH
    ms: float
    pages: int
    first_page_ms: float | None
    rank_or_copy: int | None = None   # a proxy question: the rank of its answer or of an identical copy of it


@dataclass
class Figures:
    n: int = 0
    hit1: int = 0
    hit5: int = 0
    found: int = 0
    rr: float = 0.0
    latencies: list[float] = field(default_factory=list)
    first_pages: list[float] = field(default_factory=list)
    paged: int = 0

    def add(self, outcome: Outcome) -> None:
        self.n += 1
        self.latencies.append(outcome.ms)
        self.paged += outcome.pages > 1
        if outcome.first_page_ms is not None:
            self.first_pages.append(outcome.first_page_ms)
        if outcome.rank is None:
            return
        self.hit1 += outcome.rank == 1
        self.hit5 += outcome.rank <= 5
        self.found += 1
        self.rr += 1 / outcome.rank

    def as_json(self) -> dict[str, Any]:
        return {"n": self.n, "hit1": self.hit1, "hit5": self.hit5, "found50": self.found,
                "mrr": round(self.rr / self.n, 4) if self.n else 0.0,
                "p50ms": round(percentile(self.latencies, 0.5), 2), "p95ms": round(percentile(self.latencies, 0.95), 2),
                "paged": self.paged,
                "firstPageP50ms": round(percentile(self.first_pages, 0.5), 2) if self.first_pages else None}


def percentile(values: Sequence[float], q: float) -> float:
    """day0bench's rule: the value at index int((n - 1) * q) of the sorted sample."""
    if not values:
        return 0.0
    ordered = sorted(values)
    return ordered[int((len(ordered) - 1) * q)]


def distinct(conversations: Iterable[str | None], seen: list[str], depth: int = DEPTH) -> None:
    """Append to ``seen`` the conversations not in it yet, in order, up to ``depth``."""
    present = set(seen)
    for conversation in conversations:
        if len(seen) >= depth:
            return
        if conversation is not None and conversation not in present:
            present.add(conversation)
            seen.append(conversation)


def rank_of(conversations: Sequence[str], answers: Iterable[str]) -> int | None:
    wanted = set(answers)
    for position, conversation in enumerate(conversations[:DEPTH], start=1):
        if conversation in wanted:
            return position
    return None


# ---------------------------------------------------------------------------------------------
# Rankers
# ---------------------------------------------------------------------------------------------

def pimem_in_process(store: Path, mapping: dict[str, str], keep_docs: bool = False) -> Ranker:
    from pimem.recall import make_query
    from pimem.recall.freetext import MAX_TERMS, parse_text, recall_conversations
    from pimem.store import connect

    if keep_docs:   # as pimem serve does (pimem.recall.docmap): the same answers, asserted by this run
        from pimem.recall import docmap

        docmap.enable()
    conn = connect(store, create=False, for_writing=False)

    def rank(question: str) -> RankerAnswer:
        found = parse_text(question)
        seen: list[str] = []
        pages = 0
        offset = 0
        first_ms: float | None = None
        started = time.perf_counter()
        while len(seen) < DEPTH and offset + PAGE <= PAGE_END:
            base = make_query([candidate.term for candidate in found[:MAX_TERMS]], PAGE, None, None, offset)
            answer = recall_conversations(conn, found, base)
            pages += 1
            first_ms = first_ms if first_ms is not None else (time.perf_counter() - started) * 1000
            distinct((mapping.get(row.session_id) for row in answer.rows), seen)
            if len(answer.rows) < PAGE:
                break
            offset += PAGE
        return RankerAnswer(seen, pages, first_ms)

    return rank


def with_fused_head(rank: Ranker, on: bool) -> Ranker:
    """``rank`` with the ranking's FUSED_HEAD ``on`` (or off) while it answers (the kept lists are keyed by it)."""
    from pimem.recall import ranking

    def fused(question: str) -> RankerAnswer:
        before = ranking.FUSED_HEAD
        ranking.FUSED_HEAD = on
        try:
            return rank(question)
        finally:
            ranking.FUSED_HEAD = before

    return fused


def pimem_via_lsp(directory: Path, mapping: dict[str, str], env: dict[str, str]) -> tuple[Ranker, Callable[[], None]]:
    repo = Path(__file__).resolve().parent.parent.parent
    sys.path.append(str(repo / "tests"))
    from support.jsonrpc import LspProcess  # the tests' JSON-RPC client

    server = LspProcess(env, directory / "serve.stderr.log")
    server.initialize()

    def rank(question: str) -> RankerAnswer:
        seen: list[str] = []
        pages = 0
        offset = 0
        first_ms: float | None = None
        started = time.perf_counter()
        while len(seen) < DEPTH and offset + PAGE <= PAGE_END:
            result = server.call("pimem/recall", {"text": question, "limit": PAGE, "offset": offset})
            pages += 1
            first_ms = first_ms if first_ms is not None else (time.perf_counter() - started) * 1000
            rows = result["results"]
            distinct((mapping.get(row["sessionId"]) for row in rows), seen)
            if len(rows) < PAGE:
                break
            offset += PAGE
        return RankerAnswer(seen, pages, first_ms)

    return rank, lambda: server.close()


def english_stop_words() -> frozenset[str]:
    text = (resources.files("pimem.recall") / "stopwords" / "en.txt").read_text(encoding="utf-8")
    return frozenset(line.strip() for line in text.splitlines() if line.strip() and not line.startswith("#"))


_WORD = re.compile(r"\w+")


def bm25_query(question: str, stop: frozenset[str]) -> str | None:
    words: list[str] = []
    for word in _WORD.findall(question.lower()):
        if word not in stop and word not in words:
            words.append(word)
    return " OR ".join('"' + word.replace('"', '""') + '"' for word in words) or None


def build_bm25(store: Path, mapping: dict[str, str], target: Path) -> None:
    """One FTS5 row per conversation: the user texts of the copy with the most user text, in turn order."""
    source = sqlite3.connect(f"file:{store}?mode=ro", uri=True)
    texts: dict[str, list[str]] = {}
    for session_id, user_text in source.execute(
            "SELECT session_id, user_text FROM turns ORDER BY session_id, turn_index"):
        texts.setdefault(session_id, []).append(user_text)
    source.close()
    best: dict[str, str] = {}
    for session_id, parts in texts.items():
        conversation = mapping.get(session_id)
        joined = "\n".join(parts)
        if conversation is not None and len(joined) > len(best.get(conversation, "")):
            best[conversation] = joined
    conn = sqlite3.connect(target)
    conn.execute("CREATE VIRTUAL TABLE docs USING fts5(conversation UNINDEXED, body)")
    conn.executemany("INSERT INTO docs(conversation, body) VALUES (?, ?)", best.items())
    conn.commit()
    conn.close()


def bm25_ranker(db: Path) -> Ranker:
    conn = sqlite3.connect(db)
    stop = english_stop_words()

    def rank(question: str) -> RankerAnswer:
        match = bm25_query(question, stop)
        if match is None:
            return RankerAnswer([])
        rows = conn.execute("SELECT conversation FROM docs WHERE docs MATCH ? ORDER BY bm25(docs) LIMIT ?",
                            (match, DEPTH)).fetchall()
        return RankerAnswer([row[0] for row in rows])

    return rank


def plugged_ranker(spec: str, store: Path, mapping: dict[str, str]) -> Ranker:
    module_name, _, function_name = spec.partition(":")
    if str(Path.cwd()) not in sys.path:
        sys.path.insert(0, str(Path.cwd()))
    function = getattr(importlib.import_module(module_name), function_name)

    def rank(question: str) -> RankerAnswer:
        seen: list[str] = []
        distinct((mapping.get(session_id) for session_id in function(str(store), question)), seen)
        return RankerAnswer(seen)

    return rank


# ---------------------------------------------------------------------------------------------
# The run
# ---------------------------------------------------------------------------------------------

def ask(rank: Ranker, questions: Sequence[dict[str, Any]]) -> list[Outcome]:
    outcomes: list[Outcome] = []
    for question in questions:
        started = time.perf_counter()
        answer = rank(question["question"])
        ms = (time.perf_counter() - started) * 1000
        outcomes.append(Outcome(question["question_id"], question["question_type"],
                                rank_of(answer.conversations, question["answer_session_ids"]), ms, answer.pages,
                                answer.first_page_ms,
                                rank_of(answer.conversations,
                                        [*question["answer_session_ids"], *question.get("answer_copies", [])])))
    return outcomes


def summarize(outcomes: Sequence[Outcome], halves: bool = False) -> dict[str, dict[str, Any]]:
    """Figures over all questions and per type; with ``halves``, also over the even and the odd half (by the
    question's index in the set), so that a change can be checked on both."""
    overall = Figures()
    by_type: dict[str, Figures] = {}
    for outcome in outcomes:
        overall.add(outcome)
        by_type.setdefault(outcome.question_type, Figures()).add(outcome)
    summary = {"all": overall.as_json()}
    if halves:
        for name, parity in (("even half", 0), ("odd half", 1)):
            half = Figures()
            for outcome in outcomes[parity::2]:
                half.add(outcome)
            summary[name] = half.as_json()
    return {**summary, **{kind: by_type[kind].as_json() for kind in sorted(by_type)}}


def markdown(results: dict[str, dict[str, dict[str, Any]]]) -> str:
    lines = ["| ranker | questions | n | hit@1 | hit@5 | found@50 | MRR | p50 ms | p95 ms | paged | 1st page p50 ms |",
             "|---|---|---|---|---|---|---|---|---|---|---|"]
    for ranker, summary in results.items():
        for kind, figures in summary.items():
            first = figures["firstPageP50ms"]
            lines.append(f"| {ranker} | {kind} | {figures['n']} | {figures['hit1']} | {figures['hit5']} | "
                         f"{figures['found50']} | {figures['mrr']:.3f} | {figures['p50ms']:.1f} | "
                         f"{figures['p95ms']:.1f} | {figures['paged']} | {'' if first is None else f'{first:.1f}'} |")
    return "\n".join(lines)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--data", type=Path, required=True, help="longmemeval_s_cleaned.json (file order kept)")
    parser.add_argument("--dir", type=Path, required=True, help="a corpus built by `run.py build`")
    parser.add_argument("--ranker", action="append", default=None,
                        help="pimem, pimem-fused, pimem-rrf, bm25 or module:function "
                             "(repeatable; default: pimem and bm25)")
    parser.add_argument("--via", choices=("inprocess", "lsp"), default="inprocess",
                        help="pimem ranker: in process (the CLI's service) or through a real `pimem serve`")
    parser.add_argument("--keep-docs", action="store_true",
                        help="pimem ranker in process: keep the word index's docs as pimem serve does "
                             "(pimem.recall.docmap)")
    parser.add_argument("--holdout", action="store_true",
                        help="acceptance only: evaluate the held-out questions 1-100 instead of the dev set; "
                             "never tune on these figures")
    parser.add_argument("--questions", type=Path,
                        help="a proxy question file (bench/lme/proxy_ssu.json) instead of the dev set: each question's "
                             "answer is its one session; held-out sources refused (bench/lme/proxy.py)")
    parser.add_argument("--limit", type=int, default=0, help="only the first N questions of the set (quick runs)")
    parser.add_argument("--results", type=Path, help="write every figure and per-question rank as JSON here")


def main(args: argparse.Namespace) -> int:
    questions = data.load_questions(args.data)
    dev, holdout = data.split(questions)
    chosen = holdout if args.holdout else dev
    if args.questions is not None:
        if args.holdout:
            raise SystemExit("--questions and --holdout: a proxy file is a dev set")
        chosen = proxy.load(args.questions, questions)
    if args.limit > 0:
        chosen = chosen[:args.limit]
    directory: Path = args.dir
    store = directory / "memory.db"
    mapping_file = directory / os.environ.get("LME_MAPPING", "mapping.json")   # another map of the same corpus
    mapping: dict[str, str] = json.loads(mapping_file.read_text(encoding="utf-8"))
    results: dict[str, dict[str, dict[str, Any]]] = {}
    per_question: dict[str, list[dict[str, Any]]] = {}
    closers: list[Callable[[], None]] = []
    with tempfile.TemporaryDirectory(prefix="pimem-lme-") as scratch:
        for spec in args.ranker or ["pimem", "bm25"]:
            name = spec
            if spec == "pimem" and args.via == "lsp":
                rank, close = pimem_via_lsp(directory, mapping, agent_env(directory, dict(os.environ)))
                closers.append(close)
                name = "pimem (lsp)"
            elif spec == "pimem":
                rank = pimem_in_process(store, mapping, args.keep_docs)
            elif spec in ("pimem-fused", "pimem-rrf"):
                rank = with_fused_head(pimem_in_process(store, mapping, args.keep_docs), spec == "pimem-fused")
            elif spec == "bm25":
                started = time.perf_counter()
                build_bm25(store, mapping, Path(scratch) / "bm25.db")
                print(f"bm25 reference built in {time.perf_counter() - started:.1f} s", file=sys.stderr)
                rank = bm25_ranker(Path(scratch) / "bm25.db")
            elif ":" in spec:
                rank = plugged_ranker(spec, store, mapping)
            else:
                raise SystemExit(f"--ranker {spec!r}: expected pimem, bm25 or module:function")
            rank(chosen[0]["question"] if chosen else "warm up")   # warm: caches, lazy imports
            outcomes = ask(rank, chosen)
            results[name] = summarize(outcomes, halves=True)
            if args.questions is not None:   # the answer or a session identical to it (proxy.copies)
                copies = [replace(o, rank=o.rank_or_copy, question_type="copies count") for o in outcomes]
                results[name]["answer or a copy"] = summarize(copies)["all"]
            per_question[name] = [{"id": o.question_id, "rank": o.rank, "ms": round(o.ms, 2), "pages": o.pages,
                                   **({"rankOrCopy": o.rank_or_copy} if args.questions is not None else {})}
                                  for o in outcomes]
        for close in closers:
            close()
    build = directory / "build.json"
    report = {"set": "holdout (acceptance only)" if args.holdout else str(args.questions or "dev"),
              "questions": len(chosen),
              "dir": str(directory), "build": json.loads(build.read_text()) if build.exists() else None,
              "revision": os.environ.get("PIMEM_REVISION", ""), "results": results}
    print(markdown(results))
    if args.results:
        args.results.write_text(json.dumps({**report, "perQuestion": per_question}, indent=1), encoding="utf-8")
    return 0
