"""Shared free text with the common words' postings kept in time order (a prototype measured, not shipped):
what such lists would save a question at 2M rows, and what they would cost to keep.

    nice -n 10 .venv/bin/python bench/share_text_lists.py --data DIR --base COMMIT [--repeat 3] \\
        [--expected FILE] [--json out.json] [--keep]

A word in more than ``ranking.READ_BUDGET`` rows is read by its newest READ_BUDGET postings per column;
``turn_words`` has no order by time, so today's statement visits the row of every posting of the word
(a heap block each, ~125,000 per column for ``cach`` at 2M rows) to sort them by ``ts``. The prototype
keeps such a word's postings in a narrow table ``{schema}.word_posts`` (word id, column, ``ts``, the
doc's keys, source and folder) with a covering b-tree on ``(word, reply, ts DESC)``: the newest 60,000
are then one index-only range scan.

What it does, on the store ``bench/share_recall.py --data DIR`` loaded (its server started if needed):

1. finds the words the bench's questions read past the budget (as member ``reader``, with this tree's
   ``read_words``) and, as the admin, fills ``{schema}.word_posts`` with every posting of those words
   (both columns), builds the b-tree, ``VACUUM ANALYZE`` (the visibility map: index-only scans), grants
   ``SELECT`` to the team; reports the postings, sizes and build time;
2. runs ``bench/share_text_ab.py`` with its "new" side replaced by this tree's ``share/recall.py`` whose
   past-the-budget branch reads ``{schema}.word_posts`` instead of ``turn_words`` (the same rows: the
   answers are checked against the budgeted oracle as ever), against ``--base``;
3. drops the schema again (``--keep`` keeps it). Nothing of ``pimem``'s own schema is changed.

The lists' write cost (one b-tree entry per common word of each column of every pushed turn) is
``bench/share_push.py --lists N``; ``--merge-cost N`` measures instead the server's CPU to merge the newest
N rows' common postings into arrays in one statement (the lists kept off the push path), and stops there.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import sys
import time
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))
sys.path.insert(0, str(ROOT / "tests"))

import psycopg  # noqa: E402

import share_text_ab  # noqa: E402
from pimem.recall import ranking  # noqa: E402
from pimem.recall.freetext import _shortlist, candidates  # noqa: E402
from pimem.recall.ranking import query_words  # noqa: E402
from pimem.share import recall as shared  # noqa: E402
from share_recall import QUESTIONS  # noqa: E402

# The branch of _text_sql that reads a word past the budget, and the prototype's in its place.
_ANCHOR = """        limit = f" ORDER BY ts DESC LIMIT {ranking.READ_BUDGET}" if df[token] > ranking.READ_BUDGET else ""
"""
_PROTOTYPE = _ANCHOR + """        if limit and ids is not None:
            for reply, user_bit, reply_bit in (("false", 1 << i, 0), ("true", 0, 1 << i)):
                branches.append(f"(SELECT author, machine, session_id, doc_key, ts{cwd}, {user_bit}::bigint AS um, "
                                f"{reply_bit}::bigint AS rm FROM __LISTS__ WHERE word = %s AND reply = {reply}"
                                f"{extra}{limit})")
                params.extend([ids[token], *filter_params])
            continue
"""


# --chunks: the postings as arrays, a row per (word, column) and CHUNK postings in time order; the newest
# chunks holding READ_BUDGET postings are unnested. Exact here because the chunks are built disjoint in time
# and the bench's questions have no filter (a store whose chunks come from pushing statements would have
# chunks overlapping in time, and a filter may need older chunks: a real layout would handle both).
CHUNK = 1_000
_CHUNKS_FROM = ("(SELECT unnest(c.author) AS author, unnest(c.machine) AS machine, unnest(c.session_id) AS session_id, "
                "unnest(c.doc_key) AS doc_key, unnest(c.ts) AS ts, unnest(c.source) AS source, unnest(c.cwd) AS cwd "
                "FROM (SELECT * FROM (SELECT *, sum(n) OVER (ORDER BY ts_max DESC) - n AS before FROM __LISTS__ "
                "WHERE word = %s AND reply = {reply}) k WHERE before < {budget}) c) p")
_PROTOTYPE_CHUNKS = _ANCHOR + """        if limit and ids is not None:
            for reply, user_bit, reply_bit in (("false", 1 << i, 0), ("true", 0, 1 << i)):
                posts = __FROM__.format(reply=reply, budget=ranking.READ_BUDGET)
                branches.append(f"(SELECT author, machine, session_id, doc_key, ts{cwd}, {user_bit}::bigint AS um, "
                                f"{reply_bit}::bigint AS rm FROM {posts} WHERE true{extra}{limit})")
                params.extend([ids[token], *filter_params])
            continue
