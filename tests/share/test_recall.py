"""Recall on the shared store against a real PostgreSQL: entity recall equal to the plain oracle and to
local recall of the same turns (random stores, the 1-8 entity shapes, the characters PostgreSQL folds
otherwise), free text equal to its oracle, the scopes merged with the local store (one copy of an
exchange), a shared store down or locked (local rows on time), hostile rows rendered safely."""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path

import psycopg
import pytest

from pimem.recall import RecallQuery, make_query, ranking, recall_scan
from pimem.recall.freetext import _shortlist, candidates
from pimem.share import recall as shared
from pimem.share.push import push
from pimem.share.scope import recall_scoped, recall_scoped_text
from pimem.share.state import ShareConfig, save_config
from pimem.words import tokens_many
from share.conftest import ShareDb
from share.local import Turn, write
from support.passages import QUESTION, said_and_scattered


@dataclass(frozen=True)
class Row:
    machine: str
    doc_key: str
    session: str
    cwd: str
    user: str
    reply: str
    ts: int
    source: str = "pi"


def put(db: ShareDb, author: str, rows: Sequence[Row]) -> None:
    """Rows as ``author`` writes them, with the columns the push computes (pimem.share.push)."""
    words = tokens_many([r.user for r in rows] + [r.reply for r in rows])
    with psycopg.connect(db.conninfo(author)) as conn, conn.cursor() as cur:
        for position, r in enumerate(rows):
            cur.execute(
                "INSERT INTO pimem.turns (machine, doc_key, session_id, turn_index, source, cwd, ts, user_text, "
                "reply_text, user_lower, reply_lower, user_words, reply_words, user_chars, reply_chars, tools, "
                "content_hash) VALUES (%s, %s, %s, 0, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, 'h')",
                (r.machine, r.doc_key, r.session, r.source, r.cwd, datetime.fromtimestamp(r.ts / 1000, UTC), r.user,
                 r.reply, r.user.lower(), r.reply.lower(), words[position], words[len(rows) + position],
                 len(r.user), len(r.reply), ["bash"]))


def key(rows: Sequence[object]) -> list[tuple[object, ...]]:
    return [(r.author, r.machine, r.turn_id, r.hits, r.ts, r.user_text) for r in rows]  # type: ignore[attr-defined]


VOCAB = ["flamingo", "Cache", "cache", "retry", "a_b", "x%y", "50%", "back\\slash", "ÉCOLE", "école", "straße",
         "İstanbul", "ΟΔΟΣ", "οδος", "ǅemal", "the", "Rate_Limit", "q", "io", "ok", "postgres"]
FOLDERS = ["/work/proj", "/work/proj/sub", "/work/project-x", "/home/a", "/work//proj/deep", "/work/proj/../other"]


