"""``pimem/recall {scope}`` and ``pimem/agentRecall {scope}`` over the wire, against a real PostgreSQL:
shared rows with their author, local rows kept, the shared report, InvalidParams naming ``scope``."""

from __future__ import annotations

from pathlib import Path

import pytest
from pygls.exceptions import JsonRpcInvalidParams

from lsp.conftest import request, session
from lsp.test_server import plain
from pimem.lsp import methods
from pimem.share.state import ShareConfig, save_config
from share.conftest import ShareDb
from share.test_recall import Row, put
from support.history import copy_samples

pytestmark = [pytest.mark.e2e, pytest.mark.asyncio]


async def test_recall_scope_over_the_wire(share_db: ShareDb, tmp_path: Path) -> None:
    base = copy_samples(tmp_path)
    save_config(base / "memory.db", ShareConfig(conninfo=share_db.conninfo("alice"), machine="laptop",
                                                folders=("/nowhere",)))
    put(share_db, "bob", [Row("box", "b1", "s1", "/srv/app", "the flamingo of bob", "sure \x1b[2J",
                              1_700_000_000_000, "claude")])
    async with session(base) as (client, recorder):
        await recorder.wait("pimem/indexChanged", 60)
        local = plain(await request(client, methods.RECALL, {"entities": ["flamingo"], "limit": 50,
                                                              "withTotal": True}))
        assert "shared" not in local and all("author" not in row for row in local["results"])
        team = plain(await request(client, methods.RECALL, {"entities": ["flamingo"], "scope": "team"}))
        assert team["shared"]["state"] == "ok" and team["shared"]["rows"] == 1
        assert [(r["author"], r["machine"], r["turnId"], r["resumeCommand"]) for r in team["results"]] == \
            [("bob", "box", "b1", None)]
        both = plain(await request(client, methods.RECALL, {"entities": ["flamingo"], "scope": "all", "limit": 50,
                                                             "withTotal": True}))
        assert local["total"] >= 1 and both["total"] == local["total"] + 1
        assert {r.get("author") for r in both["results"]} == {None, "bob"}
        text = plain(await request(client, methods.RECALL, {"text": "flamingo of bob", "scope": "team"}))
        assert text["shared"]["state"] == "ok" and text["results"][0]["author"] == "bob"
        agent = plain(await request(client, methods.AGENT_RECALL, {"entities": ["flamingo"], "scope": "team",
                                                                   "redact": True}))
        assert agent["results"][0]["author"] == "bob" and "From: bob on box" in agent["markdown"]
        for method in (methods.RECALL, methods.AGENT_RECALL):
            with pytest.raises(JsonRpcInvalidParams) as error:
                await request(client, method, {"entities": ["flamingo"], "scope": "everyone"})
            assert "scope" in str(error.value)
