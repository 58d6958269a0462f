"""pimem/sessions, pimem/session, pimem/fileHistory, migrateCodex {sessionId} and syncStatus's
error, end to end over stdio (the services' own rules are in tests/test_file_touches.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from pygls.exceptions import JsonRpcInvalidParams

from pimem import wire
from pimem.filehistory import file_history
from pimem.lsp import methods
from pimem.sessions import list_sessions, read_window
from pimem.store import connect
from support.history import copy_samples

from .conftest import request, session
from .test_server import plain, wait_synced

pytestmark = [pytest.mark.e2e, pytest.mark.asyncio]

WEBSHOP = Path("/tmp/pimem-demo/webshop")
NOTES = WEBSHOP / "notes.txt"   # written by Pi in P1 (and its fork P4)


async def test_sessions_session_and_file_history_answer_as_the_services(tmp_path: Path) -> None:
    base = copy_samples(tmp_path)
    async with session(base) as (client, recorder):
        await wait_synced(recorder)
        conn = connect(base / "memory.db", for_writing=False)

        page = plain(await request(client, methods.SESSIONS, {"folders": [WEBSHOP.as_uri()], "limit": 2}))
        assert page == wire.sessions_page(list_sessions(conn, [str(WEBSHOP)], None, 2, 0))
        assert page["total"] > 2 and len(page["sessions"]) == 2
        rest = plain(await request(client, methods.SESSIONS, {"folders": [str(WEBSHOP)], "offset": 2,
                                                             "sources": ["pi", "claude", "codex"]}))
        assert rest["total"] == page["total"] and len(rest["sessions"]) == page["total"] - 2

        history = plain(await request(client, methods.FILE_HISTORY, {"path": NOTES.as_uri()}))
        assert history == wire.file_history(file_history(conn, str(NOTES)))
        assert history["edited"] == 2 and {s["source"] for s in history["sessions"]} == {"pi"}

        newest = history["sessions"][0]
        window = plain(await request(client, methods.SESSION, {"sessionId": newest["sessionId"],
                                                               "turnId": newest["turnId"], "before": 0, "after": 0}))
        expected = read_window(conn, newest["sessionId"], newest["turnId"], 0, 0, max_context=200, files=True)
        assert window == wire.session_window(expected)
        assert window["turns"][0]["files"] == [{"path": str(NOTES), "action": "write"}]

        codex = next(s for s in page["sessions"] + rest["sessions"] if s["source"] == "codex")
        reports = plain(await request(client, methods.MIGRATE_CODEX, {"sessionId": codex["sessionId"],
                                                                      "dryRun": True}))["reports"]
        assert [r["folder"] for r in reports] == [str(WEBSHOP)]
        [migrated] = reports[0]["migrated"]
        assert migrated["codexSessionId"] == codex["sessionId"].split(":", 1)[1]
        assert migrated["resumeCommand"] == f"pi --session {migrated['piPath']}"
        conn.close()


INVALID: list[tuple[str, Any, str]] = [
    (methods.SESSIONS, {"folders": "/tmp"}, "folders"),
    (methods.SESSIONS, {"folders": ["relative/path"]}, "folders"),
    (methods.SESSIONS, {"folders": ["http://example.com/x"]}, "folders"),
    (methods.SESSIONS, {"folders": ["/" + "x" * 4096]}, "folders"),
    (methods.SESSIONS, {"sources": ["vim"]}, "sources"),
    (methods.SESSIONS, {"limit": 501}, "limit"),
    (methods.SESSIONS, {"limit": True}, "limit"),
    (methods.SESSIONS, {"offset": -1}, "offset"),
    (methods.SESSIONS, [], "params"),
    (methods.SESSION, {}, "sessionId"),
    (methods.SESSION, {"sessionId": "x" * 1025}, "sessionId"),
    (methods.SESSION, {"sessionId": "pi:nope"}, "sessionId"),                # not in the store
    (methods.SESSION, {"sessionId": "pi:x", "turnId": 5}, "turnId"),
    (methods.SESSION, {"sessionId": "pi:x", "before": 201}, "before"),
    (methods.SESSION, {"sessionId": "pi:x", "after": -1}, "after"),
    (methods.FILE_HISTORY, {}, "path"),
    (methods.FILE_HISTORY, {"path": "notes.txt"}, "path"),
    (methods.FILE_HISTORY, {"path": "/" + "x" * 4096}, "path"),
    (methods.FILE_HISTORY, {"path": "file://[::1/tmp/a"}, "path"),   # urlparse: "Invalid IPv6 URL"
    (methods.SESSIONS, {"folders": ["file://[/tmp"]}, "folders"),
    (methods.FILE_HISTORY, {"path": "/tmp/a", "limit": 0}, "limit"),
    (methods.FILE_HISTORY, {"path": "/tmp/a", "limit": 201}, "limit"),
    (methods.MIGRATE_CODEX, {"sessionId": "claude:0f0f0f0f-0000-4000-8000-000000000001"}, "sessionId"),
    (methods.MIGRATE_CODEX, {"sessionId": "codex:--help"}, "sessionId"),
    (methods.MIGRATE_CODEX, {"sessionId": "codex:0f0f0f0f-0000-4000-8000-000000000001"}, "sessionId"),  # unknown
]


async def test_bad_params_get_invalid_params_naming_the_field(tmp_path: Path) -> None:
    base = copy_samples(tmp_path)
    async with session(base, options={"autoSync": False}) as (client, _):
        for method, params, field in INVALID:
            with pytest.raises(JsonRpcInvalidParams) as error:
                await request(client, method, params)
            assert method in str(error.value) and field in str(error.value), (method, params, str(error.value))


async def test_a_sync_stopped_by_the_store_says_why_in_sync_status(tmp_path: Path) -> None:
    base = copy_samples(tmp_path)
    (base / "not-a-store").mkdir()
    async with session(base, options={"dbPath": str(base / "not-a-store")}) as (_client, recorder):
        while True:
            status = plain(await recorder.wait("pimem/syncStatus", 60))
            if not status["syncing"]:
                break
        assert "is a directory, not a memory store" in status["error"] and "\n" not in status["error"]
