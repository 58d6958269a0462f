"""The Copilot CLI and Copilot Chat importers, parser by parser: every fixture's turns with their times,
the lines reported broken, and the format rules the fixtures do not reach.

The data-driven store test (test_fixtures.py) reads the same expected files through a sync.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from pimem.importers import copilot_chat, copilot_cli
from pimem.importers.base import Chunk, NotThisFormat, TranscriptParser, feed_line
from pimem.jsonl import LineReader
from support.history import REPO, load_expected

REAL_CLI = REPO / "tests/fixtures/copilot-cli/copilot/session-state/c107a6be-2db9-4c62-99a6-f3ce273183ff/events.jsonl"
CASES = [case for case in load_expected() if case["source"] in ("copilot-cli", "copilot-chat")]


def parse(path: Path, source: str) -> tuple[TranscriptParser, Chunk]:
    """One file through its parser, as a sync reads it (documents whole; JSONL line by line)."""
    chunk = Chunk()
    if source == "copilot-chat" and copilot_chat.FILES.is_document(str(path)):
        parser: TranscriptParser = copilot_chat.CopilotChatParser(str(path), None)
        document, _ = copilot_chat.FILES.read_document(str(path))
        parser.feed_document(document, chunk)
        return parser, chunk
    cls = copilot_chat.CopilotChatTranscriptParser if source == "copilot-chat" else copilot_cli.CopilotCliParser
    parser = cls(str(path), None)
    with path.open("rb") as stream:
        for line in LineReader(stream).scan(parser.interesting):
            feed_line(parser, line, chunk)
    return parser, chunk


@pytest.mark.parametrize("case", CASES, ids=[str(case["name"]) for case in CASES])
def test_parser_matches_expected(case: dict[str, Any]) -> None:
    parser, chunk = parse(REPO / str(case["file"]), str(case["source"]))
    info = parser.session()
    if not case["imported"]:
        assert info.excluded and not chunk.turns
        return
    assert not info.excluded
    assert (info.native_id, info.cwd) == (case["nativeSessionId"], case["cwd"])
    actual = [{"userMessageId": d.user_message_id, "userText": d.user_text, "replyText": "\n".join(d.reply_parts),
               "toolNames": d.tools, "files": [list(touch) for touch in d.files], "ts": d.ts}
              for d in chunk.turns.values()]
    expected = [{**turn, "files": [list(touch) for touch in turn.get("files", [])]} for turn in case["turns"]]
    for turn in actual:
        turn["files"] = [[copilot_cli_absolute(path, info.cwd), action] for path, action in turn["files"]]
    assert actual == expected
    assert [d.turn_index for d in chunk.turns.values()] == list(range(len(actual)))
    bad = case.get("badLines", [])
    assert (chunk.bad_lines, chunk.first_bad_line) == (len(bad), bad[0] if bad else None)


def copilot_cli_absolute(path: str, cwd: str) -> str:
    from pimem.importers.base import absolute_touch_path

    return absolute_touch_path(path, cwd) or path


def test_real_cli_session_names_its_version() -> None:
    parser, _ = parse(REAL_CLI, "copilot-cli")
    assert parser.session().agent_version == "Copilot CLI 1.0.102"
    assert parser.session().started_at == 1796573000871   # session.start's startTime


def test_cli_state_resumes_mid_file(tmp_path: Path) -> None:
    """Any split of the file into two parses gives the turns of one parse."""
    source = REAL_CLI
    _, whole = parse(source, "copilot-cli")
    lines = source.read_bytes().splitlines(keepends=True)
    for cut in range(1, len(lines)):
        parser = copilot_cli.CopilotCliParser(str(source), None)
        first, second = Chunk(), Chunk()
        target = tmp_path / "events.jsonl"
        target.write_bytes(b"".join(lines))
        with target.open("rb") as stream:
            for line in LineReader(stream).scan(parser.interesting):
                if line.number <= cut:
                    feed_line(parser, line, first)
        resumed = copilot_cli.CopilotCliParser(str(source), json.loads(json.dumps(parser.state())))
        with target.open("rb") as stream:
            for line in LineReader(stream).scan(resumed.interesting):
                if line.number > cut:
                    feed_line(resumed, line, second)
        merged: dict[str, tuple[str, list[str], list[str]]] = {}
        for chunk in (first, second):
            for key, delta in chunk.turns.items():
                text, parts, tools = merged.get(key, (delta.user_text, [], []))
                new_tools = [name for name in delta.tools if name not in tools]
                merged[key] = (text or delta.user_text, parts + delta.reply_parts, tools + new_tools)
        assert merged == {key: (d.user_text, d.reply_parts, d.tools) for key, d in whole.turns.items()}, cut


def test_replay_applies_the_mutation_kinds() -> None:
    log = b"\n".join(json.dumps(entry).encode() for entry in [
        {"kind": 0, "v": {"requests": [{"a": 1}], "title": "t"}},
        {"kind": 2, "k": ["requests"], "v": [{"a": 2}, {"a": 3}]},
        {"kind": 1, "k": ["requests", 1, "a"], "v": 20},
        {"kind": 2, "k": ["requests"], "i": 2},
        {"kind": 3, "k": ["title"]},
        {"kind": 2, "k": ["requests", 0, "list"], "v": ["x"]},
    ])
    replay = copilot_chat.replay_log(log)
    assert dict(replay) == {"requests": [{"a": 1, "list": ["x"]}, {"a": 20}]}
    assert replay.bad_lines == []


def test_replay_skips_what_cannot_apply_and_a_new_snapshot_restarts() -> None:
    log = b"\n".join([b'{"kind":1,"k":["x"],"v":1}', b'{"kind":0,"v":{"requests":[]}}', b"{broken",
                      b'{"kind":1,"k":["requests",3,"a"],"v":1}', b'{"kind":9}',
                      b'{"kind":0,"v":{"requests":[{"requestId":"r"}]}}'])
    replay = copilot_chat.replay_log(log)
    assert dict(replay) == {"requests": [{"requestId": "r"}]}
    assert replay.bad_lines == [1, 3, 4, 5]


def test_a_log_without_snapshot_is_not_this_format() -> None:
    with pytest.raises(NotThisFormat):
        copilot_chat.replay_log(b'{"kind":1,"k":["a"],"v":1}\n')


@pytest.mark.parametrize(("uri", "path"), [
    ("file:///tmp/a%20b/c.py", "/tmp/a b/c.py"),
    ("file:///c%3A/Users/x/y.py", "c:\\Users\\x\\y.py"),
    ("file:///tmp/x.py#L10-L20", "/tmp/x.py"),
    ("vscode-remote://ssh-remote+h/home/x", None),
    ({"scheme": "file", "path": "/d:/w/z.ts"}, "d:\\w\\z.ts"),
    ({"scheme": "untitled", "path": "Untitled-1"}, None),
    (42, None),
])
def test_uri_path(uri: object, path: str | None) -> None:
    assert copilot_chat.uri_path(uri) == path


def test_which_files_are_chat_stores() -> None:
    files = copilot_chat.FILES
    assert files.wants_path("/u/workspaceStorage/w/chatSessions/s.jsonl")
    assert files.wants_path("/u/globalStorage/emptyWindowChatSessions/s.json")
    assert files.wants_path("/u/workspaceStorage/w/GitHub.copilot-chat/transcripts/s.jsonl")
    assert not files.wants_path("/u/workspaceStorage/w/GitHub.copilot-chat/debug-logs/s.jsonl")
    assert not files.wants_path("/u/workspaceStorage/w/other.extension/chatSessions.jsonl")
    assert not files.wants_path("/u/workspaceStorage/w/workspace.json")
    assert files.is_document("/u/workspaceStorage/w/chatSessions/s.jsonl")
    assert not files.is_document("/u/workspaceStorage/w/GitHub.copilot-chat/transcripts/s.jsonl")


def test_yaml_scalar() -> None:
    text = "id: x\ncwd: '/tmp/it''s'\ngit_root: \"/tmp/\\u00e9\"\nbranch:\n"
    assert copilot_cli.yaml_scalar(text, "cwd") == "/tmp/it's"
    assert copilot_cli.yaml_scalar(text, "git_root") == "/tmp/é"
    assert copilot_cli.yaml_scalar(text, "branch") is None
    assert copilot_cli.yaml_scalar(text, "missing") is None
