"""Memory of each file (issue 15): the touches the importers record, how sync keeps them, the importer
rules versions that make an older store parse its files again once, and the services that read them
(sessions list, one session's window, file history, one-session migration).

What each real transcript's turns touched is in the data-driven importer test (tests/test_importers.py,
``files`` in tests/fixtures/expected/); here: the rules on crafted calls, and the store over the
sample history."""

from __future__ import annotations

import json
import shutil
import sqlite3
from pathlib import Path

import pytest

from pimem import wire
from pimem.filehistory import file_history
from pimem.importers import RULES_VERSIONS
from pimem.importers.base import absolute_touch_path
from pimem.importers.claude import file_touches as claude_touches
from pimem.importers.codex import call_touches, patch_touches
from pimem.importers.pi import file_touches as pi_touches
from pimem.migrate import UnknownSession, migrate_codex_session
from pimem.sessions import PROMPT_CUT_CHARS, list_sessions, read_window
from pimem.store import connect
from pimem.sync import SyncRequest, run_sync
from pimem.sync.rules import META_KEY
from support.history import LEGACY, SAMPLES, roots_under

REAL_SAMPLES = Path(__file__).parent / "fixtures" / "real-samples"


# ---------------------------------------------------------------------------------------------
# The importers' rules
# ---------------------------------------------------------------------------------------------

def test_paths_are_made_absolute_against_the_session_cwd() -> None:
    assert absolute_touch_path("src/../lib/a.py", "/work/app") == "/work/app/lib/a.py"
    assert absolute_touch_path("/etc//hosts", "/work/app") == "/etc/hosts"
    assert absolute_touch_path("/work/app/link/x", "") == "/work/app/link/x"     # symlinks not resolved
    assert absolute_touch_path("notes.txt", "") is None                           # relative, no cwd: dropped
    assert absolute_touch_path("~/notes.txt", "/work") is None                    # whose home? dropped
    assert absolute_touch_path("a\0b", "/work") is None
    assert absolute_touch_path("src\\a.py", "C:\\work") == "C:\\work\\src\\a.py"
    assert absolute_touch_path("D:/x/../y.txt", "/work") == "D:\\y.txt"


def test_claude_file_tools() -> None:
    message = {"content": [
        {"type": "tool_use", "name": "Read", "input": {"file_path": "/a/r.py"}},
        {"type": "tool_use", "name": "Write", "input": {"file_path": "/a/w.py", "content": "x"}},
        {"type": "tool_use", "name": "Edit", "input": {"file_path": "/a/e.py"}},
        {"type": "tool_use", "name": "MultiEdit", "input": {"file_path": "/a/m.py", "edits": []}},
        {"type": "tool_use", "name": "NotebookEdit", "input": {"notebook_path": "/a/n.ipynb"}},
        {"type": "tool_use", "name": "Bash", "input": {"command": "cat /a/b.py"}},
        {"type": "tool_use", "name": "Grep", "input": {"path": "/a"}},
        {"type": "tool_use", "name": "Edit", "input": {"file_path": 7}},
        {"type": "text", "text": "Read /a/x.py"},
    ]}
    assert claude_touches(message) == [("/a/r.py", "read"), ("/a/w.py", "write"), ("/a/e.py", "edit"),
                                       ("/a/m.py", "edit"), ("/a/n.ipynb", "edit")]


def test_pi_file_tools() -> None:
    content = [{"type": "toolCall", "name": "read", "arguments": {"path": "src/a.ts"}},
               {"type": "toolCall", "name": "write", "arguments": {"path": "/abs/b.ts", "content": ""}},
               {"type": "toolCall", "name": "edit", "arguments": {"path": "c.ts", "oldText": "", "newText": ""}},
               {"type": "toolCall", "name": "bash", "arguments": {"command": "ls"}},
               {"type": "text", "text": "edit"}]
    assert pi_touches(content) == [("src/a.ts", "read"), ("/abs/b.ts", "write"), ("c.ts", "edit")]


PATCH = ("*** Begin Patch\n*** Add File: docs/new.md\n+hello\n*** Update File: src/app.py\n@@\n-a\n+b\n"
         "*** Delete File: old.txt\n*** Update File: lib/x.py\n*** Move to: lib/y.py\n@@\n-c\n+d\n*** End Patch\n")
