"""The language server end to end, over stdio, with pytest-lsp and real transcripts."""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path
from typing import Any

import psutil
import pytest
from lsprotocol import types
from pygls.exceptions import JsonRpcException, JsonRpcInvalidParams, JsonRpcRequestCancelled

from pimem import wire
from pimem.importers import IMPORTERS
from pimem.lsp import methods
from pimem.models import SOURCES
from pimem.recall import make_query, recall_scan
from pimem.store import connect
from support.history import copy_samples, grow_history

from .conftest import request, session

pytestmark = [pytest.mark.e2e, pytest.mark.asyncio]


def plain(value: Any) -> Any:
    """pytest-lsp hands results back as namedtuples; compare them as JSON."""
    if hasattr(value, "_asdict"):
        return {key: plain(item) for key, item in value._asdict().items()}
    if isinstance(value, list | tuple):
        return [plain(item) for item in value]
    return value


async def wait_synced(recorder: Any, timeout: float = 60) -> None:
    while True:
        status = await recorder.wait("pimem/syncStatus", timeout)
        if not status.syncing:
            return


async def test_auto_sync_progress_status_and_recall(tmp_path: Path) -> None:
    base = copy_samples(tmp_path)
    async with session(base) as (client, recorder):
        changed = plain(await recorder.wait("pimem/indexChanged", 60))
        assert changed["turns"] > 0 and set(changed["sources"]) == {"pi", "claude", "codex"}
        status = plain(await request(client, methods.STATUS, {}))
        assert status["totalTurns"] == changed["totalTurns"] == sum(status["turns"].values())
        assert status["dbPath"] == str(base / "memory.db") and status["sessions"] > 0
        assert status["lastSync"]["turns"] == changed["turns"]
        # The agent filters' list: every source, in the registry's order, the three of the samples present.
        sources = plain(await request(client, methods.SOURCES, {}))["sources"]
        assert [entry["source"] for entry in sources] == list(SOURCES)
        by_name = {entry["source"]: entry for entry in sources}
        assert all(by_name[name]["present"] and by_name[name]["read"] and by_name[name]["enabled"]
                   for name in ("pi", "claude", "codex"))
        assert by_name["claude"]["label"] == "Claude Code" and by_name["claude"]["roots"]
        assert {name for name, entry in by_name.items() if entry["read"]} == set(IMPORTERS)
        # Work-done progress: begin, reports, end, on a token the server created.
        tokens = [t for t in client.progress_reports if str(t).startswith("pimem-sync-")]
        kinds = [report.kind for report in client.progress_reports[tokens[0]]]
        assert kinds[0] == "begin" and kinds[-1] == "end" and "report" in kinds
        assert recorder.sync_status[0].syncing and not recorder.sync_status[-1].syncing

        result = plain(await request(client, methods.RECALL, {"entities": ["flamingo"], "limit": 3}))
        oracle = recall_scan(connect(base / "memory.db"), make_query(["flamingo"], 3))
        assert result["results"] == [wire.recall_row(row) for row in oracle]
        assert result["entities"] == ["flamingo"] and "flamingo" in result["markdown"]
        first = result["results"][0]
        assert set(first) == {"turnId", "sessionId", "source", "cwd", "ts", "userText", "replyText", "toolNames",
                              "hits", "jsonlPath", "line", "resumeCommand", "matched", "truncated"}
        assert first["matched"] == ["flamingo"]

        # Free text: stop words dropped, the rarest words searched with weights (pimem/recall/freetext.py).
        from_text = plain(await request(client, methods.RECALL, {"text": "Why does the flamingo bug happen?"}))
        assert "flamingo" in from_text["entities"] and not {"Why", "does", "the"} & set(from_text["entities"])
        assert [term["term"] for term in from_text["terms"]] == from_text["entities"]
        assert "flamingo" in from_text["results"][0]["matched"]

        again = plain(await request(client, methods.BACKFILL, {}))
        assert again["turns"] == 0 and again["scannedFiles"] == 0 and again["skippedFiles"] > 0
        forced = plain(await request(client, methods.BACKFILL, {"force": True}))
        assert forced["scannedFiles"] == again["skippedFiles"] and not forced["cancelled"]


