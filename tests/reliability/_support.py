"""Shared helpers of the reliability tests: hostile copies of good transcripts with fresh session ids,
store snapshots, the store a sync of the good transcripts alone gives, and the consistency checks."""

from __future__ import annotations

import functools
import json
import os
import random
import sqlite3
import tempfile
import time
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

from pimem import wire
from pimem.models import Source, SyncStats
from pimem.recall import make_query, recall, recall_scan
from pimem.store import connect
from pimem.sync import SyncRequest, run_sync
from support.history import SAMPLES, copy_samples, roots_under
from support.ids import fresh_ids
from support.sync import sync

# Good transcripts hostile files are made from (all three mention "flamingo" in a prompt).
TEMPLATES: dict[Source, Path] = {
    "pi": SAMPLES / "pi/agent/sessions/--tmp-pimem-demo-webshop--"
                    "/2026-11-30T09-45-48-861Z_01a22bd8-a83c-7278-b6dd-f7b4c2b178a9.jsonl",
    "claude": SAMPLES / "claude/projects/-tmp-pimem-demo-webshop/1ed4dd9a-5989-4487-9ac3-d2b870816ee8.jsonl",
    "codex": SAMPLES / "codex/sessions/2026/11/30"
                       "/rollout-2026-11-30T09-45-41-01a22bd8-8c34-7e91-9282-79d4f5ad872f.jsonl",
}
# Where hostile files go: a directory of their own under each agent's root.
HOSTILE_DIRS: dict[Source, str] = {
    "pi": "pi/agent/sessions/--tmp-hostile--",
    "claude": "claude/projects/-tmp-hostile",
    "codex": "codex/sessions/2026/12/01",
}
# Scratch space: tmpfs when there is one (creating and removing thousands of small files on a
# virtual disk costs more than the tests themselves).
SCRATCH = "/dev/shm" if os.path.isdir("/dev/shm") and os.access("/dev/shm", os.W_OK) else None


def template_lines(source: Source, salt: int, template: Path | None = None) -> list[bytes]:
    """The lines (with their newlines) of a good transcript, with fresh session ids."""
    text = (template or TEMPLATES[source]).read_text(encoding="utf-8")
    return [line.encode("utf-8") for line in fresh_ids(text, salt).splitlines(keepends=True)]


def hostile_path(base: Path, source: Source, salt: int, template: Path | None = None, name: str | None = None) -> Path:
    directory = base / HOSTILE_DIRS[source]
    directory.mkdir(parents=True, exist_ok=True)
    return directory / (name or fresh_ids((template or TEMPLATES[source]).name, salt))


def write(path: Path, content: bytes | Iterable[bytes]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "wb") as handle:
        if isinstance(content, bytes):
            handle.write(content)
        else:
            for piece in content:
                handle.write(piece)
    return path


Snapshot = dict[str, tuple[tuple[Any, ...] | None, tuple[tuple[Any, ...], ...]]]


def snapshot(conn: sqlite3.Connection, base: Path) -> Snapshot:
    """Per session: its row (transcript path relative to ``base``) and its turns with their lines."""
    sessions: dict[str, tuple[Any, ...] | None] = {}
    for session_id, source, cwd, started_at, model_id, path in conn.execute(
            "SELECT session_id, source, cwd, started_at, model_id, jsonl_path FROM sessions"):
        sessions[session_id] = (source, cwd, started_at, model_id, os.path.relpath(path, base))
    turns: dict[str, list[tuple[Any, ...]]] = {}
    for row in conn.execute(
            "SELECT t.session_id, t.turn_id, t.turn_index, t.ts, t.user_text, t.reply_text, t.tool_names, "
            "t.user_message_id, d.line FROM turns t LEFT JOIN pimem_docs d ON d.turn_id = t.turn_id "
            "ORDER BY t.turn_id"):
        turns.setdefault(row[0], []).append(tuple(row[1:]))
    return {sid: (sessions.get(sid), tuple(turns.get(sid, ()))) for sid in set(sessions) | set(turns)}


