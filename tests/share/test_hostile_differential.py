"""Adversarial differential tests of the shared store (round q6, issue 24), on a real PostgreSQL.

A seeded hostile corpus (entities repeated and substrings of one another, one entity in most rows and
one in two, the characters PostgreSQL folds otherwise than ``str.lower``, non-ASCII, texts of tens of
thousands of characters, empty user texts or replies, copies of an exchange) written every way a row
reaches ``pimem.turns``: the push (its grams), a member's row-by-row ``INSERT`` and multi-row statement
without grams (the database computes them), an admin's ``INSERT``; several authors and machines; a
session and a folder forgotten. Then:

* every page (offset/limit walks) of ``recall --scope team``'s entity answer (:func:`recall_scoped`, the
  CLI's service, and the CLI itself for a few) equals the plain SQL oracle's (:func:`scan_oracle`), on
  the shipped thresholds and on thresholds small enough that every path (listed, bound, probe, scan,
  conjunctions) is taken on these few hundred rows;
* free text's page equals its oracle's;
* ``turn_words`` and ``word_docs`` equal a fresh computation from ``turns`` after a push, a no-change
  push, a push compared again from scratch, a push of changed and emptied turns, and multi-row
  statements with one doc key on several machines, rows without words, rows updated in place and renamed;
  every row's grams equal pimem's for its lowered texts, whoever wrote them."""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import psycopg
import pytest

from pimem.recall import make_query, ranking
from pimem.recall.freetext import _shortlist, candidates
from pimem.recall.semantics import page_of, ranked_limit, recall_scan
from pimem.share import recall as shared
from pimem.share.push import apply_forget, push
from pimem.share.schema import row_grams
from pimem.share.scope import recall_scoped
from pimem.share.state import ShareConfig, open_state, save_config
from pimem.words import tokens_many
from share.conftest import ShareDb, share_db_at_layout
from share.local import Turn, write
from share.pgserver import PgServer
from share.test_recall import Row, put

Conn = psycopg.Connection[tuple[Any, ...]]

COMMON = "the"                 # in most rows
RARE = "zebrafish"             # in two rows
# Entities that are substrings of one another, LIKE's characters, no-trigram ones, case-folding ones.
NESTED = ["cach", "cache", "caches", "cache_layer", "a_b", "a_b_c", "ab", "io", "q"]
LIKES = ["100%", "x%y", "back\\slash", "_", "%"]
FOLDING = ["İstanbul", "ΟΔΟΣ ΣΟΦΟΣ", "οδος", "STRAẞE", "straße", "ǅemal", "Iğdır", "𐐀𐐁", "ﬃ", "K sign",
           "ÉCOLE", "école"]
WIDE = ["锁", "缓存", "缓存层", "日本語", "😀", "e\u0301", "\u00a0nbsp", "ß_ß"]
VOCAB = [COMMON, *NESTED, *LIKES, *FOLDING, *WIDE, "flamingo", "payroll", "retry", "Cache", "CACHE"]
# What the queries ask: the vocabulary in other cases and pieces (each lowered by recall).
PROBES = [COMMON, RARE, *NESTED, *LIKES, "i̇stanbul", "istanbul", "İSTANBUL", "οδος", "οδοσ", "σοφος", "straße",
          "STRASSE", "ẞ", "ǆemal", "ǅEMAL", "iğdır", "ığdır", "𐐨𐐩", "𐐀", "ﬃ", "ffi", "k sign", "école", "ÉCOLE",
          *WIDE, "flamingo", "payroll", "CACHE", " cache", "he c", "the\tcache", "锁\n缓存", "\\", "\\%", "e\u0301"]
FOLDERS = ["/work/proj", "/work/proj/sub", "/work/project-x", "/srv/other", "/work//proj/deep"]
T0 = 1_750_000_000_000


def hostile_text(rng: random.Random, common: float = 0.8) -> str:
    pieces = [rng.choice(VOCAB) for _ in range(rng.randint(0, 7))]
    if rng.random() < common:
        pieces.append(COMMON)
    if pieces and rng.random() < 0.2:
        pieces += [rng.choice(pieces)] * rng.randint(1, 3)        # an entity repeated in one text
    rng.shuffle(pieces)
    glue = rng.choice([" ", " ", "", "\n", "\t", "/", "-"])
    return glue.join(pieces)


