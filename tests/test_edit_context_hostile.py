"""Hostile transcripts against the context lines of edits (store layout 9, issue 23 round 8): a tool
result that answers no call of its turn, or another file's call, or says other texts than its call; a
patch of many repeated lines; a turn of many edits and their results. The standard: bad input loses
nothing and adds nothing, bounded work (counted as line events of the importer, not timed)."""

from __future__ import annotations

import json
import re
import sqlite3
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from types import FrameType
from typing import Any

import pytest

from pimem import editspans
from pimem.importers import base as importers_base
from pimem.importers import claude, pi
from pimem.jsonl import Line
from support.edits import Turn, write_claude, write_pi
from support.sync import sync

BEFORE = "setup_logging(level)\nstale_line()\nshutdown(server)\n"


def _spans(db: Path) -> list[tuple[Any, ...]]:
    """(path, turn, call, added hashes, context rows) of every span."""
    conn = sqlite3.connect(db)
    try:
        return sorted((path, turn, call, tuple(sorted(
            row[0] for row in conn.execute("SELECT hash FROM pimem_edit_lines WHERE span_id = ? AND pos >= 0",
                                           (span_id,)))),
            conn.execute("SELECT count(*) FROM pimem_edit_context WHERE span_id = ?", (span_id,)).fetchone()[0])
            for span_id, path, turn, call in conn.execute(
                "SELECT s.span_id, f.path, s.turn_id, s.call_id FROM pimem_edit_spans s "
                "JOIN pimem_edit_files f USING (path_id)"))
    finally:
        conn.close()


def _claude_call(base: Path, project: Path, path: str, *more: Turn) -> None:
    """A Claude Code transcript of one Edit, synced before its result (written by the test)."""
    write_claude(base, "s1", project, [("parse it", [("Edit", {
        "file_path": path, "old_string": "stale_line()\n", "new_string": "value = parse(data)\n",
        "_noResult": True})]), *more])


def _transcript(base: Path) -> Path:
    return next((base / "claude").rglob("*.jsonl"))


def _edit_result(session: str, call_id: str, path: str, old: str, new: str, original: str,
                 uuid: str = "x-result") -> dict[str, Any]:
    return {"type": "user", "sessionId": session, "uuid": uuid, "timestamp": "2026-11-01T10:00:30.000Z",
            "message": {"role": "user", "content": [{"tool_use_id": call_id, "type": "tool_result", "content": "ok"}]},
            "toolUseResult": {"filePath": path, "oldString": old, "newString": new, "originalFile": original,
                              "structuredPatch": [], "userModified": False, "replaceAll": False}}


def _append(transcript: Path, *records: dict[str, Any]) -> None:
    with transcript.open("a", encoding="utf-8") as out:
        for record in records:
            out.write(json.dumps(record) + "\n")


def test_a_claude_edit_result_that_answers_no_stored_call_stores_no_span(tmp_path: Path, project: Path) -> None:
    """A result whose tool_use_id names no call (or a call of an earlier turn: Claude Code writes a
    result right after its call) says nothing any call wrote: no span, not a second one."""
    path = str(project / "a.py")
    base = tmp_path / "agents"
    _claude_call(base, project, path, ("something else", []))
    db = tmp_path / "m.db"
    sync(base, db)
    stored = _spans(db)
    assert len(stored) == 1
    # a result of no call, then one of the first turn's call read while the second turn is open
    # and a Write's result of no call
    write_result = {**_edit_result("s1", "toolu_nowhere_2", path, "", "", "", "x-r3"), "toolUseResult": {
        "type": "update", "filePath": path, "content": "invented_line()\n", "originalFile": BEFORE}}
    _append(_transcript(base),
            _edit_result("s1", "toolu_nowhere", path, "stale_line()\n", "invented_line()\n", BEFORE, "x-r1"),
            _edit_result("s1", "toolu_0_0", path, "stale_line()\n", "value = parse(data)\n", BEFORE, "x-r2"),
            write_result)
    sync(base, db)
    assert _spans(db) == stored


def test_a_claude_edit_result_with_other_texts_than_its_stored_call_leaves_the_call(
        tmp_path: Path, project: Path) -> None:
    """A result read in a later sync amends its call only with what the call wrote: a result saying
    other texts (or another file) than the stored call leaves the call as it was."""
    path = str(project / "a.py")
    base = tmp_path / "agents"
    _claude_call(base, project, path)
    db = tmp_path / "m.db"
    sync(base, db)
    stored = _spans(db)
    _append(_transcript(base),
            _edit_result("s1", "toolu_0_0", path, "stale_line()\n", "invented_line()\n", BEFORE, "x-r1"),
            _edit_result("s1", "toolu_0_0", str(project / "b.py"), "stale_line()\n", "value = parse(data)\n",
                         BEFORE, "x-r2"))
    sync(base, db)
    assert _spans(db) == stored


