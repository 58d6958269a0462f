"""Issue 10, item 6: request and answer size limits, enforced by the recall service.

The limits are documented in docs/lsp-extensions.md ("Limits"); the CLI and the language server share
them because pimem.recall checks them (the LSP side is tests/lsp/test_limits.py). The time and memory
figures before and after are from bench/limits.py, not from these tests.
"""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from pimem import wire
from pimem.recall import (
    MAX_ENTITIES,
    MAX_ENTITY_CHARS,
    MAX_PATH_CHARS,
    MAX_TEXT_CHARS,
    MAX_TURN_ID_CHARS,
    TEXT_CUT_CHARS,
    TOOL_NAME_CUT_CHARS,
    TOOL_NAMES_CUT,
    RecallError,
    candidates,
    check_turn_id,
    get_turn,
    make_query,
    recall,
    recall_scan,
)
from pimem.recall.format import format_markdown
from pimem.recall.freetext import MAX_TERM_CHARS, parse_text
from pimem.store import SessionRow, connect, encode_tool_names, transaction, upsert_session
from support.env import env_for

CLAUDE_ID = "1ed4dd9a-5989-4487-9ac3-d2b870816ee8"


def add_turn(conn: sqlite3.Connection, turn_id: str, user: str, reply: str, *, session: str = "pi:s",
             cwd: str = "/w", path: str = "/w/s.jsonl", tools: list[str] | None = None, ts: int = 1000) -> None:
    """A turn as the Pi extension writes one (no index entry: recall scans it)."""
    with transaction(conn):
        upsert_session(conn, SessionRow(session, session.split(":")[0], cwd, 0, None, path))
        conn.execute(
            "INSERT INTO turns (turn_id, session_id, turn_index, ts, user_text, reply_text, tool_names, "
            "user_message_id) VALUES (?, ?, 0, ?, ?, ?, ?, ?)",
            (turn_id, session, ts, user, reply, encode_tool_names(tools or []), turn_id))


def field_of(call: object) -> str:
    with pytest.raises(RecallError) as caught:
        call()  # type: ignore[operator]
    return caught.value.field


# ---------------------------------------------------------------------------------------------
# Request limits
# ---------------------------------------------------------------------------------------------

def test_entity_length_is_limited() -> None:
    assert make_query(["x" * MAX_ENTITY_CHARS]).entities == ("x" * MAX_ENTITY_CHARS,)
    assert field_of(lambda: make_query(["ok", "x" * (MAX_ENTITY_CHARS + 1)])) == "entities"
    with pytest.raises(RecallError, match=r"entities\[1\] is longer than 1000 characters \(1001\)"):
        make_query(["ok", "x" * (MAX_ENTITY_CHARS + 1)])


