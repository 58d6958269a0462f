"""Memory of each line (issue 23): the edit spans the importers record (pimem.editspans, the importers'
``edit_calls``), how the store keeps them (layouts 7 to 9), and the attribution rules (pimem.lineblame) over
stores synced from crafted Claude Code, Pi and Codex transcripts; ``pimem blame``."""

from __future__ import annotations

import difflib
import json
import os
import shutil
import sqlite3
import subprocess
import sys
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from pimem import editspans, lineblame, wire
from pimem.importers.claude import edit_calls as claude_edits
from pimem.importers.codex import call_edits, patch_edits
from pimem.importers.pi import edit_calls as pi_edits
from pimem.lineblame import attribute_lines, line_history
from pimem.store import connect, set_meta, transaction
from pimem.sync.rules import META_KEY
from support.edits import brace_block_edits, write_claude, write_codex, write_pi
from support.history import SAMPLES
from support.sync import sync


def _blame(db: Path, path: Path, text: str, **kwargs: Any) -> dict[int, tuple[str, str]]:
    """line -> (confidence, prompt)."""
    conn = connect(db, create=False, for_writing=False)
    try:
        return {found.line: (found.confidence, found.prompt)
                for found in attribute_lines(conn, str(path), text, git=False, **kwargs)}
    finally:
        conn.close()


FUNCTION = "def compute(values):\n    total = 0\n    for value in values:\n        total += value\n    return total\n"


# ---------------------------------------------------------------------------------------------
# Spans: the shared helper and the importers' calls
# ---------------------------------------------------------------------------------------------

def test_span_claims_only_the_lines_an_edit_changed() -> None:
    old = "a = compute(1)\nb = compute(2)\nreturn a + b\n"
    new = "a = compute(1)\nb = compute(3)\n\nc = compute(4)\nreturn a + b\n"
    span = editspans.span_of(old, new)
    assert span is not None
    h = editspans.line_hash
    # position: 2 × index among the non-blank lines, + 1 after blank lines
    assert span.added == [(2, h("b=compute(3)")), (5, h("c=compute(4)"))]
    assert span.removed == [h("b=compute(2)")]
    assert editspans.span_of(None, "x = 1\n\n  y = 2") == editspans.Span([(0, h("x=1")), (3, h("y=2"))], [])


def test_bound_rule() -> None:
    assert editspans.span_of(None, "x = 1\n" * editspans.MAX_CALL_LINES) is None
    assert editspans.span_of(None, "x" * (editspans.MAX_CALL_BYTES + 1)) is None
    minified = editspans.span_of(None, "var a=1;" * 200 + "\nconst answer = 42;\n")
    assert minified is not None and minified.added == [(2, editspans.line_hash("constanswer=42;"))]
    assert editspans.skipped_path("/w/package-lock.json") and editspans.skipped_path("/w/app.min.js")
    assert editspans.skipped_path("/w/Cargo.lock") and not editspans.skipped_path("/w/src/lock.py")


@pytest.mark.parametrize("line", ["}", "  ) ", "else:", "end", "});", "pass", "i++", "x = 1", ""])
def test_trivial_lines(line: str) -> None:
    assert editspans.is_trivial(editspans.normalize(line))


@pytest.mark.parametrize("line", ["total += value", "return mean_value", "import os", "}).catch(handle)"])
def test_lines_with_content_are_not_trivial(line: str) -> None:
    assert not editspans.is_trivial(editspans.normalize(line))


def test_claude_edit_calls() -> None:
    message = {"content": [
        {"type": "tool_use", "id": "t1", "name": "Edit",
         "input": {"file_path": "/a/e.py", "old_string": "x", "new_string": "y"}},
        {"type": "tool_use", "id": "t2", "name": "MultiEdit", "input": {"file_path": "/a/m.py", "edits": [
            {"old_string": "a", "new_string": "b"}, {"old_string": "c", "new_string": "d"}, 7]}},
        {"type": "tool_use", "id": "t3", "name": "Write", "input": {"file_path": "/a/w.py", "content": "w"}},
        {"type": "tool_use", "id": "t4", "name": "NotebookEdit",
         "input": {"notebook_path": "/a/n.ipynb", "new_source": "print(1)", "cell_id": "c"}},
        {"type": "tool_use", "id": "t5", "name": "NotebookEdit",
         "input": {"notebook_path": "/a/n.ipynb", "new_source": "", "edit_mode": "delete"}},
        {"type": "tool_use", "id": "t6", "name": "Read", "input": {"file_path": "/a/r.py"}},
        {"type": "tool_use", "id": "t7", "name": "Edit", "input": {"file_path": "/a/e.py", "new_string": 3}},
    ]}
    assert [(c.path, c.tool, c.call_id, c.old, c.new, c.whole) for c in claude_edits(message)] == [
        ("/a/e.py", "Edit", "t1", "x", "y", False),
        ("/a/m.py", "MultiEdit", "t2", "a", "b", False), ("/a/m.py", "MultiEdit", "t2", "c", "d", False),
        ("/a/w.py", "Write", "t3", None, "w", True),
        ("/a/n.ipynb", "NotebookEdit", "t4", None, "print(1)", False),
    ]


def test_pi_edit_calls() -> None:
    content = [
        {"type": "toolCall", "id": "c1", "name": "edit",
         "arguments": {"path": "a.ts", "edits": [{"oldText": "x", "newText": "y"}, {"oldText": "p", "newText": "q"}]}},
        {"type": "toolCall", "id": "c2", "name": "edit", "arguments": {"path": "b.ts", "oldText": "o", "newText": "n"}},
        {"type": "toolCall", "id": "c3", "name": "edit",
         "arguments": {"path": "c.ts", "edits": json.dumps([{"oldText": "s", "newText": "t"}])}},
        {"type": "toolCall", "id": "c4", "name": "edit", "arguments": {"path": "d.ts", "edits": {"oldText": "u",
                                                                                               "newText": "v"}}},
        {"type": "toolCall", "id": "c5", "name": "write", "arguments": {"path": "e.ts", "content": "whole"}},
        {"type": "toolCall", "id": "c6", "name": "read", "arguments": {"path": "f.ts"}},
    ]
    assert [(c.path, c.call_id, c.old, c.new, c.whole) for c in pi_edits(content)] == [
        ("a.ts", "c1", "x", "y", False), ("a.ts", "c1", "p", "q", False), ("b.ts", "c2", "o", "n", False),
        ("c.ts", "c3", "s", "t", False), ("d.ts", "c4", "u", "v", False), ("e.ts", "c5", None, "whole", True),
    ]


PATCH = ("*** Begin Patch\n*** Update File: src/a.py\n@@ def f():\n ctx\n-old\n+new\n@@\n+added\n"
         "*** Update File: src/b.py\n*** Move to: src/c.py\n@@\n-gone\n+kept\n*** Delete File: src/d.py\n"
         "*** Add File: src/e.py\n+one\n+two\n*** End Patch\n")


def test_codex_patch_edits() -> None:
    found = [(c.path, c.old, c.new, c.whole) for c in patch_edits(PATCH, "apply_patch", "k")]
    assert found == [("src/a.py", "ctx\nold", "ctx\nnew", False), ("src/a.py", "", "added", False),
                     ("src/c.py", "gone", "kept", False), ("src/e.py", "", "one\ntwo", True)]
    # the same patch in a function_call (shell ["apply_patch", patch]) and in a code-mode JavaScript string
    shell = {"type": "function_call", "name": "shell", "call_id": "s",
             "arguments": json.dumps({"command": ["apply_patch", PATCH]})}
    code = {"type": "function_call", "name": "exec", "call_id": "x",
            "arguments": json.dumps({"code": "await tools.apply_patch(`" + PATCH.replace("\n", "\\n") + "`)"})}
    for payload in (shell, code):
        assert [(c.path, c.new) for c in call_edits(payload, str(payload["name"]))] == [
            (path, new) for path, _, new, _ in found]


FIXTURES = Path(__file__).parent / "fixtures"
ROOTS = {"samples": SAMPLES, "claude-interactive": FIXTURES / "claude-interactive",
         "legacy": FIXTURES / "legacy", "real-samples": FIXTURES / "real-samples",
         "opencode-real": FIXTURES / "opencode-real", "opencode-storage": FIXTURES / "opencode-storage",
         "copilot-cli": FIXTURES / "copilot-cli"}


def _spans_and_touches(tmp_path: Path, root: Path) -> tuple[set[tuple[str, str]], set[tuple[str, str]]]:
    base = tmp_path / "history"
    shutil.copytree(root, base)
    db = tmp_path / "m.db"
    sync(base, db)
    conn = sqlite3.connect(db)
    touches = set(conn.execute("SELECT path, turn_id FROM pimem_touches WHERE action IN ('write', 'edit')"))
    spans = set(conn.execute("SELECT f.path, s.turn_id FROM pimem_edit_spans s JOIN pimem_edit_files f "
                             "USING (path_id)"))
    conn.close()
    return spans, touches


@pytest.mark.parametrize("root", sorted(ROOTS))
def test_every_edit_touch_of_the_fixtures_has_its_span(tmp_path: Path, root: str) -> None:
    """Data-driven over the real (and legacy) Claude Code, Codex and Pi transcripts: a turn that wrote or
    edited a file (pimem_touches, the importers' other reading of the same calls) has spans of that
    file, and every span is such a touch."""
    spans, touches = _spans_and_touches(tmp_path, ROOTS[root])
    assert spans == touches
    sources = {turn_id.split(":", 1)[0] for _, turn_id in spans}
    assert sources == {"samples": {"claude", "pi"}, "claude-interactive": set(),
                       "legacy": {"claude", "codex", "pi"}, "real-samples": {"claude"},
                       "opencode-real": {"opencode"}, "opencode-storage": {"opencode"},
                       "copilot-cli": {"copilot-cli"}}[root]


# ---------------------------------------------------------------------------------------------
# The store
# ---------------------------------------------------------------------------------------------

def test_layout_6_store_migrates_and_the_rules_reparse_fills_spans(tmp_path: Path, project: Path) -> None:
    base = tmp_path / "agents"
    write_claude(base, "s1", project, [("write compute", [("Write", {"file_path": str(project / "a.py"),
                                                                      "content": FUNCTION})])])
    db = tmp_path / "m.db"
    sync(base, db)
    conn = connect(db)
    # make it the store an older pimem left: layout 6, without the span tables, parsed by older rules
    with transaction(conn):
        for table in ("pimem_edit_lines", "pimem_edit_spans", "pimem_edit_files"):
            conn.execute(f"DROP TABLE {table}")
        set_meta(conn, "layout", "6")
        set_meta(conn, META_KEY, json.dumps({"claude": 3, "codex": 3, "pi": 2}))
    conn.close()
    conn = connect(db)      # opened for writing: migrated to 9, empty
    assert conn.execute("SELECT value FROM pimem_meta WHERE key = 'layout'").fetchone() == ("9",)
    assert conn.execute("SELECT count(*) FROM pimem_edit_spans").fetchone() == (0,)
    conn.close()
    sync(base, db)          # the claude rules rose: its file is parsed again
    assert len(_blame(db, project / "a.py", FUNCTION)) == 5


def test_a_turn_parsed_again_replaces_its_spans(tmp_path: Path, project: Path) -> None:
    base = tmp_path / "agents"
    write_claude(base, "s1", project, [("write compute", [("Write", {"file_path": str(project / "a.py"),
                                                                      "content": FUNCTION})])])
    db = tmp_path / "m.db"
    sync(base, db)
    sync(base, db, force=True)
    conn = sqlite3.connect(db)
    assert conn.execute("SELECT count(*) FROM pimem_edit_spans").fetchone() == (1,)
    assert conn.execute("SELECT count(*) FROM pimem_edit_lines").fetchone() == (5,)


def test_bound_rule_keeps_huge_and_lock_files_out(tmp_path: Path, project: Path) -> None:
    base = tmp_path / "agents"
    huge = "".join(f"row_{n} = {n}\n" for n in range(200_000))   # about 2.5 MB
    write_claude(base, "s1", project, [("dump", [
        ("Write", {"file_path": str(project / "big.py"), "content": huge}),
        ("Write", {"file_path": str(project / "package-lock.json"), "content": '{\n  "name": "thing"\n}\n'}),
        ("Write", {"file_path": str(project / "ok.py"), "content": FUNCTION})])])
    db = tmp_path / "m.db"
    sync(base, db)
    conn = sqlite3.connect(db)
    # the huge Write keeps no lines, but its span says the file was replaced; the Write that created
    # ok.py (its result says so) is an edit of an empty file: every line added
    assert sorted(conn.execute("SELECT path, whole FROM pimem_edit_spans JOIN pimem_edit_files USING (path_id)")) \
        == [(str(project / "big.py"), 1), (str(project / "ok.py"), 0)]
    assert conn.execute("SELECT count(*) FROM pimem_edit_lines").fetchone() == (5,)
    # the file touches are still recorded
    assert conn.execute("SELECT count(*) FROM pimem_touches").fetchone() == (3,)


# ---------------------------------------------------------------------------------------------
# The attribution rules
# ---------------------------------------------------------------------------------------------

def test_later_edit_wins_and_a_human_rewrite_is_not_attributed(tmp_path: Path, project: Path) -> None:
    path = project / "a.py"
    base = tmp_path / "agents"
    write_claude(base, "s1", project, [
        ("write compute", [("Write", {"file_path": str(path), "content": FUNCTION})]),
        ("make it a mean", [("Edit", {"file_path": str(path), "old_string": "    return total\n",
                                      "new_string": "    mean_value = total / len(values)\n    return mean_value\n"})]),
    ])
    db = tmp_path / "m.db"
    sync(base, db)
    current = FUNCTION.replace("    return total\n", "    mean_value = total / len(values)\n    return mean_value\n")
    current = current.replace("total = 0", "total = 0.0")   # the person changed this line afterwards
    found = _blame(db, path, current)
    assert found == {0: ("line", "write compute"), 2: ("exact", "write compute"), 3: ("exact", "write compute"),
                     4: ("exact", "make it a mean"), 5: ("exact", "make it a mean")}


def test_a_line_replaced_by_a_later_edit_and_typed_back_is_not_attributed(tmp_path: Path, project: Path) -> None:
    path = project / "a.py"
    base = tmp_path / "agents"
    write_claude(base, "s1", project, [
        ("write compute", [("Write", {"file_path": str(path), "content": FUNCTION})]),
        ("rename", [("Edit", {"file_path": str(path), "old_string": "        total += value\n",
                              "new_string": "        total = total + value\n"})]),
    ])
    db = tmp_path / "m.db"
    sync(base, db)
    # the person reverted the edit by hand: the old line is back, but no live write of it remains
    found = _blame(db, path, "print('setup is done here')\n\n" + "        total += value\n")
    assert found == {}


