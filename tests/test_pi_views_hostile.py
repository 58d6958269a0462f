"""Round q8: hostile input against round 11's Pi views (what a session saw of a file, kept across its turns:
pimem.importers.pi ``shown_whole`` / ``patched``, EditCall.earlier, pimem.editspans.span_since). Each test
fails on main ``c0ef4c3``."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

from pimem import editspans
from pimem.importers.base import Chunk, feed_line
from pimem.importers.pi import MAX_KNOWN_FILES, PiParser, patched
from pimem.jsonl import LineReader
from support.edits import write_pi
from support.sync import sync

SMALL = "import os\n\ndef run(data):\n    stale_line()\n    return data\n"
SMALL_EDITED = "import os\n\ndef run(data):\n    value = parse(data)\n    return data\n"
SMALL_PATCH = ("--- a.py\n+++ a.py\n@@ -1,5 +1,5 @@\n import os\n \n def run(data):\n-    stale_line()\n"
               "+    value = parse(data)\n     return data\n")
EDIT = {"oldText": "stale_line()", "newText": "value = parse(data)"}
SMALL_WRITTEN = ("import os\n\ndef run(data):\n    value = parse(data)\n    log_value(value)\n    check_value(value)\n"
                 "    return data\n")


def _span_rows(db: Path) -> list[tuple[Any, ...]]:
    """Every span with its lines and context, keyed by what a sync cannot renumber."""
    conn = sqlite3.connect(db)
    try:
        return sorted(conn.execute(
            "SELECT f.path, s.turn_id, s.tool, s.call_id, s.whole,"
            " (SELECT group_concat(hash || ':' || pos, ',') FROM (SELECT hash, pos FROM pimem_edit_lines l"
            "   WHERE l.span_id = s.span_id ORDER BY pos, hash)),"
            " (SELECT group_concat(hash || ':' || pos, ',') FROM (SELECT hash, pos FROM pimem_edit_context c"
            "   WHERE c.span_id = s.span_id ORDER BY pos, hash))"
            " FROM pimem_edit_spans s JOIN pimem_edit_files f USING (path_id)").fetchall())
    finally:
        conn.close()


def test_a_hunk_header_with_a_count_of_thousands_of_digits_applies_nowhere() -> None:
    """Python refuses int() of more than 4,300 digits (ValueError): a patch is a transcript's text."""
    huge = "9" * 5_000
    seen = editspans.line_keys(SMALL)
    assert patched(seen, SMALL_PATCH.replace("@@ -1,5 +1,5 @@", f"@@ -1,{huge} +1,5 @@")) is None
    assert patched(seen, SMALL_PATCH.replace("@@ -1,5 +1,5 @@", f"@@ -1,5 +1,{huge} @@")) is None


def test_a_pi_edit_result_whose_patch_has_a_huge_hunk_count_is_no_broken_line(
        tmp_path: Path, project: Path) -> None:
    """The result line is well-formed JSON of Pi's shape: it must not be counted broken (feed_line skips a
    line the parser raises ValueError on, and its tree node with it)."""
    base = tmp_path / "agents"
    patch = SMALL_PATCH.replace("@@ -1,5 +1,5 @@", "@@ -1," + "9" * 5_000 + " +1,5 @@")
    write_pi(base, "p1", project, [
        ("look", [("read", {"path": "a.py", "_result": SMALL})]),
        ("parse it", [("edit", {"path": "a.py", "edits": [EDIT],
                                "_result": "Successfully replaced 1 block(s) in a.py.",
                                "_details": {"patch": patch, "diff": "    ...\n"}})]),
    ])
    transcript = next((base / "pi").rglob("*.jsonl"))
    parser, chunk = PiParser(str(transcript), None), Chunk()
    with open(transcript, "rb") as handle:
        for line in LineReader(handle):
            feed_line(parser, line, chunk)
    assert chunk.bad_lines == 0


def test_an_edit_whose_result_a_later_sync_reads_gives_what_one_import_gives(tmp_path: Path, project: Path) -> None:
    """The session read a.py, edited it (its result's patch applies to the read: the session knows the file
    after the edit), then a later turn wrote it. Synced at every line of the transcript, the rows must be
    one import's: a sync between the edit call and its result must not lose what the session saw."""
    base = tmp_path / "agents"
    write_pi(base, "p1", project, [
        ("look", [("read", {"path": "a.py", "_result": SMALL})]),
        ("parse it", [("edit", {"path": "a.py", "edits": [EDIT],
                                "_result": "Successfully replaced 1 block(s) in a.py.",
                                "_details": {"patch": SMALL_PATCH, "diff": "    ...\n"}})]),
        ("log it", [("write", {"path": "a.py", "content": SMALL_WRITTEN, "_result": "ok"})]),
    ])
    whole = tmp_path / "whole.db"
    sync(base, whole)
    expected = _span_rows(whole)
    assert any(row[2] == "write" and not row[4] for row in expected)   # the write claimed its run
    transcript = next((base / "pi").rglob("*.jsonl"))
    lines = transcript.read_text(encoding="utf-8").splitlines(keepends=True)
    pieces = tmp_path / "pieces.db"
    for end in range(1, len(lines) + 1):
        transcript.write_text("".join(lines[:end]), encoding="utf-8")
        sync(base, pieces)
    assert _span_rows(pieces) == expected


def test_the_saved_state_keeps_the_views_of_few_awaited_edits_and_forgets_what_is_not_of_their_shape(
        tmp_path: Path) -> None:
    """A message of 20 edits of 20 files, each seen before, whose results a later sync reads: the state keeps
    every awaited edit (MAX_PENDING_READS) but the views of the latest MAX_KNOWN_FILES only (each up to
    MAX_CALL_LINES hashes). A state another tool wrote, with edits of other shapes, loads what is of its shape."""
    text = "".join(f"line_{k} = compute({k})\n" for k in range(1_500))
    parser = PiParser(str(tmp_path / "s.jsonl"), None)
    for k in range(20):
        parser._edits[f"call{k}"] = ("u0", f"/proj/f{k}.py", ("u0", text))
    state = parser.state()
    assert len(state["edits"]) == 20 and sum(v[2] is not None for v in state["edits"].values()) == MAX_KNOWN_FILES
    again = PiParser(str(tmp_path / "s.jsonl"), state)
    assert [key for key, (_, _, view) in again._edits.items() if view is not None] == [
        f"call{k}" for k in range(20 - MAX_KNOWN_FILES, 20)]
    odd = {"edits": {"a": ["u0", "/p.py", ["u0", ["x"]]], "b": "no", "c": ["u0", 5, None], "d": ["u0", "", None],
                     "e" * 500: ["u0", "/p.py", None]}}
    loaded = PiParser(str(tmp_path / "s.jsonl"), odd)._edits
    assert loaded == {"a": ("u0", "/p.py", None), "d": ("u0", "", None)}
