"""`pimem mcp install {claude,codex,pi}` (pimem.agent_config): through the agent's own CLI when it is on
PATH (a stand-in here; the real CLIs are driven in test_real_agents.py), else by a careful file edit;
idempotent, never touching other servers, and --dry-run changes nothing."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import tomllib
from collections.abc import Sequence
from pathlib import Path

import pytest

from pimem.agent_config import (
    AgentConfigError,
    ServerCommand,
    claude_config_path,
    codex_config_path,
    install,
    pi_config_path,
    pimem_command,
)

from .conftest import PIMEM

WANTED = ServerCommand("/opt/pimem env/bin/pimem", ("mcp", "--db", "/home/me/my store.db"))
OLD = ServerCommand("/old/bin/pimem", ("mcp",))


class FakeClaude:
    """Does what `claude mcp add/remove --scope user` does to the config file (a stand-in for the CLI)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.calls: list[list[str]] = []

    def __call__(self, argv: Sequence[str]) -> subprocess.CompletedProcess[str]:
        self.calls.append(list(argv))
        data = json.loads(self.path.read_text()) if self.path.exists() else {}
        servers = data.setdefault("mcpServers", {})
        if argv[1:3] == ["mcp", "remove"]:
            del servers[argv[-1]]
        else:
            name, command = argv[5], list(argv[7:])
            if name in servers:
                return subprocess.CompletedProcess(argv, 1, "", f"MCP server {name} already exists in user config")
            servers[name] = {"type": "stdio", "command": command[0], "args": command[1:], "env": {}}
        self.path.write_text(json.dumps(data))
        return subprocess.CompletedProcess(argv, 0, "ok", "")


class FakeCodex:
    """Does what `codex mcp add NAME -- CMD...` does: replaces that table, keeps the rest."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.calls: list[list[str]] = []

    def __call__(self, argv: Sequence[str]) -> subprocess.CompletedProcess[str]:
        self.calls.append(list(argv))
        command = list(argv[5:])
        text = self.path.read_text() if self.path.exists() else ""
        text += f"\n[mcp_servers.{argv[3]}]\ncommand = {json.dumps(command[0])}\nargs = {json.dumps(command[1:])}\n"
        self.path.write_text(text)
        return subprocess.CompletedProcess(argv, 0, "Added global MCP server.", "")


class FakePi:
    """Does what `pi mcp add NAME --exposure E -- CMD...` does to mcp.json: add or replace that entry."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.calls: list[list[str]] = []

    def __call__(self, argv: Sequence[str]) -> subprocess.CompletedProcess[str]:
        self.calls.append(list(argv))
        data = json.loads(self.path.read_text()) if self.path.exists() else {}
        command = list(argv[7:])
        data.setdefault("mcpServers", {})[argv[3]] = {"command": command[0], "args": command[1:], "exposure": argv[5]}
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.path.write_text(json.dumps(data))
        return subprocess.CompletedProcess(argv, 0, "Added global MCP server.", "")


def env_for(tmp_path: Path) -> dict[str, str]:
    return {"HOME": str(tmp_path / "home"), "CLAUDE_CONFIG_DIR": str(tmp_path / "claude"),
            "CODEX_HOME": str(tmp_path / "codex"), "PI_CODING_AGENT_DIR": str(tmp_path / "pi"),
            "PATH": "/nonexistent"}


def no_cli(_name: str) -> None:
    return None


def test_config_paths_follow_the_agents_variables(tmp_path: Path) -> None:
    assert claude_config_path({"HOME": "/h"}) == Path("/h/.claude.json")
    assert claude_config_path({"HOME": "/h", "CLAUDE_CONFIG_DIR": "/c"}) == Path("/c/.claude.json")
    assert codex_config_path({"HOME": "/h"}) == Path("/h/.codex/config.toml")
    assert codex_config_path({"HOME": "/h", "CODEX_HOME": "/x"}) == Path("/x/config.toml")
    assert pi_config_path({"HOME": "/h"}) == Path("/h/.pi/agent/mcp.json")
    assert pi_config_path({"HOME": "/h", "PI_CODING_AGENT_DIR": "/p"}) == Path("/p/mcp.json")


