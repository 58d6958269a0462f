#!/usr/bin/env python3
"""Free text as prose (issue 21): its latency at scale, its cost while the word index lags, and the
import's cost of the word index; each against a reference measured in the same run, as ratios.

    python bench/freetext_perf.py latency --store DB [--runs 3] [--limit 10] [--slowest 10]
    python bench/freetext_perf.py pending --store DB [--runs 3] [--lag 2000]
    python bench/freetext_perf.py import --corpus DIR [--runs 2] [--before ec8da14^1] [--after HEAD]
    python bench/freetext_perf.py index --store DB [--runs 2] [--before REV] [--after HEAD]

* ``latency``: free text as ``pimem/recall {text}`` answers it (``freetext.recall_conversations``, one
  long-lived process, one read connection, warm: every query asked once untimed first), per query the
  median of ``--runs`` (each run ranks anew: the ranked lists kept for a next page are forgotten
  first); p50 / p95 / max over the queries. Queries: the 50 ``question`` texts of the labelled
  quality set (bench/quality/conversations.py; English, Chinese, Japanese) and 50 questions made of
  the generator's vocabulary (bench/textpool.py: every word of it is in a few percent to a third of
  the turns, the costly case), half with a planted word. Reference, same process, same
  queries: SQLite's own FTS5 ``bm25()`` over the same word index (``pimem_words``), the query's words
  OR-ed, the best 50 turns (C speed over the same postings, no conversations).
* ``pending``: the same queries while the word index lags ``--lag`` turns (the newest docs marked
  pending inside a transaction that is rolled back: the store is not changed), with the per-process
  words of pending turns (this code), with those words forgotten before every query (what every query
  paid before), and with no lag (the reference).
* ``import``: ``pimem sync`` of the corpus into a fresh store by two revisions (``--before``: the
  commit before the word index was merged; ``--after``; ``--also``: a third, e.g. main against a
  branch), rotated, ``--runs`` each; CPU time (user
  + system, the sync's workers included: steadier than wall time on a loaded machine) and wall time,
  peak RSS of the process tree, store size, and the word index's share of the store (``dbstat``).
* ``index``: the index build alone (``index.build_pending`` after ``index.rebuild``, in a fresh process)
  on a copy of an imported store, three ways, alternated: the trigram index only (the word index's
  tables dropped: the reference), both indexes by ``--before``'s code, both by ``--after``'s; CPU time
  of the build (its word helper process's included, pimem/wordhelper.py) and wall time. What the word
  index adds to an import, by revision, without the parse around it.

Quote the machine and its load with the figures: this machine's speed varies from minute to minute,
so compare within a run (docs/benchmarks.md).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import sqlite3
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "bench"))

from benchmarks.context import AGENT_ENV, db_bytes, remove_db  # noqa: E402
from benchmarks.measure import percentile, run_measured  # noqa: E402
from benchmarks.pinning import archive_pimem  # noqa: E402
from benchmarks.report import load_average  # noqa: E402
from pimem.recall import freetext, make_query, ranking  # noqa: E402
from pimem.store import connect  # noqa: E402
from quality.conversations import PLANTED  # noqa: E402
from textpool import WORDS  # noqa: E402

REFERENCE_ROWS = 50
TEMPLATES = ("how did we fix the {0} {1} when the {2} failed?", "what was wrong with the {0} {1} last time?",
             "why was the {0} so {1} in the {2}?", "where did we change the {0} {1} for {3}?",
             "the {3} {0} that broke the {1} {2}, what did we do?")
PLANTED_WORDS = ("flamingo", "payroll", "flamingo", "payroll", "cache")


def questions(sample: int = 0, count: int = 50, seed: int = 7) -> list[str]:
    """The labelled set's questions, then ``count`` made of the generator's vocabulary; with ``sample``,
    that many of them, evenly spaced."""
    found = [text for conversation in PLANTED for text in conversation.question]
    rng = random.Random(seed)
    pool = [word for word in WORDS if len(word) > 3 and word.isalpha()]
    for number in range(count):
        picked = rng.sample(pool, 3)
        fourth = PLANTED_WORDS[number % len(PLANTED_WORDS)] if number % 2 == 0 else rng.choice(pool)
        found.append(rng.choice(TEMPLATES).format(*picked, fourth))
    if 0 < sample < len(found):
        found = [found[position * len(found) // sample] for position in range(sample)]
    return found


def revision() -> str:
    head = subprocess.run(["git", "-C", str(REPO), "rev-parse", "--short", "HEAD"], capture_output=True,
                          text=True).stdout.strip()
    dirty = subprocess.run(["git", "-C", str(REPO), "status", "--porcelain", "server"], capture_output=True,
                           text=True).stdout.strip()
    return head + ("+dirty" if dirty else "")


def rss_mb() -> float:
    import psutil

    return float(psutil.Process().memory_info().rss) / 1e6


# -- the queries ----------------------------------------------------------------------------------

def pimem_query(conn: sqlite3.Connection, limit: int) -> Callable[[str], int]:
    def ask(text: str) -> int:
        found = freetext.parse_text(text)
        base = make_query([candidate.term for candidate in found[:freetext.MAX_TERMS]], limit)
        return len(freetext.recall_conversations(conn, found, base).rows)
    return ask


def reference_query(conn: sqlite3.Connection) -> Callable[[str], int]:
    """FTS5 ``bm25()`` over pimem_words: the same words as pimem asks (stemmed), OR-ed, user text
    weighted 1 and reply 0.3, the best REFERENCE_ROWS turns."""
    def ask(text: str) -> int:
        found = freetext.parse_text(text)
        tokens = [word.token for word in ranking.query_words(freetext._shortlist(list(found)))]
        if not tokens:
            return 0
        match = "{user reply} : (" + " OR ".join('"' + token.replace('"', '""') + '"' for token in tokens) + ")"
        return len(conn.execute("SELECT rowid FROM pimem_words WHERE pimem_words MATCH ? "
                                "ORDER BY bm25(pimem_words, 1.0, 0.3) LIMIT ?", (match, REFERENCE_ROWS)).fetchall())
    return ask


def timed(askers: Sequence[Callable[[str], int]], texts: Sequence[str], runs: int,
          before_each: Callable[[], None] | None = None) -> list[tuple[list[float], list[float]]]:
    """Per asker, per text the median of ``runs`` answers' wall time and CPU time of this thread (ms),
    after one untimed pass (warm). The askers take turns on each text, so a change of the machine's load
    hits them alike; the CPU time (SQLite runs in the asking thread) barely depends on that load."""
    for ask in askers:
        for text in texts:
            if before_each is not None:
                before_each()
            ask(text)
    wall: list[list[list[float]]] = [[[] for _ in texts] for _ in askers]
    cpu: list[list[list[float]]] = [[[] for _ in texts] for _ in askers]
    for _ in range(runs):
        for position, text in enumerate(texts):
            for number, ask in enumerate(askers):
                if before_each is not None:
                    before_each()
                started, started_cpu = time.perf_counter(), time.thread_time()
                ask(text)
                wall[number][position].append((time.perf_counter() - started) * 1000)
                cpu[number][position].append((time.thread_time() - started_cpu) * 1000)
    return [([statistics.median(values) for values in wall[number]],
             [statistics.median(values) for values in cpu[number]]) for number in range(len(askers))]


def figures(values: tuple[list[float], list[float]]) -> dict[str, float]:
    wall, cpu = values
    return {"p50": percentile(wall, 0.5), "p95": percentile(wall, 0.95), "max": max(wall), "n": len(wall),
            "cpu_p50": percentile(cpu, 0.5), "cpu_p95": percentile(cpu, 0.95), "cpu_max": max(cpu)}


HEADER = ("| {0} | questions | p50 ms | p95 ms | max ms | CPU p50 ms | CPU p95 ms | CPU max ms | "
          "CPU p50 / {1} | CPU p95 / {1} |\n|---|---|---|---|---|---|---|---|---|---|")


def row(name: str, values: dict[str, float], reference: dict[str, float]) -> str:
    return (f"| {name} | {values['n']:.0f} | {values['p50']:.1f} | {values['p95']:.1f} | {values['max']:.1f} | "
            f"{values['cpu_p50']:.1f} | {values['cpu_p95']:.1f} | {values['cpu_max']:.1f} | "
            f"{values['cpu_p50'] / reference['cpu_p50']:.1f}× | {values['cpu_p95'] / reference['cpu_p95']:.1f}× |")


def store_turns(conn: sqlite3.Connection) -> int:
    return int(conn.execute("SELECT max(rowid) FROM turns").fetchone()[0] or 0)


def lme_dev_questions(path: Path) -> list[str]:
    """The LongMemEval dev questions (never the held-out first 100: bench/lme/data.py)."""
    sys.path.insert(0, str(REPO / "bench" / "lme"))
    import data

    dev, _holdout = data.split(data.load_questions(path))
    return [str(question["question"]) for question in dev]


def keep_docs(keep: bool) -> str:
    """Keep the word index's docs in this process, as ``pimem serve`` and ``pimem mcp`` do
    (pimem.recall.docmap; a revision without it reads them for every query): what is measured."""
    try:
        from pimem.recall import docmap
    except ImportError:
        return "not in this revision"
    if keep:
        docmap.enable()
        return "kept (pimem.recall.docmap, as pimem serve)"
    docmap.disable()
    return "read per query (--no-keep-docs)"


def latency(args: argparse.Namespace) -> dict[str, Any]:
    conn = connect(args.store, create=False, for_writing=False)
    kept = keep_docs(args.keep_docs)
    texts = lme_dev_questions(args.lme_data) if args.lme_data else questions()
    if 0 < args.sample < len(texts):
        texts = [texts[position * len(texts) // args.sample] for position in range(args.sample)]
    prose = [text for text in texts if not freetext.looks_like_code(freetext.parse_text(text))]
    print(f"- store: {args.store} ({store_turns(conn):,} turns), pimem {revision()}, load average {load_average()}")
    print(f"- {len(texts)} questions ({'LongMemEval dev' if args.lme_data else 'quality set + generated'}; "
          f"{len(prose)} ranked through the word index, the others are code-like and go to the trigram index), "
          f"limit {args.limit}, median of {args.runs} runs per question, warm; the word index's docs {kept}")
    # Every run ranks: the ranked lists a process keeps for the next page (ranking._RANKED; absent before
    # r4-latency) would answer the same question again without ranking.
    forget = getattr(getattr(ranking, "_RANKED", None), "clear", None)
    ours_t, reference_t = timed([pimem_query(conn, args.limit), reference_query(conn)], texts, args.runs, forget)
    ours, reference = figures(ours_t), figures(reference_t)
    print(f"- RSS after the run {rss_mb():.0f} MB; load average {load_average()}")
    print()
    print(HEADER.format("ranker", "ref"))
    print(row("pimem `recall_conversations`", ours, reference))
    print(row("reference: FTS5 `bm25()` over `pimem_words`, words OR-ed, 50 turns", reference, reference))
    if args.slowest:
        print()
        print(f"The {args.slowest} questions of the most CPU (pimem's, ms; the reference's):")
        for cpu, ref, text in sorted(zip(ours_t[1], reference_t[1], texts, strict=True), reverse=True)[:args.slowest]:
            print(f"- {cpu:.1f} ({ref:.1f}): {text}")
    each = [{"text": text, "cpu_ms": round(cpu, 2), "ref_cpu_ms": round(ref, 2)}
            for text, cpu, ref in zip(texts, ours_t[1], reference_t[1], strict=True)]
    return {"pimem": ours, "reference": reference, "turns": store_turns(conn), "questions": len(texts),
            "prose": len(prose), "per_question": each}


def pending(args: argparse.Namespace) -> dict[str, Any]:
    conn = connect(args.store, create=False)
    texts = questions(args.sample)
    texts = [text for text in texts if not freetext.looks_like_code(freetext.parse_text(text))]
    ask = pimem_query(conn, args.limit)
    print(f"- store: {args.store} ({store_turns(conn):,} turns), pimem {revision()}, load average {load_average()}")
    reference = figures(timed([ask], texts, args.runs, getattr(getattr(ranking, "_RANKED", None), "clear", None))[0])
    conn.execute("BEGIN IMMEDIATE")
    try:
        conn.execute("INSERT OR IGNORE INTO pimem_words_pending(doc_key) SELECT doc_key FROM pimem_docs "
                     "ORDER BY doc_key DESC LIMIT ?", (args.lag,))
        backlog = ranking.pending_backlog(conn)
        forget = getattr(getattr(ranking, "_RANKED", None), "clear", None)
        kept = figures(timed([ask], texts, args.runs, forget)[0])
        kept_rss = rss_mb()
        forgotten = figures(timed([ask], texts, max(1, args.runs // 3), ranking._PENDING_WORDS.by_store.clear)[0])
    finally:
        conn.execute("ROLLBACK")
    print(f"- the word index lagging {backlog:,} turns (rolled back after the run); {len(texts)} prose questions, "
          f"limit {args.limit}; RSS with the pending words kept {kept_rss:.0f} MB; load average {load_average()}")
    print()
    print(HEADER.format("pending turns' words", "no lag"))
    print(row(f"kept per process ({args.lag:,} lagging)", kept, reference))
    print(row(f"tokenized for every query, as before ({args.lag:,} lagging)", forgotten, reference))
    print(row("reference: no lag", reference, reference))
    return {"kept": kept, "forgotten": forgotten, "reference": reference, "backlog": backlog}


# -- the import -----------------------------------------------------------------------------------

def word_index_bytes(db: Path) -> int:
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        return int(conn.execute("SELECT coalesce(sum(pgsize), 0) FROM dbstat WHERE name LIKE 'pimem_word%'")
                   .fetchone()[0])
    finally:
        conn.close()


def _children_cpu() -> float:
    """User + system CPU seconds of every finished child process and their waited-for descendants (the
    sync's workers): under a load that changes from minute to minute, far steadier than wall time."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def import_once(source: Path, home: Path, db: Path) -> dict[str, Any]:
    remove_db(db)
    env = {key: value for key, value in os.environ.items() if key not in AGENT_ENV}
    env.update(HOME=str(home), MEMORY_DB_PATH=str(db), PYTHONUNBUFFERED="1",
               PYTHONPATH=os.pathsep.join(filter(None, [str(source), os.environ.get("PYTHONPATH")])))
    cpu_before = _children_cpu()
    run = run_measured([sys.executable, "-m", "pimem", "sync", "--json"], env)
    cpu = _children_cpu() - cpu_before
    if run.returncode != 0:
        raise SystemExit(f"pimem sync failed ({source}): {run.stderr[-2000:]}")
    stats = json.loads(run.stdout)
    return {"seconds": run.seconds, "cpu_seconds": cpu, "peak_rss": run.peak_sum, "db_bytes": db_bytes(db),
            "word_bytes": word_index_bytes(db), "turns": stats.get("turns"),
            "stored_s": stats.get("storedMs", 0) / 1000}


BUILD_SCRIPT = """
import hashlib, json, resource, sys, time
from pimem import index
from pimem.store import connect, transaction
if sys.argv[3] != "auto":   # the word helper (r14-import) forced on or off, whatever the load
    try:
        from pimem import wordhelper
        wordhelper.wanted = lambda pending: sys.argv[3] == "on"
    except ImportError:   # a revision without it
        pass
conn = connect(sys.argv[1])
with transaction(conn):
    index.rebuild(conn)
    if sys.argv[2] == "trigram":
        conn.execute("DROP TABLE pimem_words")
        conn.execute("DROP TABLE pimem_word_docs")
cpu, wall = time.process_time(), time.perf_counter()
built = index.build_pending(conn)
helpers = resource.getrusage(resource.RUSAGE_CHILDREN)   # the build's helper process (r14-import), if any
result = {"docs": built, "cpu": time.process_time() - cpu + helpers.ru_utime + helpers.ru_stime,
          "helper_cpu": helpers.ru_utime + helpers.ru_stime, "wall": time.perf_counter() - wall}
if sys.argv[2] == "both":   # every (word, doc, column) posting, to compare the revisions' word indexes
    conn.execute("CREATE VIRTUAL TABLE temp.v USING fts5vocab(main, pimem_words, 'instance')")
    digest, postings = hashlib.sha256(), 0
    for term, doc, column in conn.execute("SELECT term, doc, col FROM temp.v"):
        digest.update(f"{term}\\0{doc}\\0{column}\\n".encode())
        postings += 1
    digest.update(repr(conn.execute("SELECT count(*), sum(session), sum(user_chars), sum(reply_chars) "
                                    "FROM pimem_word_docs").fetchone()).encode())
    result.update(postings=postings, digest=digest.hexdigest())
print(json.dumps(result))
"""


def build_once(source: Path, store: Path, copy: Path, mode: str, helper: str = "auto") -> dict[str, Any]:
    remove_db(copy)
    with sqlite3.connect(f"file:{store}?mode=ro", uri=True) as original, sqlite3.connect(copy) as target:
        original.backup(target)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(source), os.environ.get("PYTHONPATH")])))
    run = subprocess.run([sys.executable, "-c", BUILD_SCRIPT, str(copy), mode, helper], env=env,
                         capture_output=True, text=True)
    remove_db(copy)
    if run.returncode != 0:
        raise SystemExit(f"index build failed ({source}): {run.stderr[-2000:]}")
    result: dict[str, Any] = json.loads(run.stdout)
    return result


