"""The language server: a live update that meets a FIFO where a transcript was does not block the
server's syncs (issue 10, item 17). The server runs from tests/support/fifo_swap_server.py, which
swaps the file for a FIFO between the live update's stat and its open."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import stat
import sys
import time
from pathlib import Path

import pytest

from pimem.lsp import methods
from support.env import history_env
from support.history import REPO, copy_samples

from .conftest import init_params, make_client, request

pytestmark = [pytest.mark.e2e, pytest.mark.asyncio]

SERVER = REPO / "tests" / "support" / "fifo_swap_server.py"
NAME = "2026-12-01T00-00-00-000Z_0e0e0e0e-0000-4000-8000-00000000f1f0.jsonl"


def release(path: Path) -> None:
    """Cleanup for a server stuck opening the FIFO (the code before the fix): a regular file takes the
    FIFO's place, then the FIFO gets a writer that closes at once, so the blocked open() returns and
    sees EOF, and no later open by path can block again."""
    writer = None
    with contextlib.suppress(OSError):
        writer = os.open(path, os.O_WRONLY | os.O_NONBLOCK)   # ENXIO when nobody is waiting: fine
    with contextlib.suppress(OSError):
        regular = path.with_suffix(".released")
        regular.write_bytes(b"")
        os.replace(regular, path)
    if writer is not None:
        os.close(writer)


async def wait_until(predicate: object, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():  # type: ignore[operator]
            return True
        await asyncio.sleep(0.05)
    return False


async def test_live_update_on_a_fifo_does_not_block_later_syncs(tmp_path: Path) -> None:
    base = copy_samples(tmp_path)
    sessions = base / "pi" / "agent" / "sessions"
    target = sessions / "--tmp-pimem-demo-webshop--" / NAME
    client, recorder = make_client()
    await client.start_io(sys.executable, str(SERVER), env={**history_env(base), "PIMEM_TEST_FIFO_NAME": NAME})
    try:
        await client.initialize_session(init_params())
        await recorder.wait("pimem/indexChanged", 60)
        while recorder.sync_status[-1].syncing:
            await recorder.wait("pimem/syncStatus", 60)
        # A new transcript appears; its live update stats it, then finds a FIFO in its place.
        header = {"type": "session", "version": 3, "id": "0e0e0e0e-0000-4000-8000-00000000f1f0",
                  "timestamp": "2026-12-01T00:00:00.000Z", "cwd": "/tmp/pimem-demo/webshop"}
        target.write_text(json.dumps(header) + "\n", encoding="utf-8")
        assert await wait_until(lambda: target.exists() and stat.S_ISFIFO(os.stat(target).st_mode), 10)
        await asyncio.sleep(0.5)
        # The next live update (a turn appended to another session) is still imported and announced.
        pi_file = sorted(sessions.rglob("*.jsonl"))[0]
        assert pi_file != target
        last = json.loads(pi_file.read_text(encoding="utf-8").splitlines()[-1])
        user = {"type": "message", "id": "feed0f1f", "parentId": last["id"], "timestamp": "2026-12-01T00:00:01.000Z",
                "message": {"role": "user", "content": [{"type": "text", "text": "what about the okapi-9 cache?"}],
                            "timestamp": int(time.time() * 1000)}}
        recorder.index_changed.clear()
        with open(pi_file, "a", encoding="utf-8") as handle:
            handle.write(json.dumps(user) + "\n")
        changed = await recorder.wait("pimem/indexChanged", 10)
        assert changed.turns == 1
        found = await request(client, methods.RECALL, {"entities": ["okapi-9"]}, timeout=10)
        assert [row.userText for row in found.results] == ["what about the okapi-9 cache?"]
        # A full sync passes the FIFO by (discovery takes regular files only) and ends.
        stats = await request(client, methods.BACKFILL, {}, timeout=30)
        assert not stats.cancelled and all(issue.jsonlPath != str(target) for issue in stats.issues)
    finally:
        release(target)
        await asyncio.wait_for(client.shutdown_session(), 20)
        await client.stop()
