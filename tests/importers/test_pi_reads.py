"""A Pi write after a read of the whole file in its turn (pimem.importers.pi, issue 23) on hostile and odd
input: the parser state another tool wrote, call ids and paths a store cannot hold, a read and a change of
the file in one message, Windows sessions. Each rule: a transcript (or state) and what the write carries."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from pimem import editspans
from pimem.importers.base import Chunk, EditCall, feed_line
from pimem.importers.pi import PiParser
from pimem.jsonl import LineReader
from support.sync import sync

BEFORE = "a = compute(one, two)\nb = compute(three, four)\n"
FIRST = BEFORE + "c = compute(five, six)\n"
SECOND = FIRST + "d = compute(seven, eight)\n"


class _Session:
    """A Pi v3 session, written compact as Pi writes it (its tool results are then pre-filtered)."""

    def __init__(self, cwd: str = "/proj") -> None:
        self.lines: list[dict[str, Any]] = [{"type": "session", "version": 3, "id": "s1",
                                             "timestamp": "2026-11-01T10:00:00.000Z", "cwd": cwd}]
        self.parent: str | None = None

    def _add(self, message: dict[str, Any]) -> _Session:
        entry = f"e{len(self.lines)}"
        self.lines.append({"type": "message", "id": entry, "parentId": self.parent,
                           "timestamp": f"2026-11-01T10:00:{len(self.lines):02d}.000Z", "message": message})
        self.parent = entry
        return self

    def user(self, text: str) -> _Session:
        return self._add({"role": "user", "content": text, "timestamp": 1793527200000 + len(self.lines)})

    def calls(self, *calls: tuple[str, str, dict[str, Any]]) -> _Session:
        return self._add({"role": "assistant", "content": [
            {"type": "toolCall", "id": call_id, "name": name, "arguments": arguments}
            for call_id, name, arguments in calls]})

    def result(self, call_id: str, name: str, text: str) -> _Session:
        return self._add({"role": "toolResult", "toolCallId": call_id, "toolName": name,
                          "content": [{"type": "text", "text": text}], "isError": False})

    def text(self) -> str:
        return "".join(json.dumps(line, separators=(",", ":")) + "\n" for line in self.lines)

    def write_under(self, base: Path) -> Path:
        target = base / "pi" / "agent" / "sessions" / "--proj--" / "2026-11-01T10-00-00-000Z_s1.jsonl"
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(self.text(), encoding="utf-8")
        return target


def _parse(session: _Session, tmp_path: Path) -> tuple[PiParser, Chunk]:
    """One parse of the whole session: the parser (its state) and what it gave."""
    transcript = tmp_path / "s.jsonl"
    transcript.write_text(session.text(), encoding="utf-8")
    parser, chunk = PiParser(str(transcript), None), Chunk()
    with open(transcript, "rb") as handle:
        for line in LineReader(handle):
            feed_line(parser, line, chunk)
    return parser, chunk


def _writes(session: _Session, tmp_path: Path) -> list[EditCall]:
    """The write calls one parse of the session gives, in order."""
    _parser, chunk = _parse(session, tmp_path)
    return [edit for delta in chunk.turns.values() for edit in delta.edits if edit.tool == "write"]


def _keys(text: str) -> tuple[int, ...]:
    keys = editspans.line_keys(text)
    assert keys is not None
    return tuple(keys)


# --- the saved state ------------------------------------------------------------------------------------

@pytest.mark.parametrize("known", [
    ["TURN", [1, "not a hash"]], ["TURN", [1, 1e400]], ["TURN", [1, {}]], ["TURN", [1, 2**70]],
])
def test_a_saved_state_whose_read_lines_are_not_hashes_costs_nothing(
        tmp_path: Path, known: Any) -> None:
    """The state a store holds may have been written by another tool (or damaged): what it says a read
    showed is used only when it is a list of line hashes of the turn; else it is forgotten, and the file
    is still read (before: every later sync of the file failed, its new turns never imported)."""
    base, db = tmp_path / "agents", tmp_path / "m.db"
    session = _Session().user("tidy").calls(("c1", "read", {"path": "f.py"})).result("c1", "read", BEFORE)
    session.write_under(base)
    assert not sync(base, db).issues
    conn = sqlite3.connect(db)
    state = json.loads(conn.execute("SELECT state FROM pimem_files").fetchone()[0])
    assert list(state["known"]) == ["/proj/f.py"]
    turn = state["known"]["/proj/f.py"][0]
    state["known"]["/proj/f.py"] = json.loads(json.dumps(known).replace('"TURN"', json.dumps(turn)))
    state["reads"] = {"c9": ["not", "a path"], "c8": "/proj/g.py"}
    with conn:
        conn.execute("UPDATE pimem_files SET state = ?", (json.dumps(state),))
    session.calls(("c2", "write", {"path": "f.py", "content": FIRST}))
    session.user("next").calls(("c3", "bash", {"command": "ls"}))
    session.write_under(base)
    assert [issue.error for issue in sync(base, db).issues] == []
    assert conn.execute("SELECT count(*) FROM turns").fetchone() == (2,)
    conn.close()


# --- what the state keeps of a transcript ----------------------------------------------------------------

def test_a_read_whose_call_id_a_store_cannot_hold_is_not_awaited(tmp_path: Path) -> None:
    """A call id with a lone surrogate (JSON allows "\\ud800") cannot be written to the store (UTF-8): the
    read is not awaited, and the session is imported (before: the id went to the saved state and every sync
    of the file failed, none of its turns stored)."""
    base, db = tmp_path / "agents", tmp_path / "m.db"
    session = _Session().user("tidy").calls(("c\ud800", "read", {"path": "f.py"}))
    session.result("c\ud800", "read", BEFORE).calls(("c2", "write", {"path": "f.py", "content": FIRST}))
    session.write_under(base)
    assert [issue.error for issue in sync(base, db).issues] == []
    conn = sqlite3.connect(db)
    assert conn.execute("SELECT user_text FROM turns").fetchall() == [("tidy",)]
    conn.close()
    # the read is not used
    assert [write.before for write in _writes(session, tmp_path)] == [None]


@pytest.mark.parametrize("field", ["id", "path"])
def test_the_saved_state_does_not_grow_with_the_length_of_call_ids_and_paths(tmp_path: Path, field: str) -> None:
    """The state is written again at every commit of the file: it keeps reads only by call ids a result's
    head can name and paths a file system can have (before: 32 read calls with 1 MB ids or paths made a
    32 MB state, rewritten at each append of one line)."""
    huge = "x" * 1_000_000
    session = _Session().user("read them")
    for k in range(40):
        call_id, path = (f"c{k}{huge}", f"f{k}.py") if field == "id" else (f"c{k}", f"f{k}{huge}.py")
        session.calls((call_id, "read", {"path": path})).result(call_id, "read", BEFORE)
    parser, _chunk = _parse(session, tmp_path)
    assert len(json.dumps(parser.state())) < len(huge)


def test_a_saved_state_larger_than_the_bounds_is_cut_to_them() -> None:
    """A state another tool wrote keeps no more than the parser itself would."""
    from pimem.importers.pi import MAX_KNOWN_FILES, MAX_PENDING_READS
    state = {"header": True, "version": 3,
             "reads": {f"c{k}": f"/proj/f{k}.py" for k in range(10_000)} | {"c" * 10_000: "/proj/g.py"},
             "known": {f"/proj/f{k}.py": ["e1", [k]] for k in range(10_000)} | {"/proj/g.py": ["e1", [0] * 100_000]}}
    saved = PiParser("s.jsonl", state).state()
    assert len(saved["reads"]) <= MAX_PENDING_READS and len(saved["known"]) <= MAX_KNOWN_FILES
    assert "c" * 10_000 not in saved["reads"] and "/proj/g.py" not in saved["known"]


# --- a read and a change of the file in one message --------------------------------------------------------

@pytest.mark.parametrize(("change", "expected"), [
    (("c2", "write", {"path": "f.py", "content": FIRST}), _keys(FIRST)),
    (("c2", "edit", {"path": "f.py", "edits": [{"oldText": "a = ", "newText": "z = "}]}), None),
    (("c2", "bash", {"command": "sed -i 's/a/z/' f.py"}), None),
], ids=["write", "edit", "bash"])
def test_a_read_in_the_message_that_changes_the_file_does_not_say_what_a_later_write_replaced(
        tmp_path: Path, change: tuple[str, str, dict[str, Any]], expected: tuple[int, ...] | None) -> None:
    """A model may call read and write (or edit, or a shell command naming the file) in one message: the
    read's result comes after the message, and shows the file before the change (or after it: the calls'
    order is not the results'). A later write in the turn replaced what the change left (the first write's
    text), never the read's (before: the result, parsed after the message, replaced what the write wrote)."""
    session = _Session().user("tidy").calls(("c1", "read", {"path": "f.py"}), change)
    session.result("c1", "read", BEFORE).result("c2", change[1], "ok")
    session.calls(("c3", "write", {"path": "f.py", "content": SECOND}))
    assert _writes(session, tmp_path)[-1].before == expected