def test_claude_through_its_cli_adds_then_leaves_alone_then_replaces(tmp_path: Path) -> None:
    env = env_for(tmp_path)
    path = claude_config_path(env)
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps({"userID": "u", "mcpServers": {"other": {"type": "stdio", "command": "x"}}}))
    fake = FakeClaude(path)

    first = install("claude", WANTED, env=env, which=lambda _: "/bin/claude", run=fake)
    assert first.method == "cli" and first.previous is None
    assert fake.calls == [["/bin/claude", "mcp", "add", "--scope", "user", "pimem", "--", *WANTED.argv()]]
    data = json.loads(path.read_text())
    assert data["mcpServers"]["other"] == {"type": "stdio", "command": "x"} and data["userID"] == "u"

    again = install("claude", WANTED, env=env, which=lambda _: "/bin/claude", run=fake)
    assert not again.changed and len(fake.calls) == 1
    assert "already configured" in again.lines()[0]

    newer = ServerCommand("/new/bin/pimem", ("mcp",))
    replaced = install("claude", newer, env=env, which=lambda _: "/bin/claude", run=fake)
    assert replaced.previous == WANTED
    assert fake.calls[1:] == [["/bin/claude", "mcp", "remove", "--scope", "user", "pimem"],
                              ["/bin/claude", "mcp", "add", "--scope", "user", "pimem", "--", *newer.argv()]]
    assert json.loads(path.read_text())["mcpServers"]["pimem"]["command"] == "/new/bin/pimem"


def test_a_failing_agent_cli_is_one_line(tmp_path: Path) -> None:
    env = env_for(tmp_path)

    def refuse(argv: Sequence[str]) -> subprocess.CompletedProcess[str]:
        return subprocess.CompletedProcess(argv, 1, "", "Error: something\nconfig is locked")

    with pytest.raises(AgentConfigError, match="failed: config is locked"):
        install("claude", WANTED, env=env, which=lambda _: "/bin/claude", run=refuse)


@pytest.mark.parametrize("agent", ["claude", "codex", "pi"])
def test_dry_run_changes_nothing(tmp_path: Path, agent: str) -> None:
    env = env_for(tmp_path)

    def must_not_run(argv: Sequence[str]) -> subprocess.CompletedProcess[str]:
        raise AssertionError(f"ran {argv}")

    for which in (lambda _: f"/bin/{agent}", no_cli):
        report = install(agent, WANTED, dry_run=True, env=env, which=which, run=must_not_run)  # type: ignore[arg-type]
        assert report.changed and report.dry_run
        assert any("would" in line for line in report.lines())
    assert not any((tmp_path / name).exists() for name in ("claude", "codex", "pi"))


def test_claude_file_edit_keeps_everything_else_and_the_permissions(tmp_path: Path) -> None:
    env = env_for(tmp_path)
    path = claude_config_path(env)
    path.parent.mkdir(parents=True)
    original = {"numStartups": 3, "projects": {"/p": {"allowedTools": []}}, "oauthAccount": {"x": 1},
                "mcpServers": {"other": {"type": "stdio", "command": "node", "args": ["srv.js"], "env": {"K": "v"}}}}
    path.write_text(json.dumps(original, indent=2))
    os.chmod(path, 0o600)

    report = install("claude", WANTED, env=env, which=no_cli)
    assert report.method == "file"
    data = json.loads(path.read_text())
    assert data.pop("mcpServers")["pimem"] == {"type": "stdio", "command": WANTED.command,
                                               "args": list(WANTED.args), "env": {}}
    original.pop("mcpServers")
    assert data == original
    assert json.loads(path.read_text())["mcpServers"]["other"]["env"] == {"K": "v"}
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert not install("claude", WANTED, env=env, which=no_cli).changed
    assert [p.name for p in path.parent.iterdir()] == [".claude.json"]  # no temporary file left