def index_builds(args: argparse.Namespace) -> dict[str, Any]:
    work = args.work or Path("/tmp") / f"pimem-index-{os.getpid()}"
    work.mkdir(parents=True, exist_ok=True)
    before, after = archive_pimem(args.before), archive_pimem(args.after)
    ways = {"trigram only": (after[0], "trigram"), f"both, {args.before}": (before[0], "both"),
            f"both, {args.after}": (after[0], "both")}
    print(f"- store {args.store} ({store_turns(connect(args.store, create=False, for_writing=False)):,} turns), "
          f"copied per build; before = {args.before} ({before[1][:9]}), after = {args.after} ({after[1][:9]}); "
          f"{args.runs} runs each, alternated; load average {load_average()}")
    cpu: dict[str, list[float]] = {name: [] for name in ways}
    walls: dict[str, list[float]] = {name: [] for name in ways}
    digests: dict[str, set[tuple[int, str]]] = {name: set() for name in ways}
    for number in range(args.runs):
        names = list(ways) if number % 2 == 0 else list(reversed(ways))
        for name in names:
            result = build_once(ways[name][0], args.store, work / "index.db", ways[name][1], args.helper)
            cpu[name].append(result["cpu"])
            walls[name].append(result["wall"])
            if "digest" in result:
                digests[name].add((result["postings"], result["digest"]))
            print(f"  run {number + 1} {name}: {result['cpu']:.2f} s CPU (helper process "
                  f"{result.get('helper_cpu', 0):.2f}), {result['wall']:.1f} s, "
                  f"{result['docs']} docs, load average {load_average()}", flush=True)
    reference = statistics.median(cpu["trigram only"])
    print()
    print("| index build | median CPU s | per run | / trigram only | the word index adds | median wall s |")
    print("|---|---|---|---|---|---|")
    for name, values in cpu.items():
        median = statistics.median(values)
        print(f"| {name} | {median:.2f} | {', '.join(f'{value:.2f}' for value in values)} | "
              f"{median / reference:.2f}× | {median - reference:+.2f} s | {statistics.median(walls[name]):.1f} |")
    both = set().union(*(found for found in digests.values()))
    print()
    print(f"word index postings (word, doc, column) of every build by both revisions: "
          f"{'identical' if len(both) == 1 else 'DIFFERENT'} ({', '.join(f'{n:,} {d[:12]}' for n, d in sorted(both))})")
    return {"cpu": cpu, "identical_word_index": len(both) == 1}