INVALID = [
    (methods.RECALL, None, "entities"),
    (methods.RECALL, [], "params"),
    (methods.RECALL, {"entities": []}, "entities"),
    (methods.RECALL, {"entities": "flamingo"}, "entities"),
    (methods.RECALL, {"entities": ["a", ""]}, "entities"),
    (methods.RECALL, {"entities": ["x"] * 9}, "entities"),
    (methods.RECALL, {"entities": ["x"], "text": "y"}, "entities"),
    (methods.RECALL, {"text": 5}, "text"),
    (methods.RECALL, {"text": "  ,, "}, "text"),
    (methods.RECALL, {"entities": ["x"], "limit": 0}, "limit"),
    (methods.RECALL, {"entities": ["x"], "limit": "5"}, "limit"),
    (methods.RECALL, {"entities": ["x"], "sources": ["emacs"]}, "sources"),
    (methods.RECALL, {"entities": ["x"], "cwd": 3}, "cwd"),
    (methods.BACKFILL, {"force": "yes"}, "force"),
    (methods.BACKFILL, 7, "params"),
    (methods.MIGRATE_CODEX, {"workspaceFolder": 1}, "workspaceFolder"),
    (methods.MIGRATE_CODEX, {"workspaceFolder": "https://example.com/x"}, "workspaceFolder"),
    (methods.MIGRATE_CODEX, {"workspaceFolder": "file:///not/a/workspace/folder"}, "workspaceFolder"),
    (methods.MIGRATE_CODEX, {"dryRun": "no"}, "dryRun"),
    (methods.STATUS, "now", "params"),
]


async def test_bad_params_get_invalid_params_naming_the_field(tmp_path: Path) -> None:
    base = copy_samples(tmp_path)
    async with session(base, options={"autoSync": False}, folders=[Path("/tmp/pimem-demo/webshop")]) as (client, _):
        for method, params, field in INVALID:
            with pytest.raises(JsonRpcInvalidParams) as error:
                await request(client, method, params)
            assert method in str(error.value) and field in str(error.value), (method, params, str(error.value))
        with pytest.raises(JsonRpcException) as unknown:
            await request(client, "pimem/nope", {})
        assert unknown.value.code == -32601
        status = plain(await request(client, methods.STATUS, None))  # still alive and answering
        assert status["totalTurns"] == 0 and status["lastSync"] is None


async def test_service_failure_is_a_clean_error(tmp_path: Path) -> None:
    base = copy_samples(tmp_path)
    (base / "not-a-db").mkdir()
    async with session(base, options={"autoSync": False, "dbPath": str(base / "not-a-db")}) as (client, _):
        with pytest.raises(JsonRpcException) as error:
            await request(client, methods.STATUS, {})
        assert error.value.code == -32803 and "is a directory" in str(error.value)
        assert "Traceback" not in str(error.value)


async def test_bad_initialization_options_are_reported_not_fatal(tmp_path: Path) -> None:
    base = copy_samples(tmp_path)
    options = {"autoSync": "sometimes", "sources": {"pi": "yes", "vim": True}, "hover": 3}
    async with session(base, options=options) as (client, recorder):
        await recorder.wait("pimem/indexChanged", 60)  # autoSync fell back to true
        messages = [m.message for m in client.messages if m.type == types.MessageType.Error]
        for option in ("autoSync", "sources.pi", "sources.vim", "hover"):
            assert any(option in message for message in messages), (option, messages)


