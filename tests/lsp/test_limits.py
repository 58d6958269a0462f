"""Issue 10, item 6 over the wire: the recall service's limits reach the client as InvalidParams naming
the field, long fields come back cut with ``truncated``, and ``pimem/turn`` gives the whole turn."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from pygls.exceptions import JsonRpcInvalidParams

from pimem.lsp import methods
from pimem.recall import MAX_ENTITY_CHARS, MAX_PATH_CHARS, MAX_TEXT_CHARS, MAX_TURN_ID_CHARS, TEXT_CUT_CHARS
from support.history import copy_samples

from .conftest import request, session
from .test_server import plain

pytestmark = [pytest.mark.e2e, pytest.mark.asyncio]

LONG_REPLY = "quokka " + "0123456789" * 100_000   # 1 MB
LONG_USER = "quokka " + "ask " * 20_000
SESSION_ID = "019a0000-0000-7000-8000-000000000001"


def write_long_pi_session(base: Path, turns: int) -> Path:
    folder = base / "pi" / "agent" / "sessions" / "--tmp-pimem-demo-long--"
    folder.mkdir(parents=True)
    stamp = "2026-01-01T10:00:00.000Z"
    lines: list[dict[str, Any]] = [
        {"type": "session", "version": 3, "id": SESSION_ID, "timestamp": stamp, "cwd": "/tmp/pimem-demo/long"}]
    parent = None
    for n in range(turns):
        for role, text in (("user", f"{LONG_USER} {n}"), ("assistant", f"{LONG_REPLY} {n}")):
            entry_id = f"{len(lines):08x}"
            lines.append({"type": "message", "id": entry_id, "parentId": parent, "timestamp": stamp,
                          "message": {"role": role, "content": [{"type": "text", "text": text}],
                                      "timestamp": 1767261600000 + 10 * len(lines)}})
            parent = entry_id
    path = folder / f"2026-01-01T10-00-00-000Z_{SESSION_ID}.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    return path


OVER_THE_LIMITS = [
    (methods.RECALL, {"entities": ["ok", "x" * (MAX_ENTITY_CHARS + 1)]}, "entities"),
    (methods.RECALL, {"text": "flamingo " * (MAX_TEXT_CHARS // 9 + 1)}, "text"),
    (methods.RECALL, {"entities": ["x"], "cwd": "/" + "d" * MAX_PATH_CHARS}, "cwd"),
    (methods.RECALL, {"entities": ["x"], "cwd": "file:///" + "d" * (4 * MAX_PATH_CHARS)}, "cwd"),
    (methods.TURN, {}, "turnId"),
    (methods.TURN, None, "turnId"),
    (methods.TURN, {"turnId": 7}, "turnId"),
    (methods.TURN, {"turnId": "  "}, "turnId"),
    (methods.TURN, {"turnId": "t" * (MAX_TURN_ID_CHARS + 1)}, "turnId"),
    (methods.TURN, {"turnId": "\ud800"}, "turnId"),
    (methods.TURN, ["x"], "params"),
]


async def test_requests_over_a_limit_get_invalid_params_naming_the_field(tmp_path: Path) -> None:
    base = copy_samples(tmp_path)
    async with session(base, options={"autoSync": False}) as (client, _):
        for method, params, field in OVER_THE_LIMITS:
            with pytest.raises(JsonRpcInvalidParams) as error:
                await request(client, method, params)
            message = str(error.value)
            named = "params must be an object" if field == "params" else f'{method}: "{field}"'
            assert named in message and "\n" not in message, (method, message[:200])
        status = plain(await request(client, methods.STATUS, {}))  # still answering
        assert status["syncing"] is False


async def test_long_turns_come_back_cut_and_pimem_turn_gives_them_whole(tmp_path: Path) -> None:
    base = copy_samples(tmp_path)
    write_long_pi_session(base, 3)
    async with session(base) as (client, recorder):
        await recorder.wait("pimem/indexChanged", 120)
        result = plain(await request(client, methods.RECALL, {"entities": ["quokka"], "limit": 10}))
        rows = result["results"]
        assert len(rows) == 3 and all(row["truncated"] for row in rows)
        assert all(len(row["userText"]) == len(row["replyText"]) == TEXT_CUT_CHARS for row in rows)
        assert len(json.dumps(result)) < 3 * (2 * TEXT_CUT_CHARS + 3000)  # instead of 3 MB
        assert all(row["resumeCommand"] and row["resumeCommand"].startswith("pi --session /") for row in rows)

        for row in rows:
            answer = plain(await request(client, methods.TURN, {"turnId": row["turnId"]}))
            turn = answer["turn"]
            assert turn["turnId"] == row["turnId"] and "hits" not in turn and "truncated" not in turn
            assert turn["userText"].startswith(row["userText"]) and turn["replyText"].startswith(row["replyText"])
            suffix = turn["userText"].rsplit(" ", 1)[1]
            assert turn["userText"] == f"{LONG_USER} {suffix}" and turn["replyText"] == f"{LONG_REPLY} {suffix}"
            assert {k: v for k, v in turn.items() if k not in ("userText", "replyText")} == {
                k: v for k, v in row.items() if k not in ("userText", "replyText", "hits", "truncated", "matched")}

        missing = plain(await request(client, methods.TURN, {"turnId": "pi:nothing:here"}))
        assert missing == {"turn": None}

        short = plain(await request(client, methods.RECALL, {"entities": ["flamingo"], "limit": 1}))["results"][0]
        assert short["truncated"] is False
        whole = plain(await request(client, methods.TURN, {"turnId": short["turnId"]}))["turn"]
        assert whole["userText"] == short["userText"] and whole["replyText"] == short["replyText"]