def test_reindented_and_moved_blocks(tmp_path: Path, project: Path) -> None:
    path = project / "a.py"
    base = tmp_path / "agents"
    write_claude(base, "s1", project, [("write compute", [("Write", {"file_path": str(path), "content": FUNCTION})])])
    db = tmp_path / "m.db"
    sync(base, db)
    nested = "class Stats:\n" + "".join("    " + line + "\n" for line in FUNCTION.splitlines())
    moved = "# header written by the person\nimport os\n\n" + nested
    found = _blame(db, path, moved)
    assert set(found) == {4, 5, 6, 7, 8} and {c for c, _ in found.values()} == {"exact"}
    # lines in another order: each is still the edit's, but "moved"; a trivial one alone is not
    shuffled = "    return total\n        total += value\nprint(len(sys.argv))\n    total = 0\n}\n"
    found = _blame(db, path, shuffled)
    assert found == {0: ("moved", "write compute"), 1: ("moved", "write compute"), 3: ("moved", "write compute")}


def test_trivial_lines_only_inside_an_exact_block(tmp_path: Path, project: Path) -> None:
    path = project / "a.js"
    block = "function handle(request) {\n  if (request.ok) {\n    return respond(request);\n  }\n}\n"
    base = tmp_path / "agents"
    write_claude(base, "s1", project, [("handler", [("Write", {"file_path": str(path), "content": block})])])
    db = tmp_path / "m.db"
    sync(base, db)
    assert set(_blame(db, path, block)) == {0, 1, 2, 3, 4}
    alone = "let other = compute();\n}\nlog(other);\n"
    assert _blame(db, path, alone) == {}


def test_two_conversations_writing_the_same_line(tmp_path: Path, project: Path) -> None:
    path = project / "a.py"
    base = tmp_path / "agents"
    write_claude(base, "first", project, [("write compute", [("Write", {"file_path": str(path),
                                                                         "content": FUNCTION})])])
    rewritten = FUNCTION.replace("total = 0", "total = 0  # start")
    write_codex(base, "01a22bd8-0000-7000-8000-000000000001", project, [("restart the sum", [
        "*** Begin Patch\n*** Update File: a.py\n@@\n-    total = 0\n+    total = 0  # start\n"
        "     for value in values:\n*** End Patch\n"])], minute=30)
    write_pi(base, "pi2", project, [("write it again", [("write", {"path": "a.py", "content": FUNCTION})])],
             minute=60)
    db = tmp_path / "m.db"
    # before the Pi session: Codex rewrote line 1 (the later edit wins); the rest is Claude's
    sync(base, db, sources={"claude", "codex"})
    found = _blame(db, path, rewritten)
    # (exact: the line sits before the line the patch kept after it, its context)
    assert found[1] == ("exact", "restart the sum") and found[0] == ("line", "write compute")
    assert found[2] == found[3] == ("exact", "write compute")
    # the Pi session wrote the whole file again, later, over content its transcript does not give: the
    # lines it repeats keep their earlier writer (Claude's), Codex's line is gone (the write dropped it),
    # and the line only the write claims ("total = 0": its own, or a person's?) is not attributed
    sync(base, db)
    found = _blame(db, path, FUNCTION)
    assert found == {0: ("line", "write compute"), 2: ("exact", "write compute"), 3: ("exact", "write compute"),
                     4: ("exact", "write compute")}


def test_a_copy_the_person_added_is_not_told_apart(tmp_path: Path, project: Path) -> None:
    path = project / "a.py"
    base = tmp_path / "agents"
    write_claude(base, "s1", project, [("log it", [("Edit", {"file_path": str(path), "old_string": "pass\n",
                                                             "new_string": "logger.info('started')\n"})])])
    db = tmp_path / "m.db"
    sync(base, db)
    assert _blame(db, path, "x()\nlogger.info('started')\ny()\n") == {1: ("line", "log it")}
    # a trivial line whose nearest lines nobody's edit wrote, next to an attributed one
    assert _blame(db, path, "}\nhuman_line_here()\nlogger.info('started')\n") == {2: ("line", "log it")}
    # two copies, one write: which one the agent wrote is not known
    assert _blame(db, path, "logger.info('started')\ny()\nlogger.info('started')\n") == {}


def test_range_and_unknown_file(tmp_path: Path, project: Path) -> None:
    path = project / "a.py"
    base = tmp_path / "agents"
    write_claude(base, "s1", project, [("write compute", [("Write", {"file_path": str(path), "content": FUNCTION})])])
    db = tmp_path / "m.db"
    sync(base, db)
    whole = _blame(db, path, FUNCTION)
    for line in range(5):      # one line at a time says what the whole file says
        assert _blame(db, path, FUNCTION, start_line=line, end_line=line + 1) == {line: whole[line]}
    assert _blame(db, project / "other.py", FUNCTION) == {}
    with pytest.raises(ValueError):
        _blame(db, Path("relative.py"), FUNCTION)


def _git(folder: Path, *args: str, when: str) -> None:
    env = {**os.environ, "GIT_COMMITTER_DATE": when, "GIT_AUTHOR_DATE": when, "GIT_CONFIG_GLOBAL": "/dev/null",
           "GIT_CONFIG_NOSYSTEM": "1"}
    subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", *args], cwd=folder, env=env, check=True,
                   capture_output=True)


@pytest.mark.skipif(shutil.which("git") is None, reason="needs git")
def test_git_blame_rules_out_lines_committed_before_the_edit(tmp_path: Path, project: Path) -> None:
    path = project / "a.py"
    base = tmp_path / "agents"
    # the conversation (10:00) wrote the function; the person had committed "total = 0" at 09:00 already
    write_claude(base, "s1", project, [("write compute", [("Write", {"file_path": str(path), "content": FUNCTION})])])
    db = tmp_path / "m.db"
    sync(base, db)
    path.write_text("def unrelated():\n    total = 0\n", encoding="utf-8")
    _git(project, "init", "-q", when="2026-11-01T09:00:00Z")
    _git(project, "add", "a.py", when="2026-11-01T09:00:00Z")
    _git(project, "commit", "-q", "-m", "start", when="2026-11-01T09:00:00Z")
    conn = connect(db, create=False, for_writing=False)
    with_git = line_history(conn, str(path), FUNCTION)
    without = line_history(conn, str(path), FUNCTION, git=False)
    assert with_git.git_used and not without.git_used
    assert [found.line for found in without.lines] == [0, 1, 2, 3, 4]
    assert [found.line for found in with_git.lines] == [0, 2, 3, 4]   # line 1 is older than the edit
    one = line_history(conn, str(path), FUNCTION, 1, 2)                 # a current-line request: the same
    assert one.git_used and one.lines == []
    # outside git: the same as without
    outside = tmp_path / "plain"
    outside.mkdir()
    assert not line_history(conn, str(outside / "a.py"), FUNCTION).git_used


@pytest.mark.skipif(shutil.which("git") is None, reason="needs git")
def test_git_dating_a_brace_before_its_edit_rules_it_out_only_when_git_dates_a_copy_after(
        tmp_path: Path, project: Path) -> None:
    """The call (10:00) wrote ``  check();`` + ``}`` into a file committed at 09:00; the person then deleted
    the file's own ``}`` below it. Git's diff of the file sees ``check();`` added and every ``}`` as it was,
    so it dates the call's ``}`` at 09:00, and no ``}`` at or after the call: its date says nothing of the
    call (round 11), the ``}`` stays the call's. A person's ``}`` not committed yet is a copy git dates after
    the call: the call's ``}`` is then taken as older, as before."""
    path = project / "a.ts"
    committed = "function a() {\n  runA();\n}\nfunction b() {\n  runB();\n}\n"
    path.write_text(committed, encoding="utf-8")
    _git(project, "init", "-q", when="2026-11-01T09:00:00Z")
    _git(project, "add", "a.ts", when="2026-11-01T09:00:00Z")
    _git(project, "commit", "-q", "-m", "start", when="2026-11-01T09:00:00Z")
    db = _edit_and_sync(tmp_path, project, path, "check a", old_string="  runA();\n",
                        new_string="  runA();\n  check();\n}\n", _originalFile=committed)
    now = "function a() {\n  runA();\n  check();\n}\nfunction b() {\n  runB();\n}\n"
    conn = connect(db, create=False, for_writing=False)
    found = line_history(conn, str(path), now)
    assert found.git_used and [line.line for line in found.lines] == [2, 3]
    assert [line.line for line in line_history(conn, str(path), now, 3, 4).lines] == [3]
    with_copy = now + "}\n"   # a person's "}" not committed yet
    assert [line.line for line in line_history(conn, str(path), with_copy).lines] == [2]
    assert [line.line for line in line_history(conn, str(path), with_copy, git=False).lines] == [2, 3]


# ---------------------------------------------------------------------------------------------
# The wire view and the CLI
# ---------------------------------------------------------------------------------------------

def test_wire_view(tmp_path: Path, project: Path) -> None:
    path = project / "a.py"
    base = tmp_path / "agents"
    write_claude(base, "s1", project, [("write compute\nand more", [("Write", {"file_path": str(path),
                                                                                "content": FUNCTION})])])
    db = tmp_path / "m.db"
    sync(base, db)
    conn = connect(db, create=False, for_writing=False)
    view = wire.line_history(line_history(conn, str(path), FUNCTION, 1, 2, git=False))
    assert view == {"path": str(path), "gitUsed": False, "lines": [{
        "line": 1, "confidence": "exact", "sessionId": "claude:s1", "turnId": "claude:s1:s1-u0", "source": "claude",
        "timestamp": "2026-11-01T10:00:00.000Z", "prompt": "write compute", "tool": "Write",
        "toolCallId": "toolu_0_0", "editStartLine": 0}]}


def _pimem(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "pimem", *args], capture_output=True, text=True, check=False,
                          env={**os.environ, "NO_COLOR": "1"})


def test_cli_blame(tmp_path: Path, project: Path) -> None:
    path = project / "a.py"
    base = tmp_path / "agents"
    write_claude(base, "s1", project, [("write \x1b[31mcompute", [("Write", {"file_path": str(path),
                                                                              "content": FUNCTION})])])
    db = tmp_path / "m.db"
    sync(base, db)
    path.write_text(FUNCTION + "print('\x1b[2J')\n", encoding="utf-8")
    done = _pimem("blame", "--db", str(db), "--no-git", str(path))
    assert done.returncode == 0, done.stderr
    assert "5 of 6 line(s)" in done.stdout and "\x1b" not in done.stdout
    assert "claude:s1:s1-u0" in done.stdout
    done = _pimem("blame", "--db", str(db), "--no-git", "--json", f"{path}:2-3")
    assert done.returncode == 0, done.stderr
    assert [line["line"] for line in json.loads(done.stdout)["lines"]] == [1, 2]
    assert _pimem("blame", "--db", str(db), f"{path}:3-2").returncode == 2
    missing = _pimem("blame", "--db", str(db), str(project / "nothing.py"))
    assert missing.returncode == 1 and "cannot read" in missing.stderr and "Traceback" not in missing.stderr


def test_text_too_large(tmp_path: Path) -> None:
    conn = connect(tmp_path / "m.db")
    with pytest.raises(lineblame.TextTooLarge):
        line_history(conn, str(tmp_path / "a.py"), "x" * (lineblame.MAX_TEXT_BYTES + 1))


def test_a_call_copilot_cli_records_twice_counts_once(tmp_path: Path) -> None:
    """Copilot CLI writes each call in its assistant.message's toolRequests and again when it runs
    (tool.execution_start): one span per call, else a copy the person made would look written twice."""
    base = tmp_path / "history"
    shutil.copytree(ROOTS["copilot-cli"], base)
    sync(base, tmp_path / "m.db")
    conn = sqlite3.connect(tmp_path / "m.db")
    assert sorted(conn.execute("SELECT tool, call_id, whole FROM pimem_edit_spans")) == [
        ("create", "call_a0c0fd5005cc4108a8403da8", 1), ("edit", "call_7a8c1af65cce42cf984aeda2", 0)]


def test_the_line_diff_of_a_call_is_bounded() -> None:
    """Two long texts of repeated lines: the context is the common head and tail, the rest replaced (a
    full line diff would be quadratic in a crafted call)."""
    old = "head()\n" + "}\n" * 1500 + "tail()\n"
    new = "head()\n" + "x = 1\n}\n" * 700 + "tail()\n"
    span = editspans.span_of(old, new)
    assert span is not None and len(span.added) == 1399 and len(span.removed) == 1499   # a "}" in the tail
    assert span.added[0] == (2, editspans.line_hash("x=1"))
    small = editspans.span_of("a()\n}\nb()\n", "a()\nc()\n}\nb()\n")      # small: a real line diff
    assert small is not None and small.added == [(2, editspans.line_hash("c()"))] and small.removed == []


def test_a_store_this_pimem_cannot_read_answers_nothing(tmp_path: Path, project: Path) -> None:
    """A newer pimem's layout that this one may not read: its pimem_* tables are hidden (schema.
    hide_pimem_tables has stand-ins for the span tables), so blame answers nothing rather than failing."""
    path = project / "a.py"
    base = tmp_path / "agents"
    write_claude(base, "s1", project, [("write compute", [("Write", {"file_path": str(path), "content": FUNCTION})])])
    db = tmp_path / "m.db"
    sync(base, db)
    conn = connect(db)
    with transaction(conn):
        set_meta(conn, "layout", "99")
        set_meta(conn, "min_reader_layout", "99")
    conn.close()
    assert _blame(db, path, FUNCTION) == {}


def test_blank_lines_go_with_the_block_that_wrote_them(tmp_path: Path, project: Path) -> None:
    path = project / "a.py"
    block = "def first():\n    return compute(1)\n\n\ndef second():\n    return compute(2)\n"
    base = tmp_path / "agents"
    write_claude(base, "s1", project, [("two functions", [("Write", {"file_path": str(path), "content": block})])])
    db = tmp_path / "m.db"
    sync(base, db)
    assert set(_blame(db, path, block)) == {0, 1, 2, 3, 4, 5}
    for line in range(6):       # a blank line alone in the range says the same (its next line decides)
        assert set(_blame(db, path, block, start_line=line, end_line=line + 1)) == {line}
    # a blank line the person put inside the block, and one the call did not write: not attributed
    spaced = "def first():\n\n    return compute(1)\n\n\ndef second():\n    return compute(2)\n\n"
    assert set(_blame(db, path, spaced)) == {0, 2, 3, 4, 5, 6}


