"""``pimem/sync`` (the sync, under the name every other layer uses) and ``pimem/backfill``, its
deprecated alias: same params, same result, errors naming the method that was called."""

from __future__ import annotations

from pathlib import Path

import pytest
from pygls.exceptions import JsonRpcInvalidParams

from pimem.lsp import methods
from support.history import copy_samples

from .conftest import request, session
from .test_server import plain


async def test_sync_imports_and_backfill_is_the_same_sync(tmp_path: Path) -> None:
    base = copy_samples(tmp_path)
    async with session(base, options={"autoSync": False}) as (client, _):
        first = plain(await request(client, methods.SYNC, {}))
        assert first["turns"] > 0 and first["scannedFiles"] > 0 and not first["cancelled"]
        again = plain(await request(client, methods.BACKFILL, {}))   # the alias: the same incremental sync
        assert set(again) == set(first)
        assert again["turns"] == 0 and again["scannedFiles"] == 0 and again["skippedFiles"] == first["scannedFiles"]
        forced = plain(await request(client, methods.SYNC, {"force": True}))
        assert forced["scannedFiles"] == first["scannedFiles"]
        status = plain(await request(client, methods.STATUS, {}))
        assert status["totalTurns"] == first["turns"]


@pytest.mark.parametrize("method", [methods.SYNC, methods.BACKFILL])
async def test_a_bad_force_names_the_method_called(tmp_path: Path, method: str) -> None:
    base = copy_samples(tmp_path)
    async with session(base, options={"autoSync": False}) as (client, _):
        with pytest.raises(JsonRpcInvalidParams) as error:
            await request(client, method, {"force": "yes"})
        assert str(error.value).startswith(f"{method}: ") and "force" in str(error.value)


def test_backfill_is_documented_as_the_deprecated_alias_of_sync() -> None:
    assert methods.DEPRECATED == {methods.BACKFILL: methods.SYNC}
    doc = (Path(__file__).resolve().parents[2] / "docs" / "lsp-extensions.md").read_text(encoding="utf-8")
    section = doc.split("### Method: `pimem/backfill`", 1)[1].split("###", 1)[0]
    assert "Deprecated" in section and "`pimem/sync`" in section
