"""Recall on the shared PostgreSQL store (issue 24): team recall of the 1-8 entity shapes and free text,
p50/p95, in the same run as local recall of the same shapes on a local store of the same turns (ratio),
every shared answer checked against the plain oracle on the shared store.

    .venv/bin/python bench/share_recall.py --members 10 --turns 20000 [--json out.json]

A real PostgreSQL (the tests' server: tests/share/pgserver.py, Debian's initdb/pg_ctl) is started in a
temporary folder; ``--members`` members each push ``--turns`` turns from their machine (rows written
as the push writes them: redacted text, ``str.lower`` columns, the word index's tokens; through COPY,
the push's own path, without the gate's cost, which bench/ does not measure here). The local store holds
the same turns (one store, as if one person had them all), indexed as ``pimem sync`` indexes it.

Texts come from bench/textpool.py (prose, code, paths, CJK; the planted entities of bench/queries.py at
their rates). Queries: for k = 1..8, ``--variants`` rotations of the planted entities (the P-bar shapes:
rare, 1 %, 3 %, 20 %, wildcards, CJK), each run ``--repeat`` times; free text: questions built from
the pool's words and the planted ones.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))
sys.path.insert(0, str(ROOT / "tests"))

import psycopg  # noqa: E402

from pimem.recall import make_query, recall_page  # noqa: E402
from pimem.recall.freetext import _shortlist, candidates, recall_conversations  # noqa: E402
from pimem.recall.ranking import query_words  # noqa: E402
from pimem.share import recall as shared  # noqa: E402
from pimem.share.db import apply_init  # noqa: E402
from pimem.share.schema import BASE_DDL  # noqa: E402
from pimem.words import tokens_many  # noqa: E402
from textpool import PLANTS, TextPool  # noqa: E402

CJK_SHARE = 0.10   # as bench/generate.py

FOLDERS = ("/home/dev/src/webshop", "/home/dev/src/api", "/home/dev/notes", "/srv/infra", "/home/dev/src/ml")
ENTITY_ORDER = ("flamingo", "payroll", "zq_rare_ident_4417", "100%", "slugify_title", "缓存", "a_b", "cache", "锁",
                "C:\\path\\file")
QUESTIONS = ("how did we fix the flamingo payroll bug", "where is the cache invalidation for the webshop",
             "slugify title unicode handling", "payroll export to csv failed", "the flamingo deploy last spring",
             "缓存 锁 问题", "why was the cache so slow", "rate limit retries in the api client")
COLUMNS = ("machine", "doc_key", "session_id", "turn_index", "source", "cwd", "ts", "user_text", "reply_text",
           "user_lower", "reply_lower", "user_words", "reply_words", "user_chars", "reply_chars", "tools",
           "content_hash")
TYPES = ("text", "text", "text", "int4", "text", "text", "timestamptz", "text", "text", "text", "text", "text[]",
         "text[]", "int4", "int4", "text[]", "text")


def make_turns(members: int, per_member: int, seed: int) -> list[tuple[str, str, str, str, str, str, int]]:
    """(member, machine, doc_key, session, cwd, user, reply, ts) for every member's turns."""
    pool = TextPool(seed)
    rng = random.Random(seed)
    total = members * per_member
    plants: dict[int, list[tuple[str, str, bool]]] = {}
    for plant in PLANTS:
        count = plant.count or max(1, round(plant.rate * total))
        for position in rng.sample(range(total), min(count, total)):
            plants.setdefault(position, []).append((rng.choice(plant.variants or (plant.entity,)),
                                                    rng.choice(("user", "reply", "both")), plant.cjk))
    turns = []
    for n in range(total):
        member = n % members
        user = pool.text(rng, 20, 400, CJK_SHARE)
        reply = pool.text(rng, 60, 1200, CJK_SHARE)
        for spelling, where, cjk in plants.get(n, ()):
            if where in ("user", "both"):
                user = pool.plant(rng, user, spelling, cjk)
            if where in ("reply", "both"):
                reply = pool.plant(rng, reply, spelling, cjk)
        index = n // members
        session = f"s{index // 12}"
        turns.append((f"m{member:02d}", f"box{member:02d}", f"m{member:02d}-{index:07d}", session,
                      FOLDERS[(index // 12) % len(FOLDERS)], user, reply, 1_700_000_000_000 + n * 7_000))
    return turns  # type: ignore[return-value]


def load_shared(conninfo_of: Any, turns: list[Any], batch: int = 5_000) -> float:
    started = time.perf_counter()
    by_member: dict[str, list[Any]] = {}
    for turn in turns:
        by_member.setdefault(turn[0], []).append(turn)
    for member, rows in by_member.items():
        with psycopg.connect(conninfo_of(member)) as conn:
            # As the push does: COPY into a temporary table (COPY into a table under row-level security is
            # refused), then one INSERT ... SELECT per batch.
            conn.execute("CREATE TEMP TABLE stage (LIKE pimem.turns INCLUDING DEFAULTS) ON COMMIT DELETE ROWS")
            for start in range(0, len(rows), batch):
                part = rows[start:start + batch]
                words = tokens_many([r[5] for r in part] + [r[6] for r in part])
                with conn.cursor() as cur, cur.copy(f"COPY stage ({', '.join(COLUMNS)}) FROM STDIN") as copy:
                    copy.set_types(list(TYPES))
                    for position, (_m, machine, doc_key, session, cwd, user, reply, ts) in enumerate(part):
                        copy.write_row((machine, doc_key, session, 0, "claude", cwd,
                                        datetime.fromtimestamp(ts / 1000, UTC), user, reply, user.lower(),
                                        reply.lower(), words[position], words[len(part) + position], len(user),
                                        len(reply), ["Bash"], "h"))
                conn.execute(f"INSERT INTO pimem.turns ({', '.join(COLUMNS)}) SELECT {', '.join(COLUMNS)} FROM stage")
                conn.commit()
    return time.perf_counter() - started


def load_local(db: Path, turns: list[Any]) -> float:
    from share.local import Turn, write

    started = time.perf_counter()
    write(db, [Turn(doc_key, f"{machine}:{session}", cwd, user, reply, ts, "claude")
               for _m, machine, doc_key, session, cwd, user, reply, ts in turns])
    return time.perf_counter() - started


def shapes(variants: int) -> list[tuple[int, tuple[str, ...]]]:
    chosen = []
    for k in range(1, 9):
        for v in range(variants):
            rotated = ENTITY_ORDER[v:] + ENTITY_ORDER[:v]
            chosen.append((k, tuple(rotated[:k])))
    return chosen


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--members", type=int, default=10)
    parser.add_argument("--turns", type=int, default=20_000, help="turns per member")
    parser.add_argument("--variants", type=int, default=3)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--seed", type=int, default=24)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args(argv)

    from share.pgserver import PgServer, _run_as, find_bindir

    bindir = find_bindir()
    if bindir is None:
        sys.exit("PostgreSQL server binaries not found: scripts/setup-postgres.sh")
    report: dict[str, Any] = {"members": args.members, "turnsPerMember": args.turns,
                              "rows": args.members * args.turns}
    with tempfile.TemporaryDirectory(prefix="pimem-bench-pg-") as base:
        Path(base).chmod(0o755)
        server = PgServer(bindir, Path(base) / "pg", _run_as())
        server.init()
        server.start()
        try:
            dbname = server.new_database()
            admin = server.conninfo(dbname=dbname)
            members = tuple(f"m{n:02d}" for n in range(args.members))
            apply_init(admin, members=(*members, "reader"))
            t0 = time.perf_counter()
            turns = make_turns(args.members, args.turns, args.seed)
            report["generateS"] = round(time.perf_counter() - t0, 1)
            # A bulk load: the indexes are built once afterwards (init creates the missing ones), not per row.
            with psycopg.connect(admin, autocommit=True) as conn:
                for name in ("turns_user_lower_trgm", "turns_reply_lower_trgm", "turns_user_words",
                             "turns_reply_words"):
                    conn.execute(f"DROP INDEX pimem.{name}")
            report["loadSharedS"] = round(load_shared(lambda m: server.conninfo(user=m, dbname=dbname), turns), 1)
            t0 = time.perf_counter()
            with psycopg.connect(admin, autocommit=True) as conn:
                for statement in BASE_DDL.split(";"):
                    if "CREATE INDEX" in statement:
                        conn.execute(statement.strip())
                indexes = conn.execute("SELECT count(*) FROM pg_indexes WHERE schemaname = 'pimem' "
                                       "AND tablename = 'turns'").fetchone()
                assert indexes is not None and indexes[0] >= 8, indexes   # the primary key + 7
            report["indexSharedS"] = round(time.perf_counter() - t0, 1)
            with psycopg.connect(admin, autocommit=True) as conn:
                conn.execute("VACUUM ANALYZE pimem.turns")
                size = conn.execute("SELECT pg_size_pretty(pg_total_relation_size('pimem.turns'))").fetchone()
                report["sharedSize"] = size[0] if size else None
            local_db = Path(base) / "local" / "memory.db"
            local_db.parent.mkdir()
            report["loadLocalS"] = round(load_local(local_db, turns), 1)
            del turns
            report.update(measure(server.conninfo(user="reader", dbname=dbname), local_db, args))
        finally:
            server.stop("immediate")
    print(json.dumps(report, indent=2, ensure_ascii=False))
    if args.json:
        args.json.write_text(json.dumps(report, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    return 0


def measure(conninfo: str, local_db: Path, args: argparse.Namespace) -> dict[str, Any]:
    from pimem.store import connect as store_connect

    local = store_connect(local_db, create=False, for_writing=False)
    out: dict[str, Any] = {}
    with psycopg.connect(conninfo, autocommit=True) as pg:
        who = shared.Who()
        shared.store_stats(pg, "bench")    # read once per process, as in use (a minute's cache)
        entity_shared: dict[int, list[float]] = {}
        entity_local: dict[int, list[float]] = {}
        mismatches = 0
        for k, entities in shapes(args.variants):
            query = make_query(list(entities), 5)
            expected = None
            for _ in range(args.repeat):
                t = time.perf_counter()
                rows = shared.entity_rows(pg, query, who, query.limit)
                entity_shared.setdefault(k, []).append((time.perf_counter() - t) * 1000)
                t = time.perf_counter()
                recall_page(local, query)
                entity_local.setdefault(k, []).append((time.perf_counter() - t) * 1000)
                if expected is None:
                    expected = plain_sql_oracle(pg, query)
                    if [(r.author, r.machine, r.turn_id, r.hits) for r in rows] != expected:
                        mismatches += 1
        all_shared = [v for values in entity_shared.values() for v in values]
        all_local = [v for values in entity_local.values() for v in values]
        out["entities"] = {
            "byShape": {str(k): {"sharedP95Ms": round(pct(entity_shared[k], 0.95), 1),
                                 "localP95Ms": round(pct(entity_local[k], 0.95), 1)} for k in sorted(entity_shared)},
            "sharedP50Ms": round(statistics.median(all_shared), 1), "sharedP95Ms": round(pct(all_shared, 0.95), 1),
            "localP50Ms": round(statistics.median(all_local), 2), "localP95Ms": round(pct(all_local, 0.95), 2),
            "p95Ratio": round(pct(all_shared, 0.95) / max(pct(all_local, 0.95), 1e-6), 1),
            "queries": len(all_shared), "oracleMismatches": mismatches,
        }
        text_shared: list[float] = []
        text_local: list[float] = []
        text_mismatches = 0
        for question in QUESTIONS:
            found = candidates(question)
            qwords = query_words(_shortlist(list(found)))
            base = make_query(["x"], 5)
            first = None
            for _ in range(args.repeat):
                t = time.perf_counter()
                page = shared.text_page(pg, qwords, base, who, "bench")
                text_shared.append((time.perf_counter() - t) * 1000)
                first = first or page
                t = time.perf_counter()
                recall_conversations(local, found, base)
                text_local.append((time.perf_counter() - t) * 1000)
            oracle = shared.text_oracle(pg, qwords, base, who, "bench")
            got = [(r.author, r.machine, r.turn_id) for r in first.rows] if first else []
            if got != [(r.author, r.machine, r.turn_id) for r in oracle.rows]:
                text_mismatches += 1
        out["freeText"] = {
            "sharedP50Ms": round(statistics.median(text_shared), 1), "sharedP95Ms": round(pct(text_shared, 0.95), 1),
            "localP50Ms": round(statistics.median(text_local), 1), "localP95Ms": round(pct(text_local, 0.95), 1),
            "p95Ratio": round(pct(text_shared, 0.95) / max(pct(text_local, 0.95), 1e-6), 1),
            "queries": len(text_shared), "oracleMismatches": text_mismatches,
        }
    local.close()
    return out


def plain_sql_oracle(pg: psycopg.Connection[tuple[Any, ...]], query: Any) -> list[tuple[Any, ...]]:
    """Every row scored by plain SQL on the stored lowered texts (strpos: no LIKE, no index), ordered
    and collapsed as recall's semantics say: the "plain SQL oracle on the shared store"."""
    entities = [e.lower() for e in query.entities]
    score = " + ".join("(CASE WHEN strpos(user_lower, %s) > 0 THEN 2 ELSE 0 END + "
                       "CASE WHEN strpos(reply_lower, %s) > 0 THEN 1 ELSE 0 END)" for _ in entities)
    params: list[Any] = [e for e in entities for _ in range(2)]
    pg.execute("SET enable_bitmapscan = off")
    try:
        rows = pg.execute(f"SELECT author, machine, doc_key, score, md5(user_text), md5(reply_text), ts FROM "
                          f"(SELECT *, ({score}) AS score FROM pimem.turns) t WHERE score > 0 "
                          "ORDER BY score DESC, ts DESC, doc_key, author, machine", params).fetchall()
    finally:
        pg.execute("RESET enable_bitmapscan")
    seen: set[tuple[Any, ...]] = set()
    chosen = []
    for author, machine, doc_key, hits, user, reply, ts in rows:
        if (user, reply, ts) in seen:
            continue
        seen.add((user, reply, ts))
        chosen.append((author, machine, doc_key, hits))
        if len(chosen) == query.limit:
            break
    return chosen


if __name__ == "__main__":
    sys.exit(main())