@pytest.mark.parametrize("cwd", ["/proj", "C:\\Users\\me\\proj"], ids=["posix", "windows"])
def test_a_shell_command_naming_the_file_forgets_its_read_in_a_windows_session_too(tmp_path: Path, cwd: str) -> None:
    """Pi runs on Windows (its sessions' cwd ``C:\\…``): the file a read showed is known by its Windows path,
    whose name a shell command gives all the same (before: the whole path was taken for the name, so no
    command named it and the write was diffed against the file before the command changed it)."""
    session = _Session(cwd).user("tidy").calls(("c1", "read", {"path": "f.py"})).result("c1", "read", BEFORE)
    session.calls(("c2", "bash", {"command": "sed -i 's/a = /z = /' f.py"})).result("c2", "bash", "")
    session.calls(("c3", "write", {"path": "f.py", "content": FIRST}))
    assert [write.before for write in _writes(session, tmp_path)] == [None]
    # and with no command in between, the read is used, as on POSIX
    session = _Session(cwd).user("tidy").calls(("c1", "read", {"path": "f.py"})).result("c1", "read", BEFORE)
    session.calls(("c3", "write", {"path": "f.py", "content": FIRST}))
    assert [write.before for write in _writes(session, tmp_path)] == [_keys(BEFORE)]


@pytest.mark.parametrize(("shown", "written"), [("\ufeff" + BEFORE, FIRST), (BEFORE, "\ufeff" + FIRST)],
                         ids=["read-with-bom", "written-with-bom"])
def test_a_byte_order_mark_does_not_make_the_first_line_the_write_s(tmp_path: Path, shown: str, written: str) -> None:
    """A file that begins with a byte-order mark (U+FEFF), read by Pi and written back without it (or the
    other way round): its first line is the same line, not one the write added (before: the mark made the
    two first lines differ, and the write claimed the file's first line)."""
    session = _Session().user("tidy").calls(("c1", "read", {"path": "f.py"})).result("c1", "read", shown)
    session.calls(("c2", "write", {"path": "f.py", "content": written}))
    [write] = _writes(session, tmp_path)
    assert write.before is not None
    span = editspans.span_against(write.before, write.new)
    assert span is not None
    assert [key for _, key in span.added] == list(_keys("c = compute(five, six)\n"))
    assert span.removed == []