def random_rows(rng: random.Random, count: int, machine: str) -> list[Row]:
    rows: list[Row] = []
    # A session has one folder and one agent (as in the local store).
    places = [(rng.choice(FOLDERS), rng.choice(["pi", "claude"])) for _ in range(count // 5 + 1)]
    for n in range(count):
        def text() -> str:
            return " ".join(rng.choice(VOCAB) for _ in range(rng.randint(0, 6)))
        user, reply = text(), text()
        ts = 1_750_000_000_000 + rng.randint(0, 40) * 1000   # many equal times: ties broken by id
        if rows and rng.random() < 0.1:   # a copy of an exchange (a fork)
            other = rng.choice(rows)
            user, reply, ts = other.user, other.reply, other.ts
        cwd, source = places[n // 5]
        rows.append(Row(machine, f"{machine}-{n:04d}", f"s{n // 5}", cwd, user, reply, ts, source))
    return rows


def test_entity_recall_equals_the_oracle_and_local_recall_on_random_stores(share_db: ShareDb, db_path: Path) -> None:
    rng = random.Random(24)
    alice, bob = random_rows(rng, 150, "laptop"), random_rows(rng, 150, "desk")
    put(share_db, "alice", alice)
    put(share_db, "bob", bob)
    # The same turns in a local store (one author, one machine: turn ids are unique), for local recall.
    write(db_path, [Turn(r.doc_key, f"{r.machine}:{r.session}", r.cwd, r.user, r.reply, r.ts, r.source)
                    for r in alice + bob])
    from pimem.store import connect as store_connect
    local = store_connect(db_path, create=False, for_writing=False)
    checked = 0
    with psycopg.connect(share_db.conninfo("carol"), autocommit=True) as conn:
        for shape in range(1, 9):   # the P-bar shapes: 1 to 8 entities
            for _ in range(12):
                entities = rng.sample(VOCAB, shape)
                query = make_query(entities, rng.choice([1, 5, 50]), rng.choice([None, ["pi"]]),
                                   rng.choice([None, "/work/proj", "/"]))
                if rng.random() < 0.3:
                    query = replace(query, weights=tuple(rng.randint(1, 9) for _ in entities))
                wanted = query.limit
                got = shared.entity_rows(conn, query, shared.Who(), wanted)
                assert key(got) == key(shared.scan_oracle(conn, query, shared.Who(), wanted)), entities
                expected = recall_scan(local, query)
                assert [(r.turn_id, r.hits) for r in got] == [(r.turn_id, r.hits) for r in expected], entities
                checked += len(got)
                mine = shared.Who(mine=True)
                assert key(shared.entity_rows(conn, query, mine, wanted)) == key(
                    shared.scan_oracle(conn, query, mine, wanted))
    local.close()
    assert checked > 200   # the queries found rows: the comparison is not vacuous


# Characters whose case PostgreSQL's lower()/ILIKE folds otherwise than Python's str.lower.
FOLDING = [("İstanbul", ["i̇stanbul", "İSTANBUL", "istanbul"]), ("STRAẞE", ["straße", "STRASSE", "ẞ"]),
           ("ΟΔΟΣ ΣΟΦΟΣ", ["οδος", "ΟΔΟΣ", "σοφοσ", "οδοσ"]), ("ǅemal Ǉubav", ["ǆemal", "ǅEMAL", "ǉubav"]),
           ("DIŞ KAPI Iğdır", ["dış", "ığdır", "iğdır"]), ("𐐀𐐁 deseret", ["𐐨𐐩", "𐐀"]),
           ("ﬃ ligature", ["ffi", "ﬃ"]), ("Kelvin K sign", ["k sign", "kelvin"])]


def test_case_folding_characters_behave_as_local(share_db: ShareDb, db_path: Path) -> None:
    rows = [Row("laptop", f"f{n}", "s", "/w", text, f"reply about {text}", 1_750_000_000_000 + n)
            for n, (text, _) in enumerate(FOLDING)]
    put(share_db, "alice", rows)
    write(db_path, [Turn(r.doc_key, r.session, r.cwd, r.user, r.reply, r.ts) for r in rows])
    from pimem.store import connect as store_connect
    local = store_connect(db_path, create=False, for_writing=False)
    with psycopg.connect(share_db.conninfo("bob"), autocommit=True) as conn:
        for _text, probes in FOLDING:
            for probe in probes:
                query = make_query([probe], 50)
                got = [(r.turn_id, r.hits) for r in shared.entity_rows(conn, query, shared.Who(), 50)]
                assert got == [(r.turn_id, r.hits) for r in recall_scan(local, query)], probe
        # PostgreSQL's own folding would have answered otherwise for some of them (what the docstring says).
        differs = conn.execute("SELECT count(*) FROM pimem.turns WHERE lower(user_text) <> user_lower").fetchone()
        assert differs is not None and differs[0] >= 1
    local.close()


def _text_oracle(conn: psycopg.Connection[tuple[object, ...]], text: str, query: RecallQuery,
                 who: shared.Who) -> list[tuple[object, ...]]:
    qwords = ranking.query_words(_shortlist(candidates(text)))
    page = shared.text_oracle(conn, qwords, query, who, "test")
    return [(r.author, r.machine, r.turn_id, r.hits, tuple(r.matched)) for r in page.rows]


def test_free_text_ranks_as_its_oracle(share_db: ShareDb) -> None:
    rng = random.Random(7)
    words = ["flamingo", "cache", "invalidation", "postgres", "replica", "lag", "deploy", "kubernetes", "retry",
             "timeout", "the", "and", "emily", "sister", "lives", "boston", "crashed", "crashes"]
    for author, machine in (("alice", "laptop"), ("alice", "desk"), ("bob", "box")):
        put(share_db, author, [Row(machine, f"{machine}{n}", f"s{n // 4}", rng.choice(FOLDERS),
                                   " ".join(rng.choices(words, k=rng.randint(1, 8))),
                                   " ".join(rng.choices(words, k=rng.randint(0, 30))),
                                   1_750_000_000_000 + n * 1000) for n in range(120)])
    questions = ["where does my sister emily live", "postgres replica lag after deploy", "flamingo cache crashed",
                 "kubernetes retry timeout", "boston"]
    with psycopg.connect(share_db.conninfo("carol"), autocommit=True) as conn:
        found_rows = 0
        for question in questions:
            for who in (shared.Who(), shared.Who(mine=True), shared.Who(skip_machine="laptop")):
                for cwd in (None, "/work/proj"):
                    query = make_query(["x"], 10, None, cwd)
                    qwords = ranking.query_words(_shortlist(candidates(question)))
                    page = shared.text_page(conn, qwords, query, who, "test")
                    got = [(r.author, r.machine, r.turn_id, r.hits, tuple(r.matched)) for r in page.rows]
                    assert got == _text_oracle(conn, question, query, who), (question, who, cwd)
                    assert len({(r.author, r.machine, r.session_id) for r in page.rows}) == len(page.rows)
                    found_rows += len(got)
        assert found_rows > 50


def put_texts(db: ShareDb, doc_key: str) -> str:
    with psycopg.connect(db.admin) as conn:
        row = conn.execute("SELECT user_text FROM pimem.turns WHERE doc_key = %s", (doc_key,)).fetchone()
    return str(row[0]) if row else ""


def _configure(db_path: Path, db: ShareDb, user: str = "alice", machine: str = "laptop") -> ShareConfig:
    config = ShareConfig(conninfo=db.conninfo(user), machine=machine, folders=("/work/proj",))
    save_config(db_path, config)
    return config


def test_scopes_merge_with_the_local_store_keeping_one_copy(share_db: ShareDb, db_path: Path) -> None:
    # t2 holds a secret: its shared copy is redacted, so only the key (author, machine, doc_key), not the
    # copy rule (same texts), tells that it is the local t2.
    write(db_path, [Turn("t1", "s1", "/work/proj", "the flamingo cache", "fixed it", 1_750_000_000_000),
                    Turn("t2", "s1", "/work/proj", "flamingo retry with AKIAIOSFODNN7EXAMPLE", "ok",
                         1_750_000_001_000)])
    push(db_path, _configure(db_path, share_db))   # alice@laptop's copies of t1, t2
    pushed = put_texts(share_db, "t2")
    assert "AKIAIOSFODNN7EXAMPLE" not in pushed and "REDACTED" in pushed
    put(share_db, "alice", [Row("desk", "d1", "s9", "/work/proj", "flamingo on the desk", "r", 1_750_000_002_000)])
    put(share_db, "bob", [Row("box", "b1", "s8", "/work/proj", "bob's flamingo", "r", 1_750_000_003_000)])
    from pimem.store import connect as store_connect
    conn = store_connect(db_path, create=False, for_writing=False)
    query = make_query(["flamingo"], 10, with_total=True)

    def origin(scope: str) -> list[tuple[str | None, str | None, str]]:
        page, report = recall_scoped(conn, db_path, query, scope)
        assert report is not None and report.state == "ok", report
        assert page.total == len(page.rows)
        return [(r.author, r.machine, r.turn_id) for r in page.rows]

    # One score (the user text holds it): newest first. Local rows stand for this machine's pushed copies.
    assert origin("mine") == [("alice", "desk", "d1"), (None, None, "t2"), (None, None, "t1")]
    assert origin("all") == [("bob", "box", "b1"), ("alice", "desk", "d1"), (None, None, "t2"), (None, None, "t1")]
    assert origin("team") == [("bob", "box", "b1"), ("alice", "desk", "d1"), ("alice", "laptop", "t2"),
                              ("alice", "laptop", "t1")]
    assert recall_scoped(conn, db_path, query, "local")[1] is None
    answer, report = recall_scoped_text(conn, db_path, candidates("flamingo desk"), make_query(["x"], 10), "all")
    assert report is not None and report.state == "ok"
    keys = [(r.author, r.machine, r.session_id) for r in answer.rows]
    assert len(keys) == len(set(keys)) and (None, None, "s1") in keys and ("alice", "desk", "s9") in keys
    assert ("alice", "laptop", "s1") not in keys   # this machine's shared copy: the local row stands for it
    conn.close()


def test_a_stopped_or_locked_shared_store_never_blocks_local_recall(share_db: ShareDb, db_path: Path) -> None:
    write(db_path, [Turn("t1", "s1", "/work/proj", "flamingo", "r")])
    _configure(db_path, share_db)
    from pimem.store import connect as store_connect
    conn = store_connect(db_path, create=False, for_writing=False)
    query = make_query(["flamingo"], 5)
    # Locked: an admin holds the table; the shared query waits, the answer does not.
    with psycopg.connect(share_db.admin) as admin:
        admin.execute("LOCK TABLE pimem.turns IN ACCESS EXCLUSIVE MODE")
        started = time.monotonic()
        page, report = recall_scoped(conn, db_path, query, "all", timeout=0.5)
        assert time.monotonic() - started < 1.5
        assert report is not None and report.state == "timeout"
        assert [r.turn_id for r in page.rows] == ["t1"]
    share_db.server.stop("immediate")
    try:
        started = time.monotonic()
        page, report = recall_scoped(conn, db_path, query, "mine", timeout=1.0)
        assert time.monotonic() - started < 2.0
        assert report is not None and report.state in ("unreachable", "timeout") and report.message
        assert [r.turn_id for r in page.rows] == ["t1"]
        text, report = recall_scoped_text(conn, db_path, candidates("flamingo"), make_query(["x"], 5), "all",
                                          timeout=1.0)
        assert report is not None and report.state in ("unreachable", "timeout")
        assert [r.turn_id for r in text.rows] == ["t1"]
    finally:
        share_db.server.start()
        conn.close()


def test_unconfigured_scope_is_reported_not_raised(db_path: Path) -> None:
    write(db_path, [Turn("t1", "s1", "/work/proj", "flamingo", "r")])
    from pimem.store import connect as store_connect
    conn = store_connect(db_path, create=False, for_writing=False)
    page, report = recall_scoped(conn, db_path, make_query(["flamingo"], 5), "all")
    assert report is not None and report.state == "unconfigured"
    assert [r.turn_id for r in page.rows] == ["t1"]
    conn.close()


def test_hostile_rows_from_another_member_are_rendered_safely(share_db: ShareDb, db_path: Path) -> None:
    write(db_path, [Turn("t1", "s1", "/work/proj", "nothing here", "r")])
    _configure(db_path, share_db)
    huge = "flamingo " + "A" * 3_000_000
    escapes = "flamingo \x1b]52;c;cm0gLXJmIH4=\x07 \x1b[2J\x1b]8;;http://evil\x1b\\link\x1b]8;;\x1b\\ \u202egnp.exe"
    put(share_db, "bob", [Row("box\x1b[31m", "h1", "s1", "/w\x1b[2J", escapes, "\x1b[?1049h reply",
                              1_750_000_000_000, "claude"),
                          Row("box", "h2", "s2", "/w", huge, huge, 1_750_000_001_000)])
    out = subprocess.run([sys.executable, "-m", "pimem", "recall", "--db", str(db_path), "--scope", "team",
                          "flamingo", "--limit", "5"], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert "\x1b" not in out.stdout and "\x07" not in out.stdout and "\u202e" not in out.stdout
    assert len(out.stdout) < 50_000 and "From: bob on box" in out.stdout
    assert "Resume:" not in out.stdout   # another machine's session is not resumed here
    js = subprocess.run([sys.executable, "-m", "pimem", "recall", "--db", str(db_path), "--scope", "team",
                         "flamingo", "--json"], capture_output=True, text=True, timeout=60)
    answer = json.loads(js.stdout)
    assert answer["shared"]["state"] == "ok"
    assert {(r["author"], r["truncated"]) for r in answer["results"]} == {("bob", False), ("bob", True)}
    assert all(len(r["userText"]) <= 4000 and r["resumeCommand"] is None for r in answer["results"])


def test_a_server_that_never_answers_does_not_hold_local_recall(db_path: Path) -> None:
    """A host that accepts the connection and then says nothing (a hung server, a black-holed network):
    libpq's own connect timeout is 2 s at least; the deadline is what returns the local rows."""
    import socket

    write(db_path, [Turn("t1", "s1", "/work/proj", "flamingo", "r")])
    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen()
        port = silent.getsockname()[1]
        save_config(db_path, ShareConfig(conninfo=f"host=127.0.0.1 port={port} user=alice dbname=x",
                                         machine="laptop", folders=("/work/proj",)))
        from pimem.store import connect as store_connect
        conn = store_connect(db_path, create=False, for_writing=False)
        started = time.monotonic()
        page, report = recall_scoped(conn, db_path, make_query(["flamingo"], 5), "all", timeout=0.4)
        elapsed = time.monotonic() - started
        conn.close()
    assert elapsed < 1.0, elapsed
    assert report is not None and report.state == "timeout"
    assert [r.turn_id for r in page.rows] == ["t1"]


def test_a_pimem_without_the_driver_reports_the_shared_part_missing(db_path: Path) -> None:
    """The editor's bundled server has no psycopg: a scope answers the local rows and says why the shared
    part is missing (before: ModuleNotFoundError from reading the configuration, the request failed)."""
    write(db_path, [Turn("t1", "s1", "/work/proj", "flamingo", "r")])
    save_config(db_path, ShareConfig(conninfo="host=127.0.0.1 port=9 user=alice dbname=x", machine="laptop",
                                     folders=("/work/proj",)))
    blocker = db_path.parent / "no-driver"
    blocker.mkdir()
    # a meta-path finder that refuses psycopg, as if it were not installed
    (blocker / "sitecustomize.py").write_text(
        "import sys\n"
        "class _NoDriver:\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        "        if name == 'psycopg' or name.startswith('psycopg.') or name.startswith('psycopg_'):\n"
        "            raise ModuleNotFoundError(name)\n"
        "        return None\n"
        "sys.meta_path.insert(0, _NoDriver())\n")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(blocker), os.environ.get("PYTHONPATH", "")])}
    out = subprocess.run([sys.executable, "-m", "pimem", "recall", "--db", str(db_path), "--scope", "all",
                          "flamingo", "--json"], capture_output=True, text=True, timeout=60, env=env)
    assert out.returncode == 0, out.stderr
    answer = json.loads(out.stdout)
    assert [r["turnId"] for r in answer["results"]] == ["t1"]
    assert answer["shared"]["state"] == "error" and "PostgreSQL driver" in answer["shared"]["message"]


def test_free_text_ranks_the_words_said_together_first_as_locally(share_db: ShareDb,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    # Local ranking's last step (ranking.passage_bonus) on the shared store: the same words, said together in
    # one message, beat them strewn apart in another (which a reply mentioning one of them puts first without
    # the passages); the page equals the oracle's, which ranks through the same steps.
    said, scattered = said_and_scattered()
    rows = [Row("laptop", "scattered", "scattered", "/work/proj", scattered, "Oregon is lovely in spring.",
                1_750_000_000_000),
            Row("laptop", "said", "said", "/work/proj", said, "Noted.", 1_750_003_600_000)]
    rows += [Row("laptop", f"noise{n}", f"noise{n}", "/work/proj", f"the weather was fine on day {n} of the trip",
                 "Good.", 1_750_007_200_000 + n * 3_600_000) for n in range(20)]
    put(share_db, "alice", rows)
    qwords = ranking.query_words(_shortlist(candidates(QUESTION)))
    query = make_query(["x"], 10)
    with psycopg.connect(share_db.conninfo("bob"), autocommit=True) as conn:
        def first_two() -> list[str]:
            page = shared.text_page(conn, qwords, query, shared.Who(), "passages")
            oracle = shared.text_oracle(conn, qwords, query, shared.Who(), "passages")
            assert [r.turn_id for r in page.rows] == [r.turn_id for r in oracle.rows]
            return [r.session_id for r in page.rows[:2]]
        assert first_two() == ["said", "scattered"]
        monkeypatch.setattr(ranking, "PASSAGE_SHARE", 0.0)   # the ranking without the passages
        assert first_two() == ["scattered", "said"]


def test_free_text_orders_the_passage_head_by_coverage_as_locally(share_db: ShareDb,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    # Local ranking's head order (ranking.FUSED_HEAD, round 17) on the shared store: the message that holds the
    # whole question in one sentence leads a short text with two of its words, which leads by best turn and by
    # session (as in tests/recall/test_ranking.py, the conversation that holds the whole question).
    filler = " ".join(["we talked about the weather and the traffic on the way home"] * 3)
    rows = [Row("laptop", "whole", "whole", "/work/proj",
                f"{filler}. By the way, the flamingo rode the zeppelin past a quasar. {filler}", "Noted.",
                1_750_000_000_000),
            Row("laptop", "part", "part", "/work/proj", "flamingo zeppelin", "Sure.", 1_750_003_600_000)]
    rows += [Row("laptop", f"noise{n}", f"noise{n}", "/work/proj", f"the weather was fine on day {n} of the trip",
                 "Good.", 1_750_007_200_000 + n * 3_600_000) for n in range(20)]
    put(share_db, "alice", rows)
    qwords = ranking.query_words(_shortlist(candidates("flamingo zeppelin quasar")))
    query = make_query(["x"], 10)
    with psycopg.connect(share_db.conninfo("bob"), autocommit=True) as conn:
        def first_two() -> list[str]:
            page = shared.text_page(conn, qwords, query, shared.Who(), "head")
            return [r.session_id for r in page.rows[:2]]
        assert first_two() == ["whole", "part"]
        monkeypatch.setattr(ranking, "FUSED_HEAD", False)   # the passage rank fused in by PASSAGE_SHARE
        assert first_two() == ["part", "whole"]


def test_a_word_count_kept_from_before_the_store_shrank_weighs_nothing_less_than_zero() -> None:
    # Round q8: the shared store's doc count of a word is kept per process, and members' rows forgotten since
    # can leave it above the store's docs. BM25's idf then went negative, so a turn holding the word (or, in the
    # passages, a number beside it) ranked below one without it. Such a count weighs as a word in every doc.
    stats = shared.Stats(docs=100, avg_user=10.0, avg_reply=10.0, sessions=10)
    weights = shared.idfs({"stale": 300, "everywhere": 100, "rare": 1}, stats)
    assert weights["stale"] == weights["everywhere"] > 0
    assert weights["rare"] > weights["everywhere"]


def test_free_text_finds_a_verbs_irregular_past_as_locally(share_db: ShareDb) -> None:
    # As tests/recall/test_ranking.py's: "Where did I meet Alex?" when the person wrote "I met Alex"; the word is
    # held by a row holding any form of its verb (pimem.words.IRREGULAR_VERBS), counted, read, checked and placed
    # in the passages as locally; the page equals the oracle's.
    rows = [Row("laptop", "met", "met", "/work/proj",
                "I met Alex at the climbing gym last spring, we go every week now", "Nice!", 1_750_000_000_000),
            Row("laptop", "alex", "alex", "/work/proj", "Alex is coming over", "Great.", 1_750_000_002_000),
            Row("laptop", "meet", "meet", "/work/proj", "can we meet tomorrow about the budget", "Sure.",
                1_750_000_001_000)]
    rows += [Row("laptop", f"noise{n}", f"noise{n}", "/work/proj", f"the weather was fine on day {n} of the trip",
                 "Good.", 1_750_007_200_000 + n * 3_600_000) for n in range(20)]
    put(share_db, "alice", rows)
    query = make_query(["x"], 10)
    with psycopg.connect(share_db.conninfo("bob"), autocommit=True) as conn:
        for question, first in (("Where did I meet Alex?", "met"), ("who met alex", "met")):
            qwords = ranking.query_words(_shortlist(candidates(question)))
            page = shared.text_page(conn, qwords, query, shared.Who(), "verbs")
            oracle = shared.text_oracle(conn, qwords, query, shared.Who(), "verbs")
            assert [r.turn_id for r in page.rows] == [r.turn_id for r in oracle.rows]
            assert page.rows[0].session_id == first, question
        qwords = ranking.query_words(_shortlist(candidates("meet")))
        page = shared.text_page(conn, qwords, query, shared.Who(), "verbs")
        assert {r.session_id for r in page.rows} == {"met", "meet"}
        assert all(r.matched == ["meet"] for r in page.rows)
