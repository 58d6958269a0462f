"""The ``line_history`` agent tool (issue 23): pimem.lineblame's answer with 1-based lines, redacted,
its arguments validated by name, Markdown safe to show."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from pimem import wire
from pimem.agent_tools import ToolInputError, decode_call
from pimem.lineblame import line_history
from pimem.store import connect
from support.edits import write_claude
from support.sync import sync

SECRET = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"
CODE = "def rotate_token(store):\n    fresh = issue_token()\n    store.replace(fresh)\n"


def _memory(tmp_path: Path) -> tuple[Path, Path]:
    project = tmp_path / "project"
    project.mkdir()
    path = project / "tokens.py"
    write_claude(tmp_path / "home", "s1", project, [(f"rotate the token \x1b[2J {SECRET} daily", [
        ("Write", {"file_path": str(path), "content": CODE})])])
    db = tmp_path / "m.db"
    sync(tmp_path / "home", db)
    path.write_text("# mine\n" + CODE, encoding="utf-8")
    return db, path


def test_line_history_tool(tmp_path: Path) -> None:
    db, path = _memory(tmp_path)
    conn = connect(db, for_writing=False)
    raw = decode_call("line_history", {"path": str(path)}, redact_secrets=False).run(conn)
    expected = wire.line_history(line_history(conn, str(path), path.read_text(encoding="utf-8")))
    assert [line["line"] for line in expected["lines"]] == [1, 2, 3]
    [run] = raw.structured["runs"]           # one run, 1-based, the service's fields
    first = expected["lines"][0]
    assert run == {"startLine": 2, "endLine": 4, **{key: value for key, value in first.items()
                                                    if key not in ("line", "editStartLine")}}
    assert raw.structured["attributedLines"] == 3 and raw.structured["path"] == str(path)
    assert SECRET in run["prompt"]
    masked = decode_call("line_history", {"path": str(path), "startLine": 3, "endLine": 3}).run(conn)
    [run] = masked.structured["runs"]
    assert (run["startLine"], run["endLine"]) == (3, 3)
    assert SECRET not in run["prompt"] and "[REDACTED:github-token]" in run["prompt"]
    assert "lines 2-4 · claude" in raw.markdown and "\x1b" not in raw.markdown and SECRET not in masked.markdown
    none = decode_call("line_history", {"path": str(path), "endLine": 1}).run(conn)
    assert none.structured["runs"] == [] and "No line" in none.markdown
    conn.close()


BAD: list[tuple[Any, str]] = [
    ({}, "path"),
    ({"path": "relative.py"}, "path"),
    ({"path": "/x" * 3000}, "path"),
    ({"path": "/tmp/a.py", "startLine": 0}, "startLine"),
    ({"path": "/tmp/a.py", "startLine": 5, "endLine": 4}, "endLine"),
    ({"path": "/tmp/a.py", "startLine": 1, "endLine": 2001}, "endLine"),
    ({"path": "/tmp/a.py", "line": 3}, "line"),
]


@pytest.mark.parametrize(("arguments", "field"), BAD)
def test_bad_arguments_name_the_field(arguments: Any, field: str) -> None:
    with pytest.raises(ToolInputError) as error:
        decode_call("line_history", arguments)
    assert error.value.field == field


def test_an_unreadable_file_names_the_path(tmp_path: Path) -> None:
    conn = connect(tmp_path / "m.db")
    with pytest.raises(ToolInputError) as error:
        decode_call("line_history", {"path": str(tmp_path / "none.py")}).run(conn)
    assert error.value.field == "path" and "cannot be read" in str(error.value)
