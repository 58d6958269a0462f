"""The real Claude Code and the real Codex CLI (pinned in tests/agents/, installed by
scripts/setup-agents.sh) and the real Pi (tests/pi_verify/, scripts/setup-pi.sh) recall a planted past
turn through `pimem mcp`.

Each test is a user's machine in a folder: the agent on PATH, the user's own MCP server already
configured, pimem added with `pimem mcp install <agent>` (which uses the agent's own `mcp add`), then
the agent run non-interactively on a prompt about earlier work against the mock model, which answers
with a call of pimem's tool under whatever name the agent lists it. The mock's request log shows what
the agent sent back to the model: the planted turn, with every planted secret masked.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from support.pi_real import ensure_pi_installed, node_binary

from .agents import (
    ToolExchange,
    anthropic_exchanges,
    chat_exchanges,
    ensure_agents_installed,
    make_scratch,
    mock_model,
    responses_exchanges,
    version,
)
from .conftest import PIMEM, Memory
from .history import ENTITY, PLANTED_SECRETS, TRIGGER

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

CLAUDE_VERSION = "2.1.332"
CODEX_VERSION = "0.171.0"
PI_VERSION = "1.6.0"


@pytest.fixture(scope="module")
def binaries() -> dict[str, Path]:
    return ensure_agents_installed()


KINDS_IN_USER_TEXT = ("aws-access-key-id", "github-token", "private-key")
KINDS_IN_REPLY = ("password", "url-password", "jwt", "openai-key")


def check_recalled(exchange: ToolExchange, memory: Memory) -> None:
    """The tool result the agent sent back holds the planted turn, masked: the JSON of the structured
    content (Claude Code, Codex) or the Markdown of content[0] (Pi)."""
    assert exchange.arguments == {"entities": [ENTITY], "limit": 3}
    text = exchange.result
    for secret in PLANTED_SECRETS:
        assert secret not in text
    if "{" not in text:  # Markdown
        assert f"turnId: {memory.planted.turn_ids[1]}" in text
        assert f"sessionId: {memory.planted.session_id}" in text
        assert f"The {ENTITY} deploy fails with 403 Forbidden" in text and "Fixed: the 403 is gone." in text
        assert all(f"[REDACTED:{kind}]" in text for kind in KINDS_IN_USER_TEXT + KINDS_IN_REPLY)
        return
    results: list[dict[str, Any]] = json.loads(text[text.index("{"):])["results"]
    assert [row["turnId"] for row in results] == [memory.planted.turn_ids[1]]
    row = results[0]
    assert row["sessionId"] == memory.planted.session_id and row["source"] == "pi"
    assert f"The {ENTITY} deploy fails with 403 Forbidden" in row["userText"]
    assert "Fixed: the 403 is gone." in row["replyText"]
    assert all(f"[REDACTED:{kind}]" in row["userText"] for kind in KINDS_IN_USER_TEXT)
    assert all(f"[REDACTED:{kind}]" in row["replyText"] for kind in KINDS_IN_REPLY)


def assert_no_secret_reached_the_model(log: Path) -> None:
    sent = log.read_text(encoding="utf-8")
    assert all(secret not in sent for secret in PLANTED_SECRETS)
    assert json.dumps(PLANTED_SECRETS[0])[1:-1] not in sent


def test_claude_code_recalls_a_planted_turn_through_pimem_mcp(tmp_path: Path, memory: Memory,
                                                               binaries: dict[str, Path],
                                                               record_property: Any) -> None:
    assert CLAUDE_VERSION in version(binaries["claude"])
    with mock_model(tmp_path / "mock") as mock:
        machine = make_scratch(tmp_path / "machine", mock.port, binaries, memory.db)
        own = machine.run(["claude", "mcp", "add", "--scope", "user", "mine", "--", "/bin/true", "serve"])
        assert own.returncode == 0, own.stderr

        installed = machine.run([str(PIMEM), "mcp", "install", "claude"])
        assert installed.returncode == 0, installed.stderr
        assert (f"ran: {machine.root / 'bin' / 'claude'} mcp add --scope user pimem -- {PIMEM} mcp --db {memory.db}"
                in installed.stdout)
        again = machine.run([str(PIMEM), "mcp", "install", "claude"])
        assert again.returncode == 0 and "nothing changed" in again.stdout
        servers = json.loads((machine.root / "claude-config" / ".claude.json").read_text())["mcpServers"]
        assert servers["mine"]["command"] == "/bin/true"
        assert servers["pimem"] == {"type": "stdio", "command": str(PIMEM), "args": ["mcp", "--db", str(memory.db)],
                                    "env": {}}

        done = machine.run(["claude", "-p", "--allowedTools", "mcp__pimem__recall_memory", "--", TRIGGER])
        assert done.returncode == 0, done.stdout + done.stderr
        exchanges = anthropic_exchanges(mock.requests())
        recalls = [exchange for exchange in exchanges if exchange.name.endswith("recall_memory")]
        assert recalls, f"no recall_memory call in the mock's log; tool calls: {[e.name for e in exchanges]}"
        assert recalls[0].name == "mcp__pimem__recall_memory"
        check_recalled(recalls[0], memory)
        assert_no_secret_reached_the_model(mock.log)
        assert "[REDACTED:" in done.stdout and ENTITY in done.stdout  # the mock's answer quotes the result
        record_property("tools", [exchange.name for exchange in exchanges])


def test_codex_recalls_a_planted_turn_through_pimem_mcp(tmp_path: Path, memory: Memory, binaries: dict[str, Path],
                                                        record_property: Any) -> None:
    assert CODEX_VERSION in version(binaries["codex"])
    with mock_model(tmp_path / "mock") as mock:
        machine = make_scratch(tmp_path / "machine", mock.port, binaries, memory.db)
        own = machine.run(["codex", "mcp", "add", "mine", "--", "/bin/true", "serve"])
        assert own.returncode == 0, own.stderr

        installed = machine.run([str(PIMEM), "mcp", "install", "codex"])
        assert installed.returncode == 0, installed.stderr
        ran = f"ran: {machine.root / 'bin' / 'codex'} mcp add pimem -- {PIMEM} mcp --db {memory.db}"
        assert ran in installed.stdout
        again = machine.run([str(PIMEM), "mcp", "install", "codex"])
        assert again.returncode == 0 and "nothing changed" in again.stdout
        config = (machine.root / "codex-home" / "config.toml").read_text()
        assert "[mcp_servers.mine]" in config and "[model_providers.mock]" in config

        done = machine.run(["codex", "exec", "--skip-git-repo-check", TRIGGER])
        assert done.returncode == 0, done.stdout + done.stderr
        exchanges = responses_exchanges(mock.requests())
        recalls = [exchange for exchange in exchanges if exchange.name.endswith("recall_memory")]
        assert recalls, f"no recall_memory call in the mock's log; tool calls: {[e.name for e in exchanges]}"
        assert (recalls[0].namespace, recalls[0].name) == ("mcp__pimem", "recall_memory")
        check_recalled(recalls[0], memory)
        assert_no_secret_reached_the_model(mock.log)
        record_property("tools", [f"{exchange.namespace}.{exchange.name}" for exchange in exchanges])


def test_pi_recalls_a_planted_turn_through_pimem_mcp(tmp_path: Path, memory: Memory, record_property: Any) -> None:
    install_dir = ensure_pi_installed()
    pi = install_dir / "node_modules" / ".bin" / "pi"
    node_dir = node_binary(install_dir).parent
    with mock_model(tmp_path / "mock") as mock:
        machine = make_scratch(tmp_path / "machine", mock.port, {"pi": pi}, memory.db, node_dir=node_dir)
        assert PI_VERSION in machine.run(["pi", "--version"]).stdout + machine.run(["pi", "--version"]).stderr
        own = machine.run(["pi", "mcp", "add", "mine", "--", "/bin/true", "serve"])
        assert own.returncode == 0, own.stderr

        installed = machine.run([str(PIMEM), "mcp", "install", "pi"])
        assert installed.returncode == 0, installed.stderr
        ran = f"ran: {machine.root / 'bin' / 'pi'} mcp add pimem --exposure direct -- {PIMEM} mcp --db {memory.db}"
        assert ran in installed.stdout
        again = machine.run([str(PIMEM), "mcp", "install", "pi"])
        assert again.returncode == 0 and "nothing changed" in again.stdout
        servers = json.loads((machine.root / "pi-agent" / "mcp.json").read_text())["mcpServers"]
        assert servers["mine"]["command"] == "/bin/true"

        done = machine.run(["pi", "--model", "mock-openai/mock-gpt", "-p", TRIGGER])
        assert done.returncode == 0, done.stdout + done.stderr
        exchanges = chat_exchanges(mock.requests())
        recalls = [exchange for exchange in exchanges if exchange.name.endswith("recall_memory")]
        assert recalls, f"no recall_memory call in the mock's log; tool calls: {[e.name for e in exchanges]}"
        assert recalls[0].name == "mcp__pimem__recall_memory"
        check_recalled(recalls[0], memory)
        assert_no_secret_reached_the_model(mock.log)
        record_property("tools", [exchange.name for exchange in exchanges])
