"""The agent tools as a service (pimem.agent_tools, pimem.sessions): validation of every bound, the
same rows as `pimem recall --json`, session windows, redaction, and Markdown that is safe to show."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from pimem import agent_tools
from pimem.agent_tools import TOOLS, ToolInputError, ToolOutput, decode_call
from pimem.redact import redact_value
from pimem.sessions import SessionError, read_window
from pimem.store import connect, transaction

from .conftest import Memory, make_memory
from .history import ENTITY, PLANTED_SECRETS, TURNS


@pytest.fixture
def conn(memory: Memory) -> Iterator[Any]:
    connection = connect(memory.db)
    yield connection
    connection.close()


def call(conn: Any, name: str, arguments: object, redact: bool = True) -> ToolOutput:
    return decode_call(name, arguments, redact_secrets=redact).run(conn)


def cli_view(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{key: value for key, value in row.items() if key != "resumeCommand"} for row in rows]


QUERIES = [
    ({"entities": ["flamingo"]}, ["flamingo"]),
    ({"entities": ["flamingo", "cache"], "limit": 20}, ["flamingo", "cache", "--limit", "20"]),
    ({"entities": ["锁"], "limit": 2}, ["锁", "--limit", "2"]),
    ({"entities": ["payroll"], "sources": ["codex", "pi"]}, ["payroll", "--source", "codex", "--source", "pi"]),
    ({"entities": ["flamingo"], "cwd": "/tmp/pimem-demo/webshop", "limit": 3},
     ["flamingo", "--cwd", "/tmp/pimem-demo/webshop", "--limit", "3"]),
    ({"entities": [ENTITY, "deploy"]}, [ENTITY, "deploy"]),
    ({"entities": ["no-such-word-anywhere"]}, ["no-such-word-anywhere"]),
]


@pytest.mark.parametrize(("arguments", "cli_args"), QUERIES, ids=[" ".join(q[1]) for q in QUERIES])
def test_recall_rows_are_the_cli_rows_in_the_same_order(memory: Memory, conn: Any, arguments: dict[str, Any],
                                                        cli_args: list[str]) -> None:
    expected = cli_view(memory.cli_recall(*cli_args))
    raw = call(conn, "recall_memory", arguments, redact=False)
    assert raw.structured == {"results": expected}
    masked = call(conn, "recall_memory", arguments)
    assert masked.structured == {"results": redact_value(expected)}
    if arguments["entities"] != ["no-such-word-anywhere"]:
        assert expected, "the query should find something"


def test_recall_masks_the_planted_secrets_and_keeps_the_turn(memory: Memory, conn: Any) -> None:
    output = call(conn, "recall_memory", {"entities": [ENTITY]})
    rows = output.structured["results"]
    assert [row["turnId"] for row in rows] == [memory.planted.turn_ids[1]]
    text = rows[0]["userText"] + rows[0]["replyText"]
    assert "deploy fails with 403 Forbidden" in text and "Fixed: the 403 is gone." in text
    for kind in ("aws-access-key-id", "github-token", "private-key", "password", "url-password", "jwt", "openai-key"):
        assert f"[REDACTED:{kind}]" in text
    for secret in PLANTED_SECRETS:
        assert secret not in output.markdown
        assert secret not in repr(output.structured)
    # The store keeps the raw text (it is shared with the Pi extension).
    stored = conn.execute("SELECT user_text || reply_text FROM turns WHERE turn_id = ?",
                          (rows[0]["turnId"],)).fetchone()
    assert all(secret in stored[0] for secret in PLANTED_SECRETS)


def test_no_redaction_when_turned_off(conn: Any) -> None:
    output = call(conn, "recall_memory", {"entities": [ENTITY]}, redact=False)
    assert all(secret in repr(output.structured) for secret in PLANTED_SECRETS)
    assert "[REDACTED:" not in output.markdown


BAD_RECALL = [
    ({}, "entities"),
    ({"entities": []}, "entities"),
    ({"entities": [f"w{i}" for i in range(9)]}, "entities"),
    ({"entities": ["ok", "  "]}, "entities"),
    ({"entities": [" "], "limit": 0}, "entities"),
    ({"entities": "flamingo"}, "entities"),
    ({"entities": [3]}, "entities"),
    ({"entities": ["x"], "limit": 0}, "limit"),
    ({"entities": ["x"], "limit": 21}, "limit"),
    ({"entities": ["x"], "limit": "5"}, "limit"),
    ({"entities": ["x"], "limit": 2.5}, "limit"),
    ({"entities": ["x"], "limit": True}, "limit"),
    ({"entities": ["x"], "sources": ["vim"]}, "sources"),
    ({"entities": ["x"], "sources": "pi"}, "sources"),
    ({"entities": ["x"], "cwd": ""}, "cwd"),
    ({"entities": ["x"], "cwd": 7}, "cwd"),
    ({"entities": ["x"], "query": "what did we do"}, "query"),
    (["flamingo"], "arguments"),
]


@pytest.mark.parametrize(("arguments", "field"), BAD_RECALL, ids=[repr(a)[:60] for a, _ in BAD_RECALL])
def test_bad_recall_arguments_name_the_field(arguments: object, field: str) -> None:
    with pytest.raises(ToolInputError) as raised:
        decode_call("recall_memory", arguments)
    assert raised.value.field == field
    assert f'"{field}"' in str(raised.value)
    assert "\n" not in str(raised.value)


BAD_SESSION = [
    ({}, "sessionId"),
    ({"sessionId": ""}, "sessionId"),
    ({"sessionId": 5}, "sessionId"),
    ({"sessionId": "pi:x", "turnId": " "}, "turnId"),
    ({"sessionId": "pi:x", "before": -1}, "before"),
    ({"sessionId": "pi:x", "before": 21}, "before"),
    ({"sessionId": "pi:x", "after": 100}, "after"),
    ({"sessionId": "pi:x", "after": "2"}, "after"),
    ({"sessionId": "pi:x", "around": 2}, "around"),
]


@pytest.mark.parametrize(("arguments", "field"), BAD_SESSION, ids=[repr(a)[:60] for a, _ in BAD_SESSION])
def test_bad_read_session_arguments_name_the_field(arguments: object, field: str) -> None:
    with pytest.raises(ToolInputError) as raised:
        decode_call("read_session", arguments)
    assert raised.value.field == field


def test_unknown_session_or_turn_is_an_input_error(memory: Memory, conn: Any) -> None:
    with pytest.raises(ToolInputError) as raised:
        call(conn, "read_session", {"sessionId": "pi:nope"})
    assert raised.value.field == "sessionId"
    other_session_turn = call(conn, "recall_memory", {"entities": ["flamingo"]}).structured["results"][0]["turnId"]
    with pytest.raises(ToolInputError) as raised:
        call(conn, "read_session", {"sessionId": memory.planted.session_id, "turnId": other_session_turn})
    assert raised.value.field == "turnId"


def test_unknown_tool_names_the_tool() -> None:
    with pytest.raises(ToolInputError) as raised:
        decode_call("forget_everything", {})
    assert raised.value.field == "name"


@pytest.mark.parametrize(("position", "before", "after", "expected"), [
    (1, 2, 2, [0, 1, 2]), (1, 0, 0, [1]), (1, 1, 0, [0, 1]), (0, 2, 1, [0, 1]), (2, 1, 5, [1, 2]),
])
def test_read_session_window_around_a_turn(memory: Memory, conn: Any, position: int, before: int, after: int,
                                           expected: list[int]) -> None:
    turn_id = memory.planted.turn_ids[position]
    output = call(conn, "read_session", {"sessionId": memory.planted.session_id, "turnId": turn_id,
                                         "before": before, "after": after}, redact=False)
    view = output.structured
    assert [turn["turnId"] for turn in view["turns"]] == [memory.planted.turn_ids[i] for i in expected]
    assert [turn["userText"] for turn in view["turns"]] == [TURNS[i][0] for i in expected]
    assert view["firstPosition"] == expected[0] and view["turnCount"] == len(TURNS)
    assert view["sessionId"] == memory.planted.session_id and view["source"] == "pi"
    assert all("hits" not in turn and "resumeCommand" not in turn for turn in view["turns"])


def test_read_session_without_turn_starts_at_the_first_turn(memory: Memory, conn: Any) -> None:
    view = call(conn, "read_session", {"sessionId": memory.planted.session_id, "after": 1}).structured
    assert [turn["turnId"] for turn in view["turns"]] == memory.planted.turn_ids[:2]
    assert "[REDACTED:aws-access-key-id]" in view["turns"][1]["userText"]
    assert all(secret not in repr(view) for secret in PLANTED_SECRETS)


def test_session_turns_have_the_fields_of_recall_rows(memory: Memory, conn: Any) -> None:
    row = call(conn, "recall_memory", {"entities": [ENTITY]}).structured["results"][0]
    turn = call(conn, "read_session", {"sessionId": row["sessionId"], "turnId": row["turnId"], "before": 0,
                                       "after": 0}).structured["turns"][0]
    assert turn == {key: value for key, value in row.items() if key not in ("hits", "matched")}


def test_sessions_service_orders_by_turn_index(tmp_path: Any) -> None:
    memory = make_memory(tmp_path)
    conn = connect(memory.db)
    try:
        # Reverse the display order: the window must follow turn_index, not insertion or time.
        with transaction(conn):
            for index, turn_id in enumerate(reversed(memory.planted.turn_ids)):
                conn.execute("UPDATE turns SET turn_index = ? WHERE turn_id = ?", (index, turn_id))
        window = read_window(conn, memory.planted.session_id, memory.planted.turn_ids[2], before=1, after=1)
        assert [row.turn_id for row in window.turns] == memory.planted.turn_ids[2::-1][:2]
        assert window.first_position == 0 and window.more_after and not window.more_before
        with pytest.raises(SessionError):
            read_window(conn, "pi:missing")
    finally:
        conn.close()


def test_markdown_shows_control_characters_as_text(tmp_path: Any) -> None:
    memory = make_memory(tmp_path)
    conn = connect(memory.db)
    try:
        with transaction(conn):
            conn.execute("UPDATE turns SET user_text = ? WHERE turn_id = ?",
                         ("zephyr_cache \x1b]52;c;ZXZpbA==\x07 \x1b[2J \u009b31m done", memory.planted.turn_ids[1]))
        output = call(conn, "recall_memory", {"entities": [ENTITY]})
        assert not any(char in output.markdown for char in "\x1b\x07\u009b")
        assert "\\x1b]52;c;ZXZpbA==\\x07" in output.markdown
        # Structured content keeps the exact text (JSON escapes it on the wire).
        assert "\x1b]52" in output.structured["results"][0]["userText"]
    finally:
        conn.close()


def test_markdown_lists_each_turn_with_its_ids(memory: Memory, conn: Any) -> None:
    output = call(conn, "recall_memory", {"entities": ["flamingo"], "limit": 2})
    rows = output.structured["results"]
    assert output.markdown.startswith("## 2 past turns, best first")
    for row in rows:
        assert f"turnId: {row['turnId']}" in output.markdown and f"sessionId: {row['sessionId']}" in output.markdown
    empty = call(conn, "recall_memory", {"entities": ["no-such-word-anywhere"]})
    assert empty.markdown == "No past conversation matched these entities." and empty.structured == {"results": []}


def test_every_schema_limit_is_enforced_by_the_server() -> None:
    """Codex strips maxItems, minimum and maximum: each bound a schema states must be checked here."""
    spec = {tool.name: tool for tool in TOOLS}
    entities = spec["recall_memory"].input_schema["properties"]["entities"]
    limit = spec["recall_memory"].input_schema["properties"]["limit"]
    with pytest.raises(ToolInputError):
        decode_call("recall_memory", {"entities": ["x"] * (entities["maxItems"] + 1)})
    decode_call("recall_memory", {"entities": ["x"] * entities["maxItems"]})
    for bad in (limit["minimum"] - 1, limit["maximum"] + 1):
        with pytest.raises(ToolInputError):
            decode_call("recall_memory", {"entities": ["x"], "limit": bad})
    for name in ("before", "after"):
        bounds = spec["read_session"].input_schema["properties"][name]
        for bad in (bounds["minimum"] - 1, bounds["maximum"] + 1):
            with pytest.raises(ToolInputError):
                decode_call("read_session", {"sessionId": "pi:x", name: bad})
    assert limit["maximum"] == agent_tools.MAX_RESULTS and limit["default"] == agent_tools.DEFAULT_RESULTS


def test_description_carries_the_invocation_policy() -> None:
    description = {tool.name: tool for tool in TOOLS}["recall_memory"].description
    for phrase in ("Invocation policy", "last time we", "didn't we fix", "我之前", "first ask whether",
                   "Do not search history merely because", "Extract 2–5 specific entities"):
        assert phrase in description


def test_recall_memory_takes_a_question_and_answers_conversations(tmp_path: Path) -> None:
    from pimem import agent_tools, index
    from pimem.store import SessionRow, connect, transaction, upsert_session

    conn = connect(tmp_path / "memory.db")
    with transaction(conn):
        for session, texts in (("pi:emily", ["My sister Emily moved to Portland", "Emily loves the rain there"]),
                               ("pi:other", ["where do people live", "help with my application"])):
            upsert_session(conn, SessionRow(session, "pi", "/w", 0, None, f"/{session}.jsonl"))
            for number, text in enumerate(texts):
                turn_id, ts = f"{session}:{number}", 1_700_000_000_000 + number * 60_000
                conn.execute("INSERT INTO turns (turn_id, session_id, turn_index, ts, user_text, reply_text, "
                             "tool_names, user_message_id) VALUES (?, ?, ?, ?, ?, 'ok', NULL, ?)",
                             (turn_id, session, number, ts, text, turn_id))
                index.put(conn, turn_id, ts, text, "ok", None, None, fts=True)
        index.catch_up(conn)
    index.build_pending(conn)
    call = agent_tools.decode_call(agent_tools.RECALL_MEMORY, {"query": "Where does my sister Emily live?"})
    rows = call.run(conn).structured["results"]  # type: ignore[attr-defined]
    assert [row["sessionId"] for row in rows] == ["pi:emily", "pi:other"][:len(rows)]
    assert len({row["sessionId"] for row in rows}) == len(rows)   # one row per conversation
    for arguments, field in (({}, "entities"), ({"entities": ["x"], "query": "x"}, "query")):
        with pytest.raises(agent_tools.ToolInputError) as error:
            agent_tools.decode_call(agent_tools.RECALL_MEMORY, arguments)
        assert error.value.field == field
    with pytest.raises(agent_tools.ToolInputError) as error:
        agent_tools.decode_call(agent_tools.RECALL_MEMORY, {"query": "x" * 2001})
    assert error.value.field == "query"