def test_text_length_is_limited_and_long_words_are_no_terms() -> None:
    assert [candidate.term for candidate in parse_text("flamingo " * (MAX_TEXT_CHARS // 9))] == ["flamingo"]
    assert field_of(lambda: parse_text("a" * (MAX_TEXT_CHARS + 1))) == "text"
    assert field_of(lambda: parse_text(17)) == "text"
    assert field_of(lambda: parse_text("! ? ,")) == "text"
    blob = "Z" * (MAX_TERM_CHARS + 1)   # a blob without spaces (base64, minified code) is no term
    assert [candidate.term for candidate in parse_text(f"see {blob} flamingo")] == ["see", "flamingo"]


def test_cwd_and_turn_id_lengths_are_limited() -> None:
    assert make_query(["x"], cwd="/" + "d" * (MAX_PATH_CHARS - 1)).cwd is not None
    assert field_of(lambda: make_query(["x"], cwd="/" + "d" * MAX_PATH_CHARS)) == "cwd"
    assert check_turn_id("t" * MAX_TURN_ID_CHARS) == "t" * MAX_TURN_ID_CHARS
    for bad in ("t" * (MAX_TURN_ID_CHARS + 1), "", "  ", None, 5, ["x"]):
        assert field_of(lambda bad=bad: check_turn_id(bad)) == "turnId"


def test_a_long_entity_asks_the_index_about_a_bounded_number_of_trigrams(db_path: Path) -> None:
    """A 1 MB entity took 19 s (bench/limits.py): every distinct trigram was counted in both indexes."""
    from pimem import index
    conn = connect(db_path)
    add_turn(conn, "pi:s:1", "a prompt", "a reply")
    with transaction(conn):
        index.catch_up(conn)
    index.build_pending(conn)
    assert index.fts_enabled(conn)
    counts: list[str] = []
    conn.set_trace_callback(lambda sql: counts.append(sql) if "count(*)" in sql and "MATCH" in sql else None)
    entity = "".join(chr(0x4E00 + i) for i in range(MAX_ENTITY_CHARS))  # 998 distinct trigrams
    assert recall(conn, make_query([entity])) == []
    assert 0 < len(counts) <= 2 * candidates._TRIGRAMS_COUNTED


# ---------------------------------------------------------------------------------------------
# Answer limits
# ---------------------------------------------------------------------------------------------

def test_long_fields_are_cut_with_a_flag_and_the_whole_turn_is_on_demand(db_path: Path) -> None:
    conn = connect(db_path)
    long_user, long_reply = "quokka " + "u" * 300_000, "quokka " + "r" * 5_000_000
    add_turn(conn, "pi:s:long", long_user, long_reply, ts=2000)
    add_turn(conn, "pi:s:short", "quokka short", "a short reply", ts=1000)
    rows = recall(conn, make_query(["quokka"]))
    assert [row.turn_id for row in rows] == ["pi:s:long", "pi:s:short"]
    cut, whole = wire.recall_row(rows[0]), wire.recall_row(rows[1])
    assert cut["truncated"] is True and whole["truncated"] is False
    assert cut["userText"] == long_user[:TEXT_CUT_CHARS] and cut["replyText"] == long_reply[:TEXT_CUT_CHARS]
    assert whole["userText"] == "quokka short" and whole["replyText"] == "a short reply"

    turn = get_turn(conn, "pi:s:long")
    assert turn is not None
    full = wire.turn_row(turn)
    assert full["userText"] == long_user and full["replyText"] == long_reply
    assert "hits" not in full and "truncated" not in full and "matched" not in full
    assert set(full) == set(cut) - {"hits", "truncated", "matched"}
    assert get_turn(conn, "pi:s:nothing") is None


def test_an_answer_of_rows_crafted_at_every_limit_stays_bounded(db_path: Path) -> None:
    """Every string a row holds comes from a transcript: each one is cut. The bound documented in
    docs/lsp-extensions.md (2.6 million characters for 50 rows) holds for the worst rows there are:
    45 Claude rows whose cwd is a 4,096-character path of quotes (the longest resume command) and 5
    rows whose ids and paths are far past their limits."""
    conn = connect(db_path)
    huge = "quokka " + "\"'" * 500_000
    tools = [f"tool{n}-" + "n" * 500 for n in range(100)]
    for n in range(45):
        session = f"claude:{CLAUDE_ID[:-2]}{n:02d}"
        add_turn(conn, f"{session}:m", huge, huge, session=session, cwd="/" + "'" * (MAX_PATH_CHARS - 1),
                 path="/" + "'" * (MAX_PATH_CHARS - 1), tools=tools, ts=n)
    for n in range(5):
        session = f"pi:{n}{'i' * 5000}"
        add_turn(conn, f"{session}:{'m' * 5000}", huge, huge, session=session, cwd="/" + "c" * 10_000,
                 path="/" + "p" * 10_000, tools=tools, ts=100 + n)
    query = make_query(["quokka"], limit=50)
    rows = recall(conn, query)
    assert len(rows) == 50 and all(row.truncated for row in rows)
    answer = {"entities": list(query.entities), "results": [wire.recall_row(row) for row in rows],
              "markdown": format_markdown(rows)}

    def characters(value: object) -> int:
        if isinstance(value, str):
            return len(value)
        if isinstance(value, dict):
            return sum(len(key) + characters(item) for key, item in value.items())
        if isinstance(value, list):
            return sum(characters(item) for item in value)
        return 0

    longest_entities = MAX_ENTITIES * MAX_ENTITY_CHARS  # what "entities" echoes at most
    total = characters(answer) + longest_entities
    print(f"worst 50-row answer: {total:,} characters, {len(json.dumps(answer).encode()):,} bytes of JSON")
    assert total < 2_600_000
    for result in answer["results"]:
        assert len(result["userText"]) == len(result["replyText"]) == TEXT_CUT_CHARS
        assert len(result["toolNames"]) == TOOL_NAMES_CUT
        assert all(len(name) <= TOOL_NAME_CUT_CHARS for name in result["toolNames"])
        assert len(result["cwd"]) <= MAX_PATH_CHARS and len(result["jsonlPath"]) <= MAX_PATH_CHARS
        assert len(result["turnId"]) <= MAX_TURN_ID_CHARS and len(result["sessionId"]) <= MAX_TURN_ID_CHARS
    claude_rows = [r for r in answer["results"] if r["source"] == "claude"]
    assert all(r["resumeCommand"] and r["resumeCommand"].startswith("cd -- ") for r in claude_rows)
    assert all(r["resumeCommand"] is None for r in answer["results"] if r["source"] == "pi")
    assert rows == recall_scan(conn, query)


# ---------------------------------------------------------------------------------------------
# The CLI: exit 2 and one line for a request over a limit; `pimem show` prints a whole turn
# ---------------------------------------------------------------------------------------------

def pimem(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "pimem", *args], env=env, capture_output=True, text=True,
                          timeout=120, check=False)


def test_cli_refuses_oversized_requests_and_shows_whole_turns(tmp_path: Path) -> None:
    db = tmp_path / "memory.db"
    env = env_for(tmp_path / "no-history", db)
    conn = connect(db)
    long_reply = "quokka " + "r" * 50_000
    add_turn(conn, f"claude:{CLAUDE_ID}:m1", "quokka question", long_reply, session=f"claude:{CLAUDE_ID}",
             cwd="/home/me/alpha")
    conn.close()

    too_long = pimem(env, "recall", "x" * (MAX_ENTITY_CHARS + 1))
    assert too_long.returncode == 2 and too_long.stdout == ""
    assert too_long.stderr == "pimem recall: entities[0] is longer than 1000 characters (1001)\n"
    assert pimem(env, "recall", "quokka", "--cwd", "/" + "d" * MAX_PATH_CHARS).returncode == 2
    bad_id = pimem(env, "show", "t" * (MAX_TURN_ID_CHARS + 1))
    assert bad_id.returncode == 2 and bad_id.stderr.count("\n") == 1 and "turnId" in bad_id.stderr

    rows = json.loads(pimem(env, "recall", "quokka", "--json").stdout)
    assert rows[0]["truncated"] is True and len(rows[0]["replyText"]) == TEXT_CUT_CHARS
    text = pimem(env, "recall", "quokka").stdout
    assert f"Turn: claude:{CLAUDE_ID}:m1" in text and f"pimem show claude:{CLAUDE_ID}:m1" in text

    shown = pimem(env, "show", f"claude:{CLAUDE_ID}:m1")
    assert shown.returncode == 0 and long_reply in shown.stdout
    assert f"Resume: cd -- /home/me/alpha && claude --resume {CLAUDE_ID}" in shown.stdout
    exact = json.loads(pimem(env, "show", f"claude:{CLAUDE_ID}:m1", "--json").stdout)
    assert exact["replyText"] == long_reply and exact["turnId"] == f"claude:{CLAUDE_ID}:m1"
    missing = pimem(env, "show", "claude:nothing:here")
    assert missing.returncode == 1 and missing.stderr == "pimem show: no turn 'claude:nothing:here' in the store\n"
