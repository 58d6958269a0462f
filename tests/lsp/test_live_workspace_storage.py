"""The language server watches VS Code's workspaceStorage where chats are kept, folder by folder: a chat
session log written in a workspace folder created after the server started is imported live (issue 22)."""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path

import pytest

from pimem.lsp import methods
from support.history import copy_samples

from .conftest import request, session

pytestmark = [pytest.mark.e2e, pytest.mark.asyncio]


def chat_log(session_id: str, text: str) -> str:
    request_ = {"requestId": f"request_{session_id}", "timestamp": 1_796_400_000_000,
                "message": {"text": text}, "response": [], "variableData": {"variables": []}}
    entries = [{"kind": 0, "v": {"version": 3, "sessionId": session_id, "creationDate": 1_796_400_000_000,
                                 "requests": []}},
               {"kind": 2, "k": ["requests"], "v": [request_]},
               {"kind": 2, "k": ["requests", 0, "response"], "v": [{"value": "the answer"}]}]
    return "".join(json.dumps(entry) + "\n" for entry in entries)


async def test_a_chat_in_a_new_workspace_folder_is_imported_live(tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("XDG_CONFIG_HOME", raising=False)   # VS Code's User folder under the test's HOME
    monkeypatch.delenv("PIMEM_VSCODE_USER_DIRS", raising=False)
    base = copy_samples(tmp_path)
    storage = base / "home" / ".config" / "Code" / "User" / "workspaceStorage"
    (storage / "ws-old" / "chatSessions").mkdir(parents=True)
    (storage / "ws-old" / "redhat.java" / "jdt_ws").mkdir(parents=True)
    async with session(base) as (client, recorder):
        await recorder.wait("pimem/indexChanged", 60)
        while recorder.sync_status[-1].syncing:
            await recorder.wait("pimem/syncStatus", 60)
        folder = storage / "ws-new" / "chatSessions"
        folder.mkdir(parents=True)
        session_id = "3f2a9c1e-0b7d-4e6f-9a8b-1c2d3e4f5a6b"
        (folder / f"{session_id}.jsonl").write_text(chat_log(session_id, "the quokka-77 migration"), encoding="utf-8")
        deadline = time.monotonic() + 30
        rows: list[dict[str, object]] = []
        while time.monotonic() < deadline and not rows:
            await asyncio.sleep(0.3)
            answer = await request(client, methods.RECALL, {"entities": ["quokka-77"], "sources": ["copilot-chat"]})
            rows = answer["results"] if isinstance(answer, dict) else answer.results
        assert rows, "the new workspace's chat was not imported live"
