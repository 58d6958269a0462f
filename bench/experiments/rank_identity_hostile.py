#!/usr/bin/env python3
"""Experiment (round q9): ``ranking.rank`` of this worktree against a reference revision's on HOSTILE
stores and questions, built here (rank_identity.py runs real questions on real stores; this one the
corners): empty questions, stop words only, CJK, identifiers, a word in every doc, questions longer
than MAX_QUERY_WORDS, a store whose word index lags (turns pending, a session grown after its build),
deleted and re-imported sessions (their old postings left in the index), sessions at a day's first and
last doc keys and sessions of one day interleaved, filters by agent and folder, pages beyond the first;
each under several cuts (READ_BUDGET, CANDIDATE_SESSIONS, CHECKED_SESSIONS small, so that the commoner
words are checked, the cuts fall among ties and pages reach past the pool) and with and without the
per-process doc map. Every page must be the same: sessions, best turns, scores and best-turn scores
exactly, matched words.

    .venv/bin/python bench/experiments/rank_identity_hostile.py --before 6eaaddb
    .venv/bin/python bench/experiments/rank_identity_hostile.py --before 3142944 --no-fused-head

(``--no-fused-head``: this worktree's ranking with FUSED_HEAD off, for a reference from before it.)
"""

from __future__ import annotations

import argparse
import itertools
import json
import random
import sqlite3
import sys
import tempfile
from pathlib import Path
from types import ModuleType
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE), str(HERE.parents[1] / "tests")]

from rank_identity import load_revision, recorder  # noqa: E402

from pimem import index  # noqa: E402
from pimem.recall import docmap, make_query, ranking  # noqa: E402
from pimem.recall.freetext import _shortlist, parse_text, stop_words  # noqa: E402
from pimem.recall.query import RecallError  # noqa: E402
from pimem.store import connect, transaction  # noqa: E402
from recall.test_ranking import _session  # noqa: E402

DAY = 86_400_000
START = 1_700_006_400_000 - 1_700_006_400_000 % DAY   # a day's first millisecond
VOCABULARY = ["flamingo", "payroll", "invoice", "kernel", "sister", "garden", "cache", "ledger", "deploy",
              "rollback", "parser", "token", "budget", "portland", "retriever", "migration", "widget"]
CJK = ["缓存", "锁", "数据库", "迁移", "キャッシュ", "ロック", "서버"]
IDENTIFIERS = ["parse_config", "getUserName", "os.path.join", "k8s", "utf-8", "v1.2.3", "__init__", "a_b", "x86_64"]


def _text(rng: random.Random, size: int) -> str:
    parts: list[str] = []
    for _ in range(size):
        pick = rng.random()
        if pick < 0.6:
            parts.append(rng.choice(VOCABULARY))
        elif pick < 0.72:
            parts.append(rng.choice(CJK))
        elif pick < 0.84:
            parts.append(rng.choice(IDENTIFIERS))
        elif pick < 0.92:
            parts.append(str(rng.randrange(100)))
        else:
            parts.append(rng.choice(["the", "of", "and", "what", "how", "many", "at", "3pm", "on", "monday"]))
    return " ".join(parts)


def _write(conn: sqlite3.Connection, session_id: str, turns: list[tuple[str, str]], start: int, source: str,
           cwd: str) -> None:
    """``turns`` written to the session, the n-th of it at ``start`` + n minutes, not indexed yet."""
    _session(conn, session_id, turns, source=source, cwd=cwd, start=start, build=False)


def build_store(path: Path, seed: int) -> sqlite3.Connection:
    """Sessions over 12 days, several a day and interleaved (their turns written alternately, so their
    doc keys are within CHECK_GAP of one another or not), one at each day's edge, some huge, some empty
    texts; every doc holds ``widget``; three sessions deleted and two of them written again; the newest
    sessions and the growth of an old one left pending (not in the word index)."""
    rng = random.Random(seed)
    conn = connect(path)
    sources = ["pi", "claude", "codex"]
    cwds = ["/w", "/w/sub", "/other", "/w2"]
    number = 0
    for day in range(12):
        base = START + day * DAY
        # a session at the day's very first millisecond, and one at its last
        _write(conn, f"edge{day}a", [(_text(rng, 8) + " widget", _text(rng, 5))], base, "pi", "/w")
        count = rng.randrange(6, 30)
        sessions = [(f"s{number + k}", rng.choice(sources), rng.choice(cwds)) for k in range(count)]
        number += count
        lengths = {sid: rng.randrange(1, 14) for sid, _, _ in sessions}
        # interleaved: one turn of each session in turn, written one at a time
        for step in range(max(lengths.values())):
            for sid, source, cwd in sessions:
                if step < lengths[sid]:
                    size = rng.choice([0, 3, 8, 20, 400]) if rng.random() < 0.1 else rng.randrange(2, 15)
                    user = (_text(rng, size) + " widget").strip()
                    reply = _text(rng, rng.randrange(0, 60)) + " widget"
                    _write(conn, sid, [(user, reply)], base + 3_600_000, source, cwd)
        _write(conn, f"edge{day}z", [(_text(rng, 8) + " widget", _text(rng, 5))], base + DAY - 1, "codex", "/other")
    index.build_pending(conn)
    # deleted sessions (their postings stay in the index), two written again (new docs, same ids)
    for sid in ("s3", "s10", "s20"):
        turns = conn.execute("SELECT user_text, reply_text, ts FROM turns WHERE session_id = ? ORDER BY turn_index",
                             (sid,)).fetchall()
        with transaction(conn):
            conn.execute("DELETE FROM turns WHERE session_id = ?", (sid,))
            index.reconcile(conn)
        if sid != "s20" and turns:
            _write(conn, sid, [(str(u) + " flamingo", str(r)) for u, r, _ in turns], int(turns[0][2]), "pi", "/w")
    index.build_pending(conn)
    # lagging: an old session grown, and new sessions, none indexed
    _write(conn, "s5", [(_text(rng, 6) + " widget payroll", _text(rng, 9))], START + 3_600_000, "pi", "/w")
    for k in range(6):
        _write(conn, f"late{k}", [(_text(rng, 10) + " widget", _text(rng, 10))], START + 11 * DAY + 7_200_000 + k,
               rng.choice(sources), rng.choice(cwds))
    return conn