def test_a_claude_edit_result_twice_and_resynced_keeps_one_span_and_its_context(
        tmp_path: Path, project: Path) -> None:
    path = str(project / "a.py")
    base = tmp_path / "agents"
    _claude_call(base, project, path)
    db = tmp_path / "m.db"
    sync(base, db)
    result = _edit_result("s1", "toolu_0_0", path, "stale_line()\n", "value = parse(data)\n", BEFORE)
    _append(_transcript(base), result)
    sync(base, db)
    once = _spans(db)
    assert len(once) == 1 and once[0][4] == 2
    _append(_transcript(base), {**result, "uuid": "x-again"})
    sync(base, db)
    assert _spans(db) == once


def test_a_claude_edit_result_of_another_files_call_gives_it_no_context(tmp_path: Path, project: Path) -> None:
    """In one parse: a result naming the call but another file's originalFile gives the call no context."""
    path = str(project / "a.py")
    base = tmp_path / "agents"
    _claude_call(base, project, path)
    _append(_transcript(base), _edit_result("s1", "toolu_0_0", str(project / "b.py"), "stale_line()\n",
                                            "value = parse(data)\n", BEFORE))
    db = tmp_path / "m.db"
    sync(base, db)
    assert [row[4] for row in _spans(db)] == [0]


class _TooMuch(Exception):
    pass


def _line_events(files: tuple[str, ...], run: Callable[[], object], limit: int) -> int:
    """The line events ``run`` makes in the code of these files (its work there), past ``limit``: _TooMuch."""
    count = 0

    def local(frame: FrameType, event: str, arg: object) -> Any:
        nonlocal count
        if event == "line":
            count += 1
            if count > limit:
                raise _TooMuch
        return local

    def trace(frame: FrameType, event: str, arg: object) -> Any:
        return local if frame.f_code.co_filename in files else None

    sys.settrace(trace)
    threading.settrace(trace)   # the sync of the tests runs in a thread (support.sync)
    try:
        run()
    finally:
        sys.settrace(None)
        threading.settrace(None)  # type: ignore[arg-type]
    return count


def test_a_pi_patch_of_repeated_lines_is_read_in_bounded_work() -> None:
    """A patch of 50,000 ``}`` and a replaced text of 2,000: looking for the text in the patch is not
    50,000 × 2,000 comparisons."""
    patch = "@@ -1,50000 +1,50000 @@\n" + " }\n" * 50_000
    old = "}\n" * editspans.MAX_CALL_LINES
    events = _line_events((pi.__file__,), lambda: pi.kept_in_patch(patch, old), limit=5_000_000)
    assert events < 2_000_000
    # the text there once still gives its neighbours
    assert pi.kept_in_patch(" a()\n b()\n-gone()\n c()\n d()\n".replace(" a", "@@ -1 +1 @@\n a"),
                            "gone()\n") == (("a()", "b()"), ("c()", "d()"))


def _work(source: str, tmp_path: Path, project: Path, count: int) -> int:
    """The line events of the importer parsing one turn of ``count`` edits, each with its result."""
    base = tmp_path / f"{source}{count}"
    calls = []
    for c in range(count):
        old, new = f"stale_{c}()\n", f"value_{c} = parse(data)\n"
        original = f"setup_{c}()\n{old}shutdown_{c}()\n"
        if source == "claude":
            calls.append(("Edit", {"file_path": str(project / "a.py"), "old_string": old, "new_string": new,
                                   "_originalFile": original}))
        else:
            patch = f"@@ -1,3 +1,3 @@\n setup_{c}()\n-stale_{c}()\n+value_{c} = parse(data)\n shutdown_{c}()\n"
            calls.append(("edit", {"path": "a.py", "edits": [{"oldText": old, "newText": new}],
                                   "_result": "ok", "_details": {"patch": patch}}))
    (write_claude if source == "claude" else write_pi)(base, "s1", project, [("many edits", calls)])
    module = claude if source == "claude" else pi
    return _line_events((module.__file__, importers_base.__file__),
                        lambda: sync(base, tmp_path / f"{source}{count}.db"), limit=50_000_000)


@pytest.mark.parametrize("source", ["claude", "pi"])
def test_the_results_of_a_turns_many_edits_are_matched_in_linear_work(
        tmp_path: Path, project: Path, source: str) -> None:
    """Each result finds its call without looking at every edit of its turn (a turn may hold thousands)."""
    small, large = (_work(source, tmp_path, project, count) for count in (400, 1600))
    assert large < 5 * small, (small, large)


