"""The Gemini CLI importer beyond its fixtures (tests/fixtures/expected/gemini/): a sync after every line
and after arbitrary byte cuts equals one full import (a message written again and a rewind arriving in
a later sync), the folder from .project_root or projects.json, and a broken line reported once."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from pimem.importers.gemini import part_text, project_folder
from pimem.store import connect
from pimem.sync import SyncRequest, run_sync
from support.history import REPO, roots_under
from sync.test_incremental import _rebase, snapshot, sync

FIXTURES = REPO / "tests" / "fixtures" / "reconstructed"
WEBSHOP = FIXTURES / "gemini" / "tmp" / "webshop"
CHAT = WEBSHOP / "chats" / "session-2026-12-01T09-00-4c1d9a52.jsonl"


REAL = next((REPO / "tests" / "fixtures" / "gemini-real" / "gemini" / "tmp" / "gemini-lab" / "chats").glob(
    "session-*-421e08bd.jsonl"))


def _copy_project(base: Path, chat: Path = CHAT) -> Path:
    """A chat's project (its .project_root) without the chat; the chat's path under ``base``."""
    project = base / "gemini" / "tmp" / chat.parent.parent.name
    (project / "chats").mkdir(parents=True)
    shutil.copyfile(chat.parent.parent / ".project_root", project / ".project_root")
    return project / "chats" / chat.name


@pytest.mark.parametrize("chat", [CHAT, REAL], ids=["reconstructed", "real-0.61.0"])
@pytest.mark.parametrize("cut", ["lines", "bytes"])
def test_a_sync_after_every_line_or_cut_equals_one_full_import(cut: str, chat: Path, tmp_path: Path) -> None:
    full = _copy_project(tmp_path / "full", chat)
    shutil.copyfile(chat, full)
    sync(tmp_path / "full", tmp_path / "full.db")
    live = _copy_project(tmp_path / "live", chat)
    content = chat.read_bytes()
    if cut == "lines":
        pieces = content.splitlines(keepends=True)
    else:   # cuts in the middle of lines: an unfinished last line is left for the next sync
        pieces = [content[start:start + 97] for start in range(0, len(content), 97)]
    with live.open("wb") as target:
        for piece in pieces:
            target.write(piece)
            target.flush()
            stats = run_sync(SyncRequest(db_path=str(tmp_path / "live.db"), roots=roots_under(tmp_path / "live")))
            assert not stats.issues, [issue.error for issue in stats.issues]
    reference = snapshot(connect(tmp_path / "full.db"))
    assert len(reference["turns"]) == (4 if chat == CHAT else 2)   # type: ignore[arg-type]
    assert snapshot(connect(tmp_path / "live.db")) == _rebase(reference, str(tmp_path / "full"),
                                                             str(tmp_path / "live"))


def test_a_broken_line_is_reported_once_and_the_rest_imported(tmp_path: Path) -> None:
    chat = _copy_project(tmp_path)
    lines = CHAT.read_bytes().splitlines(keepends=True)
    chat.write_bytes(b"".join([*lines[:3], b'{"id": "x", "type": "user", "content": \n', *lines[3:]]))
    stats = sync_with_issues(tmp_path)
    assert len(stats) == 1 and "line 4 could not be read" in stats[0] and "gemini" in stats[0]
    assert connect(tmp_path / "memory.db").execute("SELECT count(*) FROM turns").fetchone()[0] == 4
    assert sync_with_issues(tmp_path) == []   # unchanged: not reported again


def sync_with_issues(base: Path) -> list[str]:
    stats = run_sync(SyncRequest(db_path=str(base / "memory.db"), roots=roots_under(base)))
    return [issue.error for issue in stats.issues]


def test_the_folder_comes_from_project_root_then_projects_json(tmp_path: Path) -> None:
    home = tmp_path / ".gemini"
    chat = home / "tmp" / "slug" / "chats" / "session-x.jsonl"
    chat.parent.mkdir(parents=True)
    assert project_folder(str(chat)) == ""
    (home / "projects.json").write_text(json.dumps({"projects": {"/w/by-slug": "slug", 3: "x"}}))
    assert project_folder(str(chat)) == "/w/by-slug"
    (home / "projects.json").write_text("{not json")
    assert project_folder(str(chat)) == ""
    (home / "tmp" / "slug" / ".project_root").write_text("/w/root\n")
    assert project_folder(str(chat)) == "/w/root"


def test_part_text_reads_every_content_shape() -> None:
    assert part_text("plain") == "plain"
    assert part_text({"text": "one"}) == "one"
    assert part_text([{"text": "a"}, {"functionCall": {"name": "x"}}, "b", {"text": "t", "thought": True}]) == "a\nb"
    assert part_text(None) == "" and part_text(42) == ""


def test_a_rewind_drops_the_replies_after_its_point_from_the_turn_being_answered(tmp_path: Path) -> None:
    chat = _copy_project(tmp_path)
    records = [
        {"sessionId": "4c1d9a52-0000-4000-8000-000000000000", "projectHash": "h", "startTime": "2026-12-01T09:00:00Z"},
        {"id": "u1", "timestamp": "2026-12-01T09:00:01Z", "type": "user", "content": "first"},
        {"id": "g1", "timestamp": "2026-12-01T09:00:02Z", "type": "gemini", "content": "kept"},
        {"id": "g2", "timestamp": "2026-12-01T09:00:03Z", "type": "gemini", "content": "dropped",
         "toolCalls": [{"name": "write_file", "args": {"file_path": "/w/gone.py"}}]},
        {"$rewindTo": "g2"},
        {"id": "g3", "timestamp": "2026-12-01T09:00:04Z", "type": "gemini", "content": "instead"},
        {"$rewindTo": "u1"},
        {"id": "g4", "timestamp": "2026-12-01T09:00:05Z", "type": "gemini", "content": "after the turn was undone"},
    ]
    chat.write_text("".join(json.dumps(record) + "\n" for record in records))
    assert sync_with_issues(tmp_path) == []
    conn = connect(tmp_path / "memory.db")
    assert conn.execute("SELECT user_text, reply_text, tool_names FROM turns").fetchall() == [
        ("first", "kept\ninstead", None)]
    assert conn.execute("SELECT count(*) FROM pimem_touches").fetchone()[0] == 0


def test_the_context_gemini_cli_sends_and_tool_results_are_no_turns(tmp_path: Path) -> None:
    chat = _copy_project(tmp_path)
    records = [
        {"sessionId": "4c1d9a52-0000-4000-8000-000000000001", "projectHash": "h", "startTime": "2026-12-01T09:00:00Z"},
        {"id": "c", "timestamp": "2026-12-01T09:00:01Z", "type": "user",
         "content": [{"text": "<session_context>\nThis is the Gemini CLI. We are setting up the context"}]},
        {"id": "u", "timestamp": "2026-12-01T09:00:02Z", "type": "user", "content": [{"text": "typed"}]},
        {"id": "g", "timestamp": "2026-12-01T09:00:03Z", "type": "gemini", "content": "one"},
        {"id": "r", "timestamp": "2026-12-01T09:00:04Z", "type": "user",
         "content": [{"functionResponse": {"id": "x", "name": "read_file", "response": {"output": "..."}}}]},
        {"id": "h", "timestamp": "2026-12-01T09:00:05Z", "type": "gemini", "content": "two"},
    ]
    chat.write_text("".join(json.dumps(record) + "\n" for record in records))
    assert sync_with_issues(tmp_path) == []
    assert connect(tmp_path / "memory.db").execute("SELECT user_text, reply_text FROM turns").fetchall() == [
        ("typed", "one\ntwo")]
