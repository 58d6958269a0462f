"""`pimem mcp install {claude,codex,pi}` (pimem.agent_config): through the agent's own CLI when it is on
PATH (a stand-in here; the real CLIs are driven in test_real_agents.py), else by a careful file edit;
idempotent, never touching other servers, and --dry-run changes nothing."""

from __future__ import annotations

import json
import os
import re
import stat
import subprocess
import tomllib
from collections.abc import Sequence
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

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


def test_claude_through_its_cli_adds_then_leaves_alone_then_the_file_edit_replaces(tmp_path: Path) -> None:
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
    assert replaced.previous == WANTED and replaced.method == "file"
    assert fake.calls[1:] == []  # an entry to replace is edited in the file, never removed first (20.8f)
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
    # no temporary file left; the file before the first edit is kept as a backup (20.8a)
    assert sorted(p.name for p in path.parent.iterdir()) == [".claude.json", ".claude.json.pimem-backup"]


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
    assert data["mcp_servers"]["pimem"] == {"command": WANTED.command, "args": list(WANTED.args),
                                            "env": {"X": "1"}}  # the user's env is kept (20.8a)
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


# -- issue 20, item 8: the files belong to the user ------------------------------------------------------

WANTED_ARGS = '["mcp", "--db", "/home/me/my store.db"]'
WANTED_COMMAND = json.dumps(WANTED.command)


def write_config(tmp_path: Path, agent: str, content: str | bytes) -> Path:
    path = {"claude": claude_config_path, "codex": codex_config_path, "pi": pi_config_path}[agent](env_for(tmp_path))
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(content if isinstance(content, bytes) else content.encode())
    return path


class FailingAgentCli:
    """An agent CLI that records its calls; `remove` works, `add` fails (a timeout, a locked file)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.calls: list[list[str]] = []

    def __call__(self, argv: Sequence[str]) -> subprocess.CompletedProcess[str]:
        self.calls.append(list(argv))
        if "remove" in argv:
            data = json.loads(self.path.read_text())
            del data["mcpServers"][argv[-1]]
            self.path.write_text(json.dumps(data))
            return subprocess.CompletedProcess(argv, 0, "Removed", "")
        return subprocess.CompletedProcess(argv, 1, "", "Error: config is locked")


# An existing pimem entry with settings of the user's: only command and args are pimem's.
USER_ENTRIES = {
    "codex": ('model = "gpt-5.5"\n\n'
              '[mcp_servers.pimem]  # my memory\n'
              'command = "/old/bin/pimem" # was pipx\n'
              'args = [\n  "mcp",\n]\n'
              'enabled = false\n'
              'startup_timeout_sec = 20\n'
              'tool_timeout_sec = 90.0\n\n'
              '[mcp_servers.pimem.env]\nX = "1"\n\n'
              '[profiles.fast]\nmodel = "mini"\n',
              'command = "/old/bin/pimem"', f'command = {WANTED_COMMAND}', '[\n  "mcp",\n]', WANTED_ARGS),
    "claude": ('{\n    "userID": "u",\n    "mcpServers": {\n        "pimem": {"type": "stdio", '
               '"command": "/old/bin/pimem", "args": ["mcp"], "env": {"MEMORY_DB_PATH": "/x.db"}, "timeout": 30000}'
               '\n    },\n    "numStartups": 3\n}',
               '"/old/bin/pimem"', WANTED_COMMAND, '["mcp"]', WANTED_ARGS),
    "pi": ('{"mcpServers":{"pimem":{"command":"/old/bin/pimem","args":["mcp"],"exposure":"deferred",'
           '"lifecycle":"eager","idleTimeout":5}},"settings":{"a":1}}',
           '"/old/bin/pimem"', WANTED_COMMAND, '["mcp"]', WANTED_ARGS),
}


PLAIN_CODEX = 'model = "gpt-5.5"\n\n[mcp_servers.pimem]\ncommand = "/old/bin/pimem"\nargs = ["mcp"]\n'


@pytest.mark.parametrize("with_cli", [False, True])
@pytest.mark.parametrize("agent", ["codex", "claude", "pi"])
def test_20_8a_only_command_and_args_of_the_pimem_entry_change(tmp_path: Path, agent: str, with_cli: bool) -> None:
    """`enabled = false`, timeouts, `env`, Pi's exposure and lifecycle, comments and the layout stay
    byte for byte; with the agent's CLI on PATH too (its `mcp add` would replace the whole entry)."""
    before, old_command, new_command, old_args, new_args = USER_ENTRIES[agent]
    path = write_config(tmp_path, agent, before)
    cli = FailingAgentCli(path)
    report = install(agent, WANTED, env=env_for(tmp_path),  # type: ignore[arg-type]
                     which=(lambda name: f"/bin/{name}") if with_cli else no_cli, run=cli)
    assert report.method == "file" and report.previous == OLD and cli.calls == []
    assert path.read_text() == before.replace(old_command, new_command, 1).replace(old_args, new_args, 1)
    assert any("keeps your `enabled = false`" in line for line in report.lines()) == (agent == "codex")
    assert not install(agent, WANTED, env=env_for(tmp_path), which=no_cli).changed  # type: ignore[arg-type]