PATCH_TOUCHES = [("docs/new.md", "write"), ("src/app.py", "edit"), ("old.txt", "delete"), ("lib/x.py", "delete"),
                 ("lib/y.py", "write")]


def test_codex_apply_patch_headers_wherever_the_patch_is() -> None:
    assert patch_touches(PATCH) == PATCH_TOUCHES
    assert patch_touches("no patch here\n*** Update File: a.py") == []
    custom = {"type": "custom_tool_call", "name": "apply_patch", "input": PATCH}
    shell = {"type": "function_call", "name": "shell", "arguments": json.dumps({"command": ["apply_patch", PATCH]})}
    heredoc = {"type": "function_call", "name": "exec_command",
               "arguments": json.dumps({"cmd": f"apply_patch <<'EOF'\n{PATCH}EOF\n"})}
    local = {"type": "local_shell_call", "action": {"type": "exec", "command": ["apply_patch", PATCH]}}
    code_mode = {"type": "custom_tool_call", "name": "exec",
                 "input": "await tools.apply_patch(" + json.dumps(PATCH) + ");"}
    for payload in (custom, shell, heredoc, local, code_mode):
        assert call_touches(payload, str(payload.get("name"))) == PATCH_TOUCHES, payload
    read = {"type": "function_call", "name": "read_file", "arguments": json.dumps({"file_path": "/r/a.py"})}
    image = {"type": "function_call", "name": "view_image", "arguments": json.dumps({"path": "shot.png"})}
    other = {"type": "function_call", "name": "exec_command", "arguments": json.dumps({"cmd": "cat a.py"})}
    assert call_touches(read, "read_file") == [("/r/a.py", "read")]
    assert call_touches(image, "view_image") == [("shot.png", "read")]
    assert call_touches(other, "exec_command") == []


# ---------------------------------------------------------------------------------------------
# The store, through sync
# ---------------------------------------------------------------------------------------------

@pytest.fixture
def base(tmp_path: Path) -> Path:
    """The sample history, the legacy fixtures and the real samples under one base."""
    base = tmp_path / "history"
    shutil.copytree(SAMPLES, base, ignore=shutil.ignore_patterns("MANIFEST.md"))
    shutil.copytree(LEGACY, base, dirs_exist_ok=True)
    shutil.copytree(REAL_SAMPLES, base, dirs_exist_ok=True, ignore=shutil.ignore_patterns("README.md"))
    return base


def sync(base: Path, db: Path, **kwargs: object) -> tuple[int, int]:
    stats = run_sync(SyncRequest(db_path=str(db), roots=roots_under(base), workers=1, **kwargs))  # type: ignore[arg-type]
    assert stats.issues == [], [issue.error for issue in stats.issues]
    return stats.scanned_files, stats.turns


def rows(db: Path, sql: str) -> list[tuple[object, ...]]:
    conn = sqlite3.connect(db)
    try:
        return sorted(conn.execute(sql).fetchall(), key=repr)
    finally:
        conn.close()


ALL = ("SELECT t.turn_id, t.user_text, t.reply_text, t.tool_names FROM turns t",
       "SELECT path, turn_id, action, session_id, ts FROM pimem_touches")
TOUCHES = "SELECT path, turn_id, action FROM pimem_touches"


