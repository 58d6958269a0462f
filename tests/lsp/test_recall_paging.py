"""``pimem/recall`` paging over the wire: ``offset`` and ``withTotal`` give the oracle's page and count;
bad values get InvalidParams naming the field."""

from __future__ import annotations

from pathlib import Path

import pytest
from pygls.exceptions import JsonRpcInvalidParams

from pimem import wire
from pimem.lsp import methods
from pimem.recall import MAX_PAGE_END, make_query, recall_scan_page
from pimem.store import connect
from support.history import copy_samples

from .conftest import request, session
from .test_server import plain

pytestmark = [pytest.mark.e2e, pytest.mark.asyncio]


async def test_offset_and_total_are_the_oracles(tmp_path: Path) -> None:
    base = copy_samples(tmp_path)
    async with session(base) as (client, recorder):
        await recorder.wait("pimem/indexChanged", 60)
        conn = connect(base / "memory.db")
        for entities, offset, limit in ((["flamingo"], 1, 2), (["the", "a"], 3, 5), (["nothing-like-this"], 0, 5)):
            result = plain(await request(client, methods.RECALL, {"entities": entities, "limit": limit,
                                                                  "offset": offset, "withTotal": True}))
            oracle = recall_scan_page(conn, make_query(entities, limit, offset=offset, with_total=True))
            assert result["results"] == [wire.recall_row(row) for row in oracle.rows]
            assert (result["total"], result["totalCapped"]) == (oracle.total, False)
        text = plain(await request(client, methods.RECALL, {"text": "the flamingo bug", "withTotal": True}))
        assert text["total"] >= len(text["results"]) and text["totalCapped"] is False
        plain_answer = plain(await request(client, methods.RECALL, {"entities": ["flamingo"]}))
        assert "total" not in plain_answer and "totalCapped" not in plain_answer

        for params, field in (({"offset": -1}, "offset"), ({"offset": "2"}, "offset"),
                              ({"offset": MAX_PAGE_END, "limit": 1}, "offset"), ({"withTotal": "yes"}, "withTotal")):
            with pytest.raises(JsonRpcInvalidParams) as error:
                await request(client, methods.RECALL, {"entities": ["flamingo"], **params})
            assert f'{methods.RECALL}: "{field}"' in str(error.value)