def test_claude_file_edit_creates_an_owner_only_file(tmp_path: Path) -> None:
    env = env_for(tmp_path)
    install("claude", WANTED, env=env, which=no_cli)
    path = claude_config_path(env)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert json.loads(path.read_text())["mcpServers"]["pimem"]["command"] == WANTED.command


@pytest.mark.parametrize("content", ["{not json", "[1, 2]", '{"mcpServers": [1]}'])
def test_claude_file_that_is_not_an_object_is_left_untouched(tmp_path: Path, content: str) -> None:
    env = env_for(tmp_path)
    path = claude_config_path(env)
    path.parent.mkdir(parents=True)
    path.write_text(content)
    with pytest.raises(AgentConfigError, match="not touching it"):
        install("claude", WANTED, env=env, which=no_cli)
    assert path.read_text() == content


def test_codex_through_its_cli_then_idempotent(tmp_path: Path) -> None:
    env = env_for(tmp_path)
    path = codex_config_path(env)
    path.parent.mkdir(parents=True)
    path.write_text('model = "gpt-5.5"\n\n[mcp_servers.other]\ncommand = "other"\n')
    fake = FakeCodex(path)
    report = install("codex", WANTED, env=env, which=lambda _: "/bin/codex", run=fake)
    assert report.method == "cli"
    assert fake.calls == [["/bin/codex", "mcp", "add", "pimem", "--", *WANTED.argv()]]
    assert not install("codex", WANTED, env=env, which=lambda _: "/bin/codex", run=fake).changed
    assert len(fake.calls) == 1


def test_pi_through_its_cli_with_direct_exposure_then_idempotent(tmp_path: Path) -> None:
    env = env_for(tmp_path)
    fake = FakePi(pi_config_path(env))
    report = install("pi", WANTED, env=env, which=lambda _: "/bin/pi", run=fake)
    assert report.method == "cli"
    assert fake.calls == [["/bin/pi", "mcp", "add", "pimem", "--exposure", "direct", "--", *WANTED.argv()]]
    assert not install("pi", WANTED, env=env, which=lambda _: "/bin/pi", run=fake).changed


def test_pi_file_edit_keeps_other_servers_and_a_chosen_exposure(tmp_path: Path) -> None:
    env = env_for(tmp_path)
    path = pi_config_path(env)
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps({"autoEnableCodemode": False, "mcpServers": {"docs": {"url": "https://x/mcp"}}}))
    report = install("pi", WANTED, env=env, which=no_cli)
    assert report.method == "file"
    data = json.loads(path.read_text())
    assert data == {"autoEnableCodemode": False, "mcpServers": {
        "docs": {"url": "https://x/mcp"},
        "pimem": {"command": WANTED.command, "args": list(WANTED.args), "exposure": "direct"}}}
    data["mcpServers"]["pimem"]["exposure"] = "deferred"  # the user's choice
    path.write_text(json.dumps(data))
    assert not install("pi", WANTED, env=env, which=no_cli).changed
    assert json.loads(path.read_text())["mcpServers"]["pimem"]["exposure"] == "deferred"


CODEX_CONFIG = '''# my Codex settings
model = "gpt-5.5"   # the default

[mcp_servers.other]
command = "node"
args = ["other.js"]

[mcp_servers.pimem]
command = "/old/bin/pimem"
args = ["mcp"]

[mcp_servers.pimem.env]
X = "1"

# profiles below
[profiles.fast]
model = "gpt-5.5-mini"
'''


