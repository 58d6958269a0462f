"""Recall on the shared PostgreSQL store (issue 24): team recall of the 1-8 entity shapes and free text,
p50/p95, in the same run as local recall of the same shapes on a local store of the same turns (ratio),
every shared answer checked against the plain oracle on the shared store.

    .venv/bin/python bench/share_recall.py --members 10 --turns 20000 [--data DIR] [--no-local] [--text-only]
                                            [--json out.json]
    .venv/bin/python bench/share_recall.py --trigger-cost 10000   # the counts' and postings' triggers, push writes

A real PostgreSQL (the tests' server: tests/share/pgserver.py, Debian's initdb/pg_ctl) is started in a
temporary folder (or kept in ``--data DIR`` and measured again on the next run); ``--members`` members
each have ``--turns`` turns from their machine, the rows the push writes (``str.lower`` columns, the word
index's tokens), bulk-loaded (:func:`load_shared`: one member's texts made and tokenized once and given
to every member under their own ids and times, binary COPY, indexes and word counts built after the
load; the push's own speed is bench/share_push.py's). The local store holds the same turns (one store,
as if one person had them all), indexed as ``pimem sync`` indexes it (``--no-local``: none).

Texts come from bench/textpool.py (prose, code, paths, CJK; the planted entities of bench/queries.py at
their rates). Queries: for k = 1..8, ``--variants`` rotations of the planted entities (the P-bar shapes:
rare, 1 %, 3 %, 20 %, wildcards, CJK), each run ``--repeat`` times; free text: questions built from
the pool's words and the planted ones.
"""

from __future__ import annotations

import argparse
import contextlib
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
from pimem.share.schema import LOWERED_REBUILD, WORD_DOCS_REBUILD, row_grams  # noqa: E402
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
           "content_hash", "grams")
TYPES = ("text", "text", "text", "int4", "text", "text", "timestamptz", "text", "text", "text", "text", "text[]",
         "text[]", "int4", "int4", "text[]", "text", "text[]")


SharedTurn = tuple[str, str, str, str, str, str, str, int]   # (member, machine, doc_key, session, cwd, user, reply, ts)


