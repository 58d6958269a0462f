"""Sync and import robustness (issue 10): broken lines are reported once (item 14), a transcript
replaced by a FIFO never blocks a sync (item 17), and what a sync reports counts committed work only,
with a store failure pinned on the file whose write failed (item 18)."""

from __future__ import annotations

import contextlib
import os
import shutil
import sqlite3
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

import pytest

import pimem.sync as sync_module
import pimem.sync.ingest as ingest_module
from pimem import jsonl
from pimem.models import HISTORY_SCHEMA_REFERENCE_VERSIONS, Source, SyncStats
from pimem.store import StoreError, connect
from pimem.sync import SourceFile, SyncRequest, import_files, run_sync
from support.env import env_for
from support.history import LEGACY, REPO, SAMPLES, copy_samples, roots_under
from support.sync import run_guarded as guarded
from support.sync import sync as guarded_sync

SAMPLE: dict[Source, Path] = {
    "claude": SAMPLES / "claude/projects/-tmp-pimem-demo-webshop/1ed4dd9a-5989-4487-9ac3-d2b870816ee8.jsonl",
    "codex": SAMPLES / "codex/sessions/2026/11/30"
                       / "rollout-2026-11-30T09-45-41-01a22bd8-8c34-7e91-9282-79d4f5ad872f.jsonl",
    "pi": SAMPLES / "pi/agent/sessions/--tmp-pimem-demo-webshop--"
                    / "2026-11-30T09-45-48-861Z_01a22bd8-a83c-7278-b6dd-f7b4c2b178a9.jsonl",
}
# A real Copilot CLI 1.0.102 session (tests/fixtures/copilot-cli), laid out under its own fixture root.
COPILOT_CLI_ROOT = REPO / "tests" / "fixtures" / "copilot-cli"
SAMPLE["copilot-cli"] = COPILOT_CLI_ROOT / "copilot/session-state/c107a6be-2db9-4c62-99a6-f3ce273183ff/events.jsonl"
UNDER: dict[Source, Path] = {"copilot-cli": COPILOT_CLI_ROOT}
ZST = LEGACY / "codex/sessions/2026/06/11/rollout-2026-06-11T08-00-00-01a0d4e5-1a2b-7c3d-8e4f-5a6b7c8d9e0f.jsonl.zst"
G0 = LEGACY / "codex/sessions/rollout-2025-04-18-0b6a2f1e-9c8d-4e7f-a6b5-c4d3e2f1a0b9.json"
AGENT_VERSION: dict[Source, str] = {"claude": "Claude Code 2.1.332", "codex": "Codex CLI 0.171.0",
                                    "pi": "Pi (session format v3)", "copilot-cli": "Copilot CLI 1.0.102"}
USER_LINE: dict[Source, Callable[[bytes], bool]] = {
    "pi": lambda line: b'"role":"user"' in line,
    "claude": lambda line: b'"type":"user"' in line and b"toolUseResult" not in line and b'"isMeta":true' not in line,
    "codex": lambda line: b'"type":"response_item"' in line and b'"role":"user"' in line,
    "copilot-cli": lambda line: line.startswith(b'{"type":"user.message"'),
}
SKIPPED = b"this line is not JSON\n"
TURNS_SQL = "SELECT turn_id, session_id, turn_index, ts, user_text, reply_text, tool_names FROM turns ORDER BY turn_id"
GUARD_SECONDS = 60.0
T = TypeVar("T")


def place(base: Path, origin: Path, content: bytes | None = None, *, under: Path = SAMPLES) -> Path:
    target = base / origin.relative_to(under)
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_bytes(origin.read_bytes() if content is None else content)
    return target


def run_guarded(function: Callable[[], T], *, release: Path | None = None) -> T:
    """support.sync.run_guarded with this file's time limit; ``release``: a FIFO the sync may be stuck
    opening, which gets a writer on timeout, so the thread ends."""
    return guarded(function, timeout=GUARD_SECONDS, on_timeout=(lambda: release_fifo(release)) if release else None)


def sync(base: Path, db: Path, **kwargs: Any) -> SyncStats:
    return guarded_sync(base, db, timeout=GUARD_SECONDS, **kwargs)


