"""The Copilot CLI and Copilot Chat importers, parser by parser: every fixture's turns with their times,
the lines reported broken, and the format rules the fixtures do not reach.

The data-driven store test (test_fixtures.py) reads the same expected files through a sync.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import pytest

from pimem.discovery import discover, stat_paths
from pimem.importers import copilot_chat, copilot_cli
from pimem.importers.base import Chunk, NotThisFormat, TranscriptParser, feed_line
from pimem.jsonl import LineReader
from pimem.paths import VSCODE_PRODUCTS, SourceRoots, app_data_dir, source_roots, vscode_user_dirs
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
    cls = copilot_chat.CopilotChatParser if source == "copilot-chat" else copilot_cli.CopilotCliParser
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


def test_only_the_chat_stores_are_walked(tmp_path: Path) -> None:
    """Discovery (a full walk and a live update's stat) takes the two stores' files and enters no other
    folder of a workspace: other extensions keep large trees there."""
    user = tmp_path / "User"
    ws = user / "workspaceStorage" / "w1"
    wanted = [ws / "chatSessions" / "a.jsonl", ws / "chatSessions" / "old.json",
              ws / "GitHub.copilot-chat" / "transcripts" / "b.jsonl",
              user / "globalStorage" / "emptyWindowChatSessions" / "e.jsonl"]
    unwanted = [ws / "workspace.json", ws / "state.vscdb", ws / "GitHub.copilot-chat" / "debug-logs" / "c.jsonl",
                ws / "redhat.java" / "jdt_ws" / "chatSessions" / "d.jsonl", ws / "chatSessions" / "deep" / "f.jsonl",
                user / "globalStorage" / "other" / "g.json"]
    for path in wanted + unwanted:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("{}\n")
    roots = SourceRoots(copilot_chat=(user / "workspaceStorage", user / "globalStorage" / "emptyWindowChatSessions"))
    issues: list[Any] = []
    assert sorted(f.path for f in discover(roots, {"copilot-chat"}, issues)) == sorted(map(str, wanted))
    found = stat_paths([str(p) for p in wanted + unwanted], roots, {"copilot-chat"}, issues)
    assert sorted(f.path for f in found) == sorted(map(str, wanted)) and not issues
    assert copilot_chat.FILES.is_document(str(wanted[0])) and copilot_chat.FILES.is_document(str(wanted[3]))
    assert not copilot_chat.FILES.is_document(str(wanted[2]))


def test_only_session_events_are_cli_transcripts(tmp_path: Path) -> None:
    state = tmp_path / "session-state"
    wanted = state / "s1" / "events.jsonl"
    for path in (wanted, state / "s1" / "checkpoints" / "events.jsonl", state / "events.jsonl",
                 state / "s1" / "files" / "x.jsonl"):
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("{}\n")
    found = discover(SourceRoots(copilot_cli=(state,)), {"copilot-cli"}, [])
    assert [f.path for f in found] == [str(wanted)]


def test_yaml_scalar() -> None:
    text = "id: x\ncwd: '/tmp/it''s'\ngit_root: \"/tmp/\\u00e9\"\nbranch:\n"
    assert copilot_cli.yaml_scalar(text, "cwd") == "/tmp/it's"
    assert copilot_cli.yaml_scalar(text, "git_root") == "/tmp/é"
    assert copilot_cli.yaml_scalar(text, "branch") is None
    assert copilot_cli.yaml_scalar(text, "missing") is None


def test_default_roots_and_overrides(tmp_path: Path) -> None:
    home = str(tmp_path)
    roots = source_roots({"HOME": home})
    assert roots.for_source("copilot-cli") == (tmp_path / ".copilot" / "session-state",)
    if sys.platform.startswith("linux"):
        user = tmp_path / ".config" / "Code" / "User"
        assert roots.for_source("copilot-chat")[:2] == (user / "workspaceStorage",
                                                         user / "globalStorage" / "emptyWindowChatSessions")
        assert [r.parent.parent.name for r in roots.for_source("copilot-chat")[::2]] == list(VSCODE_PRODUCTS)
        assert roots.for_source("cursor") == (tmp_path / ".cursor" / "projects",
                                              tmp_path / ".config" / "Cursor" / "User" / "globalStorage")
    assert source_roots({"HOME": home, "COPILOT_HOME": "/c"}).for_source("copilot-cli") == (Path("/c/session-state"),)
    listed = f"/a/User{os.pathsep}/b/User"
    assert source_roots({"HOME": home, "PIMEM_VSCODE_USER_DIRS": listed}).for_source("copilot-chat") == (
        Path("/a/User/workspaceStorage"), Path("/a/User/globalStorage/emptyWindowChatSessions"),
        Path("/b/User/workspaceStorage"), Path("/b/User/globalStorage/emptyWindowChatSessions"))
    assert source_roots({"HOME": home, "PIMEM_CURSOR_DIR": "/x", "PIMEM_CURSOR_USER_DIR": "/y"}).for_source(
        "cursor") == (Path("/x/projects"), Path("/y/globalStorage"))
    assert app_data_dir({"HOME": home}, "darwin") == tmp_path / "Library" / "Application Support"
    assert app_data_dir({"HOME": home, "APPDATA": "/w/Roaming"}, "win32") == Path("/w/Roaming")
    assert vscode_user_dirs({"HOME": home, "XDG_CONFIG_HOME": "/xdg"}, "linux")[0] == Path("/xdg/Code/User")
