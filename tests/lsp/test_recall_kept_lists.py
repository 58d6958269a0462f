"""Multi-entity recall through ``pimem serve``, which keeps whole index lists (pimem.recall.dense): the
answers equal the oracle's before and after a live sync adds and grows turns under the kept lists."""

from __future__ import annotations

import json
import sqlite3
import time
from pathlib import Path

import pytest

from pimem import wire
from pimem.lsp import methods
from pimem.recall import make_query, recall_scan
from pimem.store import connect
from support.history import copy_samples

from .conftest import request, session
from .test_server import plain, wait_synced

pytestmark = [pytest.mark.e2e, pytest.mark.asyncio]

# Common words of the sample history (several in most turns), and the new turn's rare one.
QUERIES = [["the", "a"], ["file", "test", "the"], ["error", "is", "to", "and"], ["the", "quokka-9"],
           ["to", "and", "of", "in", "it", "is", "for", "quokka-9"]]


async def _same_as_oracle(client: object, base: Path) -> None:
    conn = connect(base / "memory.db")
    try:
        for entities in QUERIES:
            for limit in (1, 5, 20):
                result = plain(await request(client, methods.RECALL, {"entities": entities, "limit": limit}))
                oracle = recall_scan(conn, make_query(entities, limit))
                assert result["results"] == [wire.recall_row(row) for row in oracle], (entities, limit)
    finally:
        conn.close()


async def test_kept_lists_stay_exact_across_a_live_sync(tmp_path: Path) -> None:
    base = copy_samples(tmp_path)
    async with session(base) as (client, recorder):
        await recorder.wait("pimem/indexChanged", 60)
        await wait_synced(recorder)
        await _same_as_oracle(client, base)          # the lists are read and kept here

        pi_file = sorted((base / "pi" / "agent" / "sessions").rglob("*.jsonl"))[0]
        last = json.loads(pi_file.read_text(encoding="utf-8").splitlines()[-1])
        now = int(time.time() * 1000)
        user = {"type": "message", "id": "feed0009", "parentId": last["id"], "timestamp": "2026-12-02T12:00:00.000Z",
                "message": {"role": "user", "content": [
                    {"type": "text", "text": "is the quokka-9 file to blame for the error and the test in it?"}],
                    "timestamp": now}}
        with open(pi_file, "a", encoding="utf-8") as handle:
            handle.write(json.dumps(user) + "\n")
        await recorder.wait("pimem/indexChanged", 10)
        await _same_as_oracle(client, base)          # the new turn comes from the log, not the kept lists

        reply = {"type": "message", "id": "feed0010", "parentId": "feed0009", "timestamp": "2026-12-02T12:00:05.000Z",
                 "message": {"role": "assistant", "content": [
                     {"type": "text", "text": "It is: the quokka-9 file and the test of it, for the error."}],
                     "timestamp": now + 5000}}
        with open(pi_file, "a", encoding="utf-8") as handle:
            handle.write(json.dumps(reply) + "\n")
        await recorder.wait("pimem/indexChanged", 10)
        await _same_as_oracle(client, base)          # the grown turn too
        top = plain(await request(client, methods.RECALL, {"entities": QUERIES[-1], "limit": 1}))
        assert top["results"][0]["userText"].startswith("is the quokka-9 file")


def _pi_session(base: Path, name: str, day: str, turns: int, text: str) -> Path:
    """A Pi session of ``turns`` turns on ``day`` (an old day: its docs get the lowest keys, so a build
    logs them first, at positions the kept lists may already have read)."""
    folder = base / "pi" / "agent" / "sessions" / "--tmp-pimem-demo-restore--"
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{day}T10-00-00-000Z_{name}.jsonl"
    lines = [{"type": "session", "version": 3, "id": name, "timestamp": f"{day}T10:00:00.000Z",
              "cwd": "/tmp/pimem-demo/restore"}]
    parent = None
    for number in range(turns):
        for role, offset in (("user", 0), ("assistant", 1)):
            entry = f"{name[:8]}{number:04d}{offset}"
            stamp = f"{day}T10:{number // 60:02d}:{number % 60:02d}.{offset:03d}Z"
            lines.append({"type": "message", "id": entry, "parentId": parent, "timestamp": stamp,
                          "message": {"role": role, "content": [{"type": "text", "text": f"{text} #{number}"}]}})
            parent = entry
    path.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    return path


def _restore(source: Path, target: Path) -> None:
    """``sqlite3 memory.db ".restore backup.db"``: the content replaced in place (same file, same inode)."""
    backup, live = sqlite3.connect(source), sqlite3.connect(target)
    try:
        backup.backup(live)
    finally:
        backup.close()
        live.close()


def _backup(source: Path, target: Path) -> None:
    _restore(source, target)


# Every query's words in each turn: these turns are the best answers to all of them.
WINNER = " ".join(dict.fromkeys(word for entities in QUERIES for word in entities))


async def test_kept_lists_follow_a_store_restored_replaced_and_rolled_back(tmp_path: Path) -> None:
    """Issue 20.1: under a running server, the store (1) restored in place from another store, (2)
    removed and created anew at its path (the README's reset), (3) rolled back to its own older backup
    and synced on, other docs taking the log positions the kept lists had read: every answer is the
    oracle's."""
    base = copy_samples(tmp_path / "live")
    db = base / "memory.db"
    options = {"autoSync": False}
    async with session(base, options=options) as (client, _recorder):
        await request(client, methods.SYNC, {})
        await _same_as_oracle(client, base)                   # the lists are kept from here on

        # (1) another store, the same history and more before it, restored over this one
        other = copy_samples(tmp_path / "other")
        _pi_session(other, "0badf00d-0000-4000-8000-000000000001", "2020-01-02", 12, WINNER)
        async with session(other, options=options) as (other_client, _):
            await request(other_client, methods.SYNC, {})
        _restore(other / "memory.db", db)
        await _same_as_oracle(client, base)

        # (2) the README's reset: the store removed, a new one synced at its path
        for leftover in base.glob("memory.db*"):
            leftover.unlink()
        _pi_session(base, "0badf00d-0000-4000-8000-000000000002", "2020-01-03", 12, WINNER)
        await request(client, methods.SYNC, {})
        await _same_as_oracle(client, base)

        # (3) rolled back to its own backup, then synced on: other docs at the positions already read
        saved = tmp_path / "saved.db"
        _backup(db, saved)
        added = _pi_session(base, "0badf00d-0000-4000-8000-000000000003", "2020-01-04", 12, "nothing to see")
        await request(client, methods.SYNC, {})
        await _same_as_oracle(client, base)                   # the kept lists follow the log
        _restore(saved, db)
        added.unlink()
        _pi_session(base, "0badf00d-0000-4000-8000-000000000004", "2020-01-05", 6, WINNER)
        await request(client, methods.SYNC, {})                # the log, not yet past what was read
        await _same_as_oracle(client, base)
        _pi_session(base, "0badf00d-0000-4000-8000-000000000005", "2020-01-06", 12, WINNER)
        await request(client, methods.SYNC, {})                # past it
        await _same_as_oracle(client, base)