def test_an_importer_whose_rules_changed_has_its_files_parsed_again_once(base: Path, tmp_path: Path) -> None:
    """A store whose Claude rows predate the current rules (here: wrong texts and no touches, as a
    store imported before the queued-prompt fix and before file touches) is corrected by the next
    sync, which parses every Claude file and only those, once."""
    db = tmp_path / "memory.db"
    files, _turns = sync(base, db)
    fresh = {sql: rows(db, sql) for sql in ALL}
    claude_files = len(rows(db, "SELECT file_id FROM pimem_files WHERE source = 'claude'"))
    conn = connect(db)
    with conn:
        conn.execute("UPDATE turns SET user_text = 'as an older pimem stored it' WHERE turn_id LIKE 'claude:%'")
        conn.execute("DELETE FROM pimem_touches WHERE turn_id LIKE 'claude:%'")
        conn.execute("INSERT INTO pimem_touches SELECT '/what/older/rules/saw', turn_id, 'read', session_id, ts "
                     "FROM turns WHERE turn_id LIKE 'claude:%'")   # parsed again, a turn's touches are replaced
        conn.execute("UPDATE pimem_meta SET value = ? WHERE key = ?",
                     (json.dumps({**RULES_VERSIONS, "claude": RULES_VERSIONS["claude"] - 1}), META_KEY))
    conn.close()
    assert sync(base, db)[0] == claude_files
    assert {sql: rows(db, sql) for sql in ALL} == fresh
    assert json.loads(rows(db, f"SELECT value FROM pimem_meta WHERE key = '{META_KEY}'")[0][0]) == RULES_VERSIONS
    assert sync(base, db) == (0, 0)
    assert files > claude_files


def test_a_layout_3_store_gets_file_touches_from_its_next_sync(base: Path, tmp_path: Path) -> None:
    """What a store written before file touches looks like: layout 3, no pimem_touches, no rules
    versions. It is migrated in place, then every file is parsed once more."""
    db = tmp_path / "memory.db"
    files, _ = sync(base, db)
    fresh = {sql: rows(db, sql) for sql in ALL}
    assert fresh[ALL[1]], "the history has file touches"
    conn = sqlite3.connect(db)
    with conn:
        conn.execute("DROP TABLE pimem_touches")
        conn.execute("UPDATE pimem_meta SET value = '3' WHERE key = 'layout'")
        conn.execute("DELETE FROM pimem_meta WHERE key = ?", (META_KEY,))
    conn.close()
    assert sync(base, db)[0] == files
    assert {sql: rows(db, sql) for sql in ALL} == fresh
    assert sync(base, db)[0] == 0


def test_a_no_change_sync_reads_one_meta_row_for_the_rules(base: Path, tmp_path: Path) -> None:
    db = tmp_path / "memory.db"
    sync(base, db)
    conn = connect(db)
    statements: list[str] = []
    conn.set_trace_callback(statements.append)
    stats = run_sync(SyncRequest(db_path=str(db), roots=roots_under(base), workers=1), conn=conn)
    conn.set_trace_callback(None)
    conn.close()
    assert stats.scanned_files == 0
    rules_reads = [sql for sql in statements if META_KEY in sql]
    assert rules_reads == [f"SELECT value FROM pimem_meta WHERE key = '{META_KEY}'"]   # and no write
    assert not [sql for sql in statements if "pimem_touches" in sql]
    assert len([sql for sql in statements if "pimem_files" in sql]) == 1   # the stamps, as before


def test_touches_follow_appends_and_a_forced_sync_changes_nothing(tmp_path: Path) -> None:
    """A turn's touches grow with its appended replies; a forced re-parse leaves the same rows."""
    base = tmp_path / "history"
    session = (base / "pi/agent/sessions/--work-app--"
               / "2026-12-01T00-00-00-000Z_01a22bd8-0000-7000-8000-000000000001.jsonl")
    session.parent.mkdir(parents=True)
    header = {"type": "session", "version": 3, "id": "01a22bd8-0000-7000-8000-000000000001",
              "timestamp": "2026-12-01T00:00:00.000Z", "cwd": "/work/app"}

    def message(entry: str, parent: str | None, role: str, content: object) -> dict[str, object]:
        return {"type": "message", "id": entry, "parentId": parent, "timestamp": "2026-12-01T00:00:01.000Z",
                "message": {"role": role, "content": content, "timestamp": 1796083201000}}

    lines = [header, message("u1", None, "user", [{"type": "text", "text": "fix the parser"}]),
             message("a1", "u1", "assistant", [{"type": "toolCall", "id": "c1", "name": "read",
                                                "arguments": {"path": "src/parser.py"}}])]
    session.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    db = tmp_path / "memory.db"
    sync(base, db)
    turn = "pi:01a22bd8-0000-7000-8000-000000000001:u1"
    assert rows(db, TOUCHES) == [("/work/app/src/parser.py", turn, "read")]
    more = message("a2", "a1", "assistant", [{"type": "toolCall", "id": "c2", "name": "edit",
                                              "arguments": {"path": "/work/app/src/parser.py"}}])
    with session.open("a", encoding="utf-8") as handle:
        handle.write(json.dumps(more) + "\n")
    assert sync(base, db)[0] == 1
    session_id, ts = "pi:01a22bd8-0000-7000-8000-000000000001", 1796083201000
    expected = [("/work/app/src/parser.py", turn, "edit", session_id, ts),
                ("/work/app/src/parser.py", turn, "read", session_id, ts)]   # the turn's session and time
    assert rows(db, ALL[1]) == expected
    sync(base, db, force=True)
    assert rows(db, ALL[1]) == expected