def test_lines_are_counted_as_editors_count_them(tmp_path: Path, project: Path) -> None:
    """Only \\n, \\r\\n and \\r end a line (LSP's rule): a form feed or U+2028 inside a line does not
    shift the line numbers of what follows."""
    assert editspans.split_lines("a\x0cb\r\nc\u2028d\re\n") == ["a\x0cb", "c\u2028d", "e"]
    assert editspans.split_lines("") == [] and editspans.split_lines("x") == ["x"]
    path = project / "a.py"
    base = tmp_path / "agents"
    write_claude(base, "s1", project, [("write compute", [("Write", {"file_path": str(path), "content": FUNCTION})])])
    db = tmp_path / "m.db"
    sync(base, db)
    text = "# a page\x0cbreak and a \u2028 separator\r\n" + FUNCTION.replace("\n", "\r\n")
    assert set(_blame(db, path, text)) == {1, 2, 3, 4, 5}


def test_a_write_too_large_to_record_still_replaces_what_was_there(tmp_path: Path, project: Path) -> None:
    path = project / "a.py"
    base = tmp_path / "agents"
    huge = FUNCTION + "".join(f"row_{n} = {n}\n" for n in range(editspans.MAX_CALL_LINES))
    write_claude(base, "s1", project, [("write compute", [("Write", {"file_path": str(path), "content": FUNCTION})]),
                                       ("regenerate it", [("Write", {"file_path": str(path), "content": huge})])])
    db = tmp_path / "m.db"
    sync(base, db)
    assert _blame(db, path, huge) == {}     # the first call's lines are not live: the second replaced them


def test_a_prompt_another_program_stored_as_invalid_utf8_is_shown_empty(tmp_path: Path, project: Path) -> None:
    path = project / "a.py"
    base = tmp_path / "agents"
    write_claude(base, "s1", project, [("write compute", [("Write", {"file_path": str(path), "content": FUNCTION})])])
    db = tmp_path / "m.db"
    sync(base, db)
    conn = sqlite3.connect(db)
    conn.execute("UPDATE turns SET user_text = CAST(x'ff41' AS TEXT)")
    conn.commit()
    conn.close()
    assert _blame(db, path, FUNCTION) == {line: ("exact", "") for line in range(5)}


# ---------------------------------------------------------------------------------------------
# A whole-file write of a file that already exists (the rule's main failure in bench/blame)
# ---------------------------------------------------------------------------------------------

def test_a_claude_write_over_a_known_file_claims_only_the_lines_it_changed(tmp_path: Path, project: Path) -> None:
    path = project / "a.py"
    base = tmp_path / "agents"
    by_hand = FUNCTION.replace("    return total\n", "    # checked by hand\n    return total\n")
    rewritten = by_hand.replace("total += value", "total += abs(value)")
    # the first conversation created the file; the person added a line; a later conversation read it and
    # wrote it whole, changing one line (its result line gives the file before it)
    write_claude(base, "s1", project, [("write compute", [("Write", {"file_path": str(path), "content": FUNCTION})])])
    write_claude(base, "s2", project, [("absolute values", [("Write", {
        "file_path": str(path), "content": rewritten, "_originalFile": by_hand})])], minute=30)
    db = tmp_path / "m.db"
    sync(base, db)
    found = _blame(db, path, rewritten)
    assert {line: prompt for line, (_, prompt) in found.items()} == {
        0: "write compute", 1: "write compute", 2: "write compute", 3: "absolute values", 5: "write compute"}
    assert 4 not in found   # the person's line, kept by the write, is nobody's


def test_a_claude_write_result_is_read_from_the_transcript() -> None:
    from pimem.importers.base import Chunk
    from pimem.importers.claude import ClaudeParser
    from pimem.jsonl import Line

    def line(record: dict[str, Any]) -> Line:
        data = json.dumps(record).encode()
        return Line(1, 0, len(data), data, data[:256])

    parser = ClaudeParser("/x/s.jsonl", None)
    chunk = Chunk()
    records = [
        {"type": "user", "sessionId": "s", "uuid": "u0", "timestamp": "2026-11-01T10:00:00Z", "cwd": "/w",
         "message": {"role": "user", "content": "rewrite it"}},
        {"type": "assistant", "sessionId": "s", "uuid": "a0", "timestamp": "2026-11-01T10:00:01Z", "cwd": "/w",
         "message": {"role": "assistant", "model": "m", "content": [
             {"type": "tool_use", "id": f"toolu_{k}", "name": "Write", "input": {"file_path": f"/w/{name}.py",
                                                                                "content": f"{text}\n"}}
             for k, name, text in ((1, "a", "b"), (2, "n", "c"), (3, "u", "d"))]}},
        {"type": "user", "sessionId": "s", "uuid": "r1", "timestamp": "2026-11-01T10:00:02Z", "cwd": "/w",
         "message": {"role": "user", "content": [{"tool_use_id": "toolu_1", "type": "tool_result"}]},
         "toolUseResult": {"type": "update", "filePath": "/w/a.py", "content": "b\n", "originalFile": "a\n",
                           "structuredPatch": []}},
        {"type": "user", "sessionId": "s", "uuid": "r2", "timestamp": "2026-11-01T10:00:02Z", "cwd": "/w",
         "message": {"role": "user", "content": [{"tool_use_id": "toolu_2", "type": "tool_result"}]},
         "toolUseResult": {"type": "create", "filePath": "/w/n.py", "content": "c\n", "originalFile": None}},
        # an Edit's result (it has no type) is still skipped unread
        {"type": "user", "sessionId": "s", "uuid": "r3", "timestamp": "2026-11-01T10:00:02Z", "cwd": "/w",
         "message": {"role": "user", "content": [{"tool_use_id": "toolu_3", "type": "tool_result"}]},
         "toolUseResult": {"filePath": "/w/u.py", "oldString": "x", "originalFile": "zzz\n"}},
    ]
    for k, record in enumerate(records):
        raw = line(record)
        if parser.wants(raw):
            parser.feed(record, k + 1, chunk)
    assert [(e.path, e.old, e.new, e.whole) for e in chunk.turns["u0"].edits] == [
        ("/w/a.py", "a\n", "b\n", True), ("/w/n.py", "", "c\n", True), ("/w/u.py", None, "d\n", True)]


def test_a_write_over_unknown_content_keeps_earlier_writers_and_claims_nothing_unconfirmed(
        tmp_path: Path, project: Path) -> None:
    path = project / "a.py"
    base = tmp_path / "agents"
    write_claude(base, "s1", project, [("write compute", [("Write", {"file_path": str(path), "content": FUNCTION})])])
    rewritten = FUNCTION.replace("    return total\n", "    log_total(total)\n    return total\n")
    # Pi's write says nothing of what the file held: "log_total" may be its own or a person's
    write_pi(base, "pi1", project, [("log it", [("write", {"path": "a.py", "content": rewritten})])], minute=30)
    db = tmp_path / "m.db"
    sync(base, db)
    found = _blame(db, path, rewritten)
    assert {line: prompt for line, (_, prompt) in found.items()} == {
        0: "write compute", 1: "write compute", 2: "write compute", 3: "write compute", 5: "write compute"}
    # a line the write dropped is gone with it: typed back by the person, it is nobody's
    assert _blame(db, path, FUNCTION.replace("total = 0", "total = 0\n    unrelated_call(values)")) \
        .get(2) is None


