"""Random params for every ``pimem/*`` request over one real server (``python -m pimem serve``).

One server per module (starting one per hypothesis example would be far too slow), fed by
hypothesis with params of every JSON shape: absent, null, scalars, arrays, objects with the
documented keys holding values of every type (lone surrogates included: JSON can escape them),
plus unknown keys. Every answer must be a result or -32602 InvalidParams naming the method, never
another error; the server must stay up and answer ``pimem/status`` at the end, and its stderr must
show no traceback."""

from __future__ import annotations

import collections
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from pimem.lsp import methods
from support.env import history_env
from support.history import copy_samples
from support.jsonrpc import ABSENT, LspProcess

from ._support import SCRATCH

pytestmark = pytest.mark.e2e

FOLDER = "/tmp/pimem-demo/webshop"          # the cwd of sample sessions of all three agents
EXAMPLES = 600
OUTCOMES: collections.Counter[tuple[str, str]] = collections.Counter()

TEXT = st.text(max_size=30) | st.sampled_from(["\ud800", "a\udfffb", "\x00", " ", "flamingo", "缓存", "𝔘😀",
                                               "%_\\", "file:///tmp/pimem-demo/webshop", "file:", "file://host/x"])
SCALAR = st.none() | st.booleans() | st.integers(-(2**70), 2**70) | st.floats(allow_nan=False, allow_infinity=False)
ANY = st.recursive(SCALAR | TEXT, lambda children: st.lists(children, max_size=4)
                   | st.dictionaries(TEXT, children, max_size=4), max_leaves=10)
URI = st.one_of(st.just(Path(FOLDER).as_uri()), st.just(Path(FOLDER).as_uri() + "/"), TEXT,
                st.text(max_size=20).map(lambda path: "file:///" + path), st.just("file://localhost" + FOLDER))


def _object(keys: dict[str, st.SearchStrategy[Any]]) -> st.SearchStrategy[Any]:
    known = st.fixed_dictionaries({}, optional=keys)
    return st.one_of(known, st.tuples(known, st.dictionaries(TEXT, ANY, max_size=2)).map(lambda p: {**p[1], **p[0]}))


WORD = TEXT.filter(lambda text: text.strip()) | st.sampled_from(["flamingo", "cache", "100%", "a_b", "缓存", "锁"])
WELL_FORMED_RECALL = st.one_of(
    st.fixed_dictionaries({"entities": st.lists(WORD, min_size=1, max_size=8)}, optional={
        "limit": st.integers(1, 50), "sources": st.lists(st.sampled_from(["pi", "claude", "codex"]), unique=True),
        "cwd": st.sampled_from([FOLDER, Path(FOLDER).as_uri(), "/tmp", "/tmp/pimem-demo/中文项目"])}),
    st.fixed_dictionaries({"text": st.lists(WORD, min_size=1, max_size=12).map(" ".join)},
                          optional={"limit": st.integers(1, 50)}),
)
PARAMS: dict[str, st.SearchStrategy[Any]] = {
    methods.RECALL: st.one_of(WELL_FORMED_RECALL, WELL_FORMED_RECALL, ANY, st.just(ABSENT), _object({
        "entities": st.lists(TEXT, max_size=10) | ANY,
        "text": TEXT | ANY,
        "limit": st.integers(-3, 60) | ANY,
        "sources": st.lists(st.sampled_from(["pi", "claude", "codex", "vim", ""]), max_size=4) | ANY,
        "cwd": URI | ANY,
    })),
    methods.BACKFILL: st.one_of(ANY, st.just(ABSENT), _object({"force": st.booleans() | ANY})),
    methods.MIGRATE_CODEX: st.one_of(ANY, st.just(ABSENT), _object({"workspaceFolder": URI | ANY,
                                                                     "dryRun": st.booleans() | ANY})),
    methods.STATUS: st.one_of(ANY, st.just(ABSENT), _object({})),
}
# Syncs are slow: fewer of them.
METHOD = st.sampled_from([methods.RECALL] * 5 + [methods.STATUS] * 2 + [methods.MIGRATE_CODEX] * 2 + [methods.BACKFILL])


@pytest.fixture(scope="module")
def server() -> Iterator[LspProcess]:
    base = Path(tempfile.mkdtemp(prefix="pimem-fuzz-lsp-", dir=SCRATCH))
    copy_samples(base)
    lsp = LspProcess(history_env(base), base / "stderr.log")
    try:
        lsp.initialize(options={"autoSync": True}, folders=[FOLDER])
        lsp.wait_for(lambda m: m.get("method") == "pimem/syncStatus" and not m["params"]["syncing"], timeout=120)
        yield lsp
        assert lsp.process.poll() is None, "the server exited"
        final = lsp.request(methods.STATUS, {})
        assert final["result"]["totalTurns"] > 0, final
        stderr = lsp.stderr()
        assert "Traceback" not in stderr and " ERROR " not in stderr, stderr[-3000:]
    finally:
        status = lsp.close()
        shutil.rmtree(base, ignore_errors=True)
    assert status == 0
    print(f"\npimem/* fuzz outcomes: {dict(sorted(OUTCOMES.items()))}")


def check_answer(method: str, params: Any, response: dict[str, Any]) -> None:
    if "result" in response:
        OUTCOMES[(method, "result")] += 1
        return
    error = response.get("error")
    assert error is not None and error.get("code") == -32602, (method, params, response)
    assert method in error.get("message", ""), (method, params, error)
    OUTCOMES[(method, "invalid-params")] += 1


# No shrinking: every step is a round trip to the server; a failure is reported as found.
NO_SHRINK = (Phase.explicit, Phase.reuse, Phase.generate)


@settings(max_examples=EXAMPLES, deadline=None, phases=NO_SHRINK,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(data=st.data())
def test_random_params_get_a_result_or_invalid_params(server: LspProcess, data: st.DataObject) -> None:
    method = data.draw(METHOD, label="method")
    params = data.draw(PARAMS[method], label="params")
    check_answer(method, params, server.request(method, params, timeout=120))


@settings(max_examples=15, deadline=None, phases=NO_SHRINK,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(data=st.data())
def test_bursts_of_concurrent_random_requests(server: LspProcess, data: st.DataObject) -> None:
    """Many requests in flight at once (readers, a sync, a migration): each still gets its answer."""
    sent = []
    for method in data.draw(st.lists(METHOD, min_size=10, max_size=40), label="methods"):
        params = data.draw(PARAMS[method])
        sent.append((method, params, server.send_request(method, params)))
    for method, params, request_id in sent:
        check_answer(method, params, server.wait_response(request_id, timeout=180))