def test_a_path_the_store_cannot_hold_is_no_touch_and_its_session_is_imported(tmp_path: Path) -> None:
    """JSON allows a lone surrogate ("\\udc80"; JavaScript writes one when a string is cut inside a pair),
    which UTF-8, hence the store, cannot hold: such a path is no touch (as one holding a NUL), and the rest of
    the session is imported (before: its touch, and its edit span, failed every commit of the file, so no
    turn of the session was ever stored)."""
    assert absolute_touch_path("src/a\udc80.py", "/work/app") is None
    base = tmp_path / "history"
    session = base / "pi/agent/sessions/--work-app--" / "2026-12-01T00-00-00-000Z_s1.jsonl"
    session.parent.mkdir(parents=True)
    calls = [{"type": "toolCall", "id": "c1", "name": "read", "arguments": {"path": "src/a\udc80.py"}},
             {"type": "toolCall", "id": "c2", "name": "write", "arguments": {"path": "b\udc80.py", "content": "x=1"}},
             {"type": "toolCall", "id": "c3", "name": "read", "arguments": {"path": "src/parser.py"}}]
    lines = [{"type": "session", "version": 3, "id": "s1", "timestamp": "2026-12-01T00:00:00.000Z", "cwd": "/work/app"},
             {"type": "message", "id": "u1", "parentId": None, "timestamp": "2026-12-01T00:00:01.000Z",
              "message": {"role": "user", "content": "fix the parser", "timestamp": 1796083201000}},
             {"type": "message", "id": "a1", "parentId": "u1", "timestamp": "2026-12-01T00:00:02.000Z",
              "message": {"role": "assistant", "content": calls}}]
    session.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    db = tmp_path / "memory.db"
    assert sync(base, db) == (1, 1)
    assert rows(db, TOUCHES) == [("/work/app/src/parser.py", "pi:s1:u1", "read")]


# ---------------------------------------------------------------------------------------------
# The services
# ---------------------------------------------------------------------------------------------

@pytest.fixture
def store(base: Path, tmp_path: Path) -> sqlite3.Connection:
    db = tmp_path / "memory.db"
    sync(base, db)
    return connect(db, for_writing=False)


def test_file_history_lists_the_sessions_that_touched_a_file_newest_first(store: sqlite3.Connection) -> None:
    history = file_history(store, "/tmp/pimem-demo/webshop/./notes.txt")
    assert history.path == "/tmp/pimem-demo/webshop/notes.txt"
    # P1 wrote it; P4, its fork, copies P1's entries (same turn ids in another session).
    assert (history.total, history.edited) == (2, 2)
    assert {s.session_id for s in history.sessions} == {"pi:01a22bd8-a83c-7278-b6dd-f7b4c2b178a9",
                                                         "pi:01a22bd8-b35d-736e-b96a-18086204be66"}
    assert [s.last_ts for s in history.sessions] == sorted((s.last_ts for s in history.sessions), reverse=True)
    first = wire.file_session(history.sessions[0])
    assert first["actions"] == ["write"] and first["turns"] == 1 and first["prompt"]
    assert str(first["resumeCommand"]).startswith("pi --session ")
    cache = file_history(store, "/tmp/pimem-demo/legacy-app/src/cache.py")
    assert {s.source for s in cache.sessions} == {"claude", "codex", "pi"}       # one per agent
    assert cache.edited == cache.total == 3
    read_only = file_history(store, "/tmp/pimem-demo/legacy-app/cache.py")
    assert (read_only.total, read_only.edited) == (1, 0)
    nowhere = wire.file_history(file_history(store, "/nowhere"))
    assert nowhere == {"path": "/nowhere", "total": 0, "edited": 0, "sessions": []}
    assert len(file_history(store, "/tmp/pimem-demo/legacy-app/src/cache.py", limit=1).sessions) == 1
    with pytest.raises(ValueError, match="absolute"):
        file_history(store, "notes.txt")