def make_template(per_member: int, members: int, seed: int) -> list[tuple[str, str]]:
    """One member's ``per_member`` (user, reply) texts with the planted entities at their rates. Every
    member gets these texts under their own ids and times (so a member's rows are not copies of another's:
    the times differ): generating and tokenizing them once is what makes 2M rows loadable."""
    pool = TextPool(seed)
    rng = random.Random(seed)
    plants: dict[int, list[tuple[str, str, bool]]] = {}
    for plant in PLANTS:
        # A counted (rare) plant keeps its store-wide count: spread over the members' copies.
        count = max(1, plant.count // members) if plant.count else max(1, round(plant.rate * per_member))
        for position in rng.sample(range(per_member), min(count, per_member)):
            plants.setdefault(position, []).append((rng.choice(plant.variants or (plant.entity,)),
                                                    rng.choice(("user", "reply", "both")), plant.cjk))
    texts = []
    for n in range(per_member):
        user = pool.text(rng, 20, 400, CJK_SHARE)
        reply = pool.text(rng, 60, 1200, CJK_SHARE)
        for spelling, where, cjk in plants.get(n, ()):
            if where in ("user", "both"):
                user = pool.plant(rng, user, spelling, cjk)
            if where in ("reply", "both"):
                reply = pool.plant(rng, reply, spelling, cjk)
        texts.append((user, reply))
    return texts


def member_turns(template: list[tuple[str, str]], members: int, member: int) -> list[SharedTurn]:
    """``member``'s turns: the template's texts, the member's ids, times interleaved with the others'."""
    turns: list[SharedTurn] = []
    for index, (user, reply) in enumerate(template):
        n = index * members + member
        turns.append((f"m{member:02d}", f"box{member:02d}", f"m{member:02d}-{index:07d}", f"s{index // 12}",
                      FOLDERS[(index // 12) % len(FOLDERS)], user, reply, 1_700_000_000_000 + n * 7_000))
    return turns


def load_shared(admin: str, template: list[tuple[str, str]], members: int, batch: int = 20_000) -> dict[str, float]:
    """The rows the push writes (redacted text, ``str.lower`` columns, the word index's tokens), as a bulk
    load by the admin: the template's lowered texts and tokens computed once and reused for every member,
    binary COPY straight into the table (the push stages and upserts: its speed is bench/share_push.py's),
    the word counts' triggers off during the load and the counts rebuilt after it, as the indexes are."""
    timings: dict[str, float] = {}
    t0 = time.perf_counter()
    users = [u for u, _ in template]
    replies = [r for _, r in template]
    words = tokens_many(users + replies)
    lowered = [(u.lower(), r.lower()) for u, r in template]
    grams = [row_grams(u, r) for u, r in lowered]       # as the push sends them (layout 5)
    timings["tokenizeS"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    per_member = len(template)
    with psycopg.connect(admin) as conn:
        conn.execute("ALTER TABLE pimem.turns DISABLE TRIGGER USER")
        conn.commit()
        for member in range(members):
            turns = member_turns(template, members, member)
            for start in range(0, per_member, batch):
                with conn.cursor() as cur, cur.copy(f"COPY pimem.turns (author, {', '.join(COLUMNS)}) "
                                                    "FROM STDIN (FORMAT BINARY)") as copy:
                    copy.set_types(["text", *TYPES])
                    for index in range(start, min(start + batch, per_member)):
                        author, machine, doc_key, session, cwd, user, reply, ts = turns[index]
                        copy.write_row((author, machine, doc_key, session, 0, "claude", cwd,
                                        datetime.fromtimestamp(ts / 1000, UTC), user, reply, lowered[index][0],
                                        lowered[index][1], words[index], words[per_member + index], len(user),
                                        len(reply), ["Bash"], "h", grams[index]))
                conn.commit()
        timings["copyS"] = time.perf_counter() - t0
        t0 = time.perf_counter()
        conn.execute("ALTER TABLE pimem.turns ENABLE TRIGGER USER")
        conn.execute(WORD_DOCS_REBUILD.encode())   # the counts of every row, as layout 2's migration makes them
        conn.execute(LOWERED_REBUILD.encode())     # the narrow table of lowered texts, as layout 8's makes it
        conn.commit()
        timings["wordDocsS"] = time.perf_counter() - t0
    return {k: round(v, 1) for k, v in timings.items()}


def trigger_cost(server: Any, count: int, seed: int, runs: int = 3) -> dict[str, Any]:
    """The push's write path alone (its staging COPY and ``INSERT ... ON CONFLICT`` upsert, BATCH_ROWS rows
    per committed transaction, as a member) into a fresh database, with the word-count (layout 2) and
    postings (layout 3) triggers on and off (the admin's ``DISABLE TRIGGER USER``), alternately, ``runs``
    times each: medians."""
    from pimem.share import push as pushing

    template = make_template(count, 1, seed)
    words = tokens_many([u for u, _ in template] + [r for _, r in template])
    rows = [("m", f"t{i}", f"s{i // 12}", 0, "pi", "/w", datetime.fromtimestamp(1_750_000_000 + i, UTC), u, r,
             u.lower(), r.lower(), words[i], words[count + i], len(u), len(r), ["bash"], f"h{i}",
             row_grams(u.lower(), r.lower()))
            for i, (u, r) in enumerate(template)]
    times: dict[str, list[float]] = {"on": [], "off": []}
    for _ in range(runs):
        for mode in ("on", "off"):
            dbname = server.new_database()
            apply_init(server.conninfo(dbname=dbname), members=("m00",))
            if mode == "off":
                with psycopg.connect(server.conninfo(dbname=dbname), autocommit=True) as conn:
                    conn.execute("ALTER TABLE pimem.turns DISABLE TRIGGER USER")
            with psycopg.connect(server.conninfo(user="m00", dbname=dbname)) as conn:
                conn.execute("SET synchronous_commit = on")
                conn.execute(f"CREATE TEMP TABLE {pushing._STAGE} (LIKE pimem.turns INCLUDING DEFAULTS) "
                             "ON COMMIT DELETE ROWS")
                conn.commit()
                started = time.perf_counter()
                for start in range(0, count, pushing.BATCH_ROWS):
                    with conn.cursor() as cur:
                        with cur.copy(f"COPY {pushing._STAGE} ({', '.join(pushing._COLUMNS)}) FROM STDIN") as copy:
                            copy.set_types(list(pushing._TYPES))
                            for row in rows[start:start + pushing.BATCH_ROWS]:
                                copy.write_row(row)
                        cur.execute(pushing._UPSERT)
                    conn.commit()
                times[mode].append(time.perf_counter() - started)
    on, off = statistics.median(times["on"]), statistics.median(times["off"])
    return {"rows": count, "triggersOnRowsPerS": round(count / on), "triggersOffRowsPerS": round(count / off),
            "timeRatio": round(on / off, 2)}


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
    parser.add_argument("--data", type=Path, help="keep the loaded server (and local store) in this folder and "
                        "measure it again on the next run instead of loading (delete it when done)")
    parser.add_argument("--no-local", action="store_true", help="no local store (no local figures, no ratios)")
    parser.add_argument("--text-only", action="store_true", help="measure free text only (no entity shapes)")
    parser.add_argument("--load-only", action="store_true", help="load --data and stop (measure it with "
                        "bench/share_entity_ab.py and bench/share_text_ab.py: at millions of rows every shape's "
                        "oracle here scans the table)")
    parser.add_argument("--trigger-cost", type=int, metavar="ROWS", help="measure only what the word-count and "
                        "postings triggers add to the push's write path, on ROWS rows (see trigger_cost)")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args(argv)

    from share.pgserver import PgServer, _run_as, find_bindir

    bindir = find_bindir()
    if bindir is None:
        sys.exit("PostgreSQL server binaries not found: scripts/setup-postgres.sh")
    if args.trigger_cost:
        with tempfile.TemporaryDirectory(prefix="pimem-bench-pg-") as base:
            Path(base).chmod(0o755)
            server = PgServer(bindir, Path(base) / "pg", _run_as())
            server.init()
            server.start()
            try:
                print(json.dumps(trigger_cost(server, args.trigger_cost, args.seed), indent=2))
            finally:
                server.stop("immediate")
        return 0
    with contextlib.ExitStack() as stack:
        if args.data is None:
            base = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="pimem-bench-pg-")))
        else:
            base = args.data.resolve()
            base.mkdir(parents=True, exist_ok=True)
        base.chmod(0o755)
        server = PgServer(bindir, base / "pg", _run_as())
        info_path = base / "loaded.json"
        loaded = info_path.exists()
        if not loaded:
            server.init()
        server.start()
        try:
            if loaded:
                report = json.loads(info_path.read_text(encoding="utf-8"))
            else:
                report = load(server, base, args)
                info_path.write_text(json.dumps(report, indent=2), encoding="utf-8")
            local_db = None if args.no_local or report.get("localS") is None else base / "local" / "memory.db"
            reader = server.conninfo(user="reader", dbname=report["dbname"])
            if not args.load_only:
                report.update(measure(reader, local_db, args))
        finally:
            server.stop("fast")
    print(json.dumps(report, indent=2, ensure_ascii=False))
    if args.json:
        args.json.write_text(json.dumps(report, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    return 0


def load(server: Any, base: Path, args: argparse.Namespace) -> dict[str, Any]:
    report: dict[str, Any] = {"members": args.members, "turnsPerMember": args.turns,
                              "rows": args.members * args.turns}
    dbname = server.new_database()
    report["dbname"] = dbname
    admin = server.conninfo(dbname=dbname)
    members = tuple(f"m{n:02d}" for n in range(args.members))
    apply_init(admin, members=(*members, "reader"))
    t0 = time.perf_counter()
    template = make_template(args.turns, args.members, args.seed)
    report["generateS"] = round(time.perf_counter() - t0, 1)
    # A bulk load: the text indexes are built once afterwards, not row by row.
    with psycopg.connect(admin, autocommit=True) as conn:
        indexes = [(str(name), str(sql)) for name, sql in conn.execute(
            "SELECT indexname, indexdef FROM pg_indexes WHERE schemaname = 'pimem' AND tablename = 'turns' "
            "AND indexdef LIKE '%USING gin%'")]
        for name, _sql in indexes:
            conn.execute(f"DROP INDEX pimem.{name}")
    report["loadShared"] = load_shared(admin, template, args.members)
    t0 = time.perf_counter()
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute("SET maintenance_work_mem = '1GB'")
        for _name, sql in indexes:
            conn.execute(sql)
    report["indexSharedS"] = round(time.perf_counter() - t0, 1)
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute("VACUUM ANALYZE pimem.turns")
        size = conn.execute("SELECT pg_size_pretty(pg_total_relation_size('pimem.turns'))").fetchone()
        report["sharedSize"] = size[0] if size else None
    if not args.no_local:
        local_db = base / "local" / "memory.db"
        local_db.parent.mkdir(exist_ok=True)
        turns = [turn for member in range(args.members) for turn in member_turns(template, args.members, member)]
        report["localS"] = round(load_local(local_db, turns), 1)
    return report


def measure(conninfo: str, local_db: Path | None, args: argparse.Namespace) -> dict[str, Any]:
    from pimem.store import connect as store_connect

    local = store_connect(local_db, create=False, for_writing=False) if local_db is not None else None
    out: dict[str, Any] = {}
    with psycopg.connect(conninfo, autocommit=True) as pg:
        who = shared.Who()
        shared.store_stats(pg, "bench")    # read once per process, as in use (a minute's cache)
        entity_shared: dict[int, list[float]] = {}
        entity_local: dict[int, list[float]] = {}
        # Entities of 1-2 characters (锁, 缓存, a_b: no trigram of their own) cannot use pg_trgm: their
        # shapes scan the table; the others are read from the index. Reported apart.
        by_kind: dict[str, list[float]] = {"indexed": [], "short": []}
        local_kind: dict[str, list[float]] = {"indexed": [], "short": []}
        mismatches = 0
        for k, entities in shapes(0 if args.text_only else args.variants):
            query = make_query(list(entities), 5)
            expected = None
            for _ in range(args.repeat):
                t = time.perf_counter()
                rows = shared.entity_rows(pg, query, who, query.limit)
                entity_shared.setdefault(k, []).append((time.perf_counter() - t) * 1000)
                kind = "short" if any(not shared.trigram_indexable(e) for e in entities) else "indexed"
                by_kind[kind].append(entity_shared[k][-1])
                if local is not None:
                    t = time.perf_counter()
                    recall_page(local, query)
                    entity_local.setdefault(k, []).append((time.perf_counter() - t) * 1000)
                    local_kind[kind].append(entity_local[k][-1])
                if expected is None:
                    expected = plain_sql_oracle(pg, query)
                    if [(r.author, r.machine, r.turn_id, r.hits) for r in rows] != expected:
                        mismatches += 1
        all_shared = [v for values in entity_shared.values() for v in values]
        all_local = [v for values in entity_local.values() for v in values]
        out["entities"] = {} if args.text_only else {
            "byShape": {str(k): {"sharedP95Ms": round(pct(entity_shared[k], 0.95), 1),
                                 "localP95Ms": p95(entity_local.get(k, []))} for k in sorted(entity_shared)},
            "sharedP50Ms": round(statistics.median(all_shared), 1), "sharedP95Ms": round(pct(all_shared, 0.95), 1),
            "localP50Ms": round(statistics.median(all_local), 2) if all_local else None,
            "localP95Ms": p95(all_local), "p95Ratio": ratio(all_shared, all_local),
            "queries": len(all_shared), "oracleMismatches": mismatches,
            "byKind": {kind: {"queries": len(values), "sharedP95Ms": round(pct(values, 0.95), 1),
                              "localP95Ms": p95(local_kind[kind])}
                       for kind, values in by_kind.items() if values},
        }
        text_shared: list[float] = []
        text_local: list[float] = []
        text_mismatches = budget_changed = 0
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
                if local is not None:
                    t = time.perf_counter()
                    recall_conversations(local, found, base)
                    text_local.append((time.perf_counter() - t) * 1000)
            # The oracle with the budgets of local ranking (what text_page implements at any size), and
            # without them (equal while no budget is reached): how often the budgets changed the answer.
            got = [(r.author, r.machine, r.turn_id, r.hits) for r in first.rows] if first else []
            oracle = shared.text_oracle(pg, qwords, base, who, "bench", budgeted=True)
            text_mismatches += got != [(r.author, r.machine, r.turn_id, r.hits) for r in oracle.rows]
            unbudgeted = shared.text_oracle(pg, qwords, base, who, "bench")
            budget_changed += got != [(r.author, r.machine, r.turn_id, r.hits) for r in unbudgeted.rows]
        out["freeText"] = {
            "sharedP50Ms": round(statistics.median(text_shared), 1), "sharedP95Ms": round(pct(text_shared, 0.95), 1),
            "localP50Ms": round(statistics.median(text_local), 1) if text_local else None,
            "localP95Ms": p95(text_local), "p95Ratio": ratio(text_shared, text_local),
            "queries": len(text_shared), "oracleMismatches": text_mismatches, "budgetChangedAnswers": budget_changed,
        }
    if local is not None:
        local.close()
    return out


def p95(values: list[float]) -> float | None:
    return round(pct(values, 0.95), 1) if values else None


def ratio(shared_ms: list[float], local_ms: list[float]) -> float | None:
    return round(pct(shared_ms, 0.95) / max(pct(local_ms, 0.95), 1e-6), 1) if local_ms else None


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