def issues_for(stats: SyncStats, path: Path) -> list[str]:
    return [issue.error for issue in stats.issues if issue.jsonl_path == str(path)]


def rows(db: Path, sql: str = TURNS_SQL, *args: object) -> list[tuple[Any, ...]]:
    conn = connect(db)
    try:
        return conn.execute(sql, args).fetchall()
    finally:
        conn.close()


def user_line(source: Source, lines: list[bytes], nth: int) -> int:
    return [index for index, line in enumerate(lines) if USER_LINE[source](line)][nth]


# ---------------------------------------------------------------------------------------------
# Item 14: a broken line in the middle of a file
# ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize("source", list(SAMPLE))  # the sources with a sample transcript
def test_broken_middle_line_is_reported_once_with_its_line_and_the_agent_version(
        source: Source, tmp_path: Path) -> None:
    lines = SAMPLE[source].read_bytes().splitlines(keepends=True)
    target = user_line(source, lines, 1)
    broken = lines[target][: len(lines[target]) // 2] + b"\n"   # a record cut by a crash, then more records
    base, db = tmp_path / "history", tmp_path / "memory.db"
    under = UNDER.get(source, SAMPLES)
    path = place(base, SAMPLE[source], b"".join([*lines[:target], broken, *lines[target + 1:]]), under=under)
    stats = sync(base, db)
    assert [issue.jsonl_path for issue in stats.issues] == [str(path)]
    issue = stats.issues[0].error
    assert f"line {target + 1} could not be read" in issue and "the rest was imported" in issue, issue
    assert f"written by {AGENT_VERSION[source]}" in issue and HISTORY_SCHEMA_REFERENCE_VERSIONS[source] in issue
    # The rest is imported as if the line were any other skipped line.
    oracle_base, oracle_db = tmp_path / "oracle", tmp_path / "oracle.db"
    place(oracle_base, SAMPLE[source], b"".join([*lines[:target], SKIPPED, *lines[target + 1:]]), under=under)
    sync(oracle_base, oracle_db)
    assert rows(db) == rows(oracle_db) and rows(db)

    # Once: not again on a no-change sync, an append-only sync, or a forced re-parse of the same bytes.
    again = sync(base, db)
    assert (again.scanned_files, again.issues) == (0, [])
    with open(path, "ab") as handle:
        handle.write(lines[-1])
    appended = sync(base, db)
    assert appended.scanned_files == 1 and not appended.issues
    forced = sync(base, db, force=True)
    assert forced.scanned_files > 0 and not forced.issues

    # A new broken line in an appended part is reported, naming it.
    count = len(path.read_bytes().splitlines())
    with open(path, "ab") as handle:
        handle.write(broken + lines[-1])
    stats = sync(base, db)
    assert len(issues_for(stats, path)) == 1 and len(stats.issues) == 1
    assert f"line {count + 1} could not be read" in stats.issues[0].error
    assert "(2 in the file so far)" in stats.issues[0].error

    # A rewrite (a new file in its place) is read from the start: both are reported again.
    copy = path.with_name("rewrite.tmp")
    shutil.copyfile(path, copy)
    os.replace(copy, path)
    stats = sync(base, db)
    assert len(stats.issues) == 1
    assert f"2 lines could not be read (broken JSON or not a record) and were skipped, the first is line " \
           f"{target + 1}" in stats.issues[0].error


def test_broken_line_seen_by_an_interrupted_sync_is_reported_by_the_next(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The broken line is committed past by a sync that is then cancelled: the report is not lost
    (the count is saved with the parse position) and is made once, by the sync that finishes the file."""
    lines = SAMPLE["pi"].read_bytes().splitlines(keepends=True)
    target = user_line("pi", lines, 0)
    base, db = tmp_path / "history", tmp_path / "memory.db"
    path = place(base, SAMPLE["pi"], b"".join([*lines[:target], b"{not json\n", *lines[target:]]))
    monkeypatch.setattr(ingest_module, "CHUNK_TURNS", 1)
    cancel = threading.Event()
    real_commit = ingest_module._FileImport._commit

    def commit_then_cancel(self: Any, *args: Any, **kwargs: Any) -> None:
        real_commit(self, *args, **kwargs)
        if args[3] > target + 2:   # parsed_lines: past the broken line
            cancel.set()

    monkeypatch.setattr(ingest_module._FileImport, "_commit", commit_then_cancel)
    stats = run_guarded(lambda: run_sync(SyncRequest(db_path=str(db), roots=roots_under(base)), cancel=cancel))
    assert stats.cancelled and not stats.issues
    monkeypatch.setattr(ingest_module._FileImport, "_commit", real_commit)
    stats = sync(base, db)
    assert len(stats.issues) == 1 and f"line {target + 1} could not be read" in stats.issues[0].error
    assert stats.issues[0].jsonl_path == str(path)
    assert not sync(base, db, force=True).issues


def test_broken_line_issue_reaches_the_cli_stderr(tmp_path: Path) -> None:
    lines = SAMPLE["claude"].read_bytes().splitlines(keepends=True)
    target = user_line("claude", lines, 0)
    base = tmp_path / "history"
    cut = lines[target][: len(lines[target]) // 2] + b"\n"   # a prompt cut by a crash, then written again
    place(base, SAMPLE["claude"], b"".join([*lines[:target], cut, *lines[target:]]))
    result = subprocess.run([sys.executable, "-m", "pimem", "sync"], env=env_for(base, tmp_path / "memory.db"),
                            capture_output=True, text=True, timeout=120, check=False)
    assert result.returncode == 0
    assert f"line {target + 1} could not be read" in result.stderr and "Claude Code 2.1.332" in result.stderr


# ---------------------------------------------------------------------------------------------
# Item 17: a transcript replaced by a FIFO between stat and open
# ---------------------------------------------------------------------------------------------

def swap_for_fifo(path: Path) -> None:
    path.unlink()
    os.mkfifo(path)


def release_fifo(path: Path) -> None:
    """Unblock a reader stuck opening the FIFO (the code before the fix): a regular file takes its
    place, then the FIFO gets a writer that closes at once (EOF), so no open by path blocks again."""
    writer = None
    with contextlib.suppress(OSError):
        writer = os.open(path, os.O_WRONLY | os.O_NONBLOCK)   # ENXIO when nobody waits: fine
    with contextlib.suppress(OSError):
        regular = path.with_name(path.name + ".released")
        regular.write_bytes(b"")
        os.replace(regular, path)
    if writer is not None:
        os.close(writer)


@contextlib.contextmanager
def swapped_after(monkeypatch: pytest.MonkeyPatch, stage: str, target: Path) -> Iterator[None]:
    """Replace ``target`` by a FIFO right after ``stage`` (discovery, or a live update's stat) saw it."""
    real = getattr(sync_module, stage)

    def then_swap(*args: Any, **kwargs: Any) -> Any:
        found = real(*args, **kwargs)
        assert any(item.path == str(target) for item in found), "the file was not found as a regular file"
        swap_for_fifo(target)
        return found

    with monkeypatch.context() as patch:
        patch.setattr(sync_module, stage, then_swap)
        yield


FIFO_CASES = ["new-jsonl", "known-jsonl-that-grew", "zst-python-zstandard", "zst-zstd-command", "g0-json"]


@pytest.mark.parametrize("case", FIFO_CASES)
def test_transcript_replaced_by_a_fifo_after_discovery_is_an_issue_not_a_hang(
        case: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    base, db = tmp_path / "history", tmp_path / "memory.db"
    good = place(base, SAMPLE["claude"])
    if case.startswith("zst"):
        target = place(base, ZST, under=LEGACY)
        if case == "zst-zstd-command":
            if shutil.which("zstd") is None:
                pytest.skip("the zstd command is not installed")
            monkeypatch.setattr(jsonl, "_zstandard", None)
    elif case == "g0-json":
        target = place(base, G0, under=LEGACY)
    else:
        target = place(base, SAMPLE["pi"])
    if case == "known-jsonl-that-grew":   # known, so the sync first compares its fingerprint
        sync(base, db)
        with open(target, "ab") as handle:
            handle.write(SAMPLE["pi"].read_bytes().splitlines(keepends=True)[-1])
    with swapped_after(monkeypatch, "discover", target):
        stats = run_guarded(lambda: run_sync(SyncRequest(db_path=str(db), roots=roots_under(base))), release=target)
    assert [issue.jsonl_path for issue in stats.issues] == [str(target)]
    assert "it is a FIFO, not a regular file; skipped" in stats.issues[0].error
    assert rows(db, "SELECT count(*) FROM sessions WHERE jsonl_path = ?", str(good))[0][0] == 1
    # The FIFO stays: later syncs pass it by silently (discovery takes regular files only).
    again = sync(base, db)
    assert not again.issues and not target.is_file()


def test_live_update_of_a_path_replaced_by_a_fifo_is_an_issue_not_a_hang(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    base, db = tmp_path / "history", tmp_path / "memory.db"
    target = place(base, SAMPLE["pi"])
    with swapped_after(monkeypatch, "stat_paths", target):
        stats = run_guarded(lambda: run_sync(SyncRequest(db_path=str(db), roots=roots_under(base),
                                                         paths=[str(target)])), release=target)
    assert len(stats.issues) == 1 and "it is a FIFO, not a regular file" in stats.issues[0].error
    later = sync(base, db, paths=[str(target)])
    assert not later.issues and later.scanned_files == 0


def test_open_regular_refuses_what_is_not_a_regular_file_without_waiting(tmp_path: Path) -> None:
    fifo = tmp_path / "fifo.jsonl"
    os.mkfifo(fifo)
    for path, kind in ((fifo, "a FIFO"), (tmp_path, "a directory")):
        with pytest.raises(jsonl.NotRegularFile, match=f"it is {kind}, not a regular file"):
            run_guarded(lambda path=path: jsonl.open_regular(str(path)), release=fifo)  # type: ignore[misc]
    regular = tmp_path / "file.jsonl"
    regular.write_bytes(b"{}\n")
    with jsonl.open_regular(str(regular)) as handle:
        assert handle.read() == b"{}\n" and os.get_blocking(handle.fileno())


# ---------------------------------------------------------------------------------------------
# Item 18: accounting after COMMIT, failures pinned on the failing file
# ---------------------------------------------------------------------------------------------

def sqlite_error(message: str, code: int) -> sqlite3.OperationalError:
    """An OperationalError as SQLite raises it (with its result code)."""
    error = sqlite3.OperationalError(message)
    error.sqlite_errorcode = code
    return error


def fail_writes(monkeypatch: pytest.MonkeyPatch, should_fail: Callable[[Any, int], bool],
                error: Callable[[], sqlite3.Error] = lambda: sqlite_error("too many SQL variables",
                                                                          sqlite3.SQLITE_ERROR)) -> list[str]:
    """After a unit's rows are written (inside the transaction), the write fails with ``error()``
    (by default an error of this write's own data, not of the whole store) when ``should_fail(import,
    n)`` says so, ``n`` counting that file's writes."""
    real_write = ingest_module._FileImport.write
    calls: list[str] = []

    def failing_write(self: Any, unit: Any, *args: Any) -> Any:
        result = real_write(self, unit, *args)
        calls.append(self.file.path)
        if should_fail(self, calls.count(self.file.path)):
            raise error()
        return result

    monkeypatch.setattr(ingest_module._FileImport, "write", failing_write)
    return calls


def one_transaction(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every unit of the sync goes into the writer's last flush (one transaction)."""
    monkeypatch.setattr(ingest_module, "CHUNK_TURNS", 10**9)
    monkeypatch.setattr(ingest_module, "CHUNK_BYTES", 1 << 50)
    monkeypatch.setattr(ingest_module, "CHUNK_SECONDS", 1e9)


@pytest.fixture
def samples(tmp_path: Path) -> tuple[Path, Path, SyncStats]:
    """The sample history and a clean sync of it (the reference)."""
    base = copy_samples(tmp_path / "history")
    reference = tmp_path / "reference.db"
    return base, reference, sync(base, reference, workers=1)


def turns_of(db: Path, path: Path) -> int:
    return int(rows(db, "SELECT count(*) FROM turns t JOIN sessions s ON s.session_id = t.session_id "
                        "WHERE s.jsonl_path = ?", str(path))[0][0])


def test_failed_write_in_a_batch_is_named_and_only_committed_work_is_counted(
        samples: tuple[Path, Path, SyncStats], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    base, reference, clean = samples
    failing = base / SAMPLE["codex"].relative_to(SAMPLES)
    db = tmp_path / "memory.db"
    with monkeypatch.context() as patch:
        one_transaction(patch)
        fail_writes(patch, lambda job, _n: job.file.path == str(failing))
        stats = sync(base, db, workers=1)
    assert [issue.jsonl_path for issue in stats.issues] == [str(failing)]
    assert "could not take this file's rows (too many SQL variables)" in stats.issues[0].error
    lost = turns_of(reference, failing)
    assert lost > 0 and stats.turns == clean.turns - lost
    assert (stats.pi, stats.claude, stats.codex) == (clean.pi, clean.claude, clean.codex - 1)
    files = dict(rows(db, "SELECT jsonl_path, revision FROM pimem_files"))
    assert str(failing) not in files and set(files.values()) == {1}   # every other file committed once
    assert turns_of(db, failing) == 0
    # The next sync imports the failed file, and only it; the store ends as a clean import.
    stats = sync(base, db, workers=1)
    assert (stats.scanned_files, stats.turns, stats.issues) == (1, lost, [])
    assert rows(db) == rows(reference)


def test_failure_is_pinned_on_the_failing_file_not_on_the_one_whose_unit_triggered_the_flush(
        samples: tuple[Path, Path, SyncStats], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    base, reference, _clean = samples
    first, second = (base / SAMPLE[source].relative_to(SAMPLES) for source in ("pi", "claude"))
    turns_first, turns_second = turns_of(reference, first), turns_of(reference, second)
    one_transaction(monkeypatch)
    monkeypatch.setattr(ingest_module, "CHUNK_TURNS", turns_first + turns_second)   # the second file's unit flushes
    fail_writes(monkeypatch, lambda job, _n: job.file.path == str(first))
    db = tmp_path / "memory.db"
    conn = connect(db)
    try:
        jobs = [(SourceFile.at(source, str(path), os.stat(path)), None)
                for source, path in (("pi", first), ("claude", second))]
        outcomes = import_files(conn, jobs)
    finally:
        conn.close()
    failed, stored = outcomes
    assert (turns_of(db, first), turns_of(db, second)) == (0, turns_second)
    assert (failed.turns_changed, stored.turns_changed) == (0, turns_second)
    assert len(failed.issues) == 1 and "too many SQL variables" in failed.issues[0].error and failed.failed
    assert failed.issues[0].jsonl_path == str(first)
    assert not stored.issues


def test_failure_in_the_middle_of_a_file_keeps_its_committed_part_and_counts_only_that(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Prompts only (each unit holds exactly one new turn), committed three units per transaction; the
    fifth write fails: units 1-3 stay, 4 and 5 are rolled back, nothing after is stored out of order."""
    import json

    base, db = tmp_path / "history", tmp_path / "memory.db"
    session = "0e0e0e0e-0000-4000-8000-0000000000aa"
    records = [{"type": "session", "version": 3, "id": session, "timestamp": "2026-12-01T00:00:00.000Z",
                "cwd": "/tmp/pimem-demo/generated"}]
    for number in range(12):
        parent = records[-1].get("id") if number else None
        records.append({"type": "message", "id": f"u{number:07d}", "parentId": parent,
                        "timestamp": "2026-12-01T00:00:00.000Z",
                        "message": {"role": "user", "content": f"prompt {number}",
                                    "timestamp": 1796083200000 + number}})
    path = base / "pi/agent/sessions/--tmp-pimem-demo-generated--" / f"2026-12-01T00-00-00-000Z_{session}.jsonl"
    path.parent.mkdir(parents=True)
    path.write_text("".join(json.dumps(record) + "\n" for record in records), encoding="utf-8")
    with monkeypatch.context() as patch:
        patch.setattr(ingest_module, "CHUNK_TURNS", 1)

        def add_in_threes(writer: Any, unit: Any, size: int) -> None:
            writer._units.append(unit)
            if len(writer._units) >= 3:
                writer.flush()

        patch.setattr(ingest_module.Writer, "add", add_in_threes)
        fail_writes(patch, lambda _job, n: n == 5)
        stats = sync(base, db, workers=1)
    assert len(stats.issues) == 1 and "too many SQL variables" in stats.issues[0].error
    stored = rows(db, "SELECT user_text FROM turns ORDER BY turn_index")
    assert stored == [("prompt 0",), ("prompt 1",), ("prompt 2",)]
    assert stats.turns == 3 == len(stored)
    assert rows(db, "SELECT revision, parsed_lines FROM pimem_files") == [(3, 4)]
    stats = sync(base, db, workers=1)
    assert (stats.turns, stats.issues) == (9, [])
    assert rows(db, "SELECT user_text FROM turns ORDER BY turn_index") == [(f"prompt {n}",) for n in range(12)]


def test_begin_failing_names_every_file_of_the_batch_and_counts_nothing(
        samples: tuple[Path, Path, SyncStats], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    base, reference, clean = samples
    db = tmp_path / "memory.db"
    real_transaction = ingest_module.transaction
    refused: list[int] = []

    @contextlib.contextmanager
    def refused_once(conn: sqlite3.Connection) -> Iterator[sqlite3.Connection]:
        if not refused:
            refused.append(1)
            raise sqlite_error("cannot start a transaction within a transaction", sqlite3.SQLITE_ERROR)
        with real_transaction(conn) as inner:
            yield inner

    with monkeypatch.context() as patch:
        one_transaction(patch)
        patch.setattr(ingest_module, "transaction", refused_once)
        stats = sync(base, db, workers=1)
    assert refused and stats.turns == 0 and (stats.pi, stats.claude, stats.codex) == (0, 0, 0)
    assert len(stats.issues) == clean.scanned_files
    assert all("retried next sync" in issue.error for issue in stats.issues)
    assert rows(db, "SELECT count(*) FROM pimem_files") == [(0,)]
    stats = sync(base, db, workers=1)
    assert (stats.turns, stats.issues) == (clean.turns, [])
    assert rows(db) == rows(reference)


@pytest.mark.parametrize(("code", "message", "says"), [
    (sqlite3.SQLITE_BUSY, "database is locked", "is locked by another program"),
    (sqlite3.SQLITE_FULL, "database or disk is full", "is full"),
    (sqlite3.SQLITE_READONLY, "attempt to write a readonly database", "is read-only"),
    (sqlite3.SQLITE_IOERR, "disk I/O error", "could not be read or written"),
])
def test_a_failure_of_the_whole_store_stops_the_sync_with_one_line_and_keeps_what_was_committed(
        samples: tuple[Path, Path, SyncStats], tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        code: int, message: str, says: str) -> None:
    """Every other file would fail the same way: the sync stops at once with the store's one line
    (the CLI prints it, exit 1), counts nothing that was not committed, and the next sync completes."""
    base, reference, clean = samples
    db = tmp_path / "memory.db"
    failing = base / SAMPLE["codex"].relative_to(SAMPLES)
    with monkeypatch.context() as patch:
        patch.setattr(ingest_module, "CHUNK_TURNS", 1)   # every unit its own transaction: some commit first
        fail_writes(patch, lambda job, _n: job.file.path == str(failing), lambda: sqlite_error(message, code))
        with pytest.raises(StoreError, match=says) as raised:
            sync(base, db, workers=1)
    assert str(db) in str(raised.value) and "\n" not in str(raised.value)
    assert turns_of(db, failing) == 0 and rows(db, "SELECT count(*) FROM turns")[0][0] < clean.turns
    stats = sync(base, db, workers=1)
    assert stats.issues == [] and rows(db) == rows(reference)


def test_forced_sync_through_the_worker_pool_reimports_known_files(
        samples: tuple[Path, Path, SyncStats], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A worker imported a forced file without its saved revision, so its first write looked like
    another sync's and the file was skipped: a forced sync through the pool repaired nothing."""
    base, reference, clean = samples
    db = tmp_path / "memory.db"
    shutil.copyfile(reference, db)
    conn = sqlite3.connect(db)
    conn.execute("UPDATE turns SET reply_text = 'damaged'")
    conn.commit()
    conn.close()
    monkeypatch.setattr(sync_module, "POOL_MIN_BYTES", 0)   # the parent decides; the workers just import
    monkeypatch.setattr(sync_module, "POOL_MIN_FILES", 1)
    stats = sync(base, db, force=True, workers=2)
    assert (stats.scanned_files, stats.turns, stats.issues) == (clean.scanned_files, clean.turns, [])
    assert rows(db) == rows(reference)
