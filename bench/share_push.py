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
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, cast

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


def server_cpu(datadir: Path) -> float:
    """CPU seconds the PostgreSQL server has used so far: the postmaster, its live processes, and the
    backends it has reaped. Call it with no connection open (the backends' CPU counts once reaped)."""
    import psutil

    pid = int((datadir / "postmaster.pid").read_text().split()[0])
    main = psutil.Process(pid)
    def client_backends() -> int:
        count = 0
        for child in main.children():
            try:
                count += "[local]" in " ".join(child.cmdline())
            except psutil.Error:       # exiting, or a zombie not reaped yet
                count += 1
        return count

    deadline = time.monotonic() + 10
    while client_backends() and time.monotonic() < deadline:
        time.sleep(0.05)    # a closed connection's backend: once reaped, its CPU is in children_*
    times = main.cpu_times()
    total = times.user + times.system + times.children_user + times.children_system
    for child in main.children(recursive=True):
        try:
            child_times = child.cpu_times()
        except psutil.NoSuchProcess:
            continue
        total += child_times.user + child_times.system
    return float(total)


def corpus(turns: int, seed: int) -> list[Turn]:
    pool = TextPool(seed)
    rng = random.Random(seed)
    start = 1_750_000_000_000
    return [Turn(f"t{n:08d}", f"s{n // 25}", FOLDER if n % 10 else f"{FOLDER}/sub", pool.text(rng, 20, 600, 0.05),
                 pool.text(rng, 100, 4000, 0.05), start + n * 7_000) for n in range(turns)]


def reference_copy(conninfo: str, turns: list[Turn], datadir: Path) -> tuple[float, float]:
    """COPY of the same rows (lowered and tokenized before the clock starts) into a twin of pimem.turns."""
    from pimem.share.schema import row_grams

    users = tokens_many([t.user for t in turns])
    replies = tokens_many([t.reply for t in turns])
    rows = [("m", t.turn_id, t.session, 0, t.source, t.cwd, datetime.fromtimestamp(t.ts / 1000, UTC), t.user,
             t.reply, t.user.lower(), t.reply.lower(), users[i], replies[i], len(t.user), len(t.reply), list(t.tools),
             hashlib.blake2b((t.user + t.reply).encode(), digest_size=16).hexdigest(),
             row_grams(t.user.lower(), t.reply.lower())) for i, t in enumerate(turns)]
    columns = _COLUMNS
    with psycopg.connect(conninfo, autocommit=True) as conn:
        conn.execute("DROP TABLE IF EXISTS public.ref_turns")
        conn.execute("CREATE TABLE public.ref_turns (LIKE pimem.turns INCLUDING ALL)")
    start, cpu = time.perf_counter(), server_cpu(datadir)
    with psycopg.connect(conninfo, autocommit=True) as conn:
        statement = f"COPY public.ref_turns ({columns}) FROM STDIN"
        with conn.transaction(), conn.cursor() as cur, cur.copy(statement) as copy:
            for row in rows:
                copy.write_row(row)
    return time.perf_counter() - start, server_cpu(datadir) - cpu


_COLUMNS = ("machine, doc_key, session_id, turn_index, source, cwd, ts, user_text, reply_text, user_lower, "
            "reply_lower, user_words, reply_words, user_chars, reply_chars, tools, content_hash, grams")
_TYPES = ["text", "text", "text", "int4", "text", "text", "timestamptz", "text", "text", "text", "text", "text[]",
          "text[]", "int4", "int4", "text[]", "text", "text[]"]


def _rows(turns: list[Turn]) -> list[tuple[object, ...]]:
    """The rows of ``turns`` as the push sends them (raw texts: no gate), grams included."""
    from pimem.share.schema import row_grams  # here: this module imports under an older pimem too

    users = tokens_many([t.user for t in turns])
    replies = tokens_many([t.reply for t in turns])
    return [("m", t.turn_id, t.session, 0, "pi", t.cwd, datetime.fromtimestamp(t.ts / 1000, UTC), t.user, t.reply,
             t.user.lower(), t.reply.lower(), users[i], replies[i], 1, 1, [], f"h{i}",
             row_grams(t.user.lower(), t.reply.lower())) for i, t in enumerate(turns)]


_INDEXES = {
    "primary key": "ALTER TABLE public.idx_turns ADD PRIMARY KEY (author, machine, doc_key)",
    "b-trees": "CREATE INDEX ON public.idx_turns (author, ts DESC); CREATE INDEX ON public.idx_turns (ts DESC); "
               "CREATE INDEX ON public.idx_turns (author, session_id)",
    "word GINs": "CREATE INDEX ON public.idx_turns USING gin (user_words); "
                 "CREATE INDEX ON public.idx_turns USING gin (reply_words)",
    "trigram GIN user_lower": "CREATE INDEX ON public.idx_turns USING gin (user_lower gin_trgm_ops)",
    "trigram GIN reply_lower": "CREATE INDEX ON public.idx_turns USING gin (reply_lower gin_trgm_ops)",
    "grams GIN": "CREATE INDEX ON public.idx_turns USING gin (grams)",
}


