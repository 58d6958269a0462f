"""Incremental sync: any sequence of appends and syncs leaves exactly the rows one full import of the
final files would; rewritten, truncated and deleted files are handled; turn identity is stable."""

from __future__ import annotations

import json
import os
import random
import shutil
import sqlite3
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pimem import index, wire
from pimem.recall import make_query, recall, recall_scan
from pimem.recall.indexed import ORPHAN_ROWS_SQL, PENDING_ROWS_SQL
from pimem.store import connect
from pimem.sync import SyncRequest, run_sync
from support.history import CLAUDE_INTERACTIVE, LEGACY, REPO, SAMPLES, roots_under
from support.sync import sync as guarded_sync

COPILOT_CLI = REPO / "tests" / "fixtures" / "copilot-cli"   # real Copilot CLI sessions
LINE_FILES = sorted(
    [p for p in SAMPLES.rglob("*.jsonl") if "subagents" not in p.parts]
    + [p for p in LEGACY.rglob("*.jsonl") if "subagents" not in p.parts and not p.name.startswith("agent-")]
    + [p for p in CLAUDE_INTERACTIVE.rglob("*.jsonl") if "subagents" not in p.parts]
    + sorted(COPILOT_CLI.rglob("events.jsonl"))
)


def _relative_root(file: Path) -> tuple[Path, Path]:
    base = next(root for root in (SAMPLES, LEGACY, CLAUDE_INTERACTIVE, COPILOT_CLI) if root in file.parents)
    return base, file.relative_to(base)


def snapshot(conn: sqlite3.Connection) -> dict[str, object]:
    return {
        "turns": conn.execute(
            "SELECT turn_id, session_id, turn_index, ts, user_text, reply_text, tool_names, user_message_id "
            "FROM turns ORDER BY turn_id").fetchall(),
        "sessions": conn.execute("SELECT * FROM sessions ORDER BY session_id").fetchall(),
        "lines": conn.execute("SELECT turn_id, line FROM pimem_docs ORDER BY turn_id").fetchall(),
        "touches": conn.execute(
            "SELECT path, turn_id, action, session_id, ts FROM pimem_touches ORDER BY 1, 2, 3").fetchall(),
    }


def sync(base: Path, db: Path, **kwargs: object) -> None:
    """A sync that must report no issue."""
    stats = guarded_sync(base, db, **kwargs)
    assert not stats.issues, [issue.error for issue in stats.issues]


def check_index(conn: sqlite3.Connection, rng: random.Random) -> None:
    """The index after all those updates still gives the oracle's answers."""
    for table in ("pimem_fts_user", "pimem_fts_reply"):
        conn.execute(f"INSERT INTO {table}({table}) VALUES ('integrity-check')")
    texts = [text for row in conn.execute("SELECT user_text, reply_text FROM turns") for text in row if text]
    for _ in range(20):
        if not texts:
            return
        text = rng.choice(texts)
        start = rng.randrange(len(text))
        entity = text[start:start + rng.randint(1, 8)]
        query = make_query([entity if entity.strip() else "x"], limit=10)
        assert [wire.recall_row(r) for r in recall(conn, query)] == [
            wire.recall_row(r) for r in recall_scan(conn, query)]


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_appends_and_syncs_equal_one_full_import(tmp_path_factory: pytest.TempPathFactory, data: st.DataObject) -> None:
    file = data.draw(st.sampled_from(LINE_FILES), label="file")
    content = file.read_bytes()
    cuts = sorted(set(data.draw(st.lists(st.integers(0, len(content)), max_size=6), label="cuts")))
    work = tmp_path_factory.mktemp("inc")
    _base, relative = _relative_root(file)
    target = work / "live" / relative
    target.parent.mkdir(parents=True)
    db_live = work / "live.db"
    written = 0
    for cut in [*cuts, len(content)]:
        with open(target, "ab") as handle:
            handle.write(content[written:cut])
        written = cut
        sync(work / "live", db_live)
    full = work / "full" / relative
    full.parent.mkdir(parents=True)
    shutil.copyfile(file, full)
    db_full = work / "full.db"
    sync(work / "full", db_full)
    live, reference = connect(db_live), connect(db_full)
    assert snapshot(live) == _rebase(snapshot(reference), str(work / "full"), str(work / "live"))
    check_index(live, random.Random(len(cuts)))


def _rebase(snap: dict[str, object], old: str, new: str) -> dict[str, object]:
    sessions = [tuple(v.replace(old, new) if isinstance(v, str) else v for v in row) for row in snap["sessions"]]  # type: ignore[attr-defined]
    return {**snap, "sessions": sessions}


