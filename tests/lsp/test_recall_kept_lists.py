"""Multi-entity recall through ``pimem serve``, which keeps whole index lists (pimem.recall.dense): the
answers equal the oracle's before and after a live sync adds and grows turns under the kept lists."""

from __future__ import annotations

import json
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