def _backend_cpu(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def index_costs(conninfo: str, turns: list[Turn]) -> list[tuple[str, float]]:
    """CPU of the backend per turn for a COPY into the heap alone, then with each index set alone, then all."""
    rows = _rows(turns)
    columns = _COLUMNS
    found = []
    for label, parts in [("heap (and TOAST) only", []), *[(name, [name]) for name in _INDEXES],
                         ("everything", list(_INDEXES))]:
        with psycopg.connect(conninfo, autocommit=True) as conn:
            conn.execute("DROP TABLE IF EXISTS public.idx_turns")
            conn.execute("CREATE TABLE public.idx_turns (LIKE pimem.turns INCLUDING DEFAULTS)")
            for part in parts:
                conn.execute(_INDEXES[part])
            row = conn.execute("SELECT pg_backend_pid()").fetchone()
            assert row is not None
            before = _backend_cpu(int(row[0]))
            with conn.transaction(), conn.cursor() as cur, cur.copy(f"COPY public.idx_turns ({columns}) FROM STDIN") \
                    as copy:
                for values in rows:
                    copy.write_row(values)
            found.append((label, (_backend_cpu(int(row[0])) - before) / len(rows)))
    return found


_BIG_GIN = ("SET work_mem = '256MB'", "SET gin_pending_list_limit = '64MB'")


@dataclass(frozen=True)
class Lever:
    label: str
    binary: bool = True
    stage: bool = True            # COPY into a temporary table, then INSERT … SELECT (what the push does)
    settings: tuple[str, ...] = ()
    fastupdate: bool = True
    indexes_after: bool = False   # the table without indexes during the COPY, every index built afterwards


_LZ4 = ("SET default_toast_compression = lz4",)
LEVERS = (
    Lever("the push: binary COPY into a staging table, INSERT … SELECT, lz4 TOAST compression", settings=_LZ4),
    Lever("pglz TOAST compression (the server's default) instead of lz4"),
    Lever("text COPY and pglz (the push before this round)", binary=False),
    Lever("binary COPY straight into the table (impossible under row-level security)", stage=False,
          settings=_LZ4),
    Lever("+ work_mem 256MB, gin_pending_list_limit 64MB (larger pending lists)", settings=_LZ4 + _BIG_GIN),
    Lever("GIN fastupdate off (no pending lists)", fastupdate=False, settings=_LZ4),
    Lever("indexes built after the COPY (empty table, maintenance_work_mem 256MB)", stage=False,
          indexes_after=True, settings=_LZ4),
)


def _gin_indexes(conn: psycopg.Connection[tuple[object, ...]], table: str) -> list[str]:
    return [str(name) for (name,) in conn.execute(
        "SELECT i.indexrelid::regclass::text FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid "
        "JOIN pg_am a ON a.oid = c.relam WHERE i.indrelid = %s::regclass AND a.amname = 'gin'", (table,))]


def lever_costs(conninfo: str, turns: list[Turn], batch: int = 2_000) -> list[tuple[str, float, float, float, int]]:
    """Per lever: the backend's CPU per turn for the COPY (and upsert) in transactions of ``batch`` rows,
    then for what it deferred (each GIN's pending list cleaned, or the indexes built), and the table's
    size afterwards; pimem's CPU to encode the rows (text vs binary) is measured beside."""
    rows = _rows(turns)
    found = []
    for lever in LEVERS:
        with psycopg.connect(conninfo, autocommit=True) as conn:
            conn.execute("DROP TABLE IF EXISTS public.lever_turns")
            like = "INCLUDING DEFAULTS" if lever.indexes_after else "INCLUDING ALL"
            conn.execute(f"CREATE TABLE public.lever_turns (LIKE pimem.turns {like})")
            for name in _gin_indexes(conn, "public.lever_turns"):
                conn.execute(f"ALTER INDEX {name} SET (fastupdate = {'on' if lever.fastupdate else 'off'})")
            for setting in lever.settings:
                conn.execute(setting)
            target = "public.lever_turns"
            if lever.stage:
                conn.execute("CREATE TEMP TABLE lever_stage (LIKE pimem.turns INCLUDING DEFAULTS) "
                             "ON COMMIT DELETE ROWS")
                target = "lever_stage"
            row = conn.execute("SELECT pg_backend_pid()").fetchone()
            assert row is not None
            pid = int(row[0])
            before, client = _backend_cpu(pid), 0.0
            fmt = " (FORMAT BINARY)" if lever.binary else ""
            for start in range(0, len(rows), batch):
                with conn.transaction(), conn.cursor() as cur:
                    client -= time.process_time()
                    with cur.copy(f"COPY {target} ({_COLUMNS}) FROM STDIN{fmt}") as copy:
                        copy.set_types(_TYPES)
                        for values in rows[start:start + batch]:
                            copy.write_row(values)
                    client += time.process_time()
                    if lever.stage:
                        cur.execute(f"INSERT INTO public.lever_turns ({_COLUMNS}) SELECT {_COLUMNS} FROM lever_stage "
                                    "ON CONFLICT DO NOTHING")
            copied = _backend_cpu(pid)
            if lever.indexes_after:
                conn.execute("SET maintenance_work_mem = '256MB'")
                for statement in _INDEXES.values():
                    conn.execute(statement.replace("public.idx_turns", "public.lever_turns"))
            for name in _gin_indexes(conn, "public.lever_turns"):
                conn.execute("SELECT gin_clean_pending_list(%s::regclass)", (name,))
            after = _backend_cpu(pid)
            size = conn.execute("SELECT pg_total_relation_size('public.lever_turns')").fetchone()
            assert size is not None
            found.append((lever.label, (copied - before) / len(rows), (after - copied) / len(rows),
                          client / len(rows), int(size[0])))
            conn.execute("DROP TABLE public.lever_turns")
    return found


_T = "pimem.turns"
_HEAP_ONLY = (f"ALTER TABLE {_T} DISABLE TRIGGER USER",
              "DROP INDEX pimem.turns_author_ts", "DROP INDEX pimem.turns_ts", "DROP INDEX pimem.turns_session")
# Layout 7's entity index: layout 8's narrow table (its triggers, the table and its GIN) dropped, the GIN over
# both lowered texts and the grams on turns instead.
_NARROW_OFF = (*(f"DROP TRIGGER turns_lowered_{event} ON {_T}" for event in ("insert", "update", "delete", "truncate")),
               "DROP TABLE pimem.turn_lowered")
_LAYOUT_7_GIN = (*_NARROW_OFF, f"CREATE INDEX turns_lowered ON {_T} USING gin "
                 "((user_lower || E'\\n' || reply_lower) gin_trgm_ops, grams)")
# Layout 6's entity indexes (a pg_trgm GIN per lowered text, one on the grams) instead of layout 7's one.
_LAYOUT_6_GINS = (*_NARROW_OFF,
                  f"CREATE INDEX turns_user_lower_trgm ON {_T} USING gin (user_lower gin_trgm_ops)",
                  f"CREATE INDEX turns_reply_lower_trgm ON {_T} USING gin (reply_lower gin_trgm_ops)",
                  f"CREATE INDEX turns_grams ON {_T} USING gin (grams)")
_WORD_GINS = (f"CREATE INDEX turns_user_words ON {_T} USING gin (user_words)",
              f"CREATE INDEX turns_reply_words ON {_T} USING gin (reply_words)")
Part = tuple[str, tuple[str, ...], tuple[str, ...], bool]


def parts() -> tuple[Part, ...]:
    """(label, the admin's DDL on a fresh store, the push's session settings, whether the push sends grams)."""
    from pimem.share import schema

    return (
        ("the push now (layout 8: grams sent, the narrow table of lowered texts and its GIN)", (), (), True),
        ("layout 7's entity GIN (over both lowered texts and the grams, on turns)", _LAYOUT_7_GIN, (), True),
        ("layout 6's entity GINs (pg_trgm per lowered text, grams)", _LAYOUT_6_GINS, (), True),
        ("layout 5's insert trigger (turn_words' ids grouped on the rows' text keys)",
         (schema._count_words_3(schema._turn_words_insert_5()),), (), True),
        ("layout 4: grams computed by the database, word GINs on turns", _WORD_GINS, (), False),
        ("grams computed by the database (a writer sending none)", (), (), False),
        ("+ word GINs on turns (layout 4's)", _WORD_GINS, (), True),
        ("- the narrow table of lowered texts (its triggers, the table, its GIN)", _NARROW_OFF, (), True),
        ("layout 3 and 4's insert trigger (turn_words' ids looked up per word of every row)",
         (schema._count_words_3(),), (), True),
        ("- turn_words (the insert trigger keeps the counts only)",
         (schema._count_words_sql(schema._WORD_DOCS_UPSERT.format(schema._word_delta("new_rows", "")), "NULL", "NULL",
                                  "NULL;"),), (), True),
        ("- word counts and turn_words (their triggers off)", (f"ALTER TABLE {_T} DISABLE TRIGGER turns_words_insert",
                                                               f"ALTER TABLE {_T} DISABLE TRIGGER turns_words_update"),
         (), True),
        ("- turn_words' GINs", ("DROP INDEX pimem.turn_words_user", "DROP INDEX pimem.turn_words_reply"), (), True),
        ("- turns' b-trees", ("DROP INDEX pimem.turns_author_ts", "DROP INDEX pimem.turns_ts",
                              "DROP INDEX pimem.turns_session"), (), True),
        ("gin_pending_list_limit 64MB in the push's session", (), ("SET gin_pending_list_limit = '64MB'",), True),
        ("work_mem 64MB in the push's session (the trigger's transition tables in memory)", (),
         ("SET work_mem = '64MB'",), True),
        ("temp_buffers 64MB in the push's session (the staging table in memory)", (),
         ("SET temp_buffers = '64MB'",), True),
        ("GIN fastupdate off", ("FASTUPDATE OFF",), (), True),
        ("heap, TOAST and primary key only (all of the above off)", _HEAP_ONLY, (), True),
    )


COMMON_SHARE = 60_000 / 2_000_000   # READ_BUDGET's share of the 2M-row store: a word past it is "common"


def common_words(rows: list[tuple[object, ...]]) -> list[str]:
    """The words of ``rows`` (as ``_rows`` makes them) held by more than COMMON_SHARE of them: at 2M rows,
    the words free text reads by their newest postings when a question holds no rarer one."""
    docs: dict[str, int] = {}
    for row in rows:
        for word in set(cast(list[str], row[11])) | set(cast(list[str], row[12])):
            docs[word] = docs.get(word, 0) + 1
    return sorted(word for word, count in docs.items() if count > COMMON_SHARE * len(rows))


def lists_parts(words: list[str]) -> tuple[Part, ...]:
    """The push now, and the push keeping the common ``words``' postings in time order (bench/share_text_lists.py's
    prototype table, filled by the insert trigger in the same statement as ``turn_words``): one b-tree entry
    per common word of each column of every pushed turn, the least any per-word list kept by the push writes;
    and the same postings kept as arrays, one row per (common word, column) of each pushing statement."""
    from pimem.share import schema

    literal = "ARRAY[" + ", ".join("'" + word.replace("'", "''") + "'" for word in words) + "]::text[]"
    insert = schema._turn_words_insert_6()
    anchor = ")\n    INSERT INTO pimem.turn_words"
    assert insert.count(anchor) == 1
    posted = ("),\n    posted AS (INSERT INTO pimem.word_posts SELECT DISTINCT u.id, p.reply, r.ts, r.author, "
              "r.machine, r.session_id, r.doc_key, r.source, r.cwd FROM pairs p JOIN up u ON u.word = p.word "
              "JOIN pimem.common_words c ON c.word = p.word JOIN rows r ON r.n = p.n)"
              "\n    INSERT INTO pimem.turn_words")
    ddl = ("CREATE TABLE pimem.common_words (word text PRIMARY KEY)",
           f"INSERT INTO pimem.common_words SELECT unnest({literal})",
           "CREATE TABLE pimem.word_posts (word integer NOT NULL, reply boolean NOT NULL, ts timestamptz NOT NULL, "
           "author text NOT NULL, machine text NOT NULL, session_id text NOT NULL, doc_key text NOT NULL, "
           "source text NOT NULL, cwd text NOT NULL)",
           "CREATE INDEX word_posts_time ON pimem.word_posts (word, reply, ts DESC) "
           "INCLUDE (author, machine, session_id, doc_key, source, cwd)",
           schema._count_words_3(insert.replace(anchor, posted)))
    # The same postings as one row of arrays per (word, column) and pushing statement, in time order (a list
    # made of the statements' chunks: one heap row and index entry per common word and statement, not per posting).
    chunked = ("),\n    chunked AS (INSERT INTO pimem.word_chunks SELECT id, reply, max(ts), min(ts), count(*), "
               "array_agg(ts), array_agg(author), array_agg(machine), array_agg(session_id), array_agg(doc_key), "
               "array_agg(source), array_agg(cwd) FROM (SELECT q.id, q.reply, r.ts, r.author, r.machine, r.session_id, "
               "r.doc_key, r.source, r.cwd FROM (SELECT DISTINCT p.n, p.reply, u.id FROM pairs p JOIN up u "
               "ON u.word = p.word JOIN pimem.common_words c ON c.word = p.word) q JOIN rows r ON r.n = q.n "
               "ORDER BY q.id, q.reply, r.ts DESC) o GROUP BY id, reply)"
               "\n    INSERT INTO pimem.turn_words")
    chunks = (*ddl[:2],
              "CREATE TABLE pimem.word_chunks (word integer NOT NULL, reply boolean NOT NULL, ts_max timestamptz NOT "
              "NULL, ts_min timestamptz NOT NULL, n integer NOT NULL, ts timestamptz[] NOT NULL, author text[] NOT "
              "NULL, machine text[] NOT NULL, session_id text[] NOT NULL, doc_key text[] NOT NULL, source text[] NOT "
              "NULL, cwd text[] NOT NULL)",
              "CREATE INDEX word_chunks_time ON pimem.word_chunks (word, reply, ts_max DESC)",
              schema._count_words_3(insert.replace(anchor, chunked)))
    # Leaner: one pushing statement is one member's rows from one machine, so author and machine are a chunk's
    # own columns; the arrays hold ts, session and doc key only (the folder and agent filters would read the
    # rows, or fall back to turn_words).
    lean = ("),\n    chunked AS (INSERT INTO pimem.word_chunks SELECT id, reply, max(ts), min(ts), count(*), "
            "array_agg(ts), author, machine, array_agg(session_id), array_agg(doc_key) FROM (SELECT q.id, q.reply, "
            "r.ts, r.author, r.machine, r.session_id, r.doc_key FROM (SELECT DISTINCT p.n, p.reply, u.id FROM pairs p "
            "JOIN up u ON u.word = p.word JOIN pimem.common_words c ON c.word = p.word) q JOIN rows r ON r.n = q.n "
            "ORDER BY q.id, q.reply, r.author, r.machine, r.ts DESC) o GROUP BY id, reply, author, machine)"
            "\n    INSERT INTO pimem.turn_words")
    lean_chunks = (*ddl[:2],
                   "CREATE TABLE pimem.word_chunks (word integer NOT NULL, reply boolean NOT NULL, ts_max timestamptz "
                   "NOT NULL, ts_min timestamptz NOT NULL, n integer NOT NULL, ts timestamptz[] NOT NULL, author text "
                   "NOT NULL, machine text NOT NULL, session_id text[] NOT NULL, doc_key text[] NOT NULL)",
                   "CREATE INDEX word_chunks_time ON pimem.word_chunks (word, reply, ts_max DESC)",
                   schema._count_words_3(insert.replace(anchor, lean)))
    return (("the push now (layout 6)", (), (), True),
            ("+ the same postings as arrays of time, session and doc key only", lean_chunks, (), True),
            (f"+ the postings of the {len(words)} common words in time order (a covering b-tree)", ddl, (), True),
            ("+ the same postings as arrays, a row per common word, column and statement", chunks, (), True))


def lists_postings(turns: list[Turn]) -> float:
    """The common words' postings per turn (distinct words of each column): what the lists add per turn."""
    rows = _rows(turns)
    common = set(common_words(rows))
    return sum(len(set(cast(list[str], row[11])) & common) + len(set(cast(list[str], row[12])) & common)
               for row in rows) / max(len(rows), 1)


def part_costs(server: Any, turns: list[Turn], batch: int = 2_000,
               chosen: tuple[Part, ...] | None = None) -> list[tuple[str, float, float]]:
    """The push's write path on the real schema (triggers, row-level security, as member ``alice``: binary
    COPY into its staging table, the upsert, ``batch`` rows a transaction), one part removed at a time
    (``chosen``: these parts instead), on a fresh store each: the pushing backend's CPU per turn, and the
    admin's to clean every GIN pending list afterwards (work deferred, not saved)."""
    from pimem.share import push as pushing

    rows = _rows(turns)
    gins = ("SELECT c.relname FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid JOIN pg_am a ON a.oid = c.relam "
            "JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = 'pimem' AND a.amname = 'gin'")
    found = []
    for label, ddl, settings, send_grams in chosen or parts():
        dbname = server.new_database()
        admin = server.conninfo(dbname=dbname)
        apply_init(admin, members=("alice",))
        with psycopg.connect(admin, autocommit=True) as conn:
            for statement in ddl:
                if statement == "FASTUPDATE OFF":
                    for (name,) in conn.execute(gins).fetchall():
                        conn.execute(f"ALTER INDEX pimem.{name} SET (fastupdate = off)")
                else:
                    conn.execute(statement)
        columns = list(pushing._COLUMNS) if send_grams else list(pushing._COLUMNS)[:-1]
        names = ", ".join(columns)
        with psycopg.connect(server.conninfo(user="alice", dbname=dbname)) as conn:
            for setting in settings:
                conn.execute(setting)
            conn.execute("SET default_toast_compression = lz4")
            conn.execute(f"CREATE TEMP TABLE stage (LIKE {_T} INCLUDING DEFAULTS) ON COMMIT DELETE ROWS")
            conn.execute("ALTER TABLE stage ALTER COLUMN grams DROP NOT NULL")
            conn.commit()
            row = conn.execute("SELECT pg_backend_pid()").fetchone()
            assert row is not None
            pid = int(row[0])
            # That SELECT opened a transaction: ended here, so that each batch is one (its staging rows deleted at
            # its commit), not a savepoint in one transaction whose staging table kept every earlier batch.
            conn.commit()
            before = _backend_cpu(pid)
            for start in range(0, len(rows), batch):
                with conn.transaction(), conn.cursor() as cur:
                    with cur.copy(f"COPY stage ({names}) FROM STDIN (FORMAT BINARY)") as copy:
                        copy.set_types(list(pushing._TYPES)[:len(columns)])
                        for values in rows[start:start + batch]:
                            copy.write_row(values[:len(columns)])
                    cur.execute(pushing._UPSERT.replace(pushing._STAGE, "stage").replace(
                        ", ".join(pushing._COLUMNS), names).replace(", grams = excluded.grams", ""))
            pushed = _backend_cpu(pid) - before
        with psycopg.connect(admin, autocommit=True) as conn:
            row = conn.execute("SELECT pg_backend_pid()").fetchone()
            assert row is not None
            before = _backend_cpu(int(row[0]))
            for (name,) in conn.execute(gins).fetchall():
                conn.execute("SELECT gin_clean_pending_list(%s::regclass)", (f"pimem.{name}",))
            deferred = _backend_cpu(int(row[0])) - before
            count = conn.execute(f"SELECT count(*) FROM {_T} WHERE grams IS NOT NULL").fetchone()
            assert count is not None and int(count[0]) == len(rows), count
        found.append((label, pushed / len(rows), deferred / len(rows)))
    return found


_TAIL_DDL = f"""
CREATE TABLE pimem.turns_tail (LIKE {_T} INCLUDING DEFAULTS);
ALTER TABLE pimem.turns_tail ADD PRIMARY KEY (author, machine, doc_key);
GRANT SELECT, INSERT, UPDATE ON pimem.turns_tail TO pimem_team;
ALTER TABLE pimem.turns_tail ENABLE ROW LEVEL SECURITY;
ALTER TABLE pimem.turns_tail FORCE ROW LEVEL SECURITY;
CREATE POLICY tail_read ON pimem.turns_tail FOR SELECT TO pimem_team USING (true);
CREATE POLICY tail_insert ON pimem.turns_tail FOR INSERT TO pimem_team WITH CHECK (author = current_user);
CREATE POLICY tail_update ON pimem.turns_tail FOR UPDATE TO pimem_team USING (author = current_user);
"""
_TAIL_SCAN = ("SELECT count(*) FROM pimem.turns_tail WHERE reply_lower LIKE '%merge_sorted%' "
              "OR user_lower LIKE '%merge_sorted%'")


def _member_writes(conn: psycopg.Connection[tuple[object, ...]], target: str, rows: list[tuple[object, ...]],
                   batch: int = 2_000) -> None:
    """The push's write path (binary COPY into a staging table, then the upsert) into ``target``."""
    from pimem.share import push as pushing

    names = ", ".join(pushing._COLUMNS)
    for start in range(0, len(rows), batch):
        with conn.transaction(), conn.cursor() as cur:
            with cur.copy(f"COPY stage ({names}) FROM STDIN (FORMAT BINARY)") as copy:
                copy.set_types(list(pushing._TYPES))
                for values in rows[start:start + batch]:
                    copy.write_row(values)
            cur.execute(pushing._UPSERT.replace(pushing._STAGE, "stage").replace("pimem.turns", target))


def tail_costs(server: Any, turns: list[Turn]) -> list[tuple[str, float, float, float, float]]:
    """The candidate "unindexed tail" design, against the push as it is, on fresh stores: the member's push
    into a twin of ``turns`` with its primary key only (row-level security on), then the tail merged into
    ``turns`` in one statement by the admin (every index and trigger of ``turns`` paid then), then every GIN
    pending list cleaned. Server CPU per turn of each step (the backends' own), and the wall time of one
    scan of the unmerged tail for an entity (what recall would pay per query until the merge)."""
    from pimem.share import push as pushing

    rows = _rows(turns)
    names = ", ".join(pushing._COLUMNS)
    update = ", ".join(f"{c} = excluded.{c}" for c in pushing._COLUMNS if c not in ("machine", "doc_key"))
    big = ("SET maintenance_work_mem = '256MB'", "SET work_mem = '256MB'", "SET gin_pending_list_limit = '64MB'")
    found = []
    for label, tail, settings in (("the push now: straight into turns", False, ()),
                                  ("tail, merged with the defaults", True, ()),
                                  ("tail, merged with 256MB work memory and 64MB pending lists", True, big)):
        dbname = server.new_database()
        admin = server.conninfo(dbname=dbname)
        apply_init(admin, members=("alice",))
        with psycopg.connect(admin, autocommit=True) as conn:
            conn.execute(_TAIL_DDL)
        with psycopg.connect(server.conninfo(user="alice", dbname=dbname)) as conn:
            conn.execute("SET default_toast_compression = lz4")
            conn.execute(f"CREATE TEMP TABLE stage (LIKE {_T} INCLUDING DEFAULTS) ON COMMIT DELETE ROWS")
            conn.commit()
            pid = int((conn.execute("SELECT pg_backend_pid()").fetchone() or (0,))[0])
            before = _backend_cpu(pid)
            _member_writes(conn, "pimem.turns_tail" if tail else _T, rows)
            pushed = _backend_cpu(pid) - before
        scan_ms, merged = 0.0, 0.0
        with psycopg.connect(admin, autocommit=True) as conn:
            pid = int((conn.execute("SELECT pg_backend_pid()").fetchone() or (0,))[0])
            if tail:
                start = time.perf_counter()
                conn.execute(_TAIL_SCAN).fetchone()
                scan_ms = (time.perf_counter() - start) * 1000
                for setting in (*settings, "SET default_toast_compression = lz4"):
                    conn.execute(setting)
                before = _backend_cpu(pid)
                with conn.transaction():
                    conn.execute(f"INSERT INTO {_T} (author, {names}) SELECT author, {names} FROM pimem.turns_tail "
                                 f"ON CONFLICT (author, machine, doc_key) DO UPDATE SET {update}")
                    conn.execute("DELETE FROM pimem.turns_tail")
                merged = _backend_cpu(pid) - before
            before = _backend_cpu(pid)
            for (name,) in conn.execute("SELECT c.oid::regclass::text FROM pg_class c JOIN pg_am a ON a.oid = c.relam "
                                        "WHERE a.amname = 'gin' AND c.relnamespace = 'pimem'::regnamespace").fetchall():
                conn.execute("SELECT gin_clean_pending_list(%s::regclass)", (name,))
            deferred = _backend_cpu(pid) - before
            count = conn.execute(f"SELECT count(*) FROM {_T}").fetchone()
            assert count is not None and int(count[0]) == len(rows), count
        n = len(rows)
        found.append((label, pushed / n, merged / n, deferred / n, scan_ms))
    return found


_PENDING_QUERIES = (
    ("pg_trgm: reply_lower LIKE '%merge_sorted%'",
     "SELECT count(*) FROM pimem.turns WHERE reply_lower LIKE '%merge_sorted%'"),
    ("grams: grams @> '{e_,_s}'", "SELECT count(*) FROM pimem.turns WHERE grams @> '{e_,_s}'::text[]"),
    ("turn_words: a common word's rows", "SELECT count(*) FROM pimem.turn_words WHERE reply_ids @> ARRAY[(SELECT id "
     "FROM pimem.word_docs ORDER BY docs DESC, word LIMIT 1 OFFSET 50)]"),
)


def pending_cost(server: Any, turns: list[Turn], runs: int = 15) -> list[tuple[str, int, float, int, float]]:
    """What a GIN pending list costs recall: ``turns`` written with a 64MB ``gin_pending_list_limit`` (nothing
    merged), index-only queries timed (medians of ``runs``), then every pending list cleaned and the same
    queries timed again. Returns (query, count, ms) before and after: the counts must be equal."""
    dbname = server.new_database()
    admin = server.conninfo(dbname=dbname)
    apply_init(admin)
    rows = _rows(turns)
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute("SET gin_pending_list_limit = '64MB'")
        for start in range(0, len(rows), 2_000):
            with conn.transaction(), conn.cursor() as cur, \
                    cur.copy(f"COPY pimem.turns ({_COLUMNS}) FROM STDIN (FORMAT BINARY)") as copy:
                copy.set_types(_TYPES)
                for values in rows[start:start + 2_000]:
                    copy.write_row(values)
        conn.execute("ANALYZE pimem.turns")
        conn.execute("ANALYZE pimem.turn_words")
        conn.execute("SET enable_seqscan = off")

        def timed() -> list[tuple[int, float]]:
            found = []
            for _label, sql in _PENDING_QUERIES:
                times, count = [], 0
                for _ in range(runs):
                    start = time.perf_counter()
                    row = conn.execute(sql).fetchone()
                    times.append(time.perf_counter() - start)
                    count = int(row[0]) if row else -1
                found.append((count, statistics.median(times) * 1000))
            return found
        pending = timed()
        for (name,) in conn.execute("SELECT c.oid::regclass::text FROM pg_class c JOIN pg_am a ON a.oid = c.relam "
                                    "WHERE a.amname = 'gin' AND c.relnamespace = 'pimem'::regnamespace").fetchall():
            conn.execute("SELECT gin_clean_pending_list(%s::regclass)", (name,))
        merged = timed()
    return [(label, *pending[i], *merged[i]) for i, (label, _sql) in enumerate(_PENDING_QUERIES)]


def gate_only(turns: list[Turn]) -> tuple[float, float]:
    """CPU seconds of the gate alone, then of the tokenizer alone on the gated texts."""
    start = time.process_time()
    gated = [(gate.gate_text(t.user).text, gate.gate_text(t.reply).text) for t in turns]
    middle = time.process_time()
    tokens_many([g[0] for g in gated] + [g[1] for g in gated])
    return middle - start, time.process_time() - middle


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--turns", type=int, default=20_000)
    parser.add_argument("--runs", type=int, default=3, help="runs of each timed push (medians)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--indexes", type=int, default=0, metavar="N",
                        help="also: the server's CPU per turn for a COPY of N turns with each index alone")
    parser.add_argument("--parts", type=int, default=0, metavar="N",
                        help="also: the server's CPU per turn for the push's write path of N turns on the real "
                             "schema, each part (index, trigger, the grams' computation) removed in turn")
    parser.add_argument("--pending", type=int, default=0, metavar="N",
                        help="also: recall's index queries over N turns left in GIN pending lists, then merged")
    parser.add_argument("--tail", type=int, default=0, metavar="N",
                        help="also: the server's CPU per turn for N turns pushed into an unindexed tail and "
                             "merged into turns in bulk afterwards, against the push as it is")
    parser.add_argument("--lists", type=int, default=0, metavar="N",
                        help="also: the server's CPU per turn for the push's write path of N turns with and "
                             "without the common words' postings kept in time order (--runs rounds, alternated)")
    parser.add_argument("--levers", type=int, default=0, metavar="N",
                        help="also: the server's CPU per turn for N turns under each lever (COPY format, "
                             "staging, TOAST compression, GIN pending lists, indexes built afterwards)")
    args = parser.parse_args(argv)

    extra = "".join(f" --{name} {value}" for name, value in (("indexes", args.indexes), ("parts", args.parts),
                                                           ("pending", args.pending), ("levers", args.levers),
                                                           ("tail", args.tail), ("lists", args.lists))
                    if value)
    print(f"`nice -n 10 .venv/bin/python bench/share_push.py --turns {args.turns} --runs {args.runs}{extra}`  ")
    print(f"machine: {os.cpu_count()} cores, load {os.getloadavg()[0]:.1f} at start; PostgreSQL: Debian, "
          "fsync off (temporary server)\n")
    # CPU seconds as well as wall time: on a shared machine the wall time follows the load
    turns = corpus(args.turns, args.seed)
    chars = sum(len(t.user) + len(t.reply) for t in turns)
    with tempfile.TemporaryDirectory(prefix="pimem-bench-") as tmp:
        base = Path(tmp)
        base.chmod(0o755)
        with running_server(base / "pg") as server:
            full, first_rate, again, changed, gates, tokenizers, cpus = [], [], [], [], [], [], []
            refs, ref_cpus, pg_cpus = [], [], []
            for run in range(args.runs):
                dbname = server.new_database()
                admin = server.conninfo(dbname=dbname)
                apply_init(admin, members=("alice",))
                store = base / f"store{run}" / "memory.db"
                write(store, turns)
                cfg = ShareConfig(conninfo=server.conninfo(user="alice", dbname=dbname), machine="m",
                                  folders=(FOLDER,))
                cpu, pg_cpu = time.process_time(), server_cpu(server.datadir)
                stats = push(store, cfg)
                cpus.append(time.process_time() - cpu)
                pg_cpus.append(server_cpu(server.datadir) - pg_cpu)
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
                ref_wall, ref_cpu = reference_copy(admin, turns, server.datadir)
                refs.append(ref_wall)
                ref_cpus.append(ref_cpu)
                gate_s, tokenizer_s = gate_only(turns)
                gates.append(gate_s)
                tokenizers.append(tokenizer_s)
                held = stats.held
            costs = index_costs(server.conninfo(dbname=dbname), turns[:args.indexes]) if args.indexes else []
            parts = part_costs(server, turns[:args.parts]) if args.parts else []
            pending = pending_cost(server, turns[:args.pending]) if args.pending else []
            levers = lever_costs(server.conninfo(dbname=dbname), turns[:args.levers]) if args.levers else []
            tails = tail_costs(server, turns[:args.tail]) if args.tail else []
            lists: list[list[tuple[str, float, float]]] = []
            if args.lists:
                words = common_words(_rows(turns[:args.lists]))
                both = lists_parts(words)
                for run in range(args.runs):
                    measured = part_costs(server, turns[:args.lists], chosen=both if run % 2 == 0 else both[::-1])
                    lists.append(sorted(measured, key=lambda part: [p[0] for p in both].index(part[0])))
    med = statistics.median
    n = len(turns)
    print(f"corpus: {n:,} turns, {chars / n:,.0f} characters per turn; {held} held by the gate\n")
    print("| measure | push | reference (same run) | ratio |")
    print("|---|---|---|---|")
    print(f"| first push, wall s | {med(full):.2f} ({n / med(full):,.0f} turns/s) | COPY of the same rows: "
          f"{med(refs):.2f} s ({n / med(refs):,.0f} turns/s) | {med(full) / med(refs):.1f}x |")
    print(f"| first push, PostgreSQL CPU s | {med(pg_cpus):.2f} | COPY: {med(ref_cpus):.2f} | "
          f"{med(pg_cpus) / med(ref_cpus):.1f}x |")
    both = med(gates) + med(tokenizers)
    print(f"| first push, pimem CPU s | {med(cpus):.2f} | gate + tokenizer alone: {both:.2f} (gate "
          f"{med(gates):.2f}, tokenizer {med(tokenizers):.2f}) | {both / med(cpus):.0%} of it |")
    bound = max(med(cpus), med(pg_cpus))
    print(f"| first push, turns/s on 2 idle cores (pipelined: n / max(pimem CPU, server CPU)) | {n / bound:,.0f} "
          f"| COPY: {n / med(ref_cpus):,.0f} | |")
    print(f"| no-change push, wall s | {med(again):.3f} | target 0.5 | |")
    print(f"| push after 10 turns changed, wall s | {med(changed):.3f} | | |")
    if costs:
        print(f"\nServer CPU per turn, COPY of {args.indexes:,} turns (the backend's own CPU):\n")
        print("| table with | ms per turn |")
        print("|---|---|")
        for label, seconds in costs:
            print(f"| {label} | {seconds * 1000:.2f} |")
    if parts:
        print(f"\nThe push's write path, {args.parts:,} turns on the real schema (as a member, triggers on), one "
              "part changed at a time (the pushing backend's CPU; deferred: each GIN's pending list cleaned):\n")
        print("| store | server ms/turn, push | + deferred | = total |")
        print("|---|---|---|---|")
        for label, pushed, deferred in parts:
            print(f"| {label} | {pushed * 1000:.3f} | {deferred * 1000:.3f} | {(pushed + deferred) * 1000:.3f} |")
    if lists:
        print(f"\nThe push's write path, {args.lists:,} turns (as `--parts`), with and without the common words' "
              f"postings in time order; {args.runs} rounds alternated (server ms per turn, push + deferred):\n")
        print("| store | each round | median |")
        print("|---|---|---|")
        for i, (label, _pushed, _deferred) in enumerate(lists[0]):
            totals = [(found[i][1] + found[i][2]) * 1000 for found in lists]
            print(f"| {label} | {' / '.join(f'{t:.3f}' for t in totals)} | {med(totals):.3f} |")
        postings = lists_postings(turns[:args.lists])
        print(f"\n{postings:.1f} postings of the common words per turn (user + reply)")
    if pending:
        print(f"\nRecall's index queries over {args.pending:,} turns in GIN pending lists (64MB limit, nothing "
              "merged), then after gin_clean_pending_list (medians of 15; the counts must be equal):\n")
        print("| query | rows | pending ms | merged ms |")
        print("|---|---|---|---|")
        for label, count, before_ms, count_after, after_ms in pending:
            print(f"| {label} | {count} / {count_after} | {before_ms:.1f} | {after_ms:.1f} |")
    if levers:
        print(f"\nLevers, {args.levers:,} turns in transactions of 2,000 rows into a twin of pimem.turns (the "
              "backend's own CPU; deferred: each GIN's pending list cleaned, or the indexes built):\n")
        print("| lever | server ms/turn, COPY (+ upsert) | + deferred | = total | pimem's encoding ms/turn "
              "| table size |")
        print("|---|---|---|---|---|---|")
        for label, copy_s, deferred_s, client_s, size in levers:
            print(f"| {label} | {copy_s * 1000:.3f} | {deferred_s * 1000:.3f} | {(copy_s + deferred_s) * 1000:.3f} "
                  f"| {client_s * 1000:.3f} | {size / 2**20:.0f} MB |")
    if tails:
        print(f"\nAn unindexed tail merged in bulk, {args.tail:,} turns (server CPU per turn: the member's push, "
              "the admin's merge into turns in one statement, each GIN's pending list cleaned; a scan of the "
              "unmerged tail for one entity):\n")
        print("| design | push ms/turn | + merge | + deferred | = total | unmerged tail's scan, ms |")
        print("|---|---|---|---|---|---|")
        for label, pushed, merged, deferred, scan_ms in tails:
            print(f"| {label} | {pushed * 1000:.3f} | {merged * 1000:.3f} | {deferred * 1000:.3f} | "
                  f"{(pushed + merged + deferred) * 1000:.3f} | {scan_ms:.0f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