QUESTIONS = [
    "", "   ", "the of and what", "?!", "widget", "widget widget widget", "flamingo payroll in the garden ledger",
    "缓存 锁", "数据库迁移", "キャッシュ", "서버", "parse_config getUserName", "os.path.join utf-8 v1.2.3",
    "__init__ a_b x86_64 k8s", "how many invoices at 3pm on monday", "what time did I deploy the rollback",
    "zzzunknownword", "widget zzzunknownword", " ".join(VOCABULARY * 3), " ".join(VOCABULARY + CJK + IDENTIFIERS),
    "flamingo flamingo payroll", "Portland retriever sister", "12 37 99", "token budget parser kernel cache",
]

CUTS: list[dict[str, int]] = [
    {},
    {"READ_BUDGET": 40, "CANDIDATE_SESSIONS": 7, "CHECKED_SESSIONS": 5, "CANDIDATE_TURNS": 13},
    {"READ_BUDGET": 1, "CANDIDATE_SESSIONS": 30, "CHECKED_SESSIONS": 200, "PASSAGE_SESSIONS": 3},
    {"READ_BUDGET": 200, "CHECKED_SESSIONS": 1, "PENDING_SCORED": 3, "CANDIDATE_TURNS": 2},
]
PAGES = [(10, 0), (50, 0), (50, 50), (7, 140), (20, 980)]
FILTERS: list[tuple[frozenset[str] | None, str | None]] = [
    (None, None), (frozenset({"pi"}), None), (None, "/w"), (frozenset({"codex", "claude"}), "/other")]


def answers(modules: dict[str, ModuleType], pages: dict[str, list[Any]], conn: sqlite3.Connection, text: str,
            limit: int, offset: int, sources: frozenset[str] | None, cwd: str | None) -> dict[str, Any]:
    """Each revision's page for one question: what it ranked on the page, and the rows it gave."""
    try:
        found = parse_text(text)
    except RecallError:   # refused before ranking: rank no word at all
        found = []
    given: dict[str, Any] = {}
    for name, module in modules.items():
        module._RANKED.clear()
        qwords = module.query_words(_shortlist(list(found)), stop_words())
        query = make_query([c.term for c in found[:8]] or ["x"], limit, sources, cwd, offset)
        rows = module.rank(conn, qwords, query).rows
        given[name] = ([p for p in pages[name] if p], [(r.session_id, r.turn_id, r.hits, r.matched) for r in rows])
        pages[name].clear()
    return given


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--before", default="6eaaddb")
    parser.add_argument("--seeds", type=int, default=2)
    parser.add_argument("--no-fused-head", action="store_true")
    parser.add_argument("--check-gaps", default="256,0,1,100000000",
                        help="this worktree's CHECK_GAP values tried (the reference has none)")
    args = parser.parse_args()
    if args.no_fused_head:
        ranking.FUSED_HEAD = False
    compared = nonempty = 0
    differ: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory() as folder:
        modules = {"before": load_revision(args.before, Path(folder)), "after": ranking}
        pages = {name: recorder(module) for name, module in modules.items()}
        for seed in range(args.seeds):
            conn = build_store(Path(folder) / f"memory{seed}.db", seed)
            print(json.dumps({"seed": seed, "sessions": conn.execute("SELECT count(*) FROM sessions").fetchone()[0],
                              "turns": conn.execute("SELECT count(*) FROM turns").fetchone()[0],
                              "pending": ranking.pending_backlog(conn)}), file=sys.stderr)
            for keep_docs, cut, gap in itertools.product((False, True), CUTS, map(int, args.check_gaps.split(","))):
                (docmap.enable if keep_docs else docmap.disable)()
                ranking.CHECK_GAP = gap
                saved = {(name, n): getattr(m, n) for name, m in modules.items() for n in cut}
                for m in modules.values():
                    for n, v in cut.items():
                        setattr(m, n, v)
                for text, (limit, offset), (sources, cwd) in itertools.product(QUESTIONS, PAGES, FILTERS):
                    given = answers(modules, pages, conn, text, limit, offset, sources, cwd)
                    compared += 1
                    nonempty += bool(given["after"][1])
                    if given["before"] != given["after"]:
                        differ.append({"seed": seed, "docmap": keep_docs, "cut": cut, "gap": gap, "text": text,
                                       "page": (limit, offset), "sources": sorted(sources) if sources else None,
                                       "cwd": cwd})
                for (name, n), value in saved.items():
                    setattr(modules[name], n, value)
            conn.close()
    docmap.disable()
    print(json.dumps({"before": args.before, "fused_head": ranking.FUSED_HEAD, "compared": compared,
                      "nonempty": nonempty, "differ": len(differ), "first_differences": differ[:10]}, indent=1))
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
