"""A transcript line may hold hundreds of thousands of tool calls (a line is read up to 32 MiB): what a turn's
calls touched, wrote and were named is gathered once each with work linear in the calls. The work is
counted (comparisons of the calls, reads of the turn's edits), not timed: a quadratic rule makes about
n * n / 2 of them, a linear one a few per call. `bench/experiments/parse_cpu.py` times the same shapes."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from pimem.importers.base import Chunk, EditCall, TurnDelta, feed_line
from pimem.importers.claude import ClaudeParser
from pimem.importers.pi import PiParser
from pimem.jsonl import LineReader

CALLS = 4_000


class Counted:
    """A call's tool name, touch or edit that counts how often it is compared with another."""

    comparisons = 0

    def __init__(self, key: int) -> None:
        self.key = key

    def __hash__(self) -> int:
        return hash(self.key)

    def __eq__(self, other: object) -> bool:
        Counted.comparisons += 1
        return isinstance(other, Counted) and other.key == self.key


class CountedReads(list[EditCall]):
    """A turn's edits that count how often one of them is read."""

    reads = 0

    def __getitem__(self, index: Any) -> Any:
        CountedReads.reads += 1
        return super().__getitem__(index)


@pytest.mark.parametrize("kind", ["tool", "file", "edit"])
def test_the_calls_of_one_message_are_gathered_with_comparisons_linear_in_their_number(kind: str) -> None:
    """Before: each call's tool name, touch or edit was looked for in the turn's list of them (16,000 reads
    in one message: 2.8 s CPU); about CALLS * CALLS / 2 comparisons."""
    delta, items = TurnDelta("u1", True), []
    Counted.comparisons = 0
    for k in [*range(CALLS), *range(CALLS)]:   # every call twice (announced, then run): each kept once
        delta.add_once(kind, items, Counted(k))
    assert [item.key for item in items] == list(range(CALLS))
    assert Counted.comparisons <= 2 * CALLS


def test_the_write_results_of_a_turn_find_their_calls_with_reads_linear_in_the_writes() -> None:
    """Each Write result gives its call what the file held. Before: it looked for its call among the turn's
    edits one by one (8,000 writes and results in a turn: 1.5 s CPU); about CALLS * CALLS / 2 reads."""
    delta = TurnDelta("u1", True)
    delta.edits = CountedReads()
    CountedReads.reads = 0
    for k in range(CALLS):
        delta.edits.append(EditCall(f"/w/f{k}.py", "Write", f"toolu_{k}", None, f"x = {k}\n", whole=True))
        position = delta.unanswered_write(f"toolu_{k}")
        assert position == k
        delta.replace_edit(k, EditCall(f"/w/f{k}.py", "Write", f"toolu_{k}", f"y = {k}\n", f"x = {k}\n",
                                       whole=True))
    assert CountedReads.reads <= 4 * CALLS


def _session(calls: list[dict[str, Any]]) -> str:
    lines: list[dict[str, Any]] = [
        {"type": "session", "version": 3, "id": "s1", "timestamp": "2026-11-01T10:00:00.000Z", "cwd": "/proj"},
        {"type": "message", "id": "u1", "parentId": None, "timestamp": "2026-11-01T10:00:01.000Z",
         "message": {"role": "user", "content": "go", "timestamp": 1793527201000}},
        {"type": "message", "id": "a1", "parentId": "u1", "timestamp": "2026-11-01T10:00:02.000Z",
         "message": {"role": "assistant", "content": calls}},
    ]
    return "".join(json.dumps(line, separators=(",", ":")) + "\n" for line in lines)


def test_a_pi_message_of_many_calls_keeps_each_once_in_call_order(tmp_path: Path) -> None:
    """The gathering above, through the Pi parser: every call of a 4,000-call message, each touch, edit and
    name once, in order (the announced-then-run duplicates of some agents dropped)."""
    calls = [{"type": "toolCall", "id": f"c{k}", "name": "edit",
              "arguments": {"path": f"f{k}.py", "oldText": "a", "newText": f"b{k}"}} for k in range(CALLS)]
    transcript = tmp_path / "s.jsonl"
    transcript.write_text(_session(calls + calls), encoding="utf-8")
    parser, chunk = PiParser(str(transcript), None), Chunk()
    with open(transcript, "rb") as handle:
        for line in LineReader(handle):
            feed_line(parser, line, chunk)
    (turn,) = chunk.turns.values()
    assert [edit.path for edit in turn.edits] == [f"f{k}.py" for k in range(CALLS)]
    assert [path.rsplit("/", 1)[-1] for path, _ in turn.files] == [f"f{k}.py" for k in range(CALLS)]
    assert turn.tools == ["edit"]


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


def _claude_parse(text: str, tmp_path: Path) -> Chunk:
    transcript = tmp_path / "c.jsonl"
    transcript.write_text(text, encoding="utf-8")
    parser, chunk = ClaudeParser(str(transcript), None), Chunk()
    with open(transcript, "rb") as handle:
        for line in LineReader(handle).scan(parser.interesting):
            feed_line(parser, line, chunk)
    return chunk


def test_claude_write_results_give_each_call_what_its_file_held(tmp_path: Path) -> None:
    """Each of a turn's 2,000 Write results gives its own call what the file held (``originalFile``)."""
    chunk = _claude_parse(_claude_writes(2_000), tmp_path)
    assert [(edit.path, edit.old) for edit in chunk.turns["u0"].edits] == [
        (f"/w/f{k}.py", f"y = {k}\n") for k in range(2_000)]
