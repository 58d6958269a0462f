"""`pimem mcp` driven by the MCP SDK's own client over stdio, in both protocol eras: the
`initialize` handshake ("legacy") and the 2026-07-28 `server/discover` probe ("auto")."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from mcp.client.stdio import StdioServerParameters
from mcp.shared.exceptions import MCPError

from mcp import Client
from pimem.agent_tools import TOOLS, recall_markdown
from pimem.redact import redact_value
from support.history import REPO

from .conftest import PIMEM, Memory
from .history import ENTITY, PLANTED_SECRETS

ERAS = {"legacy": "2025-11-25", "auto": "2026-07-28"}

pytestmark = pytest.mark.e2e


@asynccontextmanager
async def connected(memory: Memory, mode: str, *args: str, db: Path | None = None,
                    **env: str) -> AsyncIterator[Client]:
    params = StdioServerParameters(command=str(PIMEM), args=["mcp", "--db", str(db or memory.db), *args],
                                   env=memory.env(**env), cwd=str(memory.base))
    async with Client(params, mode=mode, read_timeout_seconds=30) as client:
        yield client


def cli_view(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{key: value for key, value in row.items() if key != "resumeCommand"} for row in rows]


@pytest.mark.parametrize("mode", ERAS)
async def test_a_session_of_calls(memory: Memory, mode: str) -> None:
    """One connection per era (each start costs a second of imports): the tool list, recall, read_session,
    bad input, an unknown tool."""
    async with connected(memory, mode) as client:
        assert client.protocol_version == ERAS[mode]
        await check_tool_list(client)
        await check_recall_rows_equal_the_cli_rows_redacted(client, memory)
        await check_read_session_around_a_recalled_turn(client, memory)
        await check_bad_input_is_a_tool_error_naming_the_field_and_the_server_keeps_serving(client)


async def check_tool_list(client: Client) -> None:
    listed = {tool.name: tool for tool in (await client.list_tools()).tools}
    assert list(listed) == [tool.name for tool in TOOLS]
    for spec in TOOLS:
        tool = listed[spec.name]
        assert tool.description == spec.description
        assert tool.input_schema == spec.input_schema
        assert tool.output_schema == spec.output_schema
        assert tool.annotations is not None and tool.annotations.read_only_hint is True


async def check_recall_rows_equal_the_cli_rows_redacted(client: Client, memory: Memory) -> None:
    queries = [(["flamingo", "cache"], 7), ([ENTITY], 5), (["锁"], 2)]
    for entities, limit in queries:
        result = await client.call_tool("recall_memory", {"entities": entities, "limit": limit})
        assert not result.is_error
        expected = redact_value(cli_view(memory.cli_recall(*entities, "--limit", str(limit))))
        assert expected
        assert result.structured_content == {"results": expected}
        assert result.content[0].text == recall_markdown(expected)  # type: ignore[union-attr]
        assert all(secret not in repr(result) for secret in PLANTED_SECRETS)


async def check_read_session_around_a_recalled_turn(client: Client, memory: Memory) -> None:
    hit = (await client.call_tool("recall_memory", {"entities": [ENTITY]})).structured_content["results"][0]
    result = await client.call_tool("read_session", {"sessionId": hit["sessionId"], "turnId": hit["turnId"],
                                                     "before": 1, "after": 1})
    assert not result.is_error
    turns = result.structured_content["turns"]
    assert [turn["turnId"] for turn in turns] == memory.planted.turn_ids
    assert turns[1] == {key: value for key, value in hit.items() if key not in ("hits", "matched")}
    assert all(secret not in repr(result) for secret in PLANTED_SECRETS)


async def check_bad_input_is_a_tool_error_naming_the_field_and_the_server_keeps_serving(client: Client) -> None:
    bad = [({}, "entities"), ({"entities": []}, "entities"), ({"entities": [f"w{i}" for i in range(9)]}, "entities"),
           ({"entities": ["  "]}, "entities"), ({"entities": ["x"], "limit": 0}, "limit"),
           ({"entities": ["x"], "limit": 99}, "limit"), ({"sessionId": ""}, "sessionId")]
    for arguments, field in bad:
        tool = "read_session" if "sessionId" in arguments else "recall_memory"
        result = await client.call_tool(tool, arguments)
        assert result.is_error, arguments
        assert f'invalid "{field}"' in result.content[0].text  # type: ignore[union-attr]
    with pytest.raises(MCPError, match="unknown tool"):
        await client.call_tool("delete_memory", {})
    good = await client.call_tool("recall_memory", {"entities": ["flamingo"]})
    assert not good.is_error and good.structured_content["results"]


@pytest.mark.parametrize(("args", "env"), [(("--no-redact",), {}), ((), {"PIMEM_REDACT": "0"})])
async def test_redaction_can_be_turned_off(memory: Memory, args: tuple[str, ...], env: dict[str, str]) -> None:
    async with connected(memory, "legacy", *args, **env) as client:
        result = await client.call_tool("recall_memory", {"entities": [ENTITY]})
    assert all(secret in repr(result.structured_content) for secret in PLANTED_SECRETS)


async def test_start_opens_no_store_and_a_missing_store_is_a_tool_error(memory: Memory, tmp_path: Path) -> None:
    missing = tmp_path / "nowhere" / "memory.db"
    async with connected(memory, "legacy", db=missing) as client:
        await client.list_tools()
        assert not missing.exists() and not missing.parent.exists()
        result = await client.call_tool("recall_memory", {"entities": ["flamingo"]})
        assert result.is_error and "no memory store" in result.content[0].text  # type: ignore[union-attr]
        assert not missing.exists()
        assert (await client.call_tool("recall_memory", {"entities": ["flamingo"]})).is_error  # still serving


async def test_answers_while_another_pimem_process_syncs_the_store(tmp_path: Path) -> None:
    from .conftest import make_memory

    memory = make_memory(tmp_path)
    sys.path.insert(0, str(REPO / "bench"))
    try:
        import generate  # bench/generate.py: synthetic transcripts in the agents' formats
    finally:
        sys.path.remove(str(REPO / "bench"))
    corpus = tmp_path / "corpus"
    generate.generate(corpus, 3000, seed=11, jobs=1, quiet=True)
    home = corpus / "home"
    sync_env = memory.env(CLAUDE_CONFIG_DIR=str(home / ".claude"), CODEX_HOME=str(home / ".codex"),
                          PI_CODING_AGENT_DIR=str(home / ".pi" / "agent"))
    async with connected(memory, "legacy") as client:
        await client.list_tools()
        sync = subprocess.Popen([str(PIMEM), "sync"], env=sync_env, stdout=subprocess.DEVNULL,
                                stderr=subprocess.PIPE, text=True)
        answered_during_sync = 0
        slowest = 0.0
        try:
            while sync.poll() is None:
                started = time.monotonic()
                result = await client.call_tool("recall_memory", {"entities": [ENTITY]})
                slowest = max(slowest, time.monotonic() - started)
                assert not result.is_error, result.content
                assert [row["turnId"] for row in result.structured_content["results"]] == [
                    memory.planted.turn_ids[1]]
                if sync.poll() is None:
                    answered_during_sync += 1
                await asyncio.sleep(0.02)
        finally:
            _, stderr = sync.communicate(timeout=300)
        assert sync.returncode == 0, stderr
        # The sync really overlapped the calls, and none waited for the writer's lock.
        assert answered_during_sync >= 3
        assert slowest < 5.0
        after = await client.call_tool("recall_memory", {"entities": ["flamingo"], "limit": 20})
        assert not after.is_error and after.structured_content["results"]


def test_without_the_sdk_pimem_mcp_says_so_in_one_line(memory: Memory) -> None:
    # What the VS Code extension's bundled server (which leaves the SDK out) does on `pimem mcp`.
    script = "import sys; sys.modules['mcp'] = None; from pimem.cli import main; sys.exit(main(['mcp']))"
    done = subprocess.run([sys.executable, "-c", script], env=memory.env(), capture_output=True, text=True,
                          timeout=60, stdin=subprocess.DEVNULL)
    assert done.returncode == 1
    assert done.stderr.startswith("pimem mcp: the MCP SDK is not installed")
    assert len(done.stderr.strip().splitlines()) == 1 and done.stdout == ""
