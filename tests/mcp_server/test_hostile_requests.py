"""`pimem mcp` over its real stdio against requests the SDK cannot decode or that echo huge values, and
a store holding text that is not valid UTF-8 (issue 20.9): every request with an id gets an answer, no
answer quotes the request or the bad row, the server lives on."""

from __future__ import annotations

import json
import queue
import sqlite3
import subprocess
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from support.undecodable import QUERIES, corrupt, expected, quoted_texts

from .conftest import PIMEM, Memory, make_memory

pytestmark = pytest.mark.e2e

INITIALIZE = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
    "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "test", "version": "0"}}}


class LineClient:
    """Raw JSON-RPC lines to ``pimem mcp``; every line it writes back, parsed."""

    def __init__(self, memory: Memory) -> None:
        self.process = subprocess.Popen([str(PIMEM), "mcp", "--db", str(memory.db)], stdin=subprocess.PIPE,
                                        stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=memory.env(),
                                        cwd=str(memory.base))
        self.lines: queue.Queue[dict[str, Any]] = queue.Queue()
        self.stderr = b""
        threading.Thread(target=self._read, daemon=True).start()
        threading.Thread(target=self._drain, daemon=True).start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self.lines.put(json.loads(line))

    def _drain(self) -> None:
        assert self.process.stderr is not None
        self.stderr = self.process.stderr.read()

    def send(self, text: str) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(text.encode("utf-8") + b"\n")
        self.process.stdin.flush()

    def answers(self, count: int, timeout: float = 60) -> list[dict[str, Any]]:
        found: list[dict[str, Any]] = []
        deadline = time.monotonic() + timeout
        while len(found) < count:
            found.append(self.lines.get(timeout=max(0.1, deadline - time.monotonic())))
        return found

    def close(self) -> int:
        assert self.process.stdin is not None
        self.process.stdin.close()
        return self.process.wait(timeout=30)


def _call(request_id: object, name: str, arguments: str) -> str:
    """A tools/call line with ``arguments`` as raw JSON text, the id last (after the deep params)."""
    return ('{"jsonrpc": "2.0", "method": "tools/call", "params": {"name": "' + name + '", "arguments": '
            + arguments + '}, "id": ' + json.dumps(request_id) + '}')


def test_requests_the_sdk_cannot_decode_are_answered_and_the_server_lives_on(memory: Memory) -> None:
    client = LineClient(memory)
    try:
        client.send(json.dumps(INITIALIZE))
        assert client.answers(1)[0]["id"] == 1
        client.send(json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}))
        sent = {
            10: _call(10, "recall_memory", '{"entities": ["\\ud800"]}'),                 # a lone surrogate
            11: _call(11, "recall_memory", '{"entities": ' + "[" * 1001 + "]" * 1001 + "}"),
            12: _call("twelve", "recall_memory", '{"entities": ' + "[" * 200_000 + "]" * 200_000 + "}"),
            13: '{"jsonrpc": "2.0", "id": 13}',                                           # no method
        }
        for line in sent.values():
            client.send(line)
        client.send('{"jsonrpc": "2.0", "method": "notifications/x", "params": {"a": "\\udc00"}}')  # no answer
        client.send("this is not JSON \\ud800")
        client.send(json.dumps({"jsonrpc": "2.0", "id": 20, "method": "tools/list"}))
        answers = {answer.get("id"): answer for answer in client.answers(6)}
        assert set(answers) == {10, 11, "twelve", 13, None, 20}, answers
        for request_id in (10, 11, "twelve"):
            assert answers[request_id]["error"]["code"] == -32700
        assert answers[13]["error"]["code"] == -32600
        assert answers[None]["error"]["code"] == -32700
        assert [tool["name"] for tool in answers[20]["result"]["tools"]] == ["recall_memory", "read_session",
                                                                         "line_history"]
        assert all(len(json.dumps(answers[key])) < 400 for key in answers if key != 20)
        with pytest.raises(queue.Empty):                                                  # the notification
            client.answers(1, timeout=1)
    finally:
        assert client.close() == 0
    assert b"Traceback" not in client.stderr


def test_a_huge_session_id_is_not_echoed(memory: Memory) -> None:
    client = LineClient(memory)
    try:
        client.send(json.dumps(INITIALIZE))
        client.answers(1)
        client.send(json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}))
        huge = "s" * 20_000_000
        client.send(json.dumps({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
            "name": "read_session", "arguments": {"sessionId": huge, "turnId": "t" * 1_000_000}}}))
        client.send(json.dumps({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {
            "name": "x" * 1_000_000, "arguments": {}}}))
        answers = {answer["id"]: answer for answer in client.answers(2, timeout=120)}
        result = answers[2]["result"]
        assert result["isError"] is True
        text = result["content"][0]["text"]
        assert "no session 'sssss" in text and "…" in text and len(text) < 300, text[:300]
        assert answers[3]["error"]["code"] == -32602 and len(answers[3]["error"]["message"]) < 400
    finally:
        assert client.close() == 0


def test_a_row_that_is_not_utf8_is_left_out_and_never_quoted(tmp_path: Path) -> None:
    """Issue 20.9: another program wrote two turns in text that is not valid UTF-8: recall_memory and
    read_session answer as if they were not there, say so once on stderr, and quote neither."""
    memory = make_memory(tmp_path)
    clean = tmp_path / "clean.db"
    victims = corrupt(memory.db, clean)
    texts = quoted_texts(memory.db, clean, victims)
    assert texts
    client = LineClient(memory)
    try:
        client.send(json.dumps(INITIALIZE))
        client.answers(1)
        client.send(json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}))
        calls: dict[int, list[str]] = {}
        for number, entities in enumerate(QUERIES * 2):        # the second time from the kept lists
            calls[100 + number] = entities
            client.send(json.dumps({"jsonrpc": "2.0", "id": 100 + number, "method": "tools/call", "params": {
                "name": "recall_memory", "arguments": {"entities": entities, "limit": 10}}}))
        raw = sqlite3.connect(memory.db)
        session_id = raw.execute("SELECT session_id FROM turns WHERE turn_id = ?", (victims[0],)).fetchone()[0]
        raw.close()
        client.send(json.dumps({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
            "name": "read_session", "arguments": {"sessionId": session_id, "after": 20}}}))
        answers = {answer["id"]: answer for answer in client.answers(len(calls) + 1)}
        for request_id, entities in calls.items():
            result = answers[request_id]["result"]
            assert not result.get("isError"), result
            assert [row["turnId"] for row in result["structuredContent"]["results"]] == \
                [row["turnId"] for row in expected(clean, entities, 10)], entities
        session = answers[2]["result"]
        assert not session.get("isError"), session
        shown = [turn["turnId"] for turn in session["structuredContent"]["turns"]]
        assert shown and victims[0] not in shown
        dumped = json.dumps(answers, ensure_ascii=False)
        assert not [text for text in texts if text in dumped], [text for text in texts if text in dumped]
    finally:
        assert client.close() == 0
    stderr = client.stderr.decode("utf-8", "replace")
    assert stderr.count("not valid UTF-8") == 1 and not any(text in stderr for text in texts), stderr[-2000:]