@pytest.mark.parametrize("agent", ["codex", "claude", "pi"])
def test_20_8a_an_edit_keeps_the_previous_file_as_a_backup(tmp_path: Path, agent: str) -> None:
    before = USER_ENTRIES[agent][0]
    path = write_config(tmp_path, agent, before)
    install(agent, WANTED, env=env_for(tmp_path), which=no_cli)  # type: ignore[arg-type]
    backup = path.with_name(path.name + ".pimem-backup")
    assert backup.read_text() == before and stat.S_IMODE(backup.stat().st_mode) == 0o600
    edited = path.read_text()
    install(agent, OLD, env=env_for(tmp_path), which=no_cli)  # type: ignore[arg-type]
    assert backup.read_text() == edited  # the latest edit's previous content


@pytest.mark.parametrize("agent", ["codex", "claude", "pi"])
def test_20_8b_a_read_only_config_is_refused(tmp_path: Path, agent: str) -> None:
    before = PLAIN_CODEX if agent == "codex" else USER_ENTRIES[agent][0]
    path = write_config(tmp_path, agent, before)
    os.chmod(path, 0o444)
    with pytest.raises(AgentConfigError, match=r"read-only \(mode 0444\)"):
        install(agent, WANTED, env=env_for(tmp_path), which=no_cli)  # type: ignore[arg-type]
    assert path.read_text() == before and stat.S_IMODE(path.stat().st_mode) == 0o444
    with pytest.raises(AgentConfigError, match="read-only"):  # a dry run says so too
        install(agent, WANTED, dry_run=True, env=env_for(tmp_path), which=no_cli)  # type: ignore[arg-type]


def test_20_8c_line_ends_and_layout_are_kept(tmp_path: Path) -> None:
    crlf = USER_ENTRIES["codex"][0].replace("\n", "\r\n")
    path = write_config(tmp_path, "codex", crlf)
    install("codex", WANTED, env=env_for(tmp_path), which=no_cli)
    assert path.read_bytes() == crlf.replace('"/old/bin/pimem"', WANTED_COMMAND).replace(
        '[\r\n  "mcp",\r\n]', WANTED_ARGS).encode()
    # a new table in a CRLF file: CRLF lines, the rest byte for byte
    path.write_bytes(b'model = "m"\r\n# end')
    install("codex", WANTED, env=env_for(tmp_path), which=no_cli)
    assert path.read_bytes() == (f'model = "m"\r\n# end\r\n\r\n[mcp_servers.pimem]\r\ncommand = {WANTED_COMMAND}\r\n'
                                 f'args = {WANTED_ARGS}\r\n').encode()
    # JSON with tabs and CRLF: the new entry is one member in the file's own layout
    claude = write_config(tmp_path, "claude", '{\r\n\t"mcpServers": {\r\n\t\t"other": {"command": "x"}\r\n\t}\r\n}\r\n')
    install("claude", WANTED, env=env_for(tmp_path), which=no_cli)
    assert claude.read_bytes().decode() == (
        '{\r\n\t"mcpServers": {\r\n\t\t"other": {"command": "x"},\r\n\t\t"pimem": {"type": "stdio", "command": '
        f'{WANTED_COMMAND}, "args": {WANTED_ARGS}, "env": {{}}}}\r\n\t}}\r\n}}\r\n')


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0, reason="needs root (pimem run with sudo)")
def test_20_8d_run_as_root_the_file_keeps_its_owner_group_and_mode(tmp_path: Path) -> None:
    path = write_config(tmp_path, "codex", PLAIN_CODEX)
    os.chown(path, 4321, 4322)
    os.chmod(path, 0o640)
    install("codex", WANTED, env=env_for(tmp_path), which=no_cli)
    after = path.stat()
    assert (after.st_uid, after.st_gid, stat.S_IMODE(after.st_mode)) == (4321, 4322, 0o640)
    backup = path.with_name("config.toml.pimem-backup").stat()
    assert (backup.st_uid, backup.st_gid, stat.S_IMODE(backup.st_mode)) == (4321, 4322, 0o600)
    # a new file in a user's folder is the folder owner's, owner-only
    folder = tmp_path / "claude"
    folder.mkdir()
    os.chown(folder, 4321, 4322)
    install("claude", WANTED, env=env_for(tmp_path), which=no_cli)
    created = claude_config_path(env_for(tmp_path)).stat()
    assert (created.st_uid, created.st_gid, stat.S_IMODE(created.st_mode)) == (4321, 4322, 0o600)