async def test_cancel_request_stops_a_long_sync_and_the_next_one_finishes(tmp_path: Path) -> None:
    base = copy_samples(tmp_path)
    grow_history(base, 150)
    async with session(base, options={"autoSync": False}) as (client, recorder):
        future = asyncio.ensure_future(
            client.protocol.send_request_async(methods.BACKFILL, {"force": True}, msg_id="long-sync"))
        while not (await recorder.wait("pimem/syncStatus", 30)).filesDone:
            pass
        client.cancel_request(types.CancelParams(id="long-sync"))
        with pytest.raises(JsonRpcRequestCancelled):
            await asyncio.wait_for(future, 30)
        while (await recorder.wait("pimem/syncStatus", 30)).syncing:  # the sync winds down, then stops
            pass
        partial = plain(await request(client, methods.STATUS, {}))
        finished = plain(await request(client, methods.BACKFILL, {}, timeout=120))
        assert not finished["cancelled"] and finished["scannedFiles"] > 0
        total = plain(await request(client, methods.STATUS, {}))
        # Stopped either while storing files or while indexing the stored turns.
        assert total["totalTurns"] > partial["totalTurns"] or partial["turnsToIndex"] > 0, (partial, total)
        assert partial["lastSync"]["cancelled"] and total["turnsToIndex"] == 0
    # The interrupted-then-finished store equals one uninterrupted sync of the same files.
    reference = tmp_path / "reference"
    from pimem.sync import SyncRequest, run_sync
    from support.history import roots_under
    run_sync(SyncRequest(db_path=str(reference / "m.db"), roots=roots_under(base)))
    query = "SELECT turn_id, user_text, reply_text, tool_names FROM turns ORDER BY turn_id"
    interrupted = connect(base / "memory.db").execute(query).fetchall()
    assert interrupted == connect(reference / "m.db").execute(query).fetchall()


async def test_progress_cancel_ends_the_sync_with_cancelled(tmp_path: Path) -> None:
    base = copy_samples(tmp_path)
    grow_history(base, 150)
    async with session(base, options={"autoSync": False}) as (client, recorder):
        future = asyncio.ensure_future(request(client, methods.BACKFILL, {"force": True}))
        status = await recorder.wait("pimem/syncStatus", 30)
        assert status.syncing and status.token
        client.window_work_done_progress_cancel(types.WorkDoneProgressCancelParams(token=status.token))
        result = plain(await asyncio.wait_for(future, 60))
        assert result["cancelled"] is True
        assert client.progress_reports[status.token][-1].kind == "end"


async def test_recall_answers_during_a_long_sync(tmp_path: Path) -> None:
    base = copy_samples(tmp_path)
    grow_history(base, 150)
    async with session(base, options={"autoSync": False}) as (client, recorder):
        sync = asyncio.ensure_future(request(client, methods.BACKFILL, {"force": True}, timeout=180))
        await recorder.wait("pimem/syncStatus", 30)
        slowest, answered, saw_syncing = 0.0, 0, False
        while not sync.done():
            started = time.monotonic()
            await request(client, methods.RECALL, {"entities": ["flamingo"]}, timeout=10)
            status = plain(await request(client, methods.STATUS, {}, timeout=10))
            saw_syncing |= status["syncing"]
            slowest = max(slowest, time.monotonic() - started)
            answered += 1
        assert plain(await sync)["cancelled"] is False
        assert answered >= 3 and saw_syncing and slowest < 2.0


async def test_appended_turn_is_recalled_and_announced_within_two_seconds(tmp_path: Path) -> None:
    base = copy_samples(tmp_path)
    async with session(base) as (client, recorder):
        await recorder.wait("pimem/indexChanged", 60)
        await wait_synced(recorder)
        pi_file = sorted((base / "pi" / "agent" / "sessions").rglob("*.jsonl"))[0]
        last = json.loads(pi_file.read_text(encoding="utf-8").splitlines()[-1])
        now = int(time.time() * 1000)
        user = {"type": "message", "id": "feed0001", "parentId": last["id"], "timestamp": "2026-11-30T12:00:00.000Z",
                "message": {"role": "user", "content": [{"type": "text", "text": "what about the quokka-7 cache?"}],
                            "timestamp": now}}
        started = time.monotonic()
        with open(pi_file, "a", encoding="utf-8") as handle:
            handle.write(json.dumps(user) + "\n")
        changed = plain(await recorder.wait("pimem/indexChanged", 5))
        elapsed = time.monotonic() - started
        assert elapsed < 2.0 and changed["sources"] == ["pi"] and changed["turns"] == 1
        found = plain(await request(client, methods.RECALL, {"entities": ["quokka-7"]}))
        assert [row["userText"] for row in found["results"]] == ["what about the quokka-7 cache?"]


