"""A transcript line may hold hundreds of thousands of tool calls (a line is read up to 32 MiB): what a turn's
calls touched, wrote and were named is gathered once each in time linear in the calls (a ratio of CPU times
in the same run: a quadratic rule takes 16 times as long for 4 times the calls, a linear one 4)."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from pimem.importers.base import Chunk, feed_line
from pimem.importers.claude import ClaudeParser
from pimem.importers.pi import PiParser
from pimem.jsonl import LineReader

MAX_RATIO = 8   # 4 times the calls; linear: about 4


def _session(calls: list[dict[str, Any]]) -> str:
    lines: list[dict[str, Any]] = [
        {"type": "session", "version": 3, "id": "s1", "timestamp": "2026-11-01T10:00:00.000Z", "cwd": "/proj"},
        {"type": "message", "id": "u1", "parentId": None, "timestamp": "2026-11-01T10:00:01.000Z",
         "message": {"role": "user", "content": "go", "timestamp": 1793527201000}},
        {"type": "message", "id": "a1", "parentId": "u1", "timestamp": "2026-11-01T10:00:02.000Z",
         "message": {"role": "assistant", "content": calls}},
    ]
    return "".join(json.dumps(line, separators=(",", ":")) + "\n" for line in lines)


def _cpu_seconds(text: str, tmp_path: Path) -> float:
    transcript = tmp_path / "s.jsonl"
    transcript.write_text(text, encoding="utf-8")
    best = float("inf")
    for _ in range(3):
        started = time.process_time()
        parser, chunk = PiParser(str(transcript), None), Chunk()
        with open(transcript, "rb") as handle:
            for line in LineReader(handle):
                feed_line(parser, line, chunk)
        best = min(best, time.process_time() - started)
        assert len(chunk.turns) == 1
    return best


SHAPES: dict[str, Callable[[int], dict[str, Any]]] = {
    "files": lambda k: {"type": "toolCall", "id": f"c{k}", "name": "read", "arguments": {"path": f"f{k}.py"}},
    "edits": lambda k: {"type": "toolCall", "id": f"c{k}", "name": "edit",
                        "arguments": {"path": "f.py", "oldText": "a", "newText": f"b{k}"}},
    "tool-names": lambda k: {"type": "toolCall", "id": f"c{k}", "name": f"tool_{k}", "arguments": {}},
}


@pytest.mark.parametrize("shape", list(SHAPES))
def test_the_calls_of_one_message_cost_time_linear_in_their_number(tmp_path: Path, shape: str) -> None:
    """Before: each call's touch, edit or tool name was looked for in the turn's list of them (16,000 reads
    in one message: 2.8 s, 4,000: 0.18 s)."""
    small, large = 4_000, 16_000
    few = _cpu_seconds(_session([SHAPES[shape](k) for k in range(small)]), tmp_path)
    many = _cpu_seconds(_session([SHAPES[shape](k) for k in range(large)]), tmp_path)
    assert many / few < MAX_RATIO, f"{large} calls took {many / few:.1f} times {small}"


def _claude_writes(count: int) -> str:
    """A Claude turn of ``count`` Write calls, each in its own message and answered by its result line."""
    def record(kind: str, uuid: str, message: dict[str, Any], **more: Any) -> dict[str, Any]:
        return {"type": kind, "sessionId": "s", "uuid": uuid, "timestamp": "2026-11-01T10:00:00Z", "cwd": "/w",
                "message": message, **more}

    lines = [record("user", "u0", {"role": "user", "content": "write them"})]
    for k in range(count):
        lines.append(record("assistant", f"a{k}", {"role": "assistant", "model": "m", "content": [
            {"type": "tool_use", "id": f"toolu_{k}", "name": "Write",
             "input": {"file_path": f"/w/f{k}.py", "content": f"x = {k}\n"}}]}))
        lines.append(record("user", f"r{k}", {"role": "user", "content": [
            {"tool_use_id": f"toolu_{k}", "type": "tool_result"}]},
            toolUseResult={"type": "update", "filePath": f"/w/f{k}.py", "content": f"x = {k}\n",
                           "originalFile": f"y = {k}\n"}))
    return "".join(json.dumps(line, separators=(",", ":")) + "\n" for line in lines)


def _claude_parse(text: str, tmp_path: Path) -> tuple[float, Chunk]:
    transcript = tmp_path / "c.jsonl"
    transcript.write_text(text, encoding="utf-8")
    best, chunk = float("inf"), Chunk()
    for _ in range(3):
        started = time.process_time()
        parser, chunk = ClaudeParser(str(transcript), None), Chunk()
        with open(transcript, "rb") as handle:
            for line in LineReader(handle).scan(parser.interesting):
                feed_line(parser, line, chunk)
        best = min(best, time.process_time() - started)
    return best, chunk


def test_claude_write_results_cost_time_linear_in_the_turn_s_writes(tmp_path: Path) -> None:
    """Each Write result gives its call what the file held (``originalFile``). Before: it looked for its call
    among the turn's edits one by one (8,000 writes and results in a turn: 1.5 s CPU, 2,000: 0.1 s)."""
    small, large = 2_000, 8_000
    small_cpu, chunk = _claude_parse(_claude_writes(small), tmp_path)
    assert [(edit.path, edit.old) for edit in chunk.turns["u0"].edits] == [
        (f"/w/f{k}.py", f"y = {k}\n") for k in range(small)]
    large_cpu, _ = _claude_parse(_claude_writes(large), tmp_path)
    assert large_cpu < MAX_RATIO * (large / small / 4) * small_cpu + 0.05, (small_cpu, large_cpu)