@functools.cache
def _baseline() -> tuple[Snapshot, int]:
    with tempfile.TemporaryDirectory(prefix="pimem-baseline-", dir=SCRATCH) as tmp:
        base = copy_samples(Path(tmp) / "history", legacy=True)
        stats = sync(base, Path(tmp) / "store" / "memory.db")
        assert not stats.issues, [issue.error for issue in stats.issues]
        conn = connect(Path(tmp) / "store" / "memory.db")
        try:
            snap = snapshot(conn, base)
        finally:
            conn.close()
    assert sum(len(turns) for _, turns in snap.values()) >= 70
    return snap, stats.scanned_files


def baseline() -> Snapshot:
    """The store one sync of the good transcripts alone produces (computed once)."""
    return _baseline()[0]


def baseline_files() -> int:
    """How many transcript files that sync parsed."""
    return _baseline()[1]


def import_alone(base: Path, relative: str, content: bytes) -> Snapshot:
    """What one transcript with ``content`` at ``relative`` gives when imported alone (an oracle)."""
    with tempfile.TemporaryDirectory(prefix="pimem-oracle-", dir=SCRATCH) as tmp:
        root = Path(tmp)
        path = write(root / relative, content)
        db = root / "oracle.db"
        run_sync(SyncRequest(db_path=str(db), roots=roots_under(root), paths=[str(path)]))
        conn = connect(db)
        try:
            snap = snapshot(conn, root)
        finally:
            conn.close()
    return snap


def check_store(conn: sqlite3.Connection, rng: random.Random | None = None, queries: int = 12,
                recall_checks: bool = True) -> None:
    """SQLite and FTS integrity, and the indexed recall equal to the oracle on entities from the store."""
    assert conn.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
    for table in ("pimem_fts_user", "pimem_fts_reply"):
        conn.execute(f"INSERT INTO {table}({table}) VALUES ('integrity-check')")
    if not recall_checks:
        return
    rng = rng or random.Random(7)
    texts = [text for row in conn.execute("SELECT user_text, reply_text FROM turns") for text in row if text]
    entities = ["flamingo", "缓存", "%", "a_b", "\\"]
    for _ in range(queries):
        if texts:
            text = rng.choice(texts)
            start = rng.randrange(len(text))
            entities.append(text[start:start + rng.randint(1, 12)])
    for entity in entities:
        if not entity.strip():
            continue
        query = make_query([entity], limit=10)
        assert [wire.recall_row(r) for r in recall(conn, query)] == [
            wire.recall_row(r) for r in recall_scan(conn, query)], entity


def stored(path: Path | str) -> str:
    """A path as pimem stores and reports it: bytes that are not UTF-8 written as ``\\xNN``."""
    text = os.fspath(path)
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return os.fsencode(text).decode("utf-8", "backslashreplace")
    return text


def assert_isolated(stats: SyncStats, db: Path, base: Path, hostile: Iterable[Path],
                    issue_paths: Iterable[Path] = (), *, allow_unexpected: bool = False,
                    recall_checks: bool = True) -> Snapshot:
    """Every good file imported exactly as without the hostile ones; any new session comes from a
    hostile file; issues name only hostile paths and none comes from an importer crash. Returns the
    sessions the hostile files produced."""
    good = baseline()
    hostile_rel = {os.path.relpath(stored(path), base) for path in hostile}
    conn = connect(db)
    try:
        after = snapshot(conn, base)
        check_store(conn, recall_checks=recall_checks)
    finally:
        conn.close()
    missing = sorted(set(good) - set(after))
    assert not missing, f"good sessions missing: {missing}"
    changed = sorted(sid for sid in good if after[sid] != good[sid])
    assert not changed, f"good sessions changed: {changed}"
    extra = {sid: value for sid, value in after.items() if sid not in good}
    for sid, (info, _turns) in extra.items():
        assert info is not None and info[4] in hostile_rel, (sid, info)
    allowed = {stored(path) for path in hostile} | {stored(path) for path in issue_paths}
    for issue in stats.issues:
        assert issue.jsonl_path in allowed, issue.error
        if not allow_unexpected:  # the isolation boundary caught an exception: a bug behind it
            assert "unexpected" not in issue.error, issue.error
    return extra