def agent_writes_while_pimem_edits(monkeypatch: pytest.MonkeyPatch, path: Path, times: int) -> list[str]:
    """The agent rewrites its config (adds a profile) while pimem prepares its own write, ``times`` times."""
    import tempfile

    real = tempfile.mkstemp
    written: list[str] = []

    def mkstemp(*args: object, **kwargs: object) -> tuple[int, str]:
        if kwargs.get("suffix") == ".pimem" and len(written) < times:
            profile = f'\n[profiles.agent{len(written)}]\nmodel = "x"\n'
            path.write_text(path.read_text() + profile)
            written.append(profile)
        return real(*args, **kwargs)  # type: ignore[call-overload,no-any-return]

    monkeypatch.setattr(tempfile, "mkstemp", mkstemp)
    return written


def test_20_8e_a_concurrent_change_by_the_agent_is_not_lost(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = write_config(tmp_path, "codex", PLAIN_CODEX)
    written = agent_writes_while_pimem_edits(monkeypatch, path, 1)
    install("codex", WANTED, env=env_for(tmp_path), which=no_cli)
    data = tomllib.loads(path.read_text())
    assert written and "agent0" in data["profiles"]  # the agent's update survived
    assert data["mcp_servers"]["pimem"]["command"] == WANTED.command


def test_20_8e_a_config_that_keeps_changing_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = write_config(tmp_path, "codex", PLAIN_CODEX)
    agent_writes_while_pimem_edits(monkeypatch, path, 10)
    with pytest.raises(AgentConfigError, match="changed while pimem was editing it"):
        install("codex", WANTED, env=env_for(tmp_path), which=no_cli)
    text = path.read_text()
    assert "agent1" in text and tomllib.loads(text)["mcp_servers"]["pimem"]["command"] == "/old/bin/pimem"


def test_20_8f_the_old_entry_is_never_removed_before_the_new_one_is_in_place(tmp_path: Path) -> None:
    path = write_config(tmp_path, "claude", json.dumps({"mcpServers": {"pimem": {
        "type": "stdio", "command": OLD.command, "args": list(OLD.args), "env": {}}}}))
    cli = FailingAgentCli(path)
    report = install("claude", WANTED, env=env_for(tmp_path), which=lambda _: "/bin/claude", run=cli)
    assert cli.calls == [] and report.method == "file"
    assert json.loads(path.read_text())["mcpServers"]["pimem"]["command"] == WANTED.command
    # no entry yet: the agent's own `mcp add`; when it fails, nothing was removed and the error is one line
    path.write_text(json.dumps({"mcpServers": {"other": {"command": "x"}}}))
    with pytest.raises(AgentConfigError, match="failed: Error: config is locked"):
        install("claude", WANTED, env=env_for(tmp_path), which=lambda _: "/bin/claude", run=cli)
    assert [call[2] for call in cli.calls] == ["add"]
    assert json.loads(path.read_text()) == {"mcpServers": {"other": {"command": "x"}}}


def run_install(tmp_path: Path, agent: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, **env_for(tmp_path), "PATH": "/nonexistent", "MEMORY_DB_PATH": "/home/me/my store.db"}
    return subprocess.run([str(PIMEM), "mcp", "install", agent], env=env, capture_output=True, text=True, timeout=60)


@pytest.mark.parametrize("agent", ["claude", "codex", "pi"])
def test_20_8g_a_config_that_is_not_utf8_is_one_line(tmp_path: Path, agent: str) -> None:
    content = b'{"mcpServers": {}, "name": "caf\xe9"}' if agent != "codex" else b'name = "caf\xe9"\n'
    path = write_config(tmp_path, agent, content)
    done = run_install(tmp_path, agent)
    assert done.returncode == 1 and "Traceback" not in done.stderr
    assert done.stderr.startswith("pimem mcp install: ") and done.stderr.count("\n") == 1
    assert "not UTF-8" in done.stderr and path.read_bytes() == content


@pytest.mark.parametrize("agent", ["claude", "codex", "pi"])
def test_20_8g_a_store_path_that_is_not_utf8_is_a_bad_argument(tmp_path: Path, agent: str) -> None:
    env = {**os.environ, **env_for(tmp_path), "PATH": "/nonexistent"}
    env.pop("MEMORY_DB_PATH", None)
    done = subprocess.run([str(PIMEM).encode(), b"mcp", b"install", agent.encode(), b"--db", b"/tmp/caf\xe9.db"],
                          env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 2 and "Traceback" not in done.stderr and done.stderr.count("\n") == 1
    assert "/tmp/caf\\udce9.db is not UTF-8" in done.stderr
    assert not any((tmp_path / name).exists() for name in ("claude", "codex", "pi"))


@pytest.mark.parametrize("agent", ["claude", "codex"])
def test_20_8g_a_config_nested_too_deeply_is_one_line(tmp_path: Path, agent: str) -> None:
    content = ("[" * 100_000 + "]" * 100_000) if agent == "claude" else f"a = {'[' * 100_000}{']' * 100_000}\n"
    path = write_config(tmp_path, agent, content)
    done = run_install(tmp_path, agent)
    assert done.returncode == 1 and "Traceback" not in done.stderr and done.stderr.count("\n") == 1
    assert "nests too deeply" in done.stderr and path.read_text() == content


def test_20_8g_lone_surrogate_escapes_are_kept_and_shown_safely(tmp_path: Path) -> None:
    before = '{"note": "\\ud800", "mcpServers": {"pimem": {"command": "/old/\\udc80\\u001b[2J", "args": ["mcp"]}}}'
    path = write_config(tmp_path, "claude", before)
    done = run_install(tmp_path, "claude")
    assert done.returncode == 0, done.stderr
    assert "ran: '/old/\\udc80\\x1b[2J' mcp" in done.stdout and "\x1b" not in done.stdout
    assert path.read_text() == before.replace('"/old/\\udc80\\u001b[2J"', json.dumps(str(PIMEM))).replace(
        '["mcp"]', '["mcp", "--db", "/home/me/my store.db"]')


def test_20_8h_json_numbers_are_kept_and_nan_is_refused(tmp_path: Path) -> None:
    path = write_config(tmp_path, "claude", '{"big": 1e400, "ratio": 1.10, "id": 12345678901234567890123, '
                                            '"mcpServers": {}}')
    install("claude", WANTED, env=env_for(tmp_path), which=no_cli)
    assert path.read_text() == ('{"big": 1e400, "ratio": 1.10, "id": 12345678901234567890123, "mcpServers": '
                                f'{{"pimem": {{"type": "stdio", "command": {WANTED_COMMAND}, "args": {WANTED_ARGS}, '
                                '"env": {}}}}')
    for constant in ("NaN", "Infinity", "-Infinity"):
        before = f'{{"limit": {constant}, "mcpServers": {{}}}}'
        path.write_text(before)
        with pytest.raises(AgentConfigError, match=re.escape(f"{constant} is not JSON); not touching it")):
            install("claude", WANTED, env=env_for(tmp_path), which=no_cli)
        assert path.read_text() == before


@pytest.mark.parametrize(("before", "after"), [
    ("", '[mcp_servers.pimem]\ncommand = "/p/pimem"\nargs = ["mcp"]\n'),
    ('model = "x"', 'model = "x"\n\n[mcp_servers.pimem]\ncommand = "/p/pimem"\nargs = ["mcp"]\n'),
    ('[mcp_servers.pimem]\n\n[other]\na = 1\n',
     '[mcp_servers.pimem]\ncommand = "/p/pimem"\nargs = ["mcp"]\n\n[other]\na = 1\n'),
    ('[mcp_servers.pimem]\n"command" = \'/old\'  # c # d\nargs=["a"]#x\nenabled = false\n',
     '[mcp_servers.pimem]\n"command" = "/p/pimem"  # c # d\nargs=["mcp"]#x\nenabled = false\n'),
    ('[mcp_servers.pimem.env]\nX = "1"\n[mcp_servers.pimem]\ncommand = "/old"\n',
     '[mcp_servers.pimem.env]\nX = "1"\n[mcp_servers.pimem]\ncommand = "/p/pimem"\nargs = ["mcp"]\n'),
    ('[mcp_servers.pimem]\ncommand = """\n/old\n"""\n[x]\n',
     '[mcp_servers.pimem]\ncommand = "/p/pimem"\nargs = ["mcp"]\n[x]\n'),
])
def test_codex_file_edit_forms(tmp_path: Path, before: str, after: str) -> None:
    """Keys written quoted or without spaces, comments after values, multi-line values, a table with no
    keys yet, a sub-table before its table: only the values change, missing keys follow the table's last."""
    path = write_config(tmp_path, "codex", before)
    install("codex", ServerCommand("/p/pimem", ("mcp",)), env=env_for(tmp_path), which=no_cli)
    assert path.read_text() == after


@pytest.mark.parametrize(("before", "after"), [
    ("{\n}\n",
     '{\n  "mcpServers": {"pimem": {"type": "stdio", "command": "/p/pimem", "args": ["mcp"], "env": {}}}\n}\n'),
    ('{\n  "a": 1,\n  "mcpServers": {}\n}\n',
     '{\n  "a": 1,\n  "mcpServers": {\n    "pimem": {"type": "stdio", "command": "/p/pimem", "args": ["mcp"], '
     '"env": {}}\n  }\n}\n'),
    ('{"a":1,"mcpServers":{"x":{}}}',
     '{"a":1,"mcpServers":{"x":{}, "pimem": {"type": "stdio", "command": "/p/pimem", "args": ["mcp"], "env": {}}}}'),
    ('{"mcpServers": {"pimem": {"type": "http", "url": "u"}}}',   # it must be a stdio server; the rest stays
     '{"mcpServers": {"pimem": {"type": "stdio", "url": "u", "command": "/p/pimem", "args": ["mcp"]}}}'),
    ('{"mcpServers": {"pimem": {"command": "a"}}, "mcpServers": {"pimem": {"command": "b", "args": []}}}',
     '{"mcpServers": {"pimem": {"command": "a"}}, "mcpServers": {"pimem": {"command": "/p/pimem", "args": ["mcp"]}}}'),
])
def test_claude_file_edit_forms(tmp_path: Path, before: str, after: str) -> None:
    """A new member goes after the last one in the object's layout; a repeated key: the last one (what
    every JSON reader takes) is edited."""
    path = write_config(tmp_path, "claude", before)
    install("claude", ServerCommand("/p/pimem", ("mcp",)), env=env_for(tmp_path), which=no_cli)
    assert path.read_text() == after


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0, reason="needs root to give a file another owner")
def test_an_owner_that_cannot_be_kept_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A user who may write a file of another owner (group-writable) but cannot give that owner back."""
    path = write_config(tmp_path, "codex", PLAIN_CODEX)
    os.chown(path, 4321, 4322)

    def fchown(_fd: int, _uid: int, _gid: int) -> None:
        raise PermissionError(1, "Operation not permitted")

    monkeypatch.setattr(os, "fchown", fchown)
    with pytest.raises(AgentConfigError, match=r"cannot keep the owner and group of .*config.toml \(4321:4322\)"):
        install("codex", WANTED, env=env_for(tmp_path), which=no_cli)
    assert path.read_text() == PLAIN_CODEX and path.stat().st_uid == 4321
    assert sorted(p.name for p in path.parent.iterdir()) == ["config.toml"]  # no temporary file, no backup left


_JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.text(max_size=5),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=3),
    max_leaves=8)
_ENTRY_EXTRAS = st.dictionaries(st.sampled_from(["env", "timeout", "type", "exposure", "lifecycle", "x"]),
                                _JSON_VALUES, max_size=3)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(others=st.dictionaries(st.text(max_size=6).filter(lambda key: key != "mcpServers"), _JSON_VALUES, max_size=4),
       servers=st.none() | st.dictionaries(st.text(max_size=4).filter(lambda key: key != "pimem"), _ENTRY_EXTRAS,
                                           max_size=2),
       entry=st.none() | _ENTRY_EXTRAS.map(lambda extras: {**extras, "command": "/old", "args": ["mcp"]}),
       indent=st.sampled_from([None, 0, 1, 2, 4, "\t"]), separators=st.sampled_from([(", ", ": "), (",", ":")]),
       crlf=st.booleans(), agent=st.sampled_from(["claude", "pi"]))
def test_json_edits_of_any_layout_change_only_the_entry(tmp_path: Path, others: dict[str, object],
                                                         servers: dict[str, object] | None,
                                                         entry: dict[str, object] | None, indent: int | str | None,
                                                         separators: tuple[str, str], crlf: bool, agent: str) -> None:
    """Whatever the layout, the edit reads back as the document with only the pimem entry's keys set,
    a second install changes nothing, and the text before the edited entry is kept byte for byte."""
    document: dict[str, object] = dict(others)
    if servers is not None or entry is not None:
        document["mcpServers"] = {**(servers or {}), **({"pimem": entry} if entry is not None else {})}
    text = json.dumps(document, indent=indent, separators=separators)
    text = text.replace("\n", "\r\n") if crlf else text
    path = write_config(tmp_path, agent, text)
    wanted = ServerCommand("/p/pimem", ("mcp", "--db", "/d b"))
    install(agent, wanted, env=env_for(tmp_path), which=no_cli)  # type: ignore[arg-type]
    after = json.loads(path.read_text())
    expected = json.loads(text)
    servers_after = expected.setdefault("mcpServers", {})
    old_entry = servers_after.get("pimem")
    if old_entry is None:
        servers_after["pimem"] = after["mcpServers"]["pimem"]
        assert set(after["mcpServers"]["pimem"]) >= {"command", "args"}
    else:
        old_entry.update({"command": "/p/pimem", "args": ["mcp", "--db", "/d b"]})
        if agent == "claude" and old_entry.get("type", "stdio") != "stdio":
            old_entry["type"] = "stdio"
    assert after == expected
    new_text = path.read_bytes().decode()
    assert ("\r\n" in new_text) == ("\r\n" in text) and ("\n" in new_text.replace("\r\n", "")) == (
        "\n" in text.replace("\r\n", ""))
    assert not install(agent, wanted, env=env_for(tmp_path), which=no_cli).changed  # type: ignore[arg-type]
    path.unlink()


_TOML_SCALARS = st.one_of(st.integers(-5, 5).map(str), st.booleans().map(lambda b: str(b).lower()),
                          st.text(st.characters(codec="utf-8", exclude_categories=("Cs", "Cc")), max_size=5)
                          .map(lambda text: json.dumps(text, ensure_ascii=False)),
                          st.just('[\n  "a",  # a comment\n  "b",\n]'), st.just('"""\n[mcp_servers.pimem]\n"""'))
_TOML_STATEMENTS = st.lists(st.tuples(st.sampled_from(["command", "args", "enabled", "startup_timeout_sec", "env.X",
                                                       "'quoted'", "k"]), _TOML_SCALARS,
                                      st.sampled_from(["", "  # note", "#x"])), max_size=4)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(before=_TOML_STATEMENTS, table=st.none() | _TOML_STATEMENTS, after=_TOML_STATEMENTS, crlf=st.booleans(),
       final_newline=st.booleans())
def test_toml_edits_of_any_layout_change_only_the_entry(tmp_path: Path, before: list[tuple[str, str, str]],
                                                         table: list[tuple[str, str, str]] | None,
                                                         after: list[tuple[str, str, str]], crlf: bool,
                                                         final_newline: bool) -> None:
    """Any statements, comments and line ends around and in [mcp_servers.pimem]: the edit reads back
    as the document with only command and args set, every line outside the table is kept, and a
    second install changes nothing (a line reading `[mcp_servers.pimem]` inside a string is not its table)."""
    def block(header: str, statements: list[tuple[str, str, str]]) -> str:
        seen: dict[str, str] = {}
        for key, value, comment in statements:
            seen.setdefault(key.split(".")[0], f"{key} = {value}{comment}\n")
        return header + "".join(seen.values())

    text = block("# top\n", before) + ("\n" + block("[mcp_servers.pimem]\n", table) if table is not None else "") + (
        "\n" + block("[profiles.p]\n", after))
    text = text if final_newline else text.rstrip("\n")
    text = text.replace("\n", "\r\n") if crlf else text
    path = write_config(tmp_path, "codex", text)
    wanted = ServerCommand("/p/pimem", ("mcp",))
    install("codex", wanted, env=env_for(tmp_path), which=no_cli)
    new_text = path.read_bytes().decode()
    expected = tomllib.loads(text)
    expected.setdefault("mcp_servers", {}).setdefault("pimem", {}).update(command="/p/pimem", args=["mcp"])
    assert tomllib.loads(new_text) == expected
    start = text.find("[mcp_servers.pimem]")
    assert new_text.startswith(text[:start] if start >= 0 else text.rstrip("\r\n"))
    assert ("\r\n" in new_text) == crlf or not text.count("\n")
    assert not install("codex", wanted, env=env_for(tmp_path), which=no_cli).changed
    path.unlink()