def test_unchanged_files_are_only_stated(history: Path, db_path: Path) -> None:
    first = run_sync(SyncRequest(db_path=str(db_path), roots=roots_under(history)))
    assert first.turns > 0 and first.scanned_files > 0
    again = run_sync(SyncRequest(db_path=str(db_path), roots=roots_under(history)))
    assert (again.turns, again.scanned_files, again.skipped_files) == (0, 0, first.scanned_files)
    forced = run_sync(SyncRequest(db_path=str(db_path), roots=roots_under(history), force=True))
    assert forced.scanned_files == first.scanned_files and forced.turns == 0  # idempotent


def test_after_a_sync_recall_has_no_unindexed_turn_to_scan(history: Path, db_path: Path) -> None:
    """Recall scans turns above the watermark that have no doc; after any sync there are none to scan,
    so the watermark must reach the newest turn (a stale watermark made every recall scan all turns)."""
    sync(history, db_path)
    conn = connect(db_path)
    newest = conn.execute("SELECT max(rowid) FROM turns").fetchone()[0]
    assert newest and index.watermark(conn) == newest
    live = sorted((history / "pi").rglob("*.jsonl"))[0]
    with live.open("a", encoding="utf-8") as handle:
        handle.write(live.read_text(encoding="utf-8").splitlines()[-1] + "\n")
    run_sync(SyncRequest(db_path=str(db_path), roots=roots_under(history), paths=[str(live)]))
    assert index.watermark(conn) == conn.execute("SELECT max(rowid) FROM turns").fetchone()[0]


def test_the_unindexed_turns_cost_nothing_to_find_when_there_are_none(history: Path, db_path: Path) -> None:
    """Every indexed recall also reads the turns the index cannot answer yet (pending docs, rows above the
    watermark). Those reads must start from the small side: a plan that scans pimem_docs or turns costs
    ~90 ms per query at 100k turns whatever the entities."""
    sync(history, db_path)
    conn = connect(db_path)

    def plan(sql: str, *args: object) -> list[str]:
        return [str(row[3]) for row in conn.execute("EXPLAIN QUERY PLAN " + sql, args)]

    pending_plan = plan(PENDING_ROWS_SQL)
    assert pending_plan[0] == "SCAN p" and not any(step.startswith("SCAN") for step in pending_plan[1:])
    orphan_plan = plan(ORPHAN_ROWS_SQL, 0)
    assert orphan_plan[0].startswith("SEARCH t USING INTEGER PRIMARY KEY (rowid>?)"), orphan_plan
    assert not any(step.startswith("SCAN") for step in orphan_plan), orphan_plan


def test_turns_outlive_their_files(history: Path, db_path: Path) -> None:
    sync(history, db_path)
    before = snapshot(connect(db_path))["turns"]
    shutil.rmtree(history / "claude")
    sync(history, db_path)
    assert snapshot(connect(db_path))["turns"] == before


def test_a_growing_reply_is_completed_not_frozen(tmp_path: Path, db_path: Path) -> None:
    header = b'{"type":"session","version":3,"id":"s1","timestamp":"2026-11-30T10:00:00.000Z","cwd":"/w"}\n'
    user = (b'{"type":"message","id":"u1","parentId":null,"timestamp":"2026-11-30T10:00:01.000Z",'
            b'"message":{"role":"user","content":"flamingo?","timestamp":1796032801000}}\n')
    part1 = (b'{"type":"message","id":"a1","parentId":"u1","timestamp":"2026-11-30T10:00:02.000Z","message":'
             b'{"role":"assistant","content":[{"type":"text","text":"first"},{"type":"toolCall","id":"c","name":"bash",'
             b'"arguments":{}}]}}\n')
    part2 = (b'{"type":"message","id":"a2","parentId":"a1","timestamp":"2026-11-30T10:00:03.000Z","message":'
             b'{"role":"assistant","content":[{"type":"text","text":"second"},{"type":"toolCall","id":"d","name":"read",'
             b'"arguments":{}}]}}\n')
    target = tmp_path / "pi" / "agent" / "sessions" / "--w--" / "s1.jsonl"
    target.parent.mkdir(parents=True)
    target.write_bytes(header + user)
    sync(tmp_path, db_path)
    conn = connect(db_path)
    assert conn.execute("SELECT reply_text, tool_names FROM turns").fetchall() == [("", None)]
    target.write_bytes(header + user + part1 + part2[:40])  # the last line is still being written
    sync(tmp_path, db_path)
    assert conn.execute("SELECT reply_text, tool_names FROM turns").fetchall() == [("first", '["bash"]')]
    target.write_bytes(header + user + part1 + part2)
    sync(tmp_path, db_path)
    rows = conn.execute("SELECT reply_text, tool_names FROM turns").fetchall()
    assert rows == [("first\nsecond", '["bash", "read"]')]


