"""pimem/lineHistory end to end over stdio: the service's answer (pimem.lineblame; its rules are in
tests/test_lineblame.py) for a buffer, a range and the file on disk, a line of each agent, and bad params."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from pygls.exceptions import JsonRpcInvalidParams

from pimem import lineblame, wire
from pimem.lineblame import line_history
from pimem.lsp import methods
from pimem.lsp.lines import line_history_params
from pimem.lsp.params import ParamsError
from pimem.store import connect
from support.edits import write_claude, write_codex, write_pi

from .conftest import request, session
from .test_server import plain, wait_synced

pytestmark = [pytest.mark.e2e, pytest.mark.asyncio]

CLAUDE = "def load_config(path):\n    with open(path) as handle:\n        return parse_config(handle.read())\n"
PI = "def save_config(path, config):\n    text = render_config(config)\n    write_atomically(path, text)\n"
CODEX = "def check_config(config):\n    missing = required_keys() - set(config)\n    return sorted(missing)\n"
HUMAN = "# the person's notes about configuration files\nVERSION_OF_THE_FORMAT = 3\n"


def _history(base: Path, project: Path) -> Path:
    path = project / "config.py"
    write_claude(base, "c1", project, [("load the config file", [("Write", {"file_path": str(path),
                                                                             "content": CLAUDE})])])
    write_pi(base, "p1", project, [("and save it", [("edit", {"path": "config.py", "edits": [
        {"oldText": CLAUDE, "newText": CLAUDE + "\n" + PI}]})])], minute=10)
    write_codex(base, "01a22bd8-0000-7000-8000-0000000000c0", project, [("validate it", [
        "*** Begin Patch\n*** Update File: config.py\n@@\n" + "".join(f"+{line}\n" for line in
                                                                      ("", *CODEX.splitlines())) +
        "*** End Patch\n"])], minute=20)
    path.write_text(HUMAN + CLAUDE + "\n" + PI + "\n" + CODEX, encoding="utf-8")
    return path


async def test_line_history_answers_as_the_service(tmp_path: Path) -> None:
    base = tmp_path / "home"
    project = tmp_path / "project"
    project.mkdir()
    path = _history(base, project)
    text = path.read_text(encoding="utf-8")
    async with session(base) as (client, recorder):
        await wait_synced(recorder)
        conn = connect(base / "memory.db", for_writing=False)
        whole = plain(await request(client, methods.LINE_HISTORY, {"uri": path.as_uri(), "text": text}))
        assert whole == wire.line_history(line_history(conn, str(path), text))
        prompts = {line["line"]: (line["source"], line["prompt"]) for line in whole["lines"]}
        assert prompts == {**{n: ("claude", "load the config file") for n in (2, 3, 4)},   # none of lines 0-1
                           **{n: ("pi", "and save it") for n in (5, 6, 7, 8)},      # 5: the blank line Pi wrote
                           **{n: ("codex", "validate it") for n in (9, 10, 11, 12)}}
        assert whole["path"] == str(path) and whole["gitUsed"] is False
        # the file on disk when no text is sent; a range of lines, its end at column 0 left out
        assert plain(await request(client, methods.LINE_HISTORY, {"uri": str(path)})) == whole
        part = plain(await request(client, methods.LINE_HISTORY, {
            "uri": path.as_uri(), "text": text,
            "range": {"start": {"line": 3, "character": 4}, "end": {"line": 7, "character": 0}}}))
        assert [line["line"] for line in part["lines"]] == [3, 4, 5, 6]
        # an unsaved buffer: the person's new line is not attributed, the rest moved down by one
        edited = text.replace("    text = render_config", "    log_config(config)\n    text = render_config")
        moved = plain(await request(client, methods.LINE_HISTORY, {
            "uri": path.as_uri(), "text": edited, "range": {"start": {"line": 7, "character": 0},
                                                             "end": {"line": 8, "character": 3}}}))
        assert [(line["line"], line["source"]) for line in moved["lines"]] == [(8, "pi")]
        conn.close()


INVALID: list[tuple[Any, str]] = [
    ({}, "uri"),
    ({"uri": "config.py"}, "uri"),
    ({"uri": "http://example.com/config.py"}, "uri"),
    ({"uri": "file://[abc/config.py"}, "uri"),                         # urlparse: Invalid IPv6 URL
    ({"uri": "/" + "x" * 4096}, "uri"),
    ({"uri": "/tmp/a.py", "text": 5}, "text"),
    ({"uri": "/tmp/a.py", "text": "", "range": [0, 1]}, "range"),
    ({"uri": "/tmp/a.py", "text": "", "range": {"start": {"line": -1, "character": 0},
                                                "end": {"line": 1, "character": 0}}}, "range"),
    ({"uri": "/tmp/a.py", "text": "", "range": {"start": {"line": 5, "character": 0},
                                                "end": {"line": 1, "character": 0}}}, "range"),
    ({"uri": "/tmp/a.py", "text": "", "range": {"start": {"line": 0, "character": 0},
                                                "end": {"line": 20_001, "character": 0}}}, "range"),
    ({"uri": "/tmp/pimem-no-such-dir/a.py"}, "uri"),                   # no text, and the file cannot be read
    ([], "params"),
]


async def test_bad_params_get_invalid_params_naming_the_field(tmp_path: Path) -> None:
    async with session(tmp_path, options={"autoSync": False}) as (client, _):
        for params, field in INVALID:
            with pytest.raises(JsonRpcInvalidParams) as error:
                await request(client, methods.LINE_HISTORY, params)
            message = str(error.value)
            assert methods.LINE_HISTORY in message and field in message and "\n" not in message, (params, message)


async def test_a_text_over_the_bound_is_refused_by_name() -> None:
    """Over 8 MB (UTF-8): InvalidParams naming "text" (a message that large is already refused by the
    transport's 4 MiB cap, docs/lsp-extensions.md; the decoder says it for any other caller)."""
    with pytest.raises(ParamsError) as error:
        line_history_params({"uri": "/tmp/a.py", "text": "é" * (4 * 1024 * 1024 + 1)})
    assert error.value.field == "text"
    assert line_history_params({"uri": "file:///tmp/a.py", "text": "é" * 1000}).path == "/tmp/a.py"


async def test_no_range_is_the_first_lines_whatever_ends_them(tmp_path: Path) -> None:
    """No range: the document's first MAX_RANGE_LINES lines (docs/lsp-extensions.md), counted as lines
    are counted everywhere (``\\r`` ends one too): a buffer of ``\\r`` line ends is not answered whole."""
    base = tmp_path / "home"
    project = tmp_path / "project"
    project.mkdir()
    path = _history(base, project)
    lines = [f"note_{k} = {k}" for k in range(lineblame.MAX_RANGE_LINES)] + CLAUDE.splitlines()
    async with session(base) as (client, recorder):
        await wait_synced(recorder)
        for end in ("\n", "\r"):
            found = plain(await request(client, methods.LINE_HISTORY, {"uri": path.as_uri(),
                                                                       "text": end.join(lines) + end}))
            assert found["lines"] == [], end
        # the same lines within the first MAX_RANGE_LINES are answered
        found = plain(await request(client, methods.LINE_HISTORY, {"uri": path.as_uri(),
                                                                   "text": "\r".join(lines[-10:]) + "\r"}))
        assert len(found["lines"]) == 3