def issues_for(stats: SyncStats, path: Path) -> list[str]:
    return [issue.error for issue in stats.issues if issue.jsonl_path == stored(path)]


def replace_line(lines: list[bytes], index: int, new: bytes) -> list[bytes]:
    return [*lines[:index], new, *lines[index + 1:]]


def line_index(lines: list[bytes], predicate: Callable[[bytes], bool], last: bool = False) -> int:
    found = [number for number, line in enumerate(lines) if predicate(line)]
    assert found, "no such line in the template"
    return found[-1] if last else found[0]


_WORDS = ["flamingo", "cache", "price", "stale", "invalidation", "lock", "payroll", "rounding", "export", "bonus",
          "module", "test", "fix", "request", "response", "header", "session", "token", "queue", "worker", "retry",
          "timeout", "config", "merge", "branch", "commit", "缓存", "锁", "Ärger", "ÜBERSCHREIBEN", "100%", "a_b",
          "C:\\path\\file", "zeta_ratelimit", "slugify"]


def _iso(ms: int) -> str:
    seconds, millis = divmod(ms, 1000)
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(seconds)) + f".{millis:03d}Z"


def pi_session_lines(session_id: str, turns: int, *, result_bytes: int = 200, seed: int = 0,
                     cwd: str = "/tmp/pimem-demo/generated", start_ms: int = 1_796_000_000_000) -> Iterator[bytes]:
    """A Pi v3 session written the way Pi 1.6 writes one: per turn a prompt, an assistant message with
    a tool call, the tool result (``result_bytes`` of output) and the final answer."""
    rng = random.Random(seed)
    paragraphs = [" ".join(rng.choice(_WORDS) for _ in range(40)) for _ in range(64)]
    filler = (" ".join(paragraphs) + " ") * (result_bytes // 2000 + 1)

    def line(record: dict[str, Any]) -> bytes:
        return json.dumps(record, ensure_ascii=False, separators=(",", ":")).encode("utf-8") + b"\n"

    yield line({"type": "session", "version": 3, "id": session_id, "timestamp": _iso(start_ms), "cwd": cwd})
    parent = None
    for number in range(turns):
        ms = start_ms + number * 4000
        ids = [f"{number:06x}{suffix}" for suffix in ("u0", "a1", "r2", "a3")]
        prompt = f"turn {number}: {paragraphs[number % 64][:120]}"
        yield line({"type": "message", "id": ids[0], "parentId": parent, "timestamp": _iso(ms),
                    "message": {"role": "user", "content": [{"type": "text", "text": prompt}], "timestamp": ms}})
        yield line({"type": "message", "id": ids[1], "parentId": ids[0], "timestamp": _iso(ms + 1000),
                    "message": {"role": "assistant", "content": [
                        {"type": "text", "text": f"Checking {paragraphs[(number + 1) % 64][:60]}"},
                        {"type": "toolCall", "id": f"call{number}", "name": "bash", "arguments": {"command": "ls"}}],
                        "model": "mock-model", "timestamp": ms + 1000}})
        offset = (number * 97) % 2000
        yield line({"type": "message", "id": ids[2], "parentId": ids[1], "timestamp": _iso(ms + 2000),
                    "message": {"role": "toolResult", "toolCallId": f"call{number}", "toolName": "bash",
                                "content": [{"type": "text", "text": filler[offset:offset + result_bytes]}],
                                "isError": False, "timestamp": ms + 2000}})
        yield line({"type": "message", "id": ids[3], "parentId": ids[2], "timestamp": _iso(ms + 3000),
                    "message": {"role": "assistant", "content": [
                        {"type": "text", "text": f"Done with turn {number}. {paragraphs[(number + 2) % 64][:200]}"}],
                        "model": "mock-model", "timestamp": ms + 3000}})
        parent = ids[3]