def import_pair(args: argparse.Namespace) -> dict[str, Any]:
    home = args.corpus / "home"
    work = args.work or args.corpus.parent / f"import-{args.corpus.name}"
    work.mkdir(parents=True, exist_ok=True)
    revisions = [("before", args.before), ("after", args.after)] + ([("also", args.also)] if args.also else [])
    sources = {name: archive_pimem(rev) for name, rev in revisions}
    print(f"- corpus {args.corpus}; " + ", ".join(f"{name} = {rev} ({sources[name][1][:9]})" for name, rev in revisions)
          + f"; {args.runs} runs each, alternated; load average {load_average()}")
    runs: dict[str, list[dict[str, Any]]] = {name: [] for name, _ in revisions}
    for number in range(args.runs):
        names = [name for name, _ in revisions]
        order = names[number % len(names):] + names[:number % len(names)]   # rotated: each goes first in turn
        for name in (order if number % 2 == 0 else order[::-1]):
            result = import_once(sources[name][0], home, work / f"{name}.db")
            runs[name].append(result)
            print(f"  run {number + 1} {name}: {result['seconds']:.1f} s ({result['cpu_seconds']:.1f} s CPU), "
                  f"peak RSS {result['peak_rss'] / 1e6:.0f} MB, "
                  f"store {result['db_bytes'] / 1e6:.0f} MB (word index {result['word_bytes'] / 1e6:.0f} MB), "
                  f"{result['turns']} turns, load average {load_average()}", flush=True)
    if args.keep_after is not None:   # the store the latency benchmarks read (the after revision's import)
        args.keep_after.parent.mkdir(parents=True, exist_ok=True)
        os.replace(work / "after.db", args.keep_after)
    for name in runs:
        remove_db(work / f"{name}.db")
    before_s = statistics.median(run["seconds"] for run in runs["before"])
    after_s = statistics.median(run["seconds"] for run in runs["after"])
    before_cpu = statistics.median(run["cpu_seconds"] for run in runs["before"])
    after_cpu = statistics.median(run["cpu_seconds"] for run in runs["after"])
    pairs = [after["cpu_seconds"] / before["cpu_seconds"]
             for before, after in zip(runs["before"], runs["after"], strict=True)]
    before_db = runs["before"][0]["db_bytes"]
    after_db = runs["after"][0]["db_bytes"]
    print()
    print("| | median CPU s | median wall s | peak RSS (tree) | store | word index |")
    print("|---|---|---|---|---|---|")
    for name in runs:
        cpu = statistics.median(run["cpu_seconds"] for run in runs[name])
        seconds = statistics.median(run["seconds"] for run in runs[name])
        print(f"| {name} | {cpu:.1f} | {seconds:.1f} | {max(run['peak_rss'] for run in runs[name]) / 1e6:.0f} MB | "
              f"{runs[name][0]['db_bytes'] / 1e6:.0f} MB | {runs[name][0]['word_bytes'] / 1e6:.0f} MB |")
    print()
    print(f"after / before: import CPU time {after_cpu / before_cpu:.2f}× (per pair: "
          f"{', '.join(f'{ratio:.2f}' for ratio in pairs)}), wall time {after_s / before_s:.2f}×, "
          f"store {after_db / before_db:.2f}×")
    if args.also:
        also_cpu = statistics.median(run["cpu_seconds"] for run in runs["also"])
        also_s = statistics.median(run["seconds"] for run in runs["also"])
        wall_pairs = [after["seconds"] / also["seconds"]
                      for also, after in zip(runs["also"], runs["after"], strict=True)]
        print(f"also ({args.also}) / before: CPU {also_cpu / before_cpu:.2f}×, wall {also_s / before_s:.2f}×; "
              f"after / also: CPU {after_cpu / also_cpu:.2f}×, wall {after_s / also_s:.2f}× (per run: "
              f"{', '.join(f'{ratio:.2f}' for ratio in wall_pairs)})")
    return {"runs": runs, "cpu_ratio": after_cpu / before_cpu, "wall_ratio": after_s / before_s,
            "pair_cpu_ratios": pairs, "store_ratio": after_db / before_db}


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    for name in ("latency", "pending"):
        command = commands.add_parser(name)
        command.add_argument("--store", type=Path, required=True, help="an imported memory.db (not changed)")
        command.add_argument("--runs", type=int, default=3)
        command.add_argument("--limit", type=int, default=10, help="conversations per answer")
        command.add_argument("--lme-data", type=Path, help="latency: ask the LongMemEval dev questions of this "
                                                             "file instead (never the held-out ones)")
        command.add_argument("--sample", type=int, default=0, help="only this many questions, evenly spaced")
        command.add_argument("--slowest", type=int, default=0, help="latency: list the questions of the most CPU, "
                             "this many (each question's CPU time is in --results' per_question either way)")
        command.add_argument("--keep-docs", action=argparse.BooleanOptionalAction, default=True,
                             help="keep the word index's docs per process, as pimem serve does (pimem.recall.docmap)")
        command.add_argument("--lag", type=int, default=ranking.PENDING_SCORED, help="pending: turns the index lags")
    command = commands.add_parser("import")
    command.add_argument("--corpus", type=Path, required=True, help="a bench/generate.py corpus")
    command.add_argument("--work", type=Path, help="where the stores go (deleted after)")
    command.add_argument("--runs", type=int, default=2)
    command.add_argument("--before", default="ec8da14^1", help="the revision before the word index")
    command.add_argument("--after", default="HEAD")
    command.add_argument("--also", help="a third revision, in the same rotation (e.g. main, against a branch)")
    command.add_argument("--keep-after", type=Path, help="keep the after revision's last store here")
    command.add_argument("--results", type=Path, help="write the figures as JSON here")
    command = commands.add_parser("index")
    command.add_argument("--store", type=Path, required=True, help="an imported memory.db (read, not changed)")
    command.add_argument("--work", type=Path, help="where the copy goes (deleted after each build)")
    command.add_argument("--runs", type=int, default=2)
    command.add_argument("--before", default="73cdb56", help="the revision whose word index code is compared")
    command.add_argument("--after", default="HEAD")
    command.add_argument("--helper", choices=("auto", "on", "off"), default="auto",
                         help="the build's word helper process (where the revision has one): as the load "
                              "decides, or forced")
    for sub in commands.choices.values():
        if not any(action.dest == "results" for action in sub._actions):
            sub.add_argument("--results", type=Path, help="write the figures as JSON here")
    args = parser.parse_args(argv)
    print(f"`{' '.join([Path(sys.executable).name, 'bench/freetext_perf.py', *sys.argv[1:]])}` "
          f"({time.strftime('%Y-%m-%d %H:%M %Z')})")
    result = {"latency": latency, "pending": pending, "import": import_pair,
              "index": index_builds}[args.command](args)
    if args.results:
        args.results.write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
