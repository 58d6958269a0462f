"""Round q8: hostile input against round 11's Pi views (what a session saw of a file, kept across its turns:
pimem.importers.pi ``shown_whole`` / ``patched``, EditCall.earlier, pimem.editspans.span_since). Each test
fails on main ``c0ef4c3``."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import pytest

from pimem import editspans
from pimem.importers.base import Chunk, feed_line
from pimem.importers.pi import PiParser, patched
from pimem.jsonl import LineReader
from support.edits import write_pi

SMALL = "import os\n\ndef run(data):\n    stale_line()\n    return data\n"
SMALL_EDITED = "import os\n\ndef run(data):\n    value = parse(data)\n    return data\n"
SMALL_PATCH = ("--- a.py\n+++ a.py\n@@ -1,5 +1,5 @@\n import os\n \n def run(data):\n-    stale_line()\n"
               "+    value = parse(data)\n     return data\n")
SMALL_WRITTEN = ("import os\n\ndef run(data):\n    value = parse(data)\n    log_value(value)\n    check_value(value)\n"
                 "    return data\n")


@pytest.fixture()
def project(tmp_path: Path) -> Path:
    folder = tmp_path / "proj"
    folder.mkdir()
    return folder


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
        ("parse it", [("edit", {"path": "a.py", "edits": [{"oldText": "stale_line()", "newText": "value = parse(data)"}],
                                "_result": "Successfully replaced 1 block(s) in a.py.",
                                "_details": {"patch": patch, "diff": "    ...\n"}})]),
    ])
    transcript = next((base / "pi").rglob("*.jsonl"))
    parser, chunk = PiParser(str(transcript), None), Chunk()
    with open(transcript, "rb") as handle:
        for line in LineReader(handle):
            feed_line(parser, line, chunk)
    assert chunk.bad_lines == 0