async def test_workspace_folders_scope_the_migration(tmp_path: Path) -> None:
    base = copy_samples(tmp_path)
    webshop, payroll = Path("/tmp/pimem-demo/webshop"), Path("/tmp/pimem-demo/payroll-api")
    async with session(base, options={"autoSync": False}, folders=[webshop]) as (client, _):
        reports = plain(await request(client, methods.MIGRATE_CODEX, {"dryRun": True}))["reports"]
        assert [r["folder"] for r in reports] == [str(webshop)] and len(reports[0]["migrated"]) == 3
        assert reports[0]["dryRun"] is True
        with pytest.raises(JsonRpcInvalidParams):
            await request(client, methods.MIGRATE_CODEX, {"workspaceFolder": payroll.as_uri()})
        client.workspace_did_change_workspace_folders(types.DidChangeWorkspaceFoldersParams(
            event=types.WorkspaceFoldersChangeEvent(
                added=[types.WorkspaceFolder(uri=payroll.as_uri(), name="payroll-api")],
                removed=[types.WorkspaceFolder(uri=webshop.as_uri(), name="webshop")])))
        reports = plain(await request(client, methods.MIGRATE_CODEX, {"workspaceFolder": payroll.as_uri()}))["reports"]
        assert [r["folder"] for r in reports] == [str(payroll)] and reports[0]["dryRun"] is False
        written = [Path(m["piPath"]) for m in reports[0]["migrated"]]
        assert written and all(p.exists() and p.parent.parent == base / "pi" / "agent" / "sessions" for p in written)
        with pytest.raises(JsonRpcInvalidParams):
            await request(client, methods.MIGRATE_CODEX, {"workspaceFolder": webshop.as_uri()})


async def test_hover_on_word_only_when_enabled(tmp_path: Path) -> None:
    base = copy_samples(tmp_path)
    document = types.TextDocumentItem(uri=(tmp_path / "notes.md").as_uri(), language_id="markdown", version=1,
                                      text="the flamingo cache bug again\n")
    position = types.HoverParams(text_document=types.TextDocumentIdentifier(uri=document.uri),
                                 position=types.Position(line=0, character=7))
    async with session(base, options={"hover": "word"}) as (client, recorder):
        await recorder.wait("pimem/indexChanged", 60)
        client.text_document_did_open(types.DidOpenTextDocumentParams(text_document=document))
        hover = await client.text_document_hover_async(position)
        assert hover is not None and "flamingo" in hover.contents.value
    async with session(base, options={"autoSync": False}) as (client, _):
        client.text_document_did_open(types.DidOpenTextDocumentParams(text_document=document))
        with pytest.raises(JsonRpcException):
            await client.text_document_hover_async(position)


async def test_shutdown_is_prompt_even_mid_sync(tmp_path: Path) -> None:
    base = copy_samples(tmp_path)
    grow_history(base, 40)
    async with session(base) as (client, recorder):
        await recorder.wait("pimem/syncStatus", 30)
        await asyncio.sleep(0.5)
        server = psutil.Process(client._server.pid)  # type: ignore[union-attr]
        children = server.children(recursive=True)   # the sync's worker processes
        assert children, "the sync should be running in worker processes by now"
        started = time.monotonic()
        await asyncio.wait_for(client.shutdown_async(None), 10)
        client.exit(None)
        await asyncio.wait_for(client._server.wait(), 10)  # type: ignore[union-attr]
        assert time.monotonic() - started < 5
        assert client._server.returncode == 0  # type: ignore[union-attr]
        _gone, alive = psutil.wait_procs(children, timeout=5)
        assert alive == []  # no orphaned worker process
        client.capabilities = None  # already shut down: the fixture must not do it again