def test_a_session_without_a_start_time_starts_at_its_first_turn_however_it_was_synced(
        tmp_path: Path, db_path: Path) -> None:
    """A header without ``timestamp``: the start is the first turn's time. A first sync that saw no turn
    yet (only the header) took the file's mtime and kept it for good; found by the append fuzz test."""
    header = b'{"type":"session","version":3,"id":"s2","cwd":"/w"}\n'
    change = b'{"type":"model_change","id":"m1","parentId":null,"modelId":"mock"}\n'
    user = (b'{"type":"message","id":"u1","parentId":"m1","timestamp":"2026-11-30T10:00:01.000Z",'
            b'"message":{"role":"user","content":"flamingo?","timestamp":1796032801000}}\n')
    target = tmp_path / "pi" / "agent" / "sessions" / "--w--" / "s2.jsonl"
    target.parent.mkdir(parents=True)
    target.write_bytes(header + change)
    sync(tmp_path, db_path)
    target.write_bytes(header + change + user)
    sync(tmp_path, db_path)
    conn = connect(db_path)
    try:
        assert conn.execute("SELECT started_at FROM sessions").fetchall() == [(1796032801000,)]
    finally:
        conn.close()


def test_a_newline_that_ends_an_already_taken_last_line_is_not_a_line(tmp_path: Path, db_path: Path) -> None:
    """A last line without its newline is taken when it is complete JSON; when the newline and more lines
    arrive, the turns after it keep their true line numbers (found by the append fuzz test: one off)."""
    header = b'{"type":"session","version":3,"id":"s2","timestamp":"2026-11-30T10:00:00.000Z","cwd":"/w"}'
    user = (b'{"type":"message","id":"u%d","parentId":null,"timestamp":"2026-11-30T10:00:0%d.000Z",'
            b'"message":{"role":"user","content":"flamingo %d?","timestamp":179603280%d000}}')
    target = tmp_path / "pi" / "agent" / "sessions" / "--w--" / "s2.jsonl"
    target.parent.mkdir(parents=True)
    target.write_bytes(header + b"\n" + user % (1, 1, 1, 1))           # line 2 has no newline yet
    sync(tmp_path, db_path)
    with target.open("ab") as handle:
        handle.write(b"\n" + user % (2, 2, 2, 2) + b"\n")              # its newline, then line 3
    sync(tmp_path, db_path)
    conn = connect(db_path)
    lines = conn.execute("SELECT t.user_text, d.line FROM turns t JOIN pimem_docs d ON d.turn_id = t.turn_id "
                         "ORDER BY d.line").fetchall()
    assert lines == [("flamingo 1?", 2), ("flamingo 2?", 3)]


def test_rewritten_file_is_parsed_again(tmp_path: Path, db_path: Path) -> None:
    """Pi rewrites v1/v2 files in place (new ids) when it opens them: the file is parsed again and the
    v1 turns keep their ids (no second copy; the real Pi's rewrite is tested in tests/importers/test_pi_rewrite.py)."""
    v1 = next(p for p in LEGACY.rglob("*.jsonl") if "5f0c" in p.name)
    _base, relative = _relative_root(v1)
    target = tmp_path / relative
    target.parent.mkdir(parents=True)
    shutil.copyfile(v1, target)
    sync(tmp_path, db_path)
    conn = connect(db_path)
    turns_sql = "SELECT turn_id, turn_index, user_text, reply_text FROM turns ORDER BY turn_id"
    v1_turns = conn.execute(turns_sql).fetchall()
    # What Pi does when it opens a v1 file: version 3 header, random 8-hex ids chained by parentId.
    records = [json.loads(line) for line in target.read_text(encoding="utf-8").splitlines()]
    records[0]["version"] = 3
    parent = None
    for number, record in enumerate(records[1:], start=1):
        record["id"], record["parentId"] = f"{number * 7919:08x}", parent
        parent = record["id"]
    target.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records), encoding="utf-8")
    os.utime(target, ns=(1, 1))
    stats = run_sync(SyncRequest(db_path=str(db_path), roots=roots_under(tmp_path)))
    assert stats.scanned_files == 1 and not stats.issues
    assert conn.execute(turns_sql).fetchall() == v1_turns
    first_prompt = conn.execute("SELECT user_text FROM turns ORDER BY ts, turn_id LIMIT 1").fetchone()[0]
    word = first_prompt.split()[0]
    rows = recall(conn, make_query([word], limit=50))
    assert len(rows) == 1 and len({row.copy_key for row in rows}) == len(rows)


