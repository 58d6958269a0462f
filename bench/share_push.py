#!/usr/bin/env python3
"""Push to the shared PostgreSQL store (docs/share.md): turns/s of a first push, a no-change push, and
a push after a few turns changed, each against a reference measured in the same run.

    nice -n 10 .venv/bin/python bench/share_push.py --turns 20000 [--runs 3]

A local store of ``--turns`` turns is written as the sync writes it (rows, docs, index and its log),
with texts of bench/textpool.py (user 20..600 characters, replies 100..4000: the corpus of
bench/generate.py). A PostgreSQL server (Debian's binaries, tests/share/pgserver.py) is started in a
temporary directory, with pimem's schema, roles and row-level security; the push runs as a member.

References, same server, same run:
* ``COPY`` of the same turns, their raw texts lowered and tokenized beforehand, into a table with the
  same columns and indexes (no RLS, no gate, no local reads): the floor of what PostgreSQL itself costs;
* the gate and the tokenizer alone (Python, no database), in CPU seconds of this process, against the
  push's own CPU seconds: where pimem's side of the time goes (wall-clock times on a shared machine
  move with its load; the ratios move less).
"""

from __future__ import annotations

import argparse
import hashlib
import os
import random
import statistics
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "bench"))
sys.path.insert(0, str(REPO / "tests"))

import psycopg  # noqa: E402

from pimem.share import gate  # noqa: E402
from pimem.share.db import apply_init  # noqa: E402
from pimem.share.push import push  # noqa: E402
from pimem.share.state import ShareConfig  # noqa: E402
from pimem.words import tokens_many  # noqa: E402
from share.local import Turn, write  # noqa: E402
from share.pgserver import running_server  # noqa: E402
from textpool import TextPool  # noqa: E402

FOLDER = "/work/proj"


def corpus(turns: int, seed: int) -> list[Turn]:
    pool = TextPool(seed)
    rng = random.Random(seed)
    start = 1_750_000_000_000
    return [Turn(f"t{n:08d}", f"s{n // 25}", FOLDER if n % 10 else f"{FOLDER}/sub", pool.text(rng, 20, 600, 0.05),
                 pool.text(rng, 100, 4000, 0.05), start + n * 7_000) for n in range(turns)]


def reference_copy(conninfo: str, turns: list[Turn]) -> float:
    """COPY of the same rows (lowered and tokenized before the clock starts) into a twin of pimem.turns."""
    users = tokens_many([t.user for t in turns])
    replies = tokens_many([t.reply for t in turns])
    rows = [("m", t.turn_id, t.session, 0, t.source, t.cwd, datetime.fromtimestamp(t.ts / 1000, UTC), t.user,
             t.reply, t.user.lower(), t.reply.lower(), users[i], replies[i], len(t.user), len(t.reply), list(t.tools),
             hashlib.blake2b((t.user + t.reply).encode(), digest_size=16).hexdigest()) for i, t in enumerate(turns)]
    columns = ("machine, doc_key, session_id, turn_index, source, cwd, ts, user_text, reply_text, user_lower, "
               "reply_lower, user_words, reply_words, user_chars, reply_chars, tools, content_hash")
    with psycopg.connect(conninfo, autocommit=True) as conn:
        conn.execute("DROP TABLE IF EXISTS public.ref_turns")
        conn.execute("CREATE TABLE public.ref_turns (LIKE pimem.turns INCLUDING ALL)")
        start = time.perf_counter()
        statement = f"COPY public.ref_turns ({columns}) FROM STDIN"
        with conn.transaction(), conn.cursor() as cur, cur.copy(statement) as copy:
            for row in rows:
                copy.write_row(row)
        return time.perf_counter() - start


def gate_only(turns: list[Turn]) -> float:
    start = time.process_time()
    gated = [(gate.gate_text(t.user).text, gate.gate_text(t.reply).text) for t in turns]
    tokens_many([g[0] for g in gated] + [g[1] for g in gated])
    return time.process_time() - start


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--turns", type=int, default=20_000)
    parser.add_argument("--runs", type=int, default=3, help="runs of each timed push (medians)")
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args(argv)

    print(f"`nice -n 10 .venv/bin/python bench/share_push.py --turns {args.turns} --runs {args.runs}`  ")
    print(f"machine: {os.cpu_count()} cores, load {os.getloadavg()[0]:.1f} at start; PostgreSQL: Debian, "
          "fsync off (temporary server)\n")
    turns = corpus(args.turns, args.seed)
    chars = sum(len(t.user) + len(t.reply) for t in turns)
    with tempfile.TemporaryDirectory(prefix="pimem-bench-") as tmp:
        base = Path(tmp)
        base.chmod(0o755)
        with running_server(base / "pg") as server:
            full, first_rate, again, changed, refs, gates, cpus = [], [], [], [], [], [], []
            for run in range(args.runs):
                dbname = server.new_database()
                admin = server.conninfo(dbname=dbname)
                apply_init(admin, members=("alice",))
                store = base / f"store{run}" / "memory.db"
                write(store, turns)
                cfg = ShareConfig(conninfo=server.conninfo(user="alice", dbname=dbname), machine="m",
                                  folders=(FOLDER,))
                cpu = time.process_time()
                stats = push(store, cfg)
                cpus.append(time.process_time() - cpu)
                assert stats.sent + stats.held == len(turns), stats
                full.append(stats.duration_ms / 1000)
                first_rate.append(stats.sent / (stats.duration_ms / 1000))
                start = time.perf_counter()
                none = push(store, cfg)
                again.append(time.perf_counter() - start)
                assert none.sent == 0 and not none.full
                edited = [Turn(t.turn_id, t.session, t.cwd, t.user, t.reply + " (edited)", t.ts) for t in turns[:10]]
                write(store, edited)
                start = time.perf_counter()
                some = push(store, cfg)
                changed.append(time.perf_counter() - start)
                assert some.sent + some.held == 10, some
                refs.append(reference_copy(admin, turns))
                gates.append(gate_only(turns))
                held = stats.held
    med = statistics.median
    ref_rate = len(turns) / med(refs)
    print(f"corpus: {len(turns):,} turns, {chars / len(turns):,.0f} characters per turn; {held} held by the gate\n")
    print("| measure | median | reference (same run) | ratio |")
    print("|---|---|---|---|")
    print(f"| first push, turns/s | {med(first_rate):,.0f} | COPY of the same rows: {ref_rate:,.0f} turns/s | "
          f"{ref_rate / med(first_rate):.1f}x slower |")
    print(f"| first push, s (wall) | {med(full):.2f} | | |")
    print(f"| first push, CPU s of the pimem process | {med(cpus):.2f} | gate + tokenizer alone, CPU s: "
          f"{med(gates):.2f} | {med(gates) / med(cpus):.0%} of it |")
    print(f"| no-change push, s | {med(again):.3f} | target 0.5 s | |")
    print(f"| push after 10 turns changed, s | {med(changed):.3f} | | |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
