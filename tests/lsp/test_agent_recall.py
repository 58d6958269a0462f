"""`pimem/agentRecall`, what the editor's language-model tool calls: the agents' recall_memory over the
language server (same validation, rows, Markdown and redaction as `pimem mcp`)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from pygls.exceptions import JsonRpcInvalidParams

from mcp_server.history import ENTITY, PLANTED_SECRETS, write_history  # tests/mcp_server: the planted session
from pimem.agent_tools import decode_call
from pimem.lsp import methods
from pimem.store import connect
from support.history import copy_samples

from .conftest import request, session

pytestmark = pytest.mark.e2e


def plain(value: Any) -> Any:
    if hasattr(value, "_asdict"):
        return {key: plain(item) for key, item in value._asdict().items()}
    if isinstance(value, list | tuple):
        return [plain(item) for item in value]
    return value


async def test_agent_recall_is_recall_memory_redacted(tmp_path: Path) -> None:
    base = copy_samples(tmp_path)
    write_history(base)
    async with session(base) as (client, _recorder):
        await request(client, methods.BACKFILL, {})
        masked = plain(await request(client, methods.AGENT_RECALL, {"entities": [ENTITY, "flamingo"], "limit": 4}))
        raw = plain(await request(client, methods.AGENT_RECALL, {"entities": [ENTITY, "flamingo"], "limit": 4,
                                                                  "redact": False}))
        with pytest.raises(JsonRpcInvalidParams, match='invalid "limit"'):
            await request(client, methods.AGENT_RECALL, {"entities": ["x"], "limit": 21})
        with pytest.raises(JsonRpcInvalidParams, match='invalid "entities"'):
            await request(client, methods.AGENT_RECALL, {"entities": [" "]})
        with pytest.raises(JsonRpcInvalidParams, match='"redact" must be a boolean'):
            await request(client, methods.AGENT_RECALL, {"entities": ["x"], "redact": "no"})
    conn = connect(base / "memory.db")
    try:
        expected = decode_call("recall_memory", {"entities": [ENTITY, "flamingo"], "limit": 4}).run(conn)
    finally:
        conn.close()
    assert masked == {**expected.structured, "markdown": expected.markdown}
    assert any(row["turnId"].startswith("pi:") for row in masked["results"]) and "[REDACTED:" in masked["markdown"]
    assert all(secret not in json.dumps(masked) for secret in PLANTED_SECRETS)
    assert all(secret in json.dumps(raw) for secret in PLANTED_SECRETS)
