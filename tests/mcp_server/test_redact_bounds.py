"""What the agent tools do around redaction (issue 20): a secret at the answer's cut is masked whole
(redact first, then cut), a huge stored field costs a bounded amount of work, and a cancelled call stops
its worker thread."""

from __future__ import annotations

import asyncio
import json
import sqlite3
import threading
import time
from pathlib import Path

import pytest

from pimem import index
from pimem.agent_tools import ToolCancelled, ToolOutput, decode_call
from pimem.recall.query import MAX_PATH_CHARS, TEXT_CUT_CHARS
from pimem.store import SessionRow, connect, transaction, upsert_session

from .redaction_set import ALNUM, rand


def _store(db: Path, cwd: str, user: str, reply: str = "a reply") -> sqlite3.Connection:
    conn = connect(db)
    with transaction(conn):
        upsert_session(conn, SessionRow("pi:s", "pi", cwd, 0, None, "/x.jsonl"))
        turn_id, ts = "pi:s:1", 1_700_000_000_000
        conn.execute("INSERT INTO turns (turn_id, session_id, turn_index, ts, user_text, reply_text, tool_names, "
                     "user_message_id) VALUES (?, 'pi:s', 0, ?, ?, ?, NULL, ?)", (turn_id, ts, user, reply, turn_id))
        index.put(conn, turn_id, ts, user, reply, None, None, fts=True)
        index.catch_up(conn)
    index.build_pending(conn)
    return conn


def _everything(output: ToolOutput) -> str:
    return output.markdown + json.dumps(output.structured, ensure_ascii=False)


@pytest.mark.parametrize("tool", ["recall_memory", "read_session"])
def test_a_secret_across_the_cut_is_masked_whole(tmp_path: Path, tool: str) -> None:
    token = "gh" + "p_" + rand(ALNUM, 36)
    user = "quokka " + "x" * (TEXT_CUT_CHARS - 20) + " " + token + " done"   # the cut falls inside the token
    assert len(user) - len(token) - 5 < TEXT_CUT_CHARS < len(user) - 5
    conn = _store(tmp_path / "memory.db", "/w", user)
    arguments = {"entities": ["quokka"]} if tool == "recall_memory" else {"sessionId": "pi:s"}
    output = decode_call(tool, arguments).run(conn)
    turn = output.structured["results" if tool == "recall_memory" else "turns"][0]
    assert turn["truncated"] is True
    assert len(turn["userText"]) == TEXT_CUT_CHARS
    assert token[:8] not in _everything(output)      # not even the part before the cut
    unmasked = decode_call(tool, arguments, redact_secrets=False).run(conn)
    assert token[:8] in _everything(unmasked)


def _read_session_seconds(tmp_path: Path, name: str, cwd: str) -> tuple[float, ToolOutput]:
    conn = _store(tmp_path / name / "memory.db", cwd, "quokka")
    call = decode_call("read_session", {"sessionId": "pi:s"})
    started = time.perf_counter()
    output = call.run(conn)
    return time.perf_counter() - started, output


CWD_CHARS = 3_000_000


def test_a_huge_crafted_cwd_costs_a_bounded_multiple_of_a_plain_one(tmp_path: Path) -> None:
    # near-matches of the assignment rule, the shapes and URL passwords (a 30 KB one took 30 s)
    crafted = ("/passpass" * (CWD_CHARS // 9))[:CWD_CHARS // 2] + ("/a://b:x@" * (CWD_CHARS // 18))
    plain = ("/home/alice/src/project" * (len(crafted) // 23 + 1))[:len(crafted)]
    plain_seconds, _ = _read_session_seconds(tmp_path, "plain", plain)
    crafted_seconds, output = _read_session_seconds(tmp_path, "crafted", crafted)
    assert len(output.structured["cwd"]) <= MAX_PATH_CHARS
    assert crafted_seconds / plain_seconds < 40, f"{crafted_seconds / plain_seconds:.0f}x a plain cwd"


def test_a_cancelled_call_stops_between_fields(tmp_path: Path) -> None:
    conn = _store(tmp_path / "memory.db", "/w", "quokka")
    cancel = threading.Event()
    cancel.set()
    for tool, arguments in (("recall_memory", {"entities": ["quokka"]}), ("read_session", {"sessionId": "pi:s"})):
        with pytest.raises(ToolCancelled):
            decode_call(tool, arguments).run(conn, cancel)
        assert decode_call(tool, arguments, redact_secrets=True).run(conn, threading.Event()).structured


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


async def test_the_mcp_server_stops_the_worker_of_a_cancelled_call(tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("mcp")
    from pimem.mcp import server

    _store(tmp_path / "memory.db", "/w", "quokka").close()
    slow = _SlowCall()
    monkeypatch.setattr(server, "decode_call", lambda *args, **kwargs: slow)
    runner = server.ToolRunner(tmp_path / "memory.db", redact_secrets=True)
    task = asyncio.create_task(runner.call_tool("recall_memory", {"entities": ["quokka"]}))
    assert await asyncio.to_thread(slow.started.wait, 5)
    started = time.monotonic()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert time.monotonic() - started < 2, "the cancelled call waited for its worker"
    assert await asyncio.to_thread(slow.stopped.wait, 2), "the worker went on after the cancel"