@pytest.mark.skipif(shutil.which("git") is None, reason="needs git")
def test_git_confirms_a_line_first_committed_well_after_the_write(tmp_path: Path, project: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    path = project / "a.py"
    base = tmp_path / "agents"
    # Pi read the file, then wrote it whole: what it kept of the person's file is not told apart
    write_pi(base, "pi1", project, [("write compute", [("read", {"path": "a.py"}),
                                                       ("write", {"path": "a.py", "content": FUNCTION})])])
    db = tmp_path / "m.db"
    sync(base, db)   # the write at 10:00
    path.write_text("def compute(values):\n    total = 0\n", encoding="utf-8")
    _git(project, "init", "-q", when="2026-11-01T09:00:00Z")
    _git(project, "add", "a.py", when="2026-11-01T09:00:00Z")
    _git(project, "commit", "-q", "-m", "start", when="2026-11-01T09:00:00Z")
    path.write_text(FUNCTION, encoding="utf-8")
    conn = connect(db, create=False, for_writing=False)
    # not committed yet: unconfirmed, not attributed
    assert line_history(conn, str(path), FUNCTION).lines == []
    _git(project, "commit", "-q", "-am", "later", when="2026-11-01T11:00:00Z")
    # blame is kept per text for GIT_TTL_S (a cursor moving): the same text, past it, sees the new commit
    monkeypatch.setattr(lineblame, "GIT_TTL_S", -1.0)
    # lines 0-1 were committed before the write (older); 2-4 first committed an hour after it: the write's
    assert [found.line for found in line_history(conn, str(path), FUNCTION).lines] == [2, 3, 4]
    assert line_history(conn, str(path), FUNCTION, git=False).lines == []


@pytest.mark.skipif(shutil.which("git") is None, reason="needs git")
def test_git_confirms_no_line_a_person_only_moved_after_the_write(tmp_path: Path, project: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """A person's line a whole-file write kept (unconfirmed), then moved by the person and committed:
    plain blame names the commit of the move, well after the write; the confirming blame follows the
    move (and ignores whitespace, as the rule does) to the person's first commit, before the write."""
    path = project / "a.py"
    base = tmp_path / "agents"
    mine = "\ndef report(values):\n    print(compute(values))\n"
    write_pi(base, "pi1", project, [("write report", [("read", {"path": "a.py"}),
                                                      ("write", {"path": "a.py", "content": FUNCTION + mine})])])
    db = tmp_path / "m.db"
    sync(base, db)   # the write at 10:00
    path.write_text(FUNCTION, encoding="utf-8")
    _git(project, "init", "-q", when="2026-11-01T09:00:00Z")
    _git(project, "add", "a.py", when="2026-11-01T09:00:00Z")
    _git(project, "commit", "-q", "-m", "start", when="2026-11-01T09:00:00Z")
    # the person moves "total = 0" below the loop (and indents it), then commits an hour after the write
    text = ("def compute(values):\n    for value in values:\n        total += value\n        total = 0\n"
            "    return total\n" + mine)
    path.write_text(text, encoding="utf-8")
    _git(project, "commit", "-q", "-am", "later", when="2026-11-01T11:00:00Z")
    conn = connect(db, create=False, for_writing=False)
    # only the write's own lines (5-7, the blank line with its block); the moved line (3) is the person's,
    # first committed at 09:00
    assert [found.line for found in line_history(conn, str(path), text).lines] == [5, 6, 7]
    monkeypatch.setattr(lineblame, "GIT_BLAME_MATCH", ())
    monkeypatch.setattr(lineblame, "GIT_TTL_S", -1.0)
    assert [found.line for found in line_history(conn, str(path), text).lines] == [3, 5, 6, 7]   # plain blame


def test_a_common_line_several_calls_wrote_is_not_attributed_alone(tmp_path: Path, project: Path) -> None:
    path = project / "a.py"
    base = tmp_path / "agents"
    first = "alpha = compute_alpha()\nreturn result\n"
    write_claude(base, "s1", project, [("alpha", [("Write", {"file_path": str(path), "content": first})])])
    write_claude(base, "s2", project, [("beta", [("Edit", {"file_path": str(path), "old_string": "return result\n",
                                                           "new_string": "return result\nbeta = compute_beta()\n"
                                                                         "return result\n"})])], minute=30)
    db = tmp_path / "m.db"
    sync(base, db)
    # in a block of the call that wrote it, the line is that call's
    assert _blame(db, path, "beta = compute_beta()\nreturn result\n") == {0: ("exact", "beta"), 1: ("exact", "beta")}
    # alone among the person's lines, "return result" could be either call's (or a copy): nobody's
    assert _blame(db, path, "by_hand = 1\nreturn result\nalso_by_hand = 2\n") == {}


def test_a_write_result_parsed_after_its_call_was_stored_amends_it(tmp_path: Path, project: Path) -> None:
    path = project / "a.py"
    base = tmp_path / "agents"
    by_hand = FUNCTION.replace("    return total\n", "    # checked by hand\n    return total\n")
    rewritten = by_hand.replace("total += value", "total += abs(value)")
    write_claude(base, "s1", project, [("write compute", [("Write", {"file_path": str(path), "content": FUNCTION})])])
    write_claude(base, "s2", project, [("absolute values", [("Write", {
        "file_path": str(path), "content": rewritten, "_originalFile": by_hand})])], minute=30)
    transcript = base / "claude" / "projects" / "p" / "s2.jsonl"
    lines = transcript.read_text(encoding="utf-8").splitlines(keepends=True)
    assert '"toolUseResult"' in lines[-1]
    transcript.write_text("".join(lines[:-1]), encoding="utf-8")
    db = tmp_path / "m.db"
    sync(base, db)     # a live sync between the Write and its result: a write over unknown content
    assert set(_blame(db, path, rewritten)) == {0, 1, 2, 5}
    transcript.write_text("".join(lines), encoding="utf-8")
    sync(base, db)     # the result: the write is replaced by its diff against the file before it
    found = _blame(db, path, rewritten)
    assert {line: prompt for line, (_, prompt) in found.items()} == {
        0: "write compute", 1: "write compute", 2: "write compute", 3: "absolute values", 5: "write compute"}
    conn = sqlite3.connect(db)
    assert conn.execute("SELECT whole FROM pimem_edit_spans WHERE turn_id LIKE '%s2%'").fetchall() == [(0,)]


def test_an_opencode_write_that_created_its_file_replaced_nothing() -> None:
    from pimem.importers.opencode import _edits as opencode_edits

    call = {"filePath": "notes.md", "content": "# Notes\n"}
    assert [(e.old, e.whole) for e in opencode_edits("write", call, "c1", {"exists": False})] == [("", True)]
    # it overwrote a file (or the result does not say): what it replaced is unknown
    assert [(e.old, e.whole) for e in opencode_edits("write", call, "c1", {"exists": True})] == [(None, True)]
    assert [(e.old, e.whole) for e in opencode_edits("write", call, "c1")] == [(None, True)]


def test_a_write_result_is_not_a_user_line_of_the_conversation() -> None:
    from pimem.importers.base import Chunk
    from pimem.importers.claude import ClaudeParser
    from pimem.jsonl import Line

    parser = ClaudeParser("/x/s.jsonl", None)
    chunk = Chunk()
    common = {"sessionId": "s", "timestamp": "2026-11-01T10:00:00Z", "cwd": "/w"}
    records = [
        # a conversation the assistant opens (docs/formats.md 1.8): a Write first, then its text
        {**common, "type": "assistant", "uuid": "a0", "message": {"role": "assistant", "model": "m", "content": [
            {"type": "tool_use", "id": "toolu_1", "name": "Write",
             "input": {"file_path": "/w/a.py", "content": "b\n"}}]}},
        {**common, "type": "user", "uuid": "r1", "message": {"role": "user", "content": [
            {"tool_use_id": "toolu_1", "type": "tool_result"}]},
         "toolUseResult": {"type": "create", "filePath": "/w/a.py", "content": "b\n", "originalFile": None}},
        {**common, "type": "assistant", "uuid": "a1", "message": {"role": "assistant", "model": "m", "content": [
            {"type": "text", "text": "Created a.py for you."}]}},
    ]
    for k, record in enumerate(records):
        data = json.dumps(record).encode()
        if parser.wants(Line(k + 1, 0, len(data), data, data[:256])):
            parser.feed(record, k + 1, chunk)
    assert [part for delta in chunk.turns.values() for part in delta.reply_parts] == ["Created a.py for you."]


EDITED = FUNCTION.replace("total = 0", "total = start_value(0)")


OTHER = FUNCTION.replace("def compute(", "def compute_other(")


def test_a_write_that_created_its_file_is_attributed_without_git(tmp_path: Path, project: Path) -> None:
    """Pi's ``write`` result does not say whether the file existed ("Successfully wrote to PATH", the real
    Pi 1.6.0): a write no call of any agent touched the path before created it, its lines are its own."""
    created, over = project / "new.py", project / "old.py"
    base = tmp_path / "agents"
    write_claude(base, "s1", project, [("look", [("Read", {"file_path": str(over)})])])
    write_pi(base, "pi1", project, [
        ("create it", [("write", {"path": "new.py", "content": FUNCTION}),
                       # an edit of the file it just wrote, in the same turn: still a creation
                       ("edit", {"path": "new.py", "edits": [{"oldText": "    total = 0\n",
                                                              "newText": "    total = start_value(0)\n"}]})]),
        # (another function: a line also written in another file would be an idiom, not attributed alone)
        ("rewrite the other", [("write", {"path": "old.py", "content": OTHER})]),
        ("write it again", [("write", {"path": "new.py", "content": EDITED + "print(compute([1]))\n"})]),
    ], minute=30)
    db = tmp_path / "m.db"
    sync(base, db)
    # the created lines are the write's (0, 2-4), the line its edit wrote the edit's (the same turn);
    # the later write kept them, and its own new line is unconfirmed (the file existed)
    assert _blame(db, created, EDITED + "print(compute([1]))\n") == {
        0: ("line", "create it"), 1: ("line", "create it"), 2: ("exact", "create it"), 3: ("exact", "create it"),
        4: ("exact", "create it")}
    # a file an earlier call read existed: what the write repeats may be a person's (unconfirmed)
    assert _blame(db, over, OTHER) == {}


def test_copies_of_a_line_outside_a_block_are_not_attributed(tmp_path: Path, project: Path) -> None:
    """Two copies of a line, neither in a block of the call that wrote it: which is a person's is not
    known (a person's own copy and a deleted one of the agent's look the same)."""
    path = project / "a.py"
    base = tmp_path / "agents"
    write_claude(base, "s1", project, [("write", [("Write", {
        "file_path": str(path), "content": "value = load_config()\nfirst_step()\nvalue = load_config()\n"})])])
    db = tmp_path / "m.db"
    sync(base, db)
    text = "by_hand_a()\nvalue = load_config()\nby_hand_b()\nby_hand_c()\nvalue = load_config()\n"
    assert _blame(db, path, text) == {}
    assert _blame(db, path, "by_hand_a()\nvalue = load_config()\nby_hand_b()\n") == {1: ("line", "write")}


def test_a_line_some_call_also_wrote_in_another_file_is_an_idiom_not_attributed_alone(
        tmp_path: Path, project: Path) -> None:
    """``return result;`` that one call wrote in this file and another call wrote in another file: a
    person's copy of an idiom is as likely as the call's (the agent's copy deleted, the person's kept),
    so alone it names no write; in a block of the call it still does. A line no other file has is
    attributed alone, as before."""
    path, other = project / "cart.ts", project / "format.ts"
    base = tmp_path / "agents"
    write_claude(base, "s1", project, [("cart", [("Write", {"file_path": str(path), "content":
                                                 "const label = formatLabel(total);\nreturn result;\n"})])])
    write_claude(base, "s2", project, [("format", [("Write", {"file_path": str(other), "content":
                                                   "const price = formatPrice(value);\nreturn result;\n"})])],
                 minute=30)
    db = tmp_path / "m.db"
    sync(base, db)
    assert _blame(db, path, "const label = formatLabel(total);\nreturn result;\n") == {
        0: ("exact", "cart"), 1: ("exact", "cart")}
    # alone among a person's lines: the idiom is nobody's, the line only this file has is still the call's
    assert _blame(db, path, "by_hand_a();\nreturn result;\nby_hand_b();\n") == {}
    assert _blame(db, path, "by_hand_a();\nconst label = formatLabel(total);\nby_hand_b();\n") == {
        1: ("line", "cart")}
    # the current-line request (a range) answers the same
    assert _blame(db, path, "by_hand_a();\nreturn result;\nby_hand_b();\n", start_line=1, end_line=2) == {}


def test_layout_7_store_gets_the_index_of_lines_by_hash(tmp_path: Path, project: Path) -> None:
    """A layout-7 store (before the idiom rule) is migrated in place: the index is built from the rows it
    has, nothing parsed again; until then a reader answers without the rule."""
    path, other = project / "a.py", project / "b.py"
    base = tmp_path / "agents"
    write_claude(base, "s1", project, [("one", [("Write", {"file_path": str(path), "content": "return result\n"}),
                                                ("Write", {"file_path": str(other), "content": "return result\n"})])])
    db = tmp_path / "m.db"
    sync(base, db)
    conn = connect(db)
    with transaction(conn):
        conn.execute("DROP INDEX pimem_edit_lines_by_hash")
        set_meta(conn, "layout", "7")
    conn.close()
    reader = sqlite3.connect(db)
    try:
        from pimem.store.edits import written_elsewhere
        assert written_elsewhere(reader, 1, [editspans.line_hash("returnresult")]) == set()
    finally:
        reader.close()
    conn = connect(db)      # opened for writing: migrated to 9
    assert conn.execute("SELECT value FROM pimem_meta WHERE key = 'layout'").fetchone() == ("9",)
    file_id = conn.execute("SELECT path_id FROM pimem_edit_files WHERE path = ?", (str(path),)).fetchone()[0]
    from pimem.store.edits import written_elsewhere
    assert written_elsewhere(conn, file_id, [editspans.line_hash("returnresult"), 12345]) == {
        editspans.line_hash("returnresult")}
    conn.close()
    assert _blame(db, path, "by_hand = 1\nreturn result\nalso_by_hand = 2\n") == {}


PERSON = ("def load(path):\n    with open(path) as handle:\n        rows = parse_rows(handle)\n"
          "    return checked_rows(rows)\n")
REWRITTEN = ("def load(path):\n    with open(path) as handle:\n        rows = parse_rows(handle)\n"
             "    rows = drop_duplicates(rows)\n    log_count(len(rows))\n    return checked_rows(rows)\n")


def _pi_rewrite(base: Path, project: Path, session: str, first: list[tuple[str, dict[str, Any]]],
                minute: int = 0) -> None:
    """A Pi session whose turn does ``first`` then writes person.py whole (REWRITTEN)."""
    write_pi(base, session, project, [
        ("tidy the loader", [*first, ("write", {"path": "person.py", "content": REWRITTEN, "_result": "ok"})]),
    ], minute=minute)


def test_a_pi_write_after_a_read_of_the_whole_file_claims_only_the_lines_it_added(
        tmp_path: Path, project: Path) -> None:
    """A person's file that no agent wrote: Pi reads it whole, then writes it whole. The read's result is
    what the file held, so the write is an edit of the whole file: the two lines it added are its own,
    without git (before: the read made it no creation, and every line it wrote was unconfirmed), and the
    person's lines it kept are not attributed."""
    path = project / "person.py"
    base = tmp_path / "agents"
    _pi_rewrite(base, project, "pi1", [("read", {"path": "person.py", "_result": PERSON})])
    db = tmp_path / "m.db"
    sync(base, db)
    assert _blame(db, path, REWRITTEN) == {3: ("exact", "tidy the loader"), 4: ("exact", "tidy the loader")}
    # the current-line request answers the same
    assert _blame(db, path, REWRITTEN, start_line=4, end_line=5) == {4: ("exact", "tidy the loader")}
    assert _blame(db, path, REWRITTEN, start_line=0, end_line=3) == {}


@pytest.mark.parametrize("first", [
    # a read of part of the file (offset/limit), a result that says it is partial, a failed read
    [("read", {"path": "person.py", "offset": 1, "limit": 2, "_result": PERSON})],
    [("read", {"path": "person.py", "_result": PERSON, "_details": {"truncation": {"truncated": True}}})],
    [("read", {"path": "person.py", "_result": PERSON + "\n\n[Showing lines 1-4 of 900. Use offset=5 to continue.]"})],
    [("read", {"path": "person.py", "_result": "ENOENT: no such file", "_isError": True})],
    # the file changed after the read: an edit of it, a shell command naming it
    [("read", {"path": "person.py", "_result": PERSON}),
     ("edit", {"path": "person.py", "edits": [{"oldText": "def load(path):\n", "newText": "def load(path):\n"}],
               "_result": "ok"})],
    [("read", {"path": "person.py", "_result": PERSON}),
     ("bash", {"command": "sed -i 's/rows/items/' person.py", "_result": ""})],
])
def test_a_pi_write_whose_turn_does_not_show_the_whole_file_before_it_stays_unconfirmed(
        tmp_path: Path, project: Path, first: list[tuple[str, dict[str, Any]]]) -> None:
    """What the file held is known only from a read of the whole file that nothing changed since: else the
    file existed (a read or an edit of it), and the write's lines stay unconfirmed without git."""
    base = tmp_path / "agents"
    _pi_rewrite(base, project, "pi1", first)
    db = tmp_path / "m.db"
    sync(base, db)
    assert _blame(db, project / "person.py", REWRITTEN) == {}


def test_a_pi_write_over_a_file_its_session_read_in_an_earlier_turn_claims_the_run_it_added(
        tmp_path: Path, project: Path) -> None:
    """A person may edit the file between turns, so a read of an earlier turn is not the file the write
    replaced; but a line the write holds that the read did not is the write's or a line a person added
    since. Two consecutive such lines are claimed (round 11: the write's run); a lone one stays unconfirmed,
    and so does a line the person moved since (the read held it: no new line)."""
    base = tmp_path / "agents"
    write_pi(base, "pi1", project, [
        ("look at the loader", [("read", {"path": "person.py", "_result": PERSON})]),
        ("tidy the loader", [("write", {"path": "person.py", "content": REWRITTEN, "_result": "ok"})]),
    ])
    db = tmp_path / "m.db"
    sync(base, db)
    assert _blame(db, project / "person.py", REWRITTEN) == {3: ("exact", "tidy the loader"),
                                                              4: ("exact", "tidy the loader")}
    assert _blame(db, project / "person.py", REWRITTEN, start_line=4, end_line=5) == {4: ("exact", "tidy the loader")}
    # one line added, and the person's last line moved to the top since the read: neither is claimed
    lone = ("    return checked_rows(rows)\n    rows = drop_duplicates(rows)\ndef load(path):\n"
            "    with open(path) as handle:\n        rows = parse_rows(handle)\n")
    base = tmp_path / "agents2"
    write_pi(base, "pi1", project, [
        ("look at the loader", [("read", {"path": "person.py", "_result": PERSON})]),
        ("tidy the loader", [("write", {"path": "person.py", "content": lone, "_result": "ok"})]),
    ])
    db = tmp_path / "m2.db"
    sync(base, db)
    assert _blame(db, project / "person.py", lone) == {}


def test_a_read_and_the_write_synced_apart_give_what_one_sync_gives(tmp_path: Path, project: Path) -> None:
    """The read's lines are carried in the parser's state (their hashes) when a sync falls between the read's
    result and the write: the same rows as one full import."""
    base = tmp_path / "agents"
    _pi_rewrite(base, project, "pi1", [("read", {"path": "person.py", "_result": PERSON})])
    transcript = next((base / "pi").rglob("*.jsonl"))
    lines = transcript.read_text(encoding="utf-8").splitlines(keepends=True)
    cut = next(k for k, line in enumerate(lines) if '"toolName":"read"' in line) + 1
    assert '"role":"toolResult"' in lines[cut - 1] and '"name":"write"' in lines[cut]
    transcript.write_text("".join(lines[:cut]), encoding="utf-8")
    db = tmp_path / "m.db"
    sync(base, db)
    state = json.loads(sqlite3.connect(db).execute(
        "SELECT state FROM pimem_files WHERE state LIKE '%known%'").fetchone()[0])
    assert "person.py" in json.dumps(state) and "def load" not in json.dumps(state)   # hashes, never the text
    transcript.write_text("".join(lines), encoding="utf-8")
    sync(base, db)
    assert _blame(db, project / "person.py", REWRITTEN) == {3: ("exact", "tidy the loader"),
                                                              4: ("exact", "tidy the loader")}


def test_span_against_the_lines_a_file_held() -> None:
    before = editspans.line_keys(PERSON)
    assert before is not None and len(before) == 4
    span = editspans.span_against(before, REWRITTEN)
    h = editspans.line_hash
    assert span is not None and (span.added, span.removed) == (
        [(6, h("rows=drop_duplicates(rows)")), (8, h("log_count(len(rows))"))], [])
    assert editspans.span_against(before, "def load(path):\n    return []\n") == editspans.Span(
        [(2, h("return[]"))],
        [h("withopen(path)ashandle:"), h("rows=parse_rows(handle)"), h("returnchecked_rows(rows)")],
        [(0, h("defload(path):"))])
    # the same answer as a diff of the texts (Claude Code's Write with its originalFile)
    assert editspans.span_of(PERSON, REWRITTEN) == span
    assert editspans.line_keys("x = 1\n" * editspans.MAX_CALL_LINES) is None


def test_what_pi_reads_showed_is_bounded_in_the_parser_state(tmp_path: Path, project: Path) -> None:
    """The state carries the line hashes of at most MAX_KNOWN_FILES files the session read (the latest), none
    of a read past the bound rule."""
    from pimem.importers.base import Chunk, feed_line
    from pimem.importers.pi import MAX_KNOWN_FILES, PiParser
    from pimem.jsonl import LineReader
    base = tmp_path / "agents"
    reads = [("read", {"path": f"f{k}.py", "_result": f"value_{k} = compute({k})\n"}) for k in range(12)]
    reads.append(("read", {"path": "big.py", "_result": "x = 1\n" * editspans.MAX_CALL_LINES}))
    write_pi(base, "pi1", project, [("read them", reads)])
    transcript = next((base / "pi").rglob("*.jsonl"))

    def state_after() -> dict[str, Any]:
        parser, chunk = PiParser(str(transcript), None), Chunk()
        with open(transcript, "rb") as handle:
            for line in LineReader(handle):
                feed_line(parser, line, chunk)
        return parser.state()

    known = state_after()["known"]
    # the latest files read (big.py's read is past the bound rule: not kept)
    assert sorted(known) == sorted(str(project / f"f{k}.py") for k in range(12 - MAX_KNOWN_FILES, 12))
    assert all(lines == [editspans.line_hash(f"value_{k}=compute({k})")]
               for k in range(12) for key, (_, lines) in known.items() if key.endswith(f"/f{k}.py"))
    # a new turn keeps them (round 11: a write of a later turn uses what the session saw), still bounded
    write_pi(base, "pi1", project, [("read them", reads), ("next", [])])
    assert state_after()["known"] == known and state_after()["reads"] == {}


# ---------------------------------------------------------------------------------------------
# Round 7: reindented lines are the call's; runs copied elsewhere; lines a later call removed, back
# ---------------------------------------------------------------------------------------------

def test_a_call_that_reindents_a_line_wrote_it() -> None:
    """The line diff keeps indentation: wrapping code in a block writes its lines again (as git blame
    says); the lines are still stored, and found, as normalized lines."""
    old = "def f():\n    run()\n    stop()\n"
    new = "def f():\n    if ready():\n        run()\n    stop()  \n"
    span = editspans.span_of(old, new)
    h = editspans.line_hash
    assert span is not None
    assert span.added == [(2, h("ifready():")), (4, h("run()"))] and span.removed == [h("run()")]
    # trailing whitespace is no change
    assert editspans.span_of("a()\nb()\n", "a()  \nb()\nc()\n") == editspans.Span([(4, h("c()"))], [],
                                                                                 [(0, h("a()")), (1, h("b()"))])


def test_of_two_copies_a_call_kept_the_one_whose_neighbours_it_kept() -> None:
    """The common head and tail an edit repeats are trimmed, but the diff still sees DIFF_CONTEXT lines
    of them: a rewrite that writes a second ``return result`` above the first one kept the copy that is
    still followed by what followed it (the longest matching block), not the first copy met."""
    old = "if ready():\n    return result\nimport logging\nlog = logging.getLogger()\n"
    new = ("if ready():\n    return result\n    return round(value, 2)\n    log.info(value)\n    return result\n"
           "import logging\nlog = logging.getLogger()\n")
    span = editspans.span_of(old, new)
    h = editspans.line_hash
    assert span is not None and span.removed == []
    assert span.added == [(2, h("returnresult")), (4, h("returnround(value,2)")), (6, h("log.info(value)"))]


def test_a_calls_line_diff_of_repeated_lines_is_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    """A call's line diff is bounded (MAX_DIFF_WORK pairs of equal lines visited), whatever its lines:
    two texts of 500 lines of 2 alternating lines (within MAX_DIFF_WORK as old × new lines) made
    difflib's search visit 3.5 million pairs. Past the bound the diff falls back to counts: a line the
    old text held as often is not the call's; the copies beyond are, and the line only the new text has."""
    visits = [0]
    search = difflib.SequenceMatcher.find_longest_match

    def counted(self: difflib.SequenceMatcher[Any], alo: int = 0, ahi: int | None = None, blo: int = 0,
                bhi: int | None = None) -> difflib.Match:
        fields = vars(self)  # what difflib's search walks: for each old line of the range, its new copies
        old, copies = fields["a"], fields["b2j"]
        visits[0] += sum(len(copies.get(line, ())) for line in old[alo:len(old) if ahi is None else ahi])
        return search(self, alo, ahi, blo, bhi)

    monkeypatch.setattr(difflib.SequenceMatcher, "find_longest_match", counted)
    lines = [f"    value_{i % 2} = compute(item_{i % 2})" for i in range(500)]
    changed = list(lines)
    for i in range(0, 500, 7):
        changed[i] = changed[i + 1]
    changed.insert(250, "    unique = written(by_the_call)")
    span = editspans.span_of("\n".join(lines) + "\n", "\n".join(changed) + "\n")
    assert visits[0] <= editspans.MAX_DIFF_WORK
    normalized = [editspans.normalize(line) for line in changed]
    extra = Counter(normalized) - Counter(editspans.normalize(line) for line in lines)
    assert span is not None and span.removed == []
    assert Counter(key for _, key in span.added) == Counter({editspans.line_hash(line): n for line, n in extra.items()})
    assert (2 * 250, editspans.line_hash("unique=written(by_the_call)")) in span.added
    # an ordinary edit is far from the bound: the same diff as before, no fallback
    visits[0] = 0
    ordinary = [f"    total_{i} = compute(item_{i})" for i in range(500)]
    edited = [*ordinary[:100], "    extra = 1", *ordinary[100:300], *ordinary[301:]]
    span = editspans.span_of("\n".join(ordinary) + "\n", "\n".join(edited) + "\n")
    assert span is not None and span.added == [(2 * 100, editspans.line_hash("extra=1"))]
    assert span.removed == [editspans.line_hash("total_300=compute(item_300)")]
    assert 0 < visits[0] <= 10 * len(edited)


def test_lines_an_edit_reindented_are_its_own(tmp_path: Path, project: Path) -> None:
    path = project / "a.py"
    loop = "    for value in values:\n        total += value\n"
    guarded = "    if values:\n        for value in values:\n            total += value\n"
    base = tmp_path / "agents"
    write_claude(base, "s1", project, [
        ("write compute", [("Write", {"file_path": str(path), "content": FUNCTION})]),
        ("guard the loop", [("Edit", {"file_path": str(path), "old_string": loop, "new_string": guarded})]),
    ])
    db = tmp_path / "m.db"
    sync(base, db)
    found = _blame(db, path, FUNCTION.replace(loop, guarded))
    assert found[0] == found[1] == ("exact", "write compute")
    assert found[2] == found[3] == found[4] == ("exact", "guard the loop")


def test_a_short_run_whose_lines_occur_in_order_elsewhere_names_no_write(tmp_path: Path, project: Path) -> None:
    """A person's copy of two lines a call wrote next to each other: which copy is the call's is not
    known from two lines, but a longer run of the call's says where it wrote them."""
    path = project / "a.py"
    db = _edit_and_sync(tmp_path, project, path, "parse it", old_string="pass\n",
                        new_string="setup_logging(level)\nvalue = parse(data)\nreturn value\n")
    text = "setup_logging(level)\nvalue = parse(data)\nreturn value\nother_thing()\nvalue = parse(data)\nreturn value\n"
    assert _blame(db, path, text) == {0: ("exact", "parse it"), 1: ("exact", "parse it"), 2: ("exact", "parse it")}
    # the current line answers as the whole file does
    assert _blame(db, path, text, start_line=4, end_line=5) == {}
    assert _blame(db, path, text, start_line=1, end_line=2) == {1: ("exact", "parse it")}
    # two short copies: neither is named
    two = "value = parse(data)\nreturn value\n"
    assert _blame(db, path, two + "other_thing()\n" + two) == {}


def test_a_line_a_later_call_removed_is_back_in_a_run_of_its_call(tmp_path: Path, project: Path) -> None:
    """A person's revert of a later edit: the line is back where its call wrote it, next to that call's
    live lines. Alone it stays unattributed (test_a_line_replaced_by_a_later_edit_and_typed_back_...)."""
    path = project / "a.py"
    base = tmp_path / "agents"
    write_claude(base, "s1", project, [
        ("write compute", [("Write", {"file_path": str(path), "content": FUNCTION})]),
        ("rename", [("Edit", {"file_path": str(path), "old_string": "        total += value\n",
                              "new_string": "        total = total + value\n"})]),
    ])
    db = tmp_path / "m.db"
    sync(base, db)
    assert _blame(db, path, FUNCTION) == {line: ("exact", "write compute") for line in range(5)}
    assert _blame(db, path, FUNCTION, start_line=3, end_line=4) == {3: ("exact", "write compute")}
    # out of its place (not next to the call's own lines in the call's order): not revived
    moved = "    total = 0\n    for value in values:\n    return total\nhelper()\n        total += value\n"
    assert 4 not in _blame(db, path, moved)


def test_a_repeated_line_whose_write_a_later_call_removed_elsewhere_is_back_in_its_run(
        tmp_path: Path, project: Path) -> None:
    """A later call removed one ``}``; which of the call's two it was, the store cannot say (the most
    recent write is taken). The person put it back (and kept the later call's line): each ``}`` is in a
    run of the call's live lines, and so is attributed, a trivial line included."""
    path = project / "a.js"
    content = "function first() {\n  runFirst();\n}\nfunction second() {\n  runSecond();\n}\n"
    base = tmp_path / "agents"
    write_claude(base, "s1", project, [
        ("write both", [("Write", {"file_path": str(path), "content": content})]),
        ("merge them", [("Edit", {"file_path": str(path), "old_string": "  runFirst();\n}\n",
                                  "new_string": "  runFirst();\n  runMore();\n"})]),
    ])
    db = tmp_path / "m.db"
    sync(base, db)
    current = content + "  runMore();\n"
    found = _blame(db, path, current)
    assert {line: found[line] for line in range(6)} == {line: ("exact", "write both") for line in range(6)}
    assert found[6][1] == "merge them"
    assert _blame(db, path, current, start_line=5, end_line=6) == {5: ("exact", "write both")}


def test_a_block_a_later_call_replaced_whole_is_back_when_long_enough(tmp_path: Path, project: Path) -> None:
    """None of the call's lines is live any more, but REVIVED_RUN of them are back in its order (a
    person's revert): the call's. Two such lines are not enough."""
    path = project / "a.py"
    block = "alpha_value = compute(1)\nbeta_value = compute(2)\ngamma_value = compute(3)\n"
    base = tmp_path / "agents"
    write_claude(base, "s1", project, [
        ("three values", [("Edit", {"file_path": str(path), "old_string": "pass\n", "new_string": block})]),
        ("one value", [("Edit", {"file_path": str(path), "old_string": block,
                                 "new_string": "delta_value = compute(4)\n"})]),
    ])
    db = tmp_path / "m.db"
    sync(base, db)
    assert lineblame.REVIVED_RUN == 3
    assert _blame(db, path, "setup_here()\n" + block + "teardown_here()\n") == {
        1: ("exact", "three values"), 2: ("exact", "three values"), 3: ("exact", "three values")}
    two = "".join(block.splitlines(keepends=True)[:2])
    assert _blame(db, path, "setup_here()\n" + two + "teardown_here()\n") == {}


def test_a_removed_trivial_line_is_not_revived_next_to_an_idiom(tmp_path: Path, project: Path) -> None:
    """A person's ``}`` + ``return result;`` matches the two lines a call wrote (its ``}`` removed by a
    later call, its ``return result;`` still live): the ``}`` is revived only next to a live line that
    names the call alone, which an idiom does not; and the idiom is not made exact by the ``}``."""
    path = project / "a.js"
    base = tmp_path / "agents"
    write_claude(base, "s1", project, [
        ("other file", [("Write", {"file_path": str(project / "other.js"),
                                   "content": "prepare_other();\nreturn result;\n"})]),
        ("alpha", [("Edit", {"file_path": str(path), "old_string": "start_here();\n",
                             "new_string": "start_here();\nrunAlpha();\n}\nreturn result;\n"})]),
        ("beta", [("Edit", {"file_path": str(path), "old_string": "runAlpha();\n}\n",
                            "new_string": "runAlpha();\nrunBeta();\n"})]),
    ])
    db = tmp_path / "m.db"
    sync(base, db)
    # (the "}" sits next to a line of the call that removed it, so that removal is looked at)
    assert _blame(db, path, "runBeta();\n}\nreturn result;\nhuman_two();\n") == {0: ("line", "beta")}
    # next to a line only that call wrote, its "}" is back
    found = _blame(db, path, "runAlpha();\n}\nrunBeta();\n")
    assert found[0] == found[1] == ("exact", "alpha")


class _CountingList(list[str]):
    """A list that counts the items read from it."""

    reads = 0

    def __getitem__(self, index: Any) -> Any:
        _CountingList.reads += 1
        return super().__getitem__(index)


def test_looking_for_copies_of_short_runs_is_linear_in_the_file() -> None:
    """Rule 2's copied-run question asked for every short run of a file whose runs all start with the
    same line (``}`` then a line of its own: a whole file of them): each question is a lookup, not a
    walk over every ``}``, which made the whole file quadratic (7.6 s for 10,800 lines)."""
    pairs = 3_000
    info = lineblame._TextInfo("".join(f"}}\nvalue_{k} = compute({k})\n" for k in range(pairs)))
    counting = _CountingList(info.normalized)
    info.normalized = counting
    _CountingList.reads = 0
    assert not any(info.elsewhere([2 * k, 2 * k + 1]) for k in range(pairs))
    assert _CountingList.reads <= 20 * len(counting)      # before: ~pairs² / 2 reads
    # what it answers: a run copied elsewhere, in order, blank lines aside
    copied = lineblame._TextInfo("a_line()\nb_line()\n\nc_line()\na_line()\n\nb_line()\nb_line()\na_line()\n")
    assert copied.elsewhere([0, 1]) and copied.elsewhere([4, 6]) and not copied.elsewhere([1, 3])
    assert not copied.elsewhere([6, 7, 8]) and copied.elsewhere([0])


def _span_rows(db: Path) -> list[tuple[Any, ...]]:
    """Every span of a store as what it says (ids aside): file, turn, tool, call, whole, its line rows."""
    conn = sqlite3.connect(db)
    try:
        lines: dict[int, list[tuple[int, int]]] = {}
        for span_id, digest, pos in conn.execute("SELECT span_id, hash, pos FROM pimem_edit_lines"):
            lines.setdefault(span_id, []).append((digest, pos))
        return sorted((path, turn_id, ts, tool, call_id, whole, tuple(sorted(lines.get(span_id, []))))
                      for span_id, path, turn_id, ts, tool, call_id, whole in conn.execute(
                          "SELECT s.span_id, f.path, s.turn_id, s.ts, s.tool, s.call_id, s.whole "
                          "FROM pimem_edit_spans s JOIN pimem_edit_files f USING (path_id)"))
    finally:
        conn.close()


@pytest.mark.parametrize("root", ["legacy", "opencode-real", "copilot-cli", "crafted"])
def test_a_store_of_the_previous_rules_syncs_once_to_the_spans_of_a_fresh_import(
        tmp_path: Path, project: Path, root: str) -> None:
    """Round 7 raised the rules of every source that records spans (the line diff keeps indentation and
    looks at the lines next to the change): a store whose spans the previous rules made is parsed again
    once, and then holds exactly the spans a fresh import of the same transcripts holds."""
    from pimem.importers import RULES_VERSIONS
    base = tmp_path / "history"
    if root == "crafted":
        # a reindent (previous rules: not the call's) and a repeated line next to the change
        path = project / "a.py"
        write_claude(base, "s1", project, [
            ("write", [("Write", {"file_path": str(path), "content": FUNCTION})]),
            ("wrap", [("Edit", {"file_path": str(path), "old_string": FUNCTION,
                                "new_string": "if enabled:\n" + "".join("    " + line + "\n"
                                                                        for line in FUNCTION.splitlines())})]),
        ])
        write_pi(base, "p1", project, [("pi edit", [("edit", {"path": str(project / "b.py"),
                                                              "oldText": "x = 1\n    y = 2\n",
                                                              "newText": "x = 1\ny = 2\ny = 2\n"})])])
    else:
        shutil.copytree(ROOTS[root], base)
    fresh, old = tmp_path / "fresh.db", tmp_path / "old.db"
    sync(base, fresh)
    sync(base, old)
    expected = _span_rows(fresh)
    assert expected
    conn = connect(old)
    # what the previous rules left: other line rows (a reindented line not the call's, other context),
    # and the previous rules' versions
    with transaction(conn):
        conn.execute("DELETE FROM pimem_edit_lines WHERE pos < 0")
        conn.execute("UPDATE pimem_edit_lines SET pos = pos + 1000000 WHERE pos >= 0")
        set_meta(conn, META_KEY, json.dumps({source: version - 1 for source, version in RULES_VERSIONS.items()}))
    conn.close()
    assert _span_rows(old) != expected
    sync(base, old)
    assert _span_rows(old) == expected
    again = sync(base, old)
    assert sum(again.files_by_source.values()) == 0 and _span_rows(old) == expected


# ---------------------------------------------------------------------------------------------
# Context (layout 9): the lines a call kept next to the lines it added
# ---------------------------------------------------------------------------------------------

def test_a_calls_context_is_the_lines_it_kept_next_to_each_block_it_added() -> None:
    old = "first_line(a)\nsecond_line(b)\nthird_line(c)\nfourth_line(d)\nfifth_line(e)\n"
    new = "first_line(a)\nsecond_line(b)\nadded_one(x)\n\nthird_line(c)\nfourth_line(d)\nadded_two(y)\nfifth_line(e)\n"
    span = editspans.span_of(old, new)
    assert span is not None
    h = editspans.line_hash
    assert [pos >> 1 for pos, _ in span.added] == [2, 5]
    # CONTEXT_LINES (2) on each side of each block, by index among the new text's non-blank lines
    assert editspans.CONTEXT_LINES == 2
    assert span.context == [(0, h("first_line(a)")), (1, h("second_line(b)")), (3, h("third_line(c)")),
                            (4, h("fourth_line(d)")), (6, h("fifth_line(e)"))]
    # a created file, a whole text added: no context
    assert editspans.span_of(None, new).context == []
    assert editspans.context_of([0, 1, 4], 7) == [2, 3, 5, 6]


def test_the_store_keeps_a_calls_context_and_forgets_it_with_the_call(tmp_path: Path, project: Path) -> None:
    path = project / "a.py"
    db = _edit_and_sync(tmp_path, project, path, "parse it", old_string="setup_logging(level)\nreturn value\n",
                        new_string="setup_logging(level)\nvalue = parse(data)\nreturn value\n")
    conn = connect(db, create=False, for_writing=False)
    h = editspans.line_hash
    assert sorted(conn.execute("SELECT hash, pos FROM pimem_edit_context")) == sorted(
        [(h("setup_logging(level)"), 0), (h("returnvalue"), 2)])
    conn.close()
    conn = connect(db)
    from pimem.store.edits import clear_spans
    with transaction(conn):
        clear_spans(conn, [row[0] for row in conn.execute("SELECT turn_id FROM pimem_edit_spans")])
    assert conn.execute("SELECT count(*) FROM pimem_edit_context").fetchone() == (0,)
    conn.close()


def test_a_copy_of_a_line_between_the_lines_its_call_kept_is_the_calls(tmp_path: Path, project: Path) -> None:
    """Of two copies of a line, the call's is the one between the lines it kept next to it (without
    context, neither copy names the call: which one a person wrote is not known)."""
    path = project / "a.py"
    db = _edit_and_sync(tmp_path, project, path, "parse it", old_string="setup_logging(level)\nshutdown(server)\n",
                        new_string="setup_logging(level)\nvalue = parse(data)\nshutdown(server)\n")
    text = "import sys\nsetup_logging(level)\nvalue = parse(data)\nshutdown(server)\nhelper()\nvalue = parse(data)\n"
    assert _blame(db, path, text) == {2: ("exact", "parse it")}
    # the current line answers as the whole file does
    assert _blame(db, path, text, start_line=2, end_line=3) == {2: ("exact", "parse it")}
    assert _blame(db, path, text, start_line=5, end_line=6) == {}
    # one side kept is enough (a person changed the line after it)
    assert _blame(db, path, text.replace("shutdown(server)", "stop(server)")) == {2: ("exact", "parse it")}
    # neither side: the copies are whose they are not known
    assert _blame(db, path, text.replace("shutdown(server)", "stop(server)").replace("setup_logging", "init")) == {}
    # the line and its kept neighbour copied elsewhere as they are: which copy is the call's is not known
    pair = "setup_logging(level)\nvalue = parse(data)\n"
    assert _blame(db, path, pair + "middle()\n" + pair) == {}


def test_a_brace_between_lines_its_call_kept_is_the_calls(tmp_path: Path, project: Path) -> None:
    """A trivial line (``}``) the call added alone is placed by the lines it kept next to it."""
    path = project / "a.ts"
    db = _edit_and_sync(tmp_path, project, path, "close it", old_string="    total += item.price;\nreturn total;\n",
                        new_string="    total += item.price;\n  }\nreturn total;\n")
    text = "function sum(items) {\n  for (const item of items) {\n    total += item.price;\n  }\nreturn total;\n}\n"
    assert _blame(db, path, text) == {3: ("exact", "close it")}
    assert _blame(db, path, text, start_line=3, end_line=4) == {3: ("exact", "close it")}
    # a "}" elsewhere, next to other lines: not the call's
    assert _blame(db, path, text, start_line=5, end_line=6) == {}


BEFORE_EDIT = "setup_logging(level)\nstale_line()\nshutdown(server)\n"
AFTER_EDIT = "setup_logging(level)\nvalue = parse(data)\nshutdown(server)\nhelper()\nvalue = parse(data)\n"


def test_the_lines_next_to_the_replaced_text_are_read_from_the_file_before_it() -> None:
    text = "first()\n\n  second()\nold_a()\nold_b()\n\nthird()\nfourth()\n"
    start = text.index("old_a")
    assert editspans.kept_around(text, start, text.index("third") - 1) == (("first()", "  second()"),
                                                                           ("third()", "fourth()"))
    # part of a line replaced: no line next to it on that side
    assert editspans.kept_around(text, start + 2, text.index("old_b") + 3) == ((), ())
    assert editspans.kept_around(text, 0, len("first()\n")) == ((), ("  second()", "old_a()"))
    # the new text's first and last lines added: the file's lines are their context (indexes -1 and past the end)
    span = editspans.span_of("stale_line()\n", "value = parse(data)\n", ("setup_logging(level)",),
                             ("shutdown(server)",))
    h = editspans.line_hash
    assert span is not None and span.context == [(-1, h("setup_logging(level)")), (1, h("shutdown(server)"))]
    # the call does not say what it replaced: nothing is next to it
    assert editspans.span_of(None, "value = parse(data)\n", ("a()",), ("b()",)).context == []


def _edit_and_sync(tmp_path: Path, project: Path, path: Path, prompt: str, **call: Any) -> Path:
    """One Claude Code session whose one turn (``prompt``) makes one ``Edit`` call of ``path`` (its
    ``old_string``, ``new_string`` and any result field, e.g. ``_originalFile``), synced into a new store."""
    base = tmp_path / "agents"
    write_claude(base, "s1", project, [(prompt, [("Edit", {"file_path": str(path), **call})])])
    db = tmp_path / "m.db"
    sync(base, db)
    return db


def _claude_edit(base: Path, project: Path, path: Path, **extra: Any) -> None:
    write_claude(base, "s1", project, [("parse it", [("Edit", {
        "file_path": str(path), "old_string": "stale_line()\n", "new_string": "value = parse(data)\n", **extra})])])


def test_a_claude_edit_result_places_the_line_between_the_files_lines(tmp_path: Path, project: Path) -> None:
    """An Edit that replaced one line: its new text holds no line it kept, its result's ``originalFile``
    does: the line is the call's where it sits between them (without the result, of two copies neither)."""
    path = project / "a.py"
    base = tmp_path / "agents"
    _claude_edit(base, project, path, _originalFile=BEFORE_EDIT)
    db = tmp_path / "m.db"
    sync(base, db)
    assert _blame(db, path, AFTER_EDIT) == {1: ("exact", "parse it")}
    assert _blame(db, path, AFTER_EDIT, start_line=4, end_line=5) == {}
    shutil.rmtree(base)
    _claude_edit(base, project, path)
    sync(base, tmp_path / "bare.db")
    assert _blame(tmp_path / "bare.db", path, AFTER_EDIT) == {}


def test_a_claude_edit_result_synced_after_its_call_amends_it(tmp_path: Path, project: Path) -> None:
    """A sync between the call's line and its result's: the result amends the stored call (one span)."""
    path = project / "a.py"
    base = tmp_path / "agents"
    _claude_edit(base, project, path, _originalFile=BEFORE_EDIT)
    transcript = next((base / "claude").rglob("*.jsonl"))
    lines = transcript.read_text(encoding="utf-8").splitlines(keepends=True)
    transcript.write_text("".join(lines[:-1]), encoding="utf-8")
    db = tmp_path / "m.db"
    sync(base, db)
    assert _blame(db, path, AFTER_EDIT) == {}
    transcript.write_text("".join(lines), encoding="utf-8")
    sync(base, db)
    assert _blame(db, path, AFTER_EDIT) == {1: ("exact", "parse it")}
    conn = connect(db, create=False, for_writing=False)
    assert conn.execute("SELECT count(*) FROM pimem_edit_spans").fetchone() == (1,)
    conn.close()


PI_PATCH = ("--- a.py\n+++ a.py\n@@ -1,3 +1,3 @@\n setup_logging(level)\n-stale_line()\n+value = parse(data)\n"
            " shutdown(server)\n")


def test_the_lines_next_to_a_pi_edit_are_read_from_its_patch() -> None:
    from pimem.importers.pi import kept_in_patch
    assert kept_in_patch(PI_PATCH, "stale_line()\n") == (("setup_logging(level)",), ("shutdown(server)",))
    assert kept_in_patch(PI_PATCH, "stale_line()") == (("setup_logging(level)",), ("shutdown(server)",))
    # part of a line, or not in the patch: nothing
    assert kept_in_patch(PI_PATCH, "stale_") == ((), ())
    assert kept_in_patch(PI_PATCH, "elsewhere()\n") == ((), ())
    # a line the call removed (another block of it) is not kept; a blank context line is passed over
    two = "@@ -1,5 +1,5 @@\n-gone_line()\n+new_line()\n first_edit()\n\n keeper_line()\n"
    assert kept_in_patch(two, "first_edit()\n") == ((), ("keeper_line()",))


def test_a_pi_edit_result_places_the_line_between_the_files_lines(tmp_path: Path, project: Path) -> None:
    path = project / "a.py"
    base = tmp_path / "agents"
    write_pi(base, "p1", project, [("parse it", [("edit", {
        "path": "a.py", "edits": [{"oldText": "stale_line()\n", "newText": "value = parse(data)\n"}],
        "_result": "Successfully replaced 1 block(s) in a.py.", "_details": {"patch": PI_PATCH}})])])
    db = tmp_path / "m.db"
    sync(base, db)
    assert _blame(db, path, AFTER_EDIT) == {1: ("exact", "parse it")}
    assert _blame(db, path, AFTER_EDIT, start_line=4, end_line=5) == {}


def test_a_line_a_call_also_kept_elsewhere_is_not_placed_by_its_context(tmp_path: Path, project: Path) -> None:
    """The call wrote ``return result;`` after the line it kept before, and kept a ``return result;``
    after its lines: once its lines are moved away, the copy left next to the line before is the one it
    kept, as likely as one it wrote."""
    path = project / "cart.ts"
    base = tmp_path / "agents"
    original = "    result += it.price;\n  }\n  return result;\n}\n"
    write_claude(base, "s1", project, [("totals", [("Edit", {
        "file_path": str(path), "old_string": "  }\n",
        "new_string": "  return result;\n  return { total: t, label: l };\n  return result;\n",
        "_originalFile": original})])])
    db = tmp_path / "m.db"
    sync(base, db)
    moved = ("  return result;\n  return { total: t, label: l };\n  return result;\n    result += it.price;\n"
             "  return result;\n}\n")
    assert _blame(db, path, moved) == {0: ("exact", "totals"), 1: ("exact", "totals"), 2: ("exact", "totals")}


def test_a_line_placed_where_the_copy_its_call_kept_cannot_be_is_the_calls(tmp_path: Path, project: Path) -> None:
    """The call kept a ``return result;`` two lines before the lines it added and wrote one at their end.
    The copy it kept still sits before the line it kept after it; the other copy sits right before the
    line the call kept after its lines, away from the lines it kept before them: that one is the call's
    (the exception above is for a line whose neighbours could be the kept copy's)."""
    path = project / "cart.ts"
    db = _edit_and_sync(tmp_path, project, path, "totals", old_string="  }\n",
                        new_string="  const a = one();\n  const b = two();\n  return result;\n",
                        _originalFile="  return result;\n    result += it.price;\n  }\n  let result = 0;\n"
                                      "  for (const it of items) {\n")
    now = ("  return result;\n    result += it.price;\n  const a = one();\n  const b = two();\n  person_line();\n"
           "  return result;\n  let result = 0;\n  for (const it of items) {\n")
    assert _blame(db, path, now) == {2: ("exact", "totals"), 3: ("exact", "totals"), 5: ("exact", "totals")}


def test_a_removed_write_placed_by_the_lines_its_call_kept_is_back(tmp_path: Path, project: Path) -> None:
    """A later call removed a copy of ``return result;``: the store does not say which, the most recent
    write is taken as removed. The call's copy, still between the two lines it kept next to it, is the
    call's (the removed copy was another one); alone, away from them, it stays unattributed."""
    path = project / "cart.ts"
    base = tmp_path / "agents"
    write_claude(base, "s1", project, [
        ("totals", [("Edit", {"file_path": str(path), "old_string": "  stale();\n",
                              "new_string": "  return result;\n",
                              "_originalFile": "  let a = compute(1);\n  stale();\n  let result = 0;\n"})]),
        ("drop", [("Edit", {"file_path": str(path), "old_string": "  return result;\n}\n", "new_string": "}\n"})])])
    db = tmp_path / "m.db"
    sync(base, db)
    now = "  let a = compute(1);\n  return result;\n  let result = 0;\n}\n"
    assert _blame(db, path, now) == {1: ("exact", "totals")}
    assert _blame(db, path, "  let a = compute(1);\n  person_line();\n  return result;\n  let result = 1;\n}\n") == {}


def test_a_line_placed_on_one_side_with_its_copy_on_the_other_is_not_attributed(
        tmp_path: Path, project: Path) -> None:
    """The call added one ``}`` next to a ``}``: which of the two it added is the diff's convention (its own
    diff of its texts says the second, git's of the file the first), so neither is named."""
    path = project / "cart.ts"
    base = tmp_path / "agents"
    write_claude(base, "s1", project, [("close", [("Edit", {
        "file_path": str(path), "old_string": "}\n\n", "new_string": "}\n}\n\n",
        "_originalFile": "  price: number;\n}\n\nexport function total() {\n"})])])
    db = tmp_path / "m.db"
    sync(base, db)
    assert _blame(db, path, "  price: number;\n}\n}\n\nexport function total() {\n") == {}
    # a "}" placed between two lines it kept: the call's
    write_claude(base, "s1", project, [("close", [("Edit", {
        "file_path": str(path), "old_string": "  stale();\n", "new_string": "}\n",
        "_originalFile": "  price: number;\n  stale();\nexport function total() {\n"})])])
    sync(base, tmp_path / "two.db")
    assert _blame(tmp_path / "two.db", path, "  price: number;\n}\nexport function total() {\n") == {
        1: ("exact", "close")}


_DISTINCT = [f"value_{k} = compute_{k}(data)" for k in range(30)]
_COMMON = ["return result;", "result = None", "self.count += 1", "log.debug(message)"]
_TRIVIAL = ["}", "else:", "pass", "end", ")"]


def _random_history(seed: int, folder: Path) -> tuple[Path, Path, str]:
    """A Write, then 3-15 Edits that delete, extend or replace 1-4 lines, then a person's reverts, copied
    blocks, deleted and added lines; lines drawn from distinct, common and trivial ones."""
    import random
    rng = random.Random(seed)

    def pick() -> str:
        r = rng.random()
        return rng.choice(_DISTINCT if r < 0.4 else _COMMON if r < 0.7 else _TRIVIAL)

    project = folder / "proj"
    project.mkdir()
    path = project / "a.py"
    lines = [pick() for _ in range(rng.randint(20, 60))]
    history = [list(lines)]
    turns: list[Any] = [("t0", [("Write", {"file_path": str(path), "content": "\n".join(lines) + "\n"})])]
    for t in range(1, rng.randint(4, 16)):
        if not lines:
            break
        a = rng.randrange(len(lines))
        b = min(len(lines), a + rng.randint(1, 4))
        old = lines[a:b]
        kind = rng.random()
        new = [] if kind < 0.3 else old + [pick() for _ in range(rng.randint(1, 3))] if kind < 0.6 \
            else [pick() for _ in range(rng.randint(1, 4))]
        if new == old:
            continue
        turns.append((f"t{t}", [("Edit", {"file_path": str(path), "old_string": "\n".join(old) + "\n",
                                           "new_string": "\n".join(new) + ("\n" if new else "")})]))
        lines = lines[:a] + new + lines[b:]
        history.append(list(lines))
    for _ in range(rng.randint(0, 8)):
        r = rng.random()
        if r < 0.25 and len(history) > 1:
            lines = list(rng.choice(history[:-1]))
        elif r < 0.5 and lines:
            a = rng.randrange(len(lines))
            b = min(len(lines), a + rng.randint(1, 4))
            at = rng.randrange(len(lines) + 1)
            lines = lines[:at] + lines[a:b] + lines[at:]
        elif r < 0.75 and lines:
            del lines[rng.randrange(len(lines))]
        else:
            lines.insert(rng.randrange(len(lines) + 1), pick())
    base = folder / "agents"
    write_claude(base, "s1", project, turns)
    db = folder / "m.db"
    sync(base, db)
    return db, path, "\n".join(lines) + "\n"


# seeds of the random histories where the current line answered otherwise than the whole file before
# (docs/benchmarks.md, round 8): a "}" whose write a call outside the lines looked at removed (152-204),
# a removed write back in a run that starts RUN_CAP lines away (202, 343)
@pytest.mark.parametrize("seed", [152, 155, 156, 171, 181, 188, 201, 202, 204, 343])
def test_the_current_line_answers_as_the_whole_file_does(tmp_path: Path, seed: int) -> None:
    db, path, text = _random_history(seed, tmp_path)
    whole = _blame(db, path, text)
    alone = {}
    for line in range(len(text.splitlines())):
        alone.update(_blame(db, path, text, start_line=line, end_line=line + 1))
    assert alone == whole


def test_past_the_trivial_cap_a_brace_is_followed_through_its_near_calls_only_in_the_whole_file_too(
        tmp_path: Path, project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A later call far away removed a "}": followed through every call's rows, it removed the most recent
    write of one (the first call's), and that "}" is not attributed (its call's other line has two copies:
    not revived). Past TRIVIAL_FOLLOWED only the near calls' rows are read, the far removal is not seen and
    the first call's "}" is attributed: in a window and in the whole file alike (the cost of the cap)."""
    path = project / "a.go"
    base = tmp_path / "agents"
    write_claude(base, "s1", project, [
        ("add it", [("Edit", {"file_path": str(path), "old_string": "marker_a()\n",
                              "new_string": "shared = compute(data)\n}\n"})]),
        ("drop it", [("Edit", {"file_path": str(path), "old_string": "stale_b()\n}\n",
                               "new_string": "fresh_b = other(data)\n"})])])
    db = tmp_path / "m.db"
    sync(base, db)
    # more distinct lines than WHOLE_FILE_READ: the whole file reads the file's rows in one range
    text = ("shared = compute(data)\nperson_x()\n" + "".join(f"person_{k}(x)\n" for k in range(250))
            + "setup(data)\nshared = compute(data)\n}\n" + "".join(f"later_{k}(x)\n" for k in range(250))
            + "fresh_b = other(data)\n")
    brace = text.splitlines().index("}")
    assert len(set(text.splitlines())) > lineblame.WHOLE_FILE_READ
    assert brace not in _blame(db, path, text)
    monkeypatch.setattr(lineblame, "TRIVIAL_FOLLOWED", 0)
    whole = _blame(db, path, text)
    assert whole[brace] == ("exact", "add it")
    alone = {}
    for line in range(brace - 6, brace + 7):
        alone.update(_blame(db, path, text, start_line=line, end_line=line + 1))
    assert alone == {line: found for line, found in whole.items() if brace - 6 <= line <= brace + 6}


def _brace_calls(folder: Path, project: Path, calls: int) -> tuple[Path, Path, str]:
    """``calls`` edits of one file, each adding a block that ends in two "}" (bench/blame/results.py
    brace-calls)."""
    path = project / "a.go"
    edits, text = brace_block_edits(path, calls)
    base = folder / "agents"
    write_claude(base, "s1", project, [("write them", edits)])
    db = folder / "m.db"
    sync(base, db)
    return db, path, text


def _rows_read(monkeypatch: pytest.MonkeyPatch, run: Callable[[], object]) -> int:
    """The edit rows (and context rows) lineblame reads from the store while ``run`` runs."""
    read = [0]

    def counting(read_rows: Callable[..., list[tuple[int, int, int]]]) -> Callable[..., list[tuple[int, int, int]]]:
        def counted(*args: Any, **kwargs: Any) -> list[tuple[int, int, int]]:
            found = read_rows(*args, **kwargs)
            read[0] += len(found)
            return found
        return counted

    for name in ("line_rows", "file_rows", "context_rows"):
        monkeypatch.setattr(lineblame, name, counting(getattr(lineblame, name)))
    run()
    monkeypatch.undo()
    return read[0]


def test_a_current_line_request_on_a_brace_reads_rows_bounded_by_the_request(
        tmp_path: Path, project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Round q7's defect: a "}" was followed through every call's rows of it, so a current-line request
    read rows in proportion to the calls that wrote a "}" in the file. Past TRIVIAL_FOLLOWED rows of it,
    only its near calls' rows are read: the same count at 200 and 400 calls, and the same answer as the
    whole file."""
    read = []
    for calls in (200, 400):
        folder = tmp_path / str(calls)
        folder.mkdir()
        db, path, text = _brace_calls(folder, project, calls)
        lines = text.splitlines()
        at = lines.index("}", len(lines) // 2)
        alone: dict[int, tuple[str, str]] = {}

        def request(db: Path = db, path: Path = path, text: str = text, at: int = at,
                    alone: dict[int, tuple[str, str]] = alone) -> None:
            alone.update(_blame(db, path, text, start_line=at, end_line=at + 1))
        read.append(_rows_read(monkeypatch, request))
        whole = _blame(db, path, text)
        assert alone == {at: whole[at]}
        assert whole[at][0] == "exact"
    assert read[1] == read[0] and read[0] < 100
    assert lineblame.TRIVIAL_FOLLOWED < 2 * 200   # both sizes past the cap


def test_a_kept_brace_places_a_line_only_with_the_line_beyond_it(tmp_path: Path, project: Path) -> None:
    """The lines the call kept next to its line are "}": a "}" places nothing alone, but the kept "}"
    then the kept line beyond it, both still there, do."""
    path = project / "a.py"
    db = _edit_and_sync(tmp_path, project, path, "parse it", old_string="stale_line()\n",
                        new_string="value = parse(data)\n",
                        _originalFile="setup_logging(level)\n}\nstale_line()\n}\nshutdown(server)\n")
    text = "setup_logging(level)\n}\nvalue = parse(data)\n}\nshutdown(server)\nhelper()\nvalue = parse(data)\n"
    assert _blame(db, path, text) == {2: ("exact", "parse it")}
    assert _blame(db, path, text, start_line=2, end_line=3) == {2: ("exact", "parse it")}
    # the "}" alone next to it, the lines beyond changed: not placed (two copies: neither is named)
    assert _blame(db, path, text.replace("setup_logging(level)", "init()").replace("shutdown", "stop")) == {}


def test_an_edit_result_line_past_the_bound_is_not_parsed(tmp_path: Path, project: Path) -> None:
    """A Claude Code Edit result holds the whole file: past EDIT_RESULT_MAX_BYTES its line is skipped
    unparsed, as before the results were read (no context from it)."""
    from pimem.importers.claude import EDIT_RESULT_MAX_BYTES
    path = project / "a.py"
    base = tmp_path / "agents"
    padding = "# filler line of a large file\n" * (EDIT_RESULT_MAX_BYTES // 30 + 1)
    _claude_edit(base, project, path, _originalFile=padding + BEFORE_EDIT)
    db = tmp_path / "m.db"
    sync(base, db)
    assert _blame(db, path, padding + AFTER_EDIT) == {}
    # the same edit of a small file: its result is read
    shutil.rmtree(base)
    _claude_edit(base, project, path, _originalFile="# filler\n" + BEFORE_EDIT)
    sync(base, tmp_path / "small.db")
    assert _blame(tmp_path / "small.db", path, "# filler\n" + AFTER_EDIT) == {2: ("exact", "parse it")}


# ---------------------------------------------------------------------------------------------
# Round 11: what a Pi session saw of a file, kept across its turns (a write of a later turn)
# ---------------------------------------------------------------------------------------------

SMALL = "import os\n\ndef run(data):\n    stale_line()\n    return data\n"
SMALL_EDITED = "import os\n\ndef run(data):\n    value = parse(data)\n    return data\n"
SMALL_DIFF = ("  1 import os\n  2 \n  3 def run(data):\n- 4     stale_line()\n+ 4     value = parse(data)\n"
              "  5     return data")
SMALL_PATCH = ("--- a.py\n+++ a.py\n@@ -1,5 +1,5 @@\n import os\n \n def run(data):\n-    stale_line()\n"
               "+    value = parse(data)\n     return data\n")
SMALL_WRITTEN = ("import os\n\ndef run(data):\n    value = parse(data)\n    log_value(value)\n    check_value(value)\n"
                 "    return data\n")


def test_a_pi_edit_result_shows_the_whole_file_only_without_a_left_out_line() -> None:
    from pimem.importers.pi import shown_whole
    assert shown_whole(SMALL_DIFF) == SMALL_EDITED
    # Pi's marker of lines left out (before, between, after the changes): not the whole file
    assert shown_whole("    ...\n  6     stale()\n+ 7     new()\n  8     end()") is None
    assert shown_whole(SMALL_DIFF + "\n    ...") is None
    # nothing changed, or not a diff of this shape
    assert shown_whole("  1 import os") is None
    assert shown_whole("import os\n+ 2 x = 1") is None


def test_a_pi_edit_patch_applies_to_what_the_session_saw_or_not_at_all() -> None:
    from pimem.importers.pi import patched
    keys = editspans.line_keys
    assert patched(keys(SMALL), SMALL_PATCH) == keys(SMALL_EDITED)
    # more lines around the hunk: it is found where its old side is
    longer = "# header\n" + SMALL + "def other():\n    pass\n"
    assert patched(keys(longer), SMALL_PATCH.replace("@@ -1,5 +1,5 @@", "@@ -2,5 +2,5 @@")) == keys(
        "# header\n" + SMALL_EDITED + "def other():\n    pass\n")
    # the file changed since it was seen (the old side is not there), or it is there twice: unknown
    assert patched(keys(SMALL.replace("stale_line()", "changed_by_hand()")), SMALL_PATCH) is None
    assert patched(keys(SMALL + SMALL), SMALL_PATCH) is None
    # a hunk whose counts the lines do not fill
    assert patched(keys(SMALL), SMALL_PATCH.replace("@@ -1,5 +1,5 @@", "@@ -1,7 +1,7 @@")) is None
    # a hunk of 1,000 repeated lines over 1,999 of them: past MAX_DIFF_WORK comparisons, unknown (bounded work)
    many = editspans.line_keys("x = 1\n" * 1999)
    assert patched(many, "@@ -1,1000 +1,1000 @@\n" + " x = 1\n" * 1000) is None


@pytest.mark.parametrize("evidence", ["diff", "patch"])
def test_a_pi_write_over_a_file_an_earlier_edit_of_the_session_showed_claims_the_run_it_added(
        tmp_path: Path, project: Path, evidence: str) -> None:
    """An edit's result shows what the file holds after it: its display diff when it leaves no line out,
    else its patch applied to what the session saw before (here a read of the turn before). A write of a
    later turn then claims the run it added to that; the edit's line keeps its writer."""
    path = project / "a.py"
    base = tmp_path / "agents"
    details = {"patch": SMALL_PATCH, "diff": SMALL_DIFF if evidence == "diff" else "    ...\n" + SMALL_DIFF}
    turns: list[tuple[str, list[tuple[str, dict[str, Any]]]]] = [
        ("parse it", [("edit", {"path": "a.py",
                                "edits": [{"oldText": "stale_line()", "newText": "value = parse(data)"}],
                                "_result": "Successfully replaced 1 block(s) in a.py.", "_details": details})]),
        ("log it", [("write", {"path": "a.py", "content": SMALL_WRITTEN, "_result": "ok"})]),
    ]
    if evidence == "patch":
        turns.insert(0, ("look", [("read", {"path": "a.py", "_result": SMALL})]))
    write_pi(base, "p1", project, turns)
    db = tmp_path / "m.db"
    sync(base, db)
    found = _blame(db, path, SMALL_WRITTEN)
    assert found[4] == ("exact", "log it") and found[5] == ("exact", "log it")
    assert found.get(3, ("", "parse it"))[1] == "parse it" and set(found) <= {3, 4, 5}


def test_a_run_of_braces_next_to_the_line_its_call_kept_is_the_calls_though_copied_elsewhere(
        tmp_path: Path, project: Path) -> None:
    """The call wrote ``}`` + ``}`` right before a line it kept; the file has another ``}`` + ``}`` (a
    person's, or code's). Alone the run is copied elsewhere and names no write (rule 2), but with the line
    the call kept after it, it is found once: both braces are the call's (round 11; seed 95's ``cart.ts``),
    in the whole file and in a current-line request alike. The other copy stays unattributed."""
    path = project / "cart.ts"
    base = tmp_path / "agents"
    original = ("export interface Item {\n  sku: string;\n}\nfunction check(x: number) {\n  if (x) {\n"
                "    report(x);\n  }\n}\n")
    write_claude(base, "s1", project, [("close the blocks", [("Edit", {
        "file_path": str(path), "old_string": "export interface Item {\n",
        "new_string": "}\n}\nexport interface Item {\n", "_originalFile": original})])])
    db = tmp_path / "m.db"
    sync(base, db)
    now = "}\n}\n" + original
    assert _blame(db, path, now) == {0: ("exact", "close the blocks"), 1: ("exact", "close the blocks")}
    assert _blame(db, path, now, start_line=0, end_line=1) == {0: ("exact", "close the blocks")}
    assert _blame(db, path, now, start_line=8, end_line=10) == {}


def test_a_removed_run_one_line_away_from_its_calls_live_line_is_back(tmp_path: Path, project: Path) -> None:
    """The first call wrote four lines; a later call replaced the last two; the person put them back (a
    revert) and rewrote the second line. The two lines back are a run of the first call whose next line
    on one side, one line away (the line the person rewrote), is the call's own line still live, where
    the call's order puts it: they are back (round 11; seed 91's ``report.py``). Two lines typed back
    alone, away from any line of the call, are not."""
    path = project / "loader.py"
    base = tmp_path / "agents"
    written = ("def load(path):\n    rows = read_rows(path)\n    rows = drop_empty(rows)\n"
               "    return checked(rows)\n")
    write_claude(base, "s1", project, [
        ("write the loader", [("Write", {"file_path": str(path), "content": written})]),
        ("simplify", [("Edit", {"file_path": str(path), "old_string": "    rows = drop_empty(rows)\n"
                                "    return checked(rows)\n", "new_string": "    return rows\n",
                                "_originalFile": written})]),
    ])
    db = tmp_path / "m.db"
    sync(base, db)
    now = ("def load(path):\n    rows = read_rows(path, strict=True)\n    rows = drop_empty(rows)\n"
           "    return checked(rows)\n")
    found = _blame(db, path, now)
    assert found[2] == ("exact", "write the loader") and found[3] == ("exact", "write the loader")
    assert 1 not in found
    assert _blame(db, path, now, start_line=3, end_line=4) == {3: ("exact", "write the loader")}
    alone = "def other():\n    pass\n\n\n# moved here\n    rows = drop_empty(rows)\n    return checked(rows)\n"
    assert _blame(db, path, alone) == {}


def test_a_later_call_that_placed_a_line_with_copies_beats_an_earlier_run_through_a_line_that_names_its_call(
        tmp_path: Path, project: Path) -> None:
    """The first call wrote ``total29`` + ``return result;`` + ``total5``; a later call kept ``total29`` and wrote
    another ``return result;`` right after it, before the first call's copy. Both copies are in a run of the
    first call (``total29`` before one, ``total5`` after the other), which wrote one of them: the copy the later
    call placed between the lines it kept is the later call's (round 12, fresh seeds 3009, 3090, 3091: the run's
    other line names its call alone, round 11's exception did not apply). A line with no copy keeps its run."""
    path = project / "format.ts"
    base = tmp_path / "agents"
    t29, t5 = "return { total: total29, label: label29 };\n", "return { total: total5, label: label5 };\n"
    head = "export function formatPrice(value: number): string {\n"
    first_text = head + t29 + "return result;\n" + t5 + "}\n"
    write_claude(base, "s1", project, [
        ("first", [("Edit", {"file_path": str(path), "old_string": head,
                             "new_string": head + t29 + "return result;\n" + t5, "_originalFile": head + "}\n"})]),
        ("again", [("Edit", {"file_path": str(path), "old_string": t29, "new_string": t29 + "return result;\n",
                             "_originalFile": first_text})]),
    ])
    db = tmp_path / "m.db"
    sync(base, db)
    now = head + t29 + "return result;\nreturn result;\n" + t5 + "}\n"
    found = _blame(db, path, now)
    assert (found[1], found[2], found[3], found[4]) == (
        ("exact", "first"), ("exact", "again"), ("exact", "first"), ("exact", "first"))
    assert _blame(db, path, now, start_line=2, end_line=3) == {2: ("exact", "again")}
    # a unique line in the same place keeps the first call's run (nothing placed it but the first call)
    unique = now.replace("return result;\nreturn result;", "return result;\nreturn 0;")
    assert _blame(db, path, unique).get(2) == ("exact", "first")


def test_a_later_call_that_placed_the_line_beats_an_earlier_run_of_lines_that_name_no_write(
        tmp_path: Path, project: Path) -> None:
    """The first call wrote ``return result;`` + ``total15`` + ``return result;``; the person deleted its
    ``total15`` and moved the rest; a later call wrote ``total15`` again right after a line it kept. Now
    ``total15`` + ``return result;`` is a run of the first call, but its other line names no write alone
    (another copy is in the file): the later call that placed the line there wrote it (round 11; seed 75's
    ``cart.ts``). A run with a line that names its call alone still wins."""
    path = project / "cart.ts"
    base = tmp_path / "agents"
    total = "const total15 = items.reduce((s, it) => s + it.price15, 0);\n"
    original = ("export interface Item {\n  sku: string;\n}\nexport function total(items: Item[]): number {\n"
                "  return result;\n}\n")
    moved = ("export interface Item {\n  sku: string;\n}\nexport function total(items: Item[]): number {\n"
             "return result;\nreturn result;\n  return result;\n}\n")
    write_claude(base, "s1", project, [
        ("first", [("Edit", {"file_path": str(path), "old_string": "  sku: string;\n}\n",
                             "new_string": "  sku: string;\n}\nreturn result;\n" + total + "return result;\n",
                             "_originalFile": original})]),
        ("again", [("Edit", {"file_path": str(path), "old_string": "export function total(items: Item[]): number {\n",
                             "new_string": "export function total(items: Item[]): number {\n" + total,
                             "_originalFile": moved})]),
    ])
    db = tmp_path / "m.db"
    sync(base, db)
    now = ("export interface Item {\n  sku: string;\n}\nexport function total(items: Item[]): number {\n" + total
           + "return result;\n  return result;\n}\n")
    found = _blame(db, path, now)
    assert found[4] == ("exact", "again")
    assert _blame(db, path, now, start_line=4, end_line=5) == {4: ("exact", "again")}
    # the first call's run with a line only it wrote: the run wins
    distinct = now.replace("return result;\n  return result;", "return result;\n  return 0;")
    assert _blame(db, path, distinct)[4] == ("exact", "first")


def test_blocks_of_one_repeated_line_that_several_calls_wrote_are_not_all_the_latest_calls(
        tmp_path: Path, project: Path) -> None:
    """Six calls each added six copies of one line after their own marker: every call's run of six goes
    through every block, the runs all as long (RUN_CAP), so the most recent call took all 36 lines (30 of
    them wrong). Which copy is whose is not known where other calls' runs through the line are as long
    (round q9); a run that reaches the line its call kept next to it still names it (the last block's first
    lines), and a line only one call wrote stays its."""
    path = project / "blocks.py"
    base = tmp_path / "agents"
    repeated = "    value = compute(value)\n"
    markers = [f"marker_{k}()\n" for k in range(6)]
    text = "".join(markers)
    turns = []
    for k, marker in enumerate(markers):
        new = marker + repeated * 6 + f"only_call_{k}(value)\n"
        turns.append((f"call {k}", [("Edit", {"file_path": str(path), "old_string": marker, "new_string": new,
                                              "_originalFile": text})]))
        text = text.replace(marker, new, 1)
    write_claude(base, "s1", project, turns)
    db = tmp_path / "m.db"
    sync(base, db)
    found = _blame(db, path, text)
    owner: dict[int, str] = {}
    for number, line in enumerate(text.splitlines()):
        if line.startswith("marker_"):
            current = f"call {line[len('marker_'):-2]}"
        owner[number] = current
    assert {line: prompt for line, (_, prompt) in found.items() if prompt != owner[line]} == {}
    only = {number for number, line in enumerate(text.splitlines()) if line.startswith("only_call_")}
    assert {line for line in found if line in only} == only
    assert found[len(text.splitlines()) - 7] == ("exact", "call 5")   # the last block's first copy, anchored


BODY = "".join(f"    step_{k}(value, {k})\n" for k in range(6))


def test_a_persons_copy_of_a_long_block_a_write_added_is_not_the_writes(tmp_path: Path, project: Path) -> None:
    """Round q9's open case: a ``Write`` of ``def f`` and six lines; a person adds ``def g`` and the same six
    lines. The call wrote each of them once, and its run there reaches ``def f``: at the copy the same lines
    of the call stop at ``def g`` (a run the call's lines hold longer at another place of the file is not
    the call's copy, round q10), so the copy is nobody's, wherever it is; the whole block copied (as long at
    both places) is not told apart."""
    path = project / "a.py"
    base = tmp_path / "agents"
    written = "def f(value):\n" + BODY
    write_claude(base, "s1", project, [("write f", [("Write", {"file_path": str(path), "content": written})])])
    db = tmp_path / "m.db"
    sync(base, db)
    after = written + "\ndef g(value):\n" + BODY
    assert _blame(db, path, after) == {n: ("exact", "write f") for n in range(7)}
    before = "def g(value):\n" + BODY + "\n" + written
    assert _blame(db, path, before) == {n: ("exact", "write f") for n in range(8, 15)}
    # each line asked alone answers as the whole file does
    for text in (after, before):
        whole = _blame(db, path, text)
        for n in range(15):
            assert _blame(db, path, text, start_line=n, end_line=n + 1) == ({n: whole[n]} if n in whole else {})
    both = written + "\n" + written
    assert set(_blame(db, path, both)) == set(range(7)) | set(range(8, 15))


def test_an_edit_that_adds_a_block_like_one_an_earlier_call_wrote_keeps_each_block_its_calls(
        tmp_path: Path, project: Path) -> None:
    """A ``Write`` of ``def f`` and six lines, then an ``Edit`` adding ``def g`` with the same six lines: the
    Edit's run goes through ``def f``'s lines too (as long, capped at RUN_CAP), and took two of them while
    two others were nobody's. Each block's lines go to the call whose run holds them longest (round q10)."""
    path = project / "a.py"
    base = tmp_path / "agents"
    first = "def f(value):\n" + BODY
    both = first + "\ndef g(value):\n" + BODY
    write_claude(base, "s1", project, [
        ("write f", [("Write", {"file_path": str(path), "content": first})]),
        ("edit g", [("Edit", {"file_path": str(path), "old_string": first, "new_string": both,
                              "_originalFile": first})])])
    db = tmp_path / "m.db"
    sync(base, db)
    found = _blame(db, path, both)
    assert {n: prompt for n, (_, prompt) in found.items()} == {
        **{n: "write f" for n in range(7)}, **{n: "edit g" for n in range(7, 15)}}
