"""A cancelled `pimem/agentRecall` ($/cancelRequest) stops its reader thread between two fields
(agent_tools.ToolCancelled), as a cancelled `pimem mcp` call does; in process, on a running loop."""

from __future__ import annotations

import asyncio
import sqlite3
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from pimem.agent_tools import ToolCancelled, ToolOutput
from pimem.lsp import handlers
from pimem.lsp.main import create_server
from pimem.store import connect

from .test_runtime import Capture, receive


class _SlowCall:
    """A call that works until it is cancelled (or 10 s pass)."""

    def __init__(self) -> None:
        self.started = threading.Event()
        self.stopped = threading.Event()

    def run(self, conn: sqlite3.Connection, cancel: threading.Event | None = None) -> ToolOutput:
        self.started.set()
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            if cancel is not None and cancel.is_set():
                self.stopped.set()
                raise ToolCancelled
            time.sleep(0.01)
        raise AssertionError("the call was never cancelled")


async def test_a_cancelled_agent_recall_stops_its_reader(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    db = tmp_path / "m.db"
    connect(db).close()
    slow = _SlowCall()
    monkeypatch.setattr(handlers, "agent_recall_params", lambda params: slow)
    server = create_server()
    server.protocol.set_writer(Capture())
    options: dict[str, Any] = {"autoSync": False, "dbPath": str(db)}
    receive(server, {"jsonrpc": "2.0", "id": 0, "method": "initialize",
                     "params": {"capabilities": {}, "initializationOptions": options}})
    receive(server, {"jsonrpc": "2.0", "id": 7, "method": "pimem/agentRecall", "params": {"entities": ["x"]}})
    assert await asyncio.to_thread(slow.started.wait, 5)
    receive(server, {"jsonrpc": "2.0", "method": "$/cancelRequest", "params": {"id": 7}})
    assert await asyncio.to_thread(slow.stopped.wait, 3), "the reader went on after the cancel"