def test_sessions_list_is_newest_first_scoped_and_paged(store: sqlite3.Connection) -> None:
    everything = list_sessions(store)
    order = [(-s.last_ts, s.session_id) for s in everything.sessions]
    assert order == sorted(order) and everything.total == len(everything.sessions)
    webshop = list_sessions(store, ["/tmp/pimem-demo/webshop"])
    assert webshop.total > 0 and all(s.cwd.startswith("/tmp/pimem-demo/webshop") for s in webshop.sessions)
    assert list_sessions(store, ["/tmp/pimem-demo/web"]).total == 0          # a folder, not a prefix
    claude = list_sessions(store, sources=["claude"])
    assert {s.source for s in claude.sessions} == {"claude"}
    page = list_sessions(store, limit=2, offset=1)
    assert page.total == everything.total and page.sessions == everything.sessions[1:3]
    for summary in everything.sessions:
        first = store.execute("SELECT user_text FROM turns WHERE session_id = ? ORDER BY turn_index LIMIT 1",
                              (summary.session_id,)).fetchone()[0]
        view = wire.session_summary(summary)
        assert view["firstPrompt"] == first[:PROMPT_CUT_CHARS] and view["truncated"] == (len(first) > PROMPT_CUT_CHARS)
        assert view["turnCount"] == store.execute("SELECT count(*) FROM turns WHERE session_id = ?",
                                                  (summary.session_id,)).fetchone()[0]


def test_a_session_window_carries_each_turns_files(store: sqlite3.Connection) -> None:
    session = "claude:4c289ca8-f8bb-4588-8400-88b78beb784d"
    window = wire.session_window(read_window(store, session, None, 0, 10, max_context=200, files=True))
    assert window["turnCount"] == 2 and window["firstPosition"] == 0 and window["startedAt"]
    turns = window["turns"]
    assert isinstance(turns, list) and "hits" not in turns[0] and "matched" not in turns[0]
    path = "/Users/roblou/code/vscode-copilot-chat/src/extension/agents/claude/vscode-node/claudeCodeAgent.ts"
    assert turns[0]["files"] == [{"path": path, "action": "edit"}, {"path": path, "action": "read"}]
    assert turns[1]["files"] == []
    assert window["resumeCommand"] == "cd -- /Users/roblou/code/vscode-copilot-chat && claude --resume " \
                                      "4c289ca8-f8bb-4588-8400-88b78beb784d"


def test_one_codex_session_migrates_into_the_pi_folder_of_its_cwd(base: Path) -> None:
    env = {"CODEX_HOME": str(base / "codex"), "PI_CODING_AGENT_DIR": str(base / "pi" / "agent"),
           "CLAUDE_CONFIG_DIR": str(base / "claude")}
    thread = "01a0c3f2-5b6e-7d81-9a2b-3c4d5e6f7a8b"   # the legacy G3 rollout, cwd /tmp/pimem-demo/legacy-app
    report = migrate_codex_session(thread, env=env)
    assert report.folder == "/tmp/pimem-demo/legacy-app"
    assert [m.codex_session_id for m in report.migrated] == [thread]
    entry = wire.migration_report(report)["migrated"][0]   # type: ignore[index]
    assert Path(entry["piPath"]).is_file() and Path(entry["piPath"]).parent.name == "--tmp-pimem-demo-legacy-app--"
    assert entry["resumeCommand"] == f"pi --session {entry['piPath']}"
    assert migrate_codex_session(thread, env=env).skipped[0].reason == "already migrated"
    with pytest.raises(UnknownSession, match="no Codex session"):
        migrate_codex_session("01a0c3f2-0000-7000-8000-000000000000", env=env)