def _cpu(run: Callable[[], object]) -> float:
    """The least CPU time of five runs."""
    best = float("inf")
    for _ in range(5):
        start = time.process_time()
        run()
        best = min(best, time.process_time() - start)
    return best


def test_whether_a_claude_line_is_an_edit_result_is_decided_in_linear_work() -> None:
    """A line of 256 KiB repeating the head of an Edit result (and no ``originalFile``): deciding whether
    to parse it costs a few scans of the line (against one scan for the same text, same run), not one
    scan per repeat."""
    data = b'{"type":"user","toolUseResult":{"filePath":' * (256 * 1024 // 44)
    assert len(data) <= claude.EDIT_RESULT_MAX_BYTES
    line = Line(1, 0, len(data) + 1, data, data[:64])
    parser = claude.ClaudeParser.__new__(claude.ClaudeParser)
    assert parser.wants(line) is False
    reference = _cpu(lambda: re.search(rb'"originalFile"\s*:\s*"', data))
    assert _cpu(lambda: parser.wants(line)) < 50 * reference + 0.01


PI_PATCH = ("--- a.py\n+++ a.py\n@@ -1,3 +1,3 @@\n setup_logging(level)\n-stale_line()\n+value = parse(data)\n"
            " shutdown(server)\n")


def _context_rows(db: Path) -> list[tuple[Any, ...]]:
    """Every context row as what it says (ids aside): file, turn, call, hash, index."""
    conn = sqlite3.connect(db)
    try:
        return sorted(conn.execute(
            "SELECT f.path, s.turn_id, s.call_id, c.hash, c.pos FROM pimem_edit_context c "
            "JOIN pimem_edit_spans s USING (span_id) JOIN pimem_edit_files f ON f.path_id = s.path_id"))
    finally:
        conn.close()


def _with_results(base: Path, project: Path) -> None:
    path = str(project / "a.py")
    write_claude(base, "s1", project, [("parse it", [("Edit", {
        "file_path": path, "old_string": "stale_line()\n", "new_string": "value = parse(data)\n",
        "_originalFile": BEFORE})])])
    write_pi(base, "p1", project, [("parse it", [("edit", {
        "path": "b.py", "edits": [{"oldText": "stale_line()\n", "newText": "value = parse(data)\n"}],
        "_result": "ok", "_details": {"patch": PI_PATCH}})])])


def test_a_layout_8_store_is_migrated_and_parsed_again_to_the_context_of_a_fresh_import(
        tmp_path: Path, project: Path) -> None:
    from pimem.importers import RULES_VERSIONS
    from pimem.store import connect, set_meta, transaction
    from pimem.sync.rules import META_KEY
    base = tmp_path / "agents"
    _with_results(base, project)
    fresh, old = tmp_path / "fresh.db", tmp_path / "old.db"
    sync(base, fresh)
    sync(base, old)
    expected = _context_rows(fresh)
    assert {row[0] for row in expected} == {str(project / "a.py"), str(project / "b.py")}
    conn = connect(old)
    with transaction(conn):   # what layout 8 and the previous rules left
        conn.execute("DROP TABLE pimem_edit_context")
        set_meta(conn, "layout", "8")
        set_meta(conn, META_KEY, json.dumps({source: version - 1 for source, version in RULES_VERSIONS.items()}))
    conn.close()
    sync(base, old)
    assert _context_rows(old) == expected and _spans(old) == _spans(fresh)
    sync(base, old)
    assert _context_rows(old) == expected


def test_a_renamed_transcript_keeps_one_span_and_one_context_per_call(tmp_path: Path, project: Path) -> None:
    base = tmp_path / "agents"
    _with_results(base, project)
    db = tmp_path / "m.db"
    sync(base, db)
    spans, context = _spans(db), _context_rows(db)
    for transcript in [_transcript(base), *(base / "pi").rglob("*.jsonl")]:
        transcript.rename(transcript.with_name("renamed-" + transcript.name))
    sync(base, db)
    assert _spans(db) == spans and _context_rows(db) == context


def test_a_claude_edit_result_before_its_call_adds_no_second_span(tmp_path: Path, project: Path) -> None:
    path = str(project / "a.py")
    base = tmp_path / "agents"
    _claude_call(base, project, path)
    transcript = _transcript(base)
    lines = transcript.read_text(encoding="utf-8").splitlines(keepends=True)
    result = json.dumps(_edit_result("s1", "toolu_0_0", path, "stale_line()\n", "value = parse(data)\n", BEFORE))
    transcript.write_text("".join([lines[0], result + "\n", *lines[1:]]), encoding="utf-8")
    db = tmp_path / "m.db"
    sync(base, db)
    assert len(_spans(db)) == 1