"""


def prototype(schema: str, chunks: bool = False) -> ModuleType:
    """This tree's share/recall.py with the past-the-budget branch reading ``{schema}.word_posts`` (or, with
    ``chunks``, ``{schema}.word_chunks``)."""
    source = (ROOT / "server" / "pimem" / "share" / "recall.py").read_text(encoding="utf-8")
    if source.count(_ANCHOR) != 1:
        sys.exit("share/recall.py's past-the-budget branch changed: update bench/share_text_lists.py")
    path = Path(f"/tmp/pimem_share_recall_lists_{schema}.py")
    branch = (_PROTOTYPE_CHUNKS.replace("__FROM__", repr(_CHUNKS_FROM.replace("__LISTS__", f"{schema}.word_chunks")))
              if chunks else _PROTOTYPE.replace("__LISTS__", f"{schema}.word_posts"))
    path.write_text(source.replace(_ANCHOR, branch), encoding="utf-8")
    spec = importlib.util.spec_from_file_location(f"pimem_share_recall_lists_{schema}", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def common_read_words(data: Path) -> dict[str, tuple[int, int]]:
    """The words the questions read past the budget: word -> (id, docs)."""
    found: dict[str, tuple[int, int]] = {}
    with share_text_ab.reader_session(data) as (pg, _postmaster, _loaded):
        stats = shared.store_stats(pg, "lists")
        for question in QUESTIONS:
            qwords = query_words(_shortlist(list(candidates(question))))
            ids: dict[str, int] = {}
            df = shared._doc_counts(pg, [w.token for w in qwords], stats, "lists", ids)
            read, _checked = shared.read_words(qwords, df)
            for token in read:
                if df[token] > ranking.READ_BUDGET and token in ids:
                    found[token] = (ids[token], df[token])
    return found


_ARRAYS = ("ts", "author", "machine", "session_id", "doc_key", "source", "cwd")


def build_chunks(admin: str, schema: str, words: dict[str, tuple[int, int]]) -> dict[str, object]:
    t = f"{schema}.word_chunks"
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f"DROP SCHEMA IF EXISTS {schema} CASCADE")
        conn.execute(f"CREATE SCHEMA {schema}")
        conn.execute(f"CREATE TABLE {t} (word integer NOT NULL, reply boolean NOT NULL, ts_max timestamptz NOT NULL, "
                     "n integer NOT NULL, ts timestamptz[] NOT NULL, author text[] NOT NULL, machine text[] NOT NULL, "
                     "session_id text[] NOT NULL, doc_key text[] NOT NULL, source text[] NOT NULL, "
                     "cwd text[] NOT NULL)")
        start = time.perf_counter()
        aggregates = ", ".join(f"array_agg({a} ORDER BY ts DESC)" for a in _ARRAYS)
        for word_id, _docs in words.values():
            for column, reply in (("user_ids", "false"), ("reply_ids", "true")):
                conn.execute(f"INSERT INTO {t} SELECT %s, {reply}, max(ts), count(*), {aggregates} FROM (SELECT *, "
                             f"(row_number() OVER (ORDER BY ts DESC) - 1) / {CHUNK} AS k FROM pimem.turn_words "
                             f"WHERE {column} @> %s::integer[]) p GROUP BY k", [word_id, [word_id]])
        conn.execute(f"CREATE INDEX word_chunks_time ON {t} (word, reply, ts_max DESC)")
        conn.execute(f"VACUUM ANALYZE {t}")
        built = time.perf_counter() - start
        conn.execute(f"GRANT USAGE ON SCHEMA {schema} TO pimem_team")
        conn.execute(f"GRANT SELECT ON {t} TO pimem_team")
        row = conn.execute(f"SELECT sum(n), count(*), pg_total_relation_size('{t}') FROM {t}").fetchone()
        assert row is not None
        postings, chunks, size = int(row[0]), int(row[1]), int(row[2])
    return {"words": {w: {"id": i, "docs": d} for w, (i, d) in words.items()}, "postings": postings,
            "chunks": chunks, "totalBytes": size, "bytesPerPosting": round(size / max(postings, 1), 1),
            "buildS": round(built, 1)}


def build(admin: str, schema: str, words: dict[str, tuple[int, int]]) -> dict[str, object]:
    t = f"{schema}.word_posts"
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f"DROP SCHEMA IF EXISTS {schema} CASCADE")
        conn.execute(f"CREATE SCHEMA {schema}")
        conn.execute(f"CREATE TABLE {t} (word integer NOT NULL, reply boolean NOT NULL, ts timestamptz NOT NULL, "
                     "author text NOT NULL, machine text NOT NULL, session_id text NOT NULL, doc_key text NOT NULL, "
                     "source text NOT NULL, cwd text NOT NULL)")
        start = time.perf_counter()
        for word_id, _docs in words.values():
            for column, reply in (("user_ids", "false"), ("reply_ids", "true")):
                conn.execute(f"INSERT INTO {t} SELECT %s, {reply}, ts, author, machine, session_id, doc_key, source, "
                             f"cwd FROM pimem.turn_words WHERE {column} @> %s::integer[]", [word_id, [word_id]])
        filled = time.perf_counter() - start
        conn.execute(f"CREATE INDEX word_posts_time ON {t} (word, reply, ts DESC) "
                     "INCLUDE (author, machine, session_id, doc_key, source, cwd)")
        conn.execute(f"VACUUM ANALYZE {t}")
        built = time.perf_counter() - start
        conn.execute(f"GRANT USAGE ON SCHEMA {schema} TO pimem_team")
        conn.execute(f"GRANT SELECT ON {t} TO pimem_team")
        row = conn.execute(f"SELECT count(*), pg_relation_size('{t}'), pg_indexes_size('{t}') FROM {t}").fetchone()
        assert row is not None
        postings, heap, index = int(row[0]), int(row[1]), int(row[2])
    return {"words": {w: {"id": i, "docs": d} for w, (i, d) in words.items()}, "postings": postings,
            "heapBytes": heap, "indexBytes": index, "bytesPerPosting": round((heap + index) / max(postings, 1), 1),
            "fillS": round(filled, 1), "buildS": round(built, 1)}


def _backend_cpu(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def merge_cost(admin: str, schema: str, rows: int) -> dict[str, object]:
    """The lists kept off the push path instead: the newest ``rows`` rows of ``turn_words`` taken as a tail
    pushed since the last merge, and every posting of a word past READ_BUDGET in them merged in one statement
    into arrays, a row per (word, column), in time order (a logged table, TOAST-compressed): the server's CPU
    (the backend's own) per row and per posting, against reading the tail alone."""
    t = f"{schema}.merged"
    arrays = ", ".join(f"array_agg({a} ORDER BY ts DESC) AS {a}" for a in _ARRAYS)
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f"DROP SCHEMA IF EXISTS {schema} CASCADE")
        conn.execute(f"CREATE SCHEMA {schema}")
        conn.execute(f"CREATE TABLE {schema}.tail AS SELECT * FROM pimem.turn_words ORDER BY ts DESC LIMIT %s", [rows])
        conn.execute(f"CREATE TABLE {schema}.common AS SELECT id FROM pimem.word_docs WHERE docs > %s",
                     [ranking.READ_BUDGET])
        conn.execute(f"VACUUM ANALYZE {schema}.tail")
        row = conn.execute("SELECT pg_backend_pid()").fetchone()
        assert row is not None
        pid = int(row[0])
        found: dict[str, object] = {"rows": rows}
        for label in ("read", "merge", "read", "merge"):
            conn.execute(f"DROP TABLE IF EXISTS {t}")
            pairs = (f"SELECT c.id AS word, {{reply}} AS reply, r.* FROM {schema}.tail r, unnest(r.{{column}}) u(id) "
                     f"JOIN {schema}.common c ON c.id = u.id")
            both = (pairs.format(reply="false", column="user_ids") + " UNION ALL "
                    + pairs.format(reply="true", column="reply_ids"))
            before = _backend_cpu(pid)
            if label == "read":
                conn.execute(f"SELECT count(*) FROM {schema}.tail WHERE cardinality(user_ids) + cardinality(reply_ids) "
                             ">= 0")
            else:
                conn.execute(f"CREATE TABLE {t} AS SELECT word, reply, max(ts) AS ts_max, count(*) AS n, {arrays} "
                             f"FROM ({both}) p GROUP BY word, reply")
            spent = _backend_cpu(pid) - before
            found.setdefault(f"{label}S", []).append(round(spent, 2))     # type: ignore[union-attr]
        total = conn.execute(f"SELECT sum(n), count(*), pg_total_relation_size('{t}') FROM {t}").fetchone()
        assert total is not None
        found.update({"postings": int(total[0]), "lists": int(total[1]), "bytes": int(total[2])})
        merge = min(found["mergeS"])                                       # type: ignore[type-var]
        found["mergeMsPerRow"] = round(1000 * merge / rows, 3)
        found["mergeUsPerPosting"] = round(1e6 * merge / int(total[0]), 2)
        conn.execute(f"DROP SCHEMA {schema} CASCADE")
    return found


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, required=True, help="a folder bench/share_recall.py --data loaded")
    parser.add_argument("--base", required=True, help="the commit whose text_page is measured against the prototype")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--expected", type=Path, help="as bench/share_text_ab.py's")
    parser.add_argument("--json", type=Path)
    parser.add_argument("--schema", default="pimem_lab", help="the scratch schema (dropped and made again)")
    parser.add_argument("--keep", action="store_true", help="keep the scratch schema afterwards")
    parser.add_argument("--merge-cost", type=int, default=0, metavar="N",
                        help="only: the server's CPU to merge the common words' postings of the newest N rows into "
                             "arrays in one statement (the lists kept off the push path); no A/B")
    parser.add_argument("--chunks", action="store_true",
                        help=f"the postings as arrays, a row per word, column and {CHUNK:,} postings in time order")
    args = parser.parse_args(argv)
    if args.schema == "pimem" or not args.schema.isidentifier():
        sys.exit("--schema: a scratch schema's plain name, not pimem")

    with share_text_ab.loaded_server(args.data) as (server, loaded):
        admin = server.conninfo(dbname=loaded["dbname"])
        if args.merge_cost:
            try:
                print(json.dumps({"mergeCost": merge_cost(admin, args.schema, args.merge_cost)}, indent=2))
            finally:
                with psycopg.connect(admin, autocommit=True) as conn:
                    conn.execute(f"DROP SCHEMA IF EXISTS {args.schema} CASCADE")
            return 0
        words = common_read_words(args.data)
        lists = ((build_chunks if args.chunks else build)(admin, args.schema, words) if words else {"words": {}})
        print(json.dumps({"lists": lists}, indent=2))
        try:
            share_text_ab.shared = prototype(args.schema, args.chunks)   # the A/B's "new" side
            ab = ["--data", str(args.data), "--base", args.base, "--repeat", str(args.repeat)]
            if args.expected is not None:
                ab += ["--expected", str(args.expected)]
            out = args.json.with_suffix(".ab.json") if args.json is not None else None
            if out is not None:
                ab += ["--json", str(out)]
            share_text_ab.main(ab)
            if args.json is not None and out is not None:
                report = {"lists": lists, "ab": json.loads(out.read_text(encoding="utf-8"))}
                args.json.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
                out.unlink()
        finally:
            if not args.keep:
                with psycopg.connect(admin, autocommit=True) as conn:
                    conn.execute(f"DROP SCHEMA IF EXISTS {args.schema} CASCADE")
    return 0


if __name__ == "__main__":
    sys.exit(main())