def test_truncated_file_is_parsed_again(tmp_path: Path, db_path: Path) -> None:
    file = next(p for p in LINE_FILES if p.name.endswith(".jsonl") and "pi" in p.parts)
    _base, relative = _relative_root(file)
    target = tmp_path / relative
    target.parent.mkdir(parents=True)
    shutil.copyfile(file, target)
    sync(tmp_path, db_path)
    before = connect(db_path).execute("SELECT count(*) FROM turns").fetchone()[0]
    content = target.read_bytes()
    target.write_bytes(content[: len(content) // 2])
    stats = run_sync(SyncRequest(db_path=str(db_path), roots=roots_under(tmp_path)))
    assert stats.scanned_files == 1 and not stats.issues
    assert connect(db_path).execute("SELECT count(*) FROM turns").fetchone()[0] == before


def test_live_written_pi_turn_and_backfill_are_one_row(tmp_path: Path, db_path: Path) -> None:
    """The Pi extension writes the finished turn itself (INSERT OR IGNORE, its own ids); the backfill
    of the same file targets the same row."""
    file = next(p for p in SAMPLES.rglob("*.jsonl") if "payroll" in str(p) and "pi" in p.parts)
    _base, relative = _relative_root(file)
    target = tmp_path / relative
    target.parent.mkdir(parents=True)
    shutil.copyfile(file, target)
    reference = tmp_path / "ref.db"
    sync(tmp_path, reference)
    query = "SELECT turn_id, session_id, user_text FROM turns ORDER BY turn_id"
    expected = connect(reference).execute(query).fetchall()
    conn = connect(db_path)
    turn_id, session_id, user_text = expected[0]
    conn.execute("INSERT OR IGNORE INTO sessions (session_id, source, cwd, started_at, model_id, jsonl_path) "
                 "VALUES (?, 'pi', '/x', 0, NULL, ?)", (session_id, str(target)))
    conn.execute("INSERT OR IGNORE INTO turns (turn_id, session_id, turn_index, ts, user_text, reply_text, tool_names, "
                 "user_message_id) VALUES (?, ?, 0, 1, ?, 'partial', NULL, ?)",
                 (turn_id, session_id, user_text, turn_id.rsplit(":", 1)[1]))
    sync(tmp_path, db_path)
    rows = conn.execute("SELECT turn_id, session_id, user_text FROM turns ORDER BY turn_id").fetchall()
    assert rows == expected
    assert conn.execute("SELECT reply_text FROM turns WHERE turn_id = ?", (turn_id,)).fetchone()[0] != "partial"


def test_interrupted_parse_is_finished_by_the_next_sync(tmp_path: Path, db_path: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    """A sync cancelled (or killed) in the middle of a file, even a forced re-parse of an unchanged
    file, leaves a position the next sync continues from: no turn stays cut."""
    import pimem.sync.ingest as sync_module

    file = next(p for p in SAMPLES.rglob("*.jsonl") if "payroll" in str(p) and "claude" in p.parts)
    _base, relative = _relative_root(file)
    target = tmp_path / relative
    target.parent.mkdir(parents=True)
    shutil.copyfile(file, target)
    sync(tmp_path, db_path)
    reference = snapshot(connect(db_path))
    monkeypatch.setattr(sync_module, "CHUNK_TURNS", 1)  # a commit after every turn
    import threading

    cancel = threading.Event()
    commits = 0
    original = sync_module._FileImport._commit

    def commit_then_cancel(self, *args, **kwargs):  # type: ignore[no-untyped-def]
        nonlocal commits
        original(self, *args, **kwargs)
        commits += 1
        if commits == 2:
            cancel.set()

    monkeypatch.setattr(sync_module._FileImport, "_commit", commit_then_cancel)
    stats = run_sync(SyncRequest(db_path=str(db_path), roots=roots_under(tmp_path), force=True), cancel=cancel)
    assert stats.cancelled
    monkeypatch.setattr(sync_module._FileImport, "_commit", original)
    sync(tmp_path, db_path)
    assert snapshot(connect(db_path)) == reference