def long_text(rng: random.Random) -> str:
    return " ".join(rng.choice(["lorem", "ipsum", "dolor", "caché", "锁"]) for _ in range(9_000)) + " " + \
        rng.choice(VOCAB)


def rows_of(rng: random.Random, machine: str, count: int, start: int = 0) -> list[Row]:
    rows: list[Row] = []
    for n in range(start, start + count):
        user, reply = hostile_text(rng), hostile_text(rng)
        shape = rng.random()
        if shape < 0.08:
            user = ""                                              # empty user text
        elif shape < 0.16:
            reply = ""                                             # empty reply
        elif shape < 0.19:                                         # a very long text, the entity deep inside
            user = long_text(rng)
        ts = T0 + rng.randint(0, 60) * 1000                        # equal times: ties broken by id
        rows.append(Row(machine, f"{machine}-{n:04d}", f"{machine}-s{n // 6}", FOLDERS[(n // 6) % len(FOLDERS)],
                        user, reply, ts, rng.choice(["pi", "claude"])))
    return rows


def copies(rng: random.Random, rows: Sequence[Row], machine: str, count: int) -> list[Row]:
    """Exchanges of ``rows`` again (same texts and time) under other keys: recall keeps one of each."""
    return [replace(rng.choice(list(rows)), machine=machine, doc_key=f"{machine}-copy{n}",
                    session=f"{machine}-copies") for n in range(count)]


_INSERT_COLUMNS = ("author, machine, doc_key, session_id, turn_index, source, cwd, ts, user_text, reply_text, "
                   "user_lower, reply_lower, user_words, reply_words, user_chars, reply_chars, content_hash")


def insert_statement(conn: Conn, rows: Sequence[Row], author: str, *, words: list[list[str]] | None = None,
                     upsert: bool = False) -> None:
    """All ``rows`` in one INSERT statement (one run of the statement triggers), without grams (the
    database computes them); ``upsert``: ON CONFLICT updating the row in place."""
    computed = tokens_many([r.user for r in rows] + [r.reply for r in rows]) if words is None else words
    values: list[object] = []
    for position, r in enumerate(rows):
        values += [author, r.machine, r.doc_key, r.session, r.source, r.cwd, datetime.fromtimestamp(r.ts / 1000, UTC),
                   r.user, r.reply, r.user.lower(), r.reply.lower(), computed[position],
                   computed[len(rows) + position], len(r.user), len(r.reply)]
    one = "(%s, %s, %s, %s, 0, %s, %s, %s, %s, %s, %s, %s, %s::text[], %s::text[], %s, %s, 'h')"
    statement = f"INSERT INTO pimem.turns ({_INSERT_COLUMNS}) VALUES " + ", ".join([one] * len(rows))
    if upsert:
        statement += (" ON CONFLICT (author, machine, doc_key) DO UPDATE SET user_text = excluded.user_text, "
                      "reply_text = excluded.reply_text, user_lower = excluded.user_lower, reply_lower = "
                      "excluded.reply_lower, user_words = excluded.user_words, reply_words = excluded.reply_words, "
                      "user_chars = excluded.user_chars, reply_chars = excluded.reply_chars")
    conn.execute(statement, values)


# -- what the triggers must keep -------------------------------------------------------------------


def check_kept(db: ShareDb) -> int:
    """``turn_words`` and ``word_docs`` equal a fresh computation from ``turns`` (each row's distinct ids
    in order, as layout 3's per-row lookup numbers them; every word's count of rows); every row's
    grams and lowered texts as the push computes them. The number of rows."""
    with psycopg.connect(db.admin, autocommit=True) as conn:
        wrong = conn.execute(
            "SELECT t.doc_key, w.doc_key FROM pimem.turns t FULL JOIN pimem.turn_words w "
            "USING (author, machine, doc_key) WHERE t.doc_key IS NULL OR w.doc_key IS NULL "
            "OR (t.session_id, t.source, t.cwd, t.ts, t.user_chars, t.reply_chars) IS DISTINCT FROM "
            "(w.session_id, w.source, w.cwd, w.ts, w.user_chars, w.reply_chars) "
            "OR w.user_ids IS DISTINCT FROM ARRAY(SELECT d.id FROM pimem.word_docs d "
            "WHERE d.word = ANY(t.user_words) ORDER BY d.id) "
            "OR w.reply_ids IS DISTINCT FROM ARRAY(SELECT d.id FROM pimem.word_docs d "
            "WHERE d.word = ANY(t.reply_words) ORDER BY d.id) LIMIT 5").fetchall()
        assert wrong == [], wrong
        counts = dict(conn.execute("SELECT word, docs FROM pimem.word_docs WHERE docs <> 0").fetchall())
        fresh = dict(conn.execute("SELECT w, count(*) FROM pimem.turns r, LATERAL (SELECT DISTINCT "
                                  "unnest(r.user_words || r.reply_words) AS w) x GROUP BY w").fetchall())
        assert counts == fresh
        rows = conn.execute("SELECT doc_key, user_text, reply_text, user_lower, reply_lower, grams "
                            "FROM pimem.turns").fetchall()
        for doc_key, user, reply, user_lower, reply_lower, grams in rows:
            assert (user_lower, reply_lower) == (user.lower(), reply.lower()), doc_key
            assert grams == row_grams(user_lower, reply_lower), doc_key
        return len(rows)


def snapshot(db: ShareDb) -> tuple[list[tuple[Any, ...]], list[tuple[Any, ...]], list[tuple[Any, ...]]]:
    with psycopg.connect(db.admin, autocommit=True) as conn:
        return (conn.execute("SELECT * FROM pimem.turns ORDER BY author, machine, doc_key").fetchall(),
                conn.execute("SELECT * FROM pimem.turn_words ORDER BY author, machine, doc_key").fetchall(),
                conn.execute("SELECT * FROM pimem.word_docs ORDER BY word").fetchall())


# -- the corpus ------------------------------------------------------------------------------------


@dataclass
class Corpus:
    db: ShareDb
    db_path: Path
    config: ShareConfig
    local: list[Turn]
    forgotten: set[str]          # doc keys of rows forgotten


def _as_turns(rows: Sequence[Row]) -> list[Turn]:
    return [Turn(r.doc_key, r.session, r.cwd, r.user, r.reply, r.ts, r.source) for r in rows]


SEED = int(os.environ.get("PIMEM_Q6_SEED", "6"))    # another corpus: PIMEM_Q6_SEED=N (a hunt, by hand)


def build_corpus(db: ShareDb, db_path: Path, seed: int | None = None) -> Corpus:
    rng = random.Random(SEED if seed is None else seed)
    # alice@laptop: the push from a local store (the push's grams, words, lowered texts).
    laptop = rows_of(rng, "laptop", 90)
    laptop[3] = replace(laptop[3], user=f"{RARE} {laptop[3].user}")
    laptop[5] = replace(laptop[5], user=long_text(rng))            # one long text at least
    local = _as_turns(laptop)
    write(db_path, local)
    config = ShareConfig(conninfo=db.conninfo("alice"), machine="laptop", folders=("/work", "/srv"))
    save_config(db_path, config)
    stats = push(db_path, config)
    assert stats.sent >= 80, stats          # the gate holds none (or nearly none) of these texts
    # alice@desk: a member's row-by-row INSERTs without grams.
    desk = rows_of(rng, "desk", 70) + copies(rng, laptop, "desk", 6)
    put(db, "alice", desk)
    # bob@box: one multi-row statement without grams, copies of the others' exchanges among them.
    box = rows_of(rng, "box", 80) + copies(rng, laptop + desk, "box", 6)
    box[7] = replace(box[7], reply=f"the {RARE.upper()} reply")
    with psycopg.connect(db.conninfo("bob")) as conn:
        insert_statement(conn, box, "bob")
        conn.commit()
    # carol@vm: an admin's INSERT naming her (no grams), and a doc key the others use too.
    vm = [*rows_of(rng, "vm", 40), replace(laptop[0], machine="vm")]
    with psycopg.connect(db.admin) as conn:
        insert_statement(conn, vm, "carol")
        conn.commit()
    # Forgotten: one of alice's sessions (both machines' rows of it) and a folder.
    forgotten: set[str] = set()
    with psycopg.connect(db.conninfo("alice")) as conn:
        session = laptop[20].session
        forgotten |= {r.doc_key for r in laptop + desk if r.session == session}
        apply_forget(conn, "session", session)
        forgotten |= {r.doc_key for r in laptop + desk if r.cwd == "/work/project-x" or
                      r.cwd.startswith("/work/project-x/")}
        apply_forget(conn, "folder", "/work/project-x")
        conn.commit()
    return Corpus(db, db_path, config, local, forgotten)


def queries(rng: random.Random, count: int) -> Iterator[tuple[list[str], tuple[int, ...] | None, Any, Any]]:
    """Entity lists of 1-8 (repeats, nested ones, the common and the rare one), weights, filters."""
    # Fixed shapes first: every entity common or unindexed, a chain of substrings, one entity eight times,
    # the rare one among common ones with steep weights.
    yield [COMMON, "io", "q", "_", "%", "ab", "cach", "cache"], None, None, None
    yield ["cach", "cache", "caches", "cache_layer"], (4, 3, 2, 1), None, None
    yield ["CACHE"] * 8, None, None, None
    yield [COMMON, "cache", RARE, "锁", "a_b", "io"], (1, 1, 4, 2, 2, 3), None, None
    for n in range(count):
        size = 1 + n % 8
        entities = [rng.choice(PROBES) for _ in range(size)]
        if n % 3 == 0:
            entities[0] = COMMON
        if n % 4 == 1:
            entities[-1] = RARE
        if n % 5 == 2 and size > 1:
            entities[1] = entities[0]                         # the same entity twice
        weights = tuple(rng.randint(1, 4) for _ in entities) if n % 3 == 2 else None
        sources = rng.choice([None, None, ["pi"]])
        cwd = rng.choice([None, None, "/work/proj", "/work"])
        yield entities, weights, sources, cwd


def _key(rows: Sequence[Any]) -> list[tuple[object, ...]]:
    return [(r.author, r.machine, r.turn_id, r.hits, r.ts, r.user_text, r.reply_text) for r in rows]


# Thresholds small enough that a few hundred rows take every path of entity_rows (names a revision lacks
# are set anyway: the test runs on revisions with and without them).
PATHS = {
    "shipped": {},
    "small": {"SELECTIVE_ROWS": 6, "COMMON_ESTIMATE": 6, "SCAN_ROWS": 12, "INDEXED_SCAN_ROWS": 5,
              "_SCAN_BATCH": 4, "COMMON_GRAMS_ROWS": 20, "RARE_TRIGRAM_SHARE": 1.0},
    "tiny": {"SELECTIVE_ROWS": 1, "COMMON_ESTIMATE": 0, "SCAN_ROWS": 3, "INDEXED_SCAN_ROWS": 1, "_SCAN_BATCH": 1,
             "_MAX_CONJUNCTIONS": 2, "_PROBE_SETS": 2, "COMMON_GRAMS_ROWS": 0, "RARE_TRIGRAM_SHARE": 1.0,
             "RARE_TRIGRAMS": 1, "TIGHT_TRIGRAMS": 1, "TIGHT_COUNT": 1_000},
}


@pytest.mark.parametrize("path", list(PATHS))
def test_every_page_of_team_entity_recall_equals_the_oracle(share_db: ShareDb, db_path: Path,
                                                            monkeypatch: pytest.MonkeyPatch, path: str) -> None:
    corpus = build_corpus(share_db, db_path)
    for name, value in PATHS[path].items():
        monkeypatch.setattr(shared, name, value, raising=False)
    rng = random.Random(f"pages-{path}-{SEED}")
    pages = rows_seen = 0
    with psycopg.connect(share_db.conninfo("carol"), autocommit=True) as conn:
        stored = {str(k) for k, in conn.execute("SELECT doc_key FROM pimem.turns")}
        assert not stored & corpus.forgotten and len(corpus.forgotten) >= 6
        for entities, weights, sources, cwd in queries(rng, 12 if path == "shipped" else 10):
            base = make_query(entities, 1, sources, cwd)
            if weights is not None:
                base = replace(base, weights=weights)
            everything = shared.scan_oracle(conn, base, shared.Who(), 1_000)
            limit = rng.choice([1, 3, 7, 50])
            for offset in range(0, min(len(everything), 30) + limit, limit):   # one page past the end
                query = replace(base, limit=limit, offset=offset, with_total=offset == 0)
                if path == "shipped":       # the CLI's service (a connection and a thread per page)
                    page, report = recall_scoped(None, db_path, query, "team", timeout=60)
                    assert report is not None and report.state == "ok", report
                else:
                    page = page_of(shared.entity_rows(conn, query, shared.Who(), ranked_limit(query)), query)
                assert _key(page.rows) == _key(everything[offset:offset + limit]), (entities, weights, offset, limit)
                if query.with_total:
                    assert page.total == len(everything)
                pages += 1
                rows_seen += len(page.rows)
            # An entity of hundreds of characters cut from the middle of a long text (its only rows).
            if path != "tiny" and rng.random() < 0.25:
                long_text = max(corpus.local, key=lambda t: len(t.user)).user
                start = rng.randrange(0, len(long_text) - 400)
                piece = make_query([long_text[start:start + rng.randint(20, 400)].upper(), COMMON], 3)
                assert _key(shared.entity_rows(conn, piece, shared.Who(), 3)) == _key(
                    shared.scan_oracle(conn, piece, shared.Who(), 3))
            # The other scopes' filters on the same rows: mine, and one machine of mine left out.
            for who in (shared.Who(mine=True), shared.Who(skip_machine="vm")):
                assert _key(shared.entity_rows(conn, replace(base, limit=20), who, 20)) == _key(
                    shared.scan_oracle(conn, base, who, 20)), (entities, who)
    assert pages > 40 and rows_seen > 150, (pages, rows_seen)


def test_the_cli_pages_equal_the_oracle(share_db: ShareDb, db_path: Path) -> None:
    build_corpus(share_db, db_path)
    entities = [COMMON, "cache", "锁", "İSTANBUL", RARE]
    with psycopg.connect(share_db.conninfo("alice"), autocommit=True) as conn:
        everything = shared.scan_oracle(conn, make_query(entities, 1), shared.Who(), 1_000)
    assert len(everything) > 30
    for offset, limit in ((0, 7), (7, 7), (len(everything) - 3, 5)):
        out = subprocess.run([sys.executable, "-m", "pimem", "recall", "--db", str(db_path), "--scope", "team",
                              "--json", "--offset", str(offset), "--limit", str(limit), "--total", *entities],
                             capture_output=True, text=True, timeout=120,
                             env={**os.environ, "PIMEM_SHARE_TIMEOUT_S": "30"})
        assert out.returncode == 0, out.stderr
        answer = json.loads(out.stdout)
        assert answer["shared"]["state"] == "ok"
        assert answer["total"] == len(everything)
        assert [(r["author"], r["machine"], r["turnId"], r["hits"]) for r in answer["results"]] == [
            (r.author, r.machine, r.turn_id, r.hits) for r in everything[offset:offset + limit]]


def _text_key(rows: Sequence[Any]) -> list[tuple[object, ...]]:
    return [(r.author, r.machine, r.turn_id, r.hits, tuple(r.matched)) for r in rows]


def test_free_text_on_the_hostile_corpus_equals_its_oracle(share_db: ShareDb, db_path: Path) -> None:
    """The corpus's member-written conversations mix agents (a local session has one; another member's
    rows are what they wrote): with a ``sources`` filter the page ranks each conversation on the rows
    the filter keeps, as the oracle does (before: every row of a candidate conversation lengthened its
    typed text, and ``flamingo payroll`` with ``sources=["pi"]`` ranked two conversations otherwise)."""
    build_corpus(share_db, db_path)
    questions = ["the cache layer retry", "flamingo payroll", "锁 缓存层 日本語", "İstanbul straße école",
                 f"{RARE} cach", "the"]
    found = 0
    with psycopg.connect(share_db.conninfo("bob"), autocommit=True) as conn:
        for question in questions:
            qwords = ranking.query_words(_shortlist(candidates(question)))
            for query in (make_query(["x"], 10), make_query(["x"], 5, ["pi"], "/work/proj", 5)):
                for who in (shared.Who(), shared.Who(mine=True), shared.Who(skip_machine="box")):
                    got = shared.text_page(conn, qwords, query, who, f"q6-{share_db.dbname}")
                    oracle = shared.text_oracle(conn, qwords, query, who, f"q6-{share_db.dbname}")
                    assert _text_key(got.rows) == _text_key(oracle.rows), (question, query.sources, who)
                    assert got.total == oracle.total
                    found += len(got.rows)
    assert found > 60


def _reset_pushed(db_path: Path) -> None:
    state = open_state(db_path)
    with state:
        state.execute("DELETE FROM pushed")
        state.execute("DELETE FROM meta WHERE key = 'log_seq'")     # every turn in scope compared again
    state.close()


def test_push_and_push_again_keep_the_postings_equal_to_a_fresh_computation(share_db: ShareDb,
                                                                            db_path: Path) -> None:
    corpus = build_corpus(share_db, db_path)
    rows = check_kept(share_db)
    assert rows > 250
    before = snapshot(share_db)
    # A push with nothing changed, and one that compares every turn again: not a row, id or count moves.
    assert push(db_path, corpus.config).sent == 0
    _reset_pushed(db_path)
    again = push(db_path, corpus.config)
    assert again.sent > 0 and again.unchanged == 0
    assert snapshot(share_db) == before
    # Changed turns: new words, a turn emptied (no words left), one grown past the others, one now
    # holding only words no row had; pushed in one batch of new and updated rows.
    rng = random.Random(60)
    changed = list(corpus.local)
    changed[1] = replace(changed[1], user="", reply="")
    changed[2] = replace(changed[2], user=changed[2].user + " brandnewword 锁锁 a_b_c", reply="")
    changed[4] = replace(changed[4], user="onlynewwordsxyz qqqzzz", reply="unseenreply")
    changed += _as_turns(rows_of(rng, "laptop", 15, start=500))
    write(db_path, changed)
    third = push(db_path, corpus.config, batch_rows=7)
    assert third.sent >= 18 and third.batches >= 3
    assert check_kept(share_db) == rows + 15
    with psycopg.connect(share_db.admin, autocommit=True) as conn:
        emptied = conn.execute("SELECT w.user_ids, w.reply_ids FROM pimem.turn_words w JOIN pimem.turns t "
                               "USING (author, machine, doc_key) WHERE t.doc_key = %s AND t.machine = 'laptop'",
                               [changed[1].turn_id]).fetchone()
    assert emptied == ([], [])


def test_multi_row_statements_keep_the_postings_equal_to_a_fresh_computation(share_db: ShareDb,
                                                                            pg_server: PgServer) -> None:
    """The statement triggers on statements of many rows: one doc key on several machines, rows without
    words, a word repeated in a row and shared between rows, rows updated in place by an upsert beside
    new ones, a statement affecting a row twice (refused, nothing kept), renamed keys, deletes. The same
    statements on a store set up at layout 5 (its insert trigger grouped on the text keys) leave the very
    same ids, postings and counts."""
    statements(share_db)
    older = share_db_at_layout(pg_server, 5)
    statements(older)
    assert snapshot(older)[1:] == snapshot(share_db)[1:]


def statements(share_db: ShareDb) -> None:
    rng = random.Random(61)
    base = rows_of(rng, "m1", 30)
    same_key = [replace(base[0], machine=m, user=f"{m} {base[0].user}") for m in ("m2", "m3", "m4")]
    silent = [Row("m1", f"silent{n}", "s-silent", "/work/proj", "", "", T0 + n) for n in range(4)]
    with psycopg.connect(share_db.conninfo("alice")) as conn:
        words = tokens_many([r.user for r in base + same_key + silent] + [r.reply for r in base + same_key + silent])
        words[0] = words[0] + words[0] + ["zz-repeated", "zz-repeated"]       # a word twice in one row
        insert_statement(conn, base + same_key + silent, "alice", words=words)
        conn.commit()
    check_kept(share_db)
    # An upsert of new rows and rows changed in place (new words, words gone, emptied, unchanged).
    updated = [replace(base[1], user="completely different words here", reply=""),
               replace(base[2], user="", reply=""),
               base[3],
               replace(silent[0], user="now it says cache", reply="and 锁"),
               replace(same_key[1], reply=same_key[1].reply + " flamingo flamingo")]
    new = [replace(base[5], doc_key="fresh-a", user=""), replace(base[6], machine="m9"),
           replace(silent[1], doc_key="fresh-b")]
    with psycopg.connect(share_db.conninfo("alice")) as conn:
        insert_statement(conn, updated + new, "alice", upsert=True)
        conn.commit()
    count = check_kept(share_db)
    # A statement affecting one row twice is refused whole: counts and postings as they were.
    before = snapshot(share_db)
    with psycopg.connect(share_db.conninfo("alice")) as conn:
        with pytest.raises(psycopg.errors.CardinalityViolation):
            insert_statement(conn, [replace(base[7], user="one"), replace(base[7], user="two"),
                                    replace(base[8], doc_key="fresh-c")], "alice", upsert=True)
        conn.rollback()
        with pytest.raises(psycopg.errors.UniqueViolation):
            insert_statement(conn, [replace(base[9], doc_key="dup"), replace(base[10], doc_key="dup")], "alice")
        conn.rollback()
    assert snapshot(share_db) == before
    # Keys renamed, texts changed and a row changed twice in one transaction; then deletes of some.
    with psycopg.connect(share_db.conninfo("alice")) as conn:
        conn.execute("UPDATE pimem.turns SET doc_key = 'renamed-' || doc_key, user_words = user_words || "
                     "ARRAY['renamedword'] WHERE doc_key IN (%s, %s, %s)", [base[11].doc_key, base[12].doc_key,
                                                                           silent[2].doc_key])
        conn.execute("UPDATE pimem.turns SET reply_words = ARRAY['first'], reply_text = 'first', "
                     "reply_lower = 'first' WHERE doc_key = %s AND machine = 'm1'", [base[13].doc_key])
        conn.execute("UPDATE pimem.turns SET reply_words = '{}', reply_text = '', reply_lower = '' "
                     "WHERE doc_key = %s AND machine = 'm1'", [base[13].doc_key])
        conn.commit()
    assert check_kept(share_db) == count
    with psycopg.connect(share_db.conninfo("alice")) as conn:
        conn.execute("DELETE FROM pimem.turns WHERE doc_key = ANY(%s) OR machine = 'm3'",
                     [[base[14].doc_key, silent[3].doc_key, "fresh-a", "renamed-" + base[11].doc_key]])
        conn.commit()
    assert check_kept(share_db) == count - 4 - 1
    # One MERGE inserting some rows and updating others in place (both triggers, one statement).
    with psycopg.connect(share_db.conninfo("alice")) as conn:
        conn.execute(
            "MERGE INTO pimem.turns t USING (SELECT * FROM pimem.turns WHERE machine = 'm1') s "
            "ON t.author = s.author AND t.machine = 'm2' AND t.doc_key = s.doc_key "
            "WHEN MATCHED THEN UPDATE SET user_words = t.user_words || ARRAY['merged-in-place'] "
            "WHEN NOT MATCHED THEN INSERT (author, machine, doc_key, session_id, turn_index, source, cwd, ts, "
            "user_text, reply_text, user_lower, reply_lower, user_words, reply_words, user_chars, reply_chars, "
            "content_hash) VALUES (s.author, 'm2', s.doc_key, s.session_id, 0, s.source, s.cwd, s.ts, s.user_text, "
            "s.reply_text, s.user_lower, s.reply_lower, s.user_words || ARRAY['merged-new'], s.reply_words, "
            "s.user_chars, s.reply_chars, 'h')")
        conn.commit()
    merged = check_kept(share_db)
    with psycopg.connect(share_db.admin, autocommit=True) as conn:
        assert dict(conn.execute("SELECT word, docs FROM pimem.word_docs WHERE word LIKE 'merged-%'").fetchall()) == {
            "merged-in-place": 1, "merged-new": merged - (count - 5)}
    # Another member's statement beside them: the same words get the same ids, counts add up.
    with psycopg.connect(share_db.conninfo("bob")) as conn:
        insert_statement(conn, base[:10] + silent, "bob")
        conn.commit()
    check_kept(share_db)



@pytest.mark.parametrize("path", ["shipped", "small"])
def test_a_capped_total_and_the_last_pages_equal_the_oracle(share_db: ShareDb, db_path: Path,
                                                             monkeypatch: pytest.MonkeyPatch, path: str) -> None:
    """More matching rows than TOTAL_CAP (1,000): the total capped, the pages up to offset + limit =
    1,000 as the oracle's, on rows that tie by the hundred (13 times, texts of five shapes)."""
    for name, value in PATHS[path].items():
        monkeypatch.setattr(shared, name, value, raising=False)
    with psycopg.connect(share_db.admin) as conn:
        conn.execute(
            "INSERT INTO pimem.turns (author, machine, doc_key, session_id, turn_index, source, cwd, ts, user_text, "
            "reply_text, user_lower, reply_lower, user_words, reply_words, user_chars, reply_chars, content_hash) "
            "SELECT a, m, 'k' || n, 's' || (n / 7), 0, 'pi', '/work/proj', "
            "to_timestamp(1750000000 + n % 13), u, r, lower(u), lower(r), '{}', '{}', length(u), length(r), 'h' "
            "FROM generate_series(1, 1150) n, LATERAL (SELECT CASE WHEN n % 3 = 0 THEN 'alice' ELSE 'bob' END AS a, "
            "'m' || (n % 4) AS m, CASE n % 5 WHEN 0 THEN 'the cache' WHEN 1 THEN 'cache 锁 the' WHEN 2 THEN 'a_b the' "
            "ELSE 'the' END || ' ' || n AS u, CASE WHEN n % 2 = 0 THEN 'cache' ELSE '' END AS r) x")
        conn.commit()
    save_config(db_path, ShareConfig(conninfo=share_db.conninfo("carol"), machine="laptop", folders=("/work",)))
    with psycopg.connect(share_db.conninfo("carol"), autocommit=True) as conn:
        for entities in (["the"], ["cache", "the"], ["the", "锁", "a_b", "cache"]):
            base = make_query(entities, 50)
            everything = shared.scan_oracle(conn, base, shared.Who(), 1_001)
            assert len(everything) == 1_001
            for offset, limit in ((0, 50), (500, 37), (950, 50), (999, 1)):
                query = replace(base, offset=offset, limit=limit, with_total=True)
                page, report = recall_scoped(None, db_path, query, "team", timeout=60)
                assert report is not None and report.state == "ok", report
                assert (page.total, page.total_capped) == (1_000, True)
                assert _key(page.rows) == _key(everything[offset:offset + limit]), (entities, offset)


def test_mine_and_all_pages_equal_the_local_and_shared_oracles_merged(share_db: ShareDb, db_path: Path) -> None:
    """``mine`` and ``all`` (the local store merged with the shared rows but this machine's): every page
    equals the local oracle's rows and the shared oracle's merged in recall's order, one copy each."""
    build_corpus(share_db, db_path)
    from pimem.store import connect as store_connect

    local = store_connect(db_path, create=False, for_writing=False)
    rng = random.Random(f"scopes-{SEED}")
    checked = 0
    try:
        with psycopg.connect(share_db.conninfo("alice"), autocommit=True) as conn:
            for entities, weights, sources, cwd in queries(rng, 8):
                base = make_query(entities, 1, sources, cwd)
                if weights is not None:
                    base = replace(base, weights=weights)
                for scope, who in (("mine", shared.Who(mine=True, skip_machine="laptop")),
                                   ("all", shared.Who(skip_machine="laptop"))):
                    merged: list[Any] = []
                    seen: set[object] = set()
                    both = [*recall_scan(local, replace(base, limit=1_000)),
                            *shared.scan_oracle(conn, base, who, 1_000)]
                    for row in sorted(both, key=shared.merge_key):
                        if row.copy_key not in seen:
                            seen.add(row.copy_key)
                            merged.append(row)
                    limit = rng.choice([3, 10])
                    for offset in range(0, min(len(merged), 30) + limit, limit):
                        query = replace(base, limit=limit, offset=offset)
                        page, report = recall_scoped(local, db_path, query, scope, timeout=60)
                        assert report is not None and report.state == "ok", report
                        assert _key(page.rows) == _key(merged[offset:offset + limit]), (scope, entities, offset)
                        checked += len(page.rows)
    finally:
        local.close()
    assert checked > 100
