"""The language server and its store (issue 10, items 9 and 11), end to end over stdio.

* A store file removed or replaced under a running server (a reset, a restore) is noticed at the
  next request: every reader thread reopens it, recall answers from the new file, and a sync writes
  the new file and is recalled from it.
* A store the server cannot use (another program's database, a newer pimem's layout, damaged,
  locked past the busy timeout) makes each request fail with -32803 and one line; the server keeps
  answering and the file is left as it was.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import sqlite3
import uuid
from pathlib import Path
from typing import Any

import pytest
from lsprotocol import types
from pygls.exceptions import JsonRpcException

from pimem.lsp import methods
from pimem.store import LAYOUT
from pimem.sync import SyncRequest, run_sync
from support.history import copy_samples

from .conftest import request, session

pytestmark = [pytest.mark.e2e, pytest.mark.asyncio]
READERS = 4   # PimemServer's reader pool


def plain(value: Any) -> Any:
    if hasattr(value, "_asdict"):
        return {key: plain(item) for key, item in value._asdict().items()}
    if isinstance(value, list | tuple):
        return [plain(item) for item in value]
    return value


def add_pi_session(history: Path, marker: str) -> None:
    session_id = str(uuid.uuid5(uuid.NAMESPACE_URL, marker))
    folder = history / "pi" / "agent" / "sessions" / "--tmp-pimem-restore--"
    folder.mkdir(parents=True, exist_ok=True)
    records = [
        {"type": "session", "version": 3, "id": session_id, "timestamp": "2026-11-30T10:00:00.000Z",
         "cwd": "/tmp/pimem-restore"},
        {"type": "message", "id": "r1", "parentId": None, "timestamp": "2026-11-30T10:00:01.000Z",
         "message": {"role": "user", "content": [{"type": "text", "text": f"{marker} question"}],
                     "timestamp": 1764496801000}},
        {"type": "message", "id": "r2", "parentId": "r1", "timestamp": "2026-11-30T10:00:02.000Z",
         "message": {"role": "assistant", "content": [{"type": "text", "text": f"{marker} answer"}],
                     "timestamp": 1764496802000}},
    ]
    (folder / f"2026-11-30T10-00-00-000Z_{session_id}.jsonl").write_text(
        "".join(json.dumps(record) + "\n" for record in records), encoding="utf-8")


async def recall_everywhere(client: Any, word: str) -> list[list[str]]:
    """The same recall from every reader thread at once (each has its own cached connection)."""
    answers = await asyncio.gather(*[request(client, methods.RECALL, {"entities": [word], "limit": 50})
                                     for _ in range(2 * READERS)])
    return [[row["userText"] for row in plain(answer)["results"]] for answer in answers]


def remove_store(db: Path) -> None:
    """What a reset or restore must remove: the database and its -wal and -shm (see README)."""
    for name in (str(db), f"{db}-wal", f"{db}-shm"):
        if os.path.lexists(name):
            os.unlink(name)


@pytest.mark.parametrize("how", ["restored", "reset"])
async def test_a_replaced_or_removed_store_is_reopened_by_every_reader(tmp_path: Path, how: str) -> None:
    base = copy_samples(tmp_path / "run")
    db = base / "memory.db"
    async with session(base, options={"autoSync": False}) as (client, _recorder):
        first = plain(await request(client, methods.BACKFILL, {}))
        assert first["turns"] > 40
        assert all(answers for answers in await recall_everywhere(client, "flamingo"))

        if how == "restored":   # a backup made elsewhere is put in place
            backup_history = tmp_path / "backup-history"
            add_pi_session(backup_history, "Okapi-restored")
            backup = tmp_path / "backup" / "memory.db"
            run_sync(SyncRequest(db_path=str(backup), roots=_roots(backup_history)))
            remove_store(db)
            os.replace(backup, db)
            assert await recall_everywhere(client, "flamingo") == [[]] * (2 * READERS)
            assert await recall_everywhere(client, "Okapi-restored") == [["Okapi-restored question"]] * (2 * READERS)
        else:
            remove_store(db)
            status = plain(await request(client, methods.STATUS, {}))
            assert status["totalTurns"] == 0 and status["lastSync"] is None
            assert await recall_everywhere(client, "flamingo") == [[]] * (2 * READERS)

        # A sync writes the file now in place, and every reader sees what it wrote.
        add_pi_session(base, "Okapi-after")
        second = plain(await request(client, methods.BACKFILL, {}))
        assert second["turns"] == first["turns"] + 1    # the samples again (new store), and the new session
        assert await recall_everywhere(client, "Okapi-after") == [["Okapi-after question"]] * (2 * READERS)
        assert all(answers for answers in await recall_everywhere(client, "flamingo"))
        status = plain(await request(client, methods.STATUS, {}))
        assert status["totalTurns"] == second["turns"] + (1 if how == "restored" else 0)


def _roots(base: Path) -> Any:
    from support.history import roots_under

    return roots_under(base)


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


async def assert_request_fails(client: Any, method: str, params: Any, *expected: str) -> str:
    with pytest.raises(JsonRpcException) as failure:
        await request(client, method, params)
    message = str(failure.value)
    assert failure.value.code == -32803 and "Traceback" not in message and "\n" not in message.strip(), message
    for text in expected:
        assert text in message, (text, message)
    return message


async def test_another_programs_database_fails_each_request_cleanly_and_is_untouched(tmp_path: Path) -> None:
    base = copy_samples(tmp_path)
    foreign = base / "app.db"
    conn = sqlite3.connect(foreign)
    conn.execute("CREATE TABLE notes (body TEXT)")
    conn.commit()
    conn.close()
    before = digest(foreign)
    document = types.TextDocumentItem(uri=(tmp_path / "notes.md").as_uri(), language_id="markdown", version=1,
                                      text="the flamingo cache bug again\n")
    options = {"autoSync": False, "dbPath": str(foreign), "hover": "word"}
    async with session(base, options=options) as (client, _):
        for method, params in ((methods.STATUS, {}), (methods.RECALL, {"entities": ["x"]}), (methods.BACKFILL, {})):
            await assert_request_fails(client, method, params, "another program's SQLite database")
        client.text_document_did_open(types.DidOpenTextDocumentParams(text_document=document))
        hover = await client.text_document_hover_async(types.HoverParams(
            text_document=types.TextDocumentIdentifier(uri=document.uri), position=types.Position(line=0, character=7)))
        assert hover is None   # no store to recall from: no hover, no error
        await assert_request_fails(client, methods.STATUS, {}, "another program's SQLite database")  # alive
    assert digest(foreign) == before and sorted(os.listdir(base)).count("app.db-wal") == 0


async def test_a_newer_layout_is_read_but_never_synced(tmp_path: Path) -> None:
    base = copy_samples(tmp_path)
    db = base / "memory.db"
    run_sync(SyncRequest(db_path=str(db), roots=_roots(base)))
    conn = sqlite3.connect(db)
    with conn:   # what a newer pimem leaves behind
        conn.execute("UPDATE pimem_meta SET value = ? WHERE key = 'layout'", (str(LAYOUT + 1),))
        conn.execute("UPDATE pimem_meta SET value = '99.0' WHERE key = 'layout_written_by'")
    tables = conn.execute("SELECT name FROM sqlite_master ORDER BY name").fetchall()
    turns = conn.execute("SELECT count(*) FROM turns").fetchone()[0]
    conn.close()
    async with session(base, options={"autoSync": False}) as (client, _):
        status = plain(await request(client, methods.STATUS, {}))
        assert status["totalTurns"] == turns and "please upgrade" in status["upgradeRequired"]
        assert all(answers for answers in await recall_everywhere(client, "flamingo"))
        await assert_request_fails(client, methods.BACKFILL, {"force": True},
                                   f"was written by pimem 99.0 (layout {LAYOUT + 1})", "please upgrade")
    conn = sqlite3.connect(db)
    assert conn.execute("SELECT name FROM sqlite_master ORDER BY name").fetchall() == tables
    assert conn.execute("SELECT value FROM pimem_meta WHERE key = 'layout'").fetchone()[0] == str(LAYOUT + 1)
    conn.close()


async def test_a_damaged_store_fails_requests_cleanly_and_is_left_as_it_is(tmp_path: Path) -> None:
    base = copy_samples(tmp_path)
    db = base / "memory.db"
    run_sync(SyncRequest(db_path=str(db), roots=_roots(base)))
    with open(db, "r+b") as handle:
        handle.truncate(db.stat().st_size // 3)
    before = digest(db)
    async with session(base, options={"autoSync": False}) as (client, _):
        await assert_request_fails(client, methods.BACKFILL, {}, "is damaged", "pimem leaves it as it is")
        for _ in range(2):   # what is left may answer a read; else a clean error, and the server lives on
            for method, params in ((methods.RECALL, {"entities": ["flamingo"]}), (methods.STATUS, None)):
                try:
                    await request(client, method, params)
                except JsonRpcException as failure:
                    assert failure.code == -32803 and "is damaged" in str(failure), str(failure)
    assert digest(db) == before


async def test_a_store_locked_past_the_busy_timeout_fails_the_sync_cleanly(tmp_path: Path,
                                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    base = copy_samples(tmp_path)
    db = base / "memory.db"
    run_sync(SyncRequest(db_path=str(db), roots=_roots(base)))
    monkeypatch.setenv("PIMEM_BUSY_TIMEOUT_MS", "200")
    holder = sqlite3.connect(db, isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")
    try:
        async with session(base, options={"autoSync": False}) as (client, _):
            await assert_request_fails(client, methods.BACKFILL, {}, "locked by another program",
                                       "PIMEM_BUSY_TIMEOUT_MS")
            assert plain(await request(client, methods.STATUS, {}))["totalTurns"] > 40   # readers are not blocked
    finally:
        holder.close()


async def test_status_says_whether_a_shared_store_is_configured(tmp_path: Path) -> None:
    """The sidebar shows its scope switch from ``shared.configured`` (no probing recall): false without a
    share configuration, true once one names a server, and true for one it cannot read (each scoped
    answer then says what is wrong, rather than the shared memory vanishing without a word)."""
    base = copy_samples(tmp_path)
    config = base / "memory-share.json"   # beside the store (pimem.share.state.config_path)
    async with session(base, options={"autoSync": False}) as (client, _):
        assert plain(await request(client, methods.STATUS, {}))["shared"] == {"configured": False}
        config.write_text(json.dumps({"conninfo": "host=db.example dbname=pimem user=me", "machine": "laptop"}),
                          encoding="utf-8")
        assert plain(await request(client, methods.STATUS, {}))["shared"] == {"configured": True}
        config.write_text("{not json", encoding="utf-8")
        assert plain(await request(client, methods.STATUS, {}))["shared"] == {"configured": True}
        config.write_text(json.dumps({"conninfo": ""}), encoding="utf-8")
        assert plain(await request(client, methods.STATUS, {}))["shared"] == {"configured": False}