def test_codex_file_edit_replaces_only_the_pimem_table(tmp_path: Path) -> None:
    env = env_for(tmp_path)
    path = codex_config_path(env)
    path.parent.mkdir(parents=True)
    path.write_text(CODEX_CONFIG)
    report = install("codex", WANTED, env=env, which=no_cli)
    assert report.method == "file" and report.previous == OLD
    text = path.read_text()
    data = tomllib.loads(text)
    assert data["mcp_servers"]["pimem"] == {"command": WANTED.command, "args": list(WANTED.args)}
    assert data["mcp_servers"]["other"] == {"command": "node", "args": ["other.js"]}
    assert data["profiles"] == {"fast": {"model": "gpt-5.5-mini"}} and data["model"] == "gpt-5.5"
    assert text.startswith("# my Codex settings\nmodel = \"gpt-5.5\"   # the default\n")
    assert "# profiles below\n[profiles.fast]" in text
    assert not install("codex", WANTED, env=env, which=no_cli).changed


def test_codex_file_edit_appends_to_a_config_without_pimem(tmp_path: Path) -> None:
    env = env_for(tmp_path)
    path = codex_config_path(env)
    path.parent.mkdir(parents=True)
    before = 'model = "gpt-5.5"\n[mcp_servers.other]\ncommand = "x"\n'
    path.write_text(before)
    install("codex", WANTED, env=env, which=no_cli)
    text = path.read_text()
    assert text.startswith(before)
    assert tomllib.loads(text)["mcp_servers"]["pimem"]["args"] == list(WANTED.args)


@pytest.mark.parametrize("content", ["model = \n", 'mcp_servers = { pimem = { command = "x" } }\n'])
def test_codex_file_pimem_does_not_understand_is_left_untouched(tmp_path: Path, content: str) -> None:
    env = env_for(tmp_path)
    path = codex_config_path(env)
    path.parent.mkdir(parents=True)
    path.write_text(content)
    with pytest.raises(AgentConfigError):
        install("codex", WANTED, env=env, which=no_cli)
    assert path.read_text() == content


def test_the_command_is_this_pimem_with_absolute_paths(tmp_path: Path) -> None:
    script = tmp_path / "bin" / "pimem"
    script.parent.mkdir()
    script.write_text("#!/bin/sh\n")
    command = pimem_command("~/stores/m.db", argv0=str(script))
    assert command.command == str(script)
    assert command.args == ("mcp", "--db", os.path.expanduser("~/stores/m.db"))
    assert pimem_command(None, redact=False, argv0=str(script)).args == ("mcp", "--no-redact")
    # run as `python -m pimem`: the interpreter with -P, so the agent's working directory is not on sys.path
    module = pimem_command(None, argv0="/x/pimem/__main__.py", executable="/usr/bin/python3")
    assert module.argv() == ["/usr/bin/python3", "-P", "-m", "pimem", "mcp"]


def test_cli_install_prints_what_it_changed(tmp_path: Path) -> None:
    env = {**os.environ, **env_for(tmp_path), "PATH": os.defpath, "MEMORY_DB_PATH": str(tmp_path / "m.db")}
    env.pop("PIMEM_REDACT", None)
    run = [str(PIMEM), "mcp", "install", "codex"]
    dry = subprocess.run([*run, "--dry-run"], env=env, capture_output=True, text=True, timeout=60)
    assert dry.returncode == 0 and "would add MCP server pimem" in dry.stdout
    assert not (tmp_path / "codex" / "config.toml").exists()
    done = subprocess.run(run, env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert f"added MCP server pimem: {PIMEM} mcp --db {tmp_path / 'm.db'}" in done.stdout
    entry = tomllib.loads((tmp_path / "codex" / "config.toml").read_text())["mcp_servers"]["pimem"]
    assert entry == {"command": str(PIMEM), "args": ["mcp", "--db", str(tmp_path / "m.db")]}
    again = subprocess.run(run, env=env, capture_output=True, text=True, timeout=60)
    assert "nothing changed" in again.stdout
    (tmp_path / "codex" / "config.toml").write_text("model = \n")
    broken = subprocess.run(run, env=env, capture_output=True, text=True, timeout=60)
    assert broken.returncode == 1 and broken.stderr.startswith("pimem mcp install: ")
    assert "Traceback" not in broken.stderr
