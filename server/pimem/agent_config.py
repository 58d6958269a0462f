"""Add ``pimem mcp`` to an agent's MCP servers (``pimem mcp install {claude,codex,pi}``).

Done the way each agent does it itself: its own ``mcp add`` command when it is on PATH (Claude Code:
``claude mcp add --scope user pimem -- <pimem> mcp``; Codex: ``codex mcp add pimem -- <pimem> mcp``;
Pi: ``pi mcp add pimem --exposure direct -- <pimem> mcp``), otherwise a careful edit of its
configuration file (Claude Code's ``~/.claude.json`` and Pi's ``~/.pi/agent/mcp.json``
``mcpServers``, Codex's ``~/.codex/config.toml`` ``[mcp_servers.pimem]``) that changes the ``pimem``
entry only and checks, before writing, that everything else reads back the same. Idempotent: an
entry that already runs the same command is left alone. ``CLAUDE_CONFIG_DIR``, ``CODEX_HOME`` and
``PI_CODING_AGENT_DIR`` are honoured as the agents honour them.

Pi gets ``direct`` exposure (Pi's default, ``codemode``, hides tools from the model behind scripts):
two small, read-only tools the model should see, and the first prompt waits for direct servers.

The command is this pimem's absolute path, so the agent needs no PATH and no activated venv; a store
chosen with ``--db`` or ``$MEMORY_DB_PATH`` is written into it as ``--db`` (agents start their MCP
servers with an environment of their own, Codex with a filtered one).
"""

from __future__ import annotations

import contextlib
import json
import os
import shlex
import subprocess
import sys
import tempfile
import tomllib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from pimem.paths import home_dir, pi_agent_dir

Agent = Literal["claude", "codex", "pi"]
AGENTS: tuple[Agent, ...] = ("claude", "codex", "pi")
SERVER_NAME = "pimem"
AGENT_NAMES: dict[Agent, str] = {"claude": "Claude Code", "codex": "Codex", "pi": "Pi"}
PI_EXPOSURE = "direct"
_CLI_TIMEOUT_S = 60


class AgentConfigError(Exception):
    """The agent's configuration cannot be read or changed; the message says what to do."""


@dataclass(frozen=True)
class ServerCommand:
    command: str
    args: tuple[str, ...]

    def argv(self) -> list[str]:
        return [self.command, *self.args]

    def shell(self) -> str:
        return shlex.join(self.argv())


def pimem_command(db_path: str | None = None, *, redact: bool = True, argv0: str | None = None,
                  executable: str | None = None) -> ServerCommand:
    """The command that starts this pimem's MCP server, with absolute paths."""
    argv0 = sys.argv[0] if argv0 is None else argv0
    args: list[str] = ["mcp"]
    if db_path:
        args += ["--db", os.path.abspath(os.path.expanduser(db_path))]
    if not redact:
        args.append("--no-redact")
    if Path(argv0).name == "pimem" and os.path.isfile(argv0):
        # The console script: its own folder, not the agent's working directory, is on sys.path.
        return ServerCommand(os.path.abspath(argv0), tuple(args))
    # Run as `python -m pimem`: -P keeps the agent's working directory (a project that may hold
    # a `pimem/` of its own) off sys.path.
    return ServerCommand(executable or sys.executable, ("-P", "-m", "pimem", *args))


@dataclass
class InstallReport:
    agent: Agent
    config_path: Path
    wanted: ServerCommand
    previous: ServerCommand | None      # the pimem entry before, if any
    method: Literal["unchanged", "cli", "file"]
    dry_run: bool
    commands: list[list[str]] = field(default_factory=list)   # agent CLI commands run (or to run)

    @property
    def changed(self) -> bool:
        return self.method != "unchanged"

    def lines(self) -> list[str]:
        """What was (or, with --dry-run, would be) changed, for the user."""
        name = AGENT_NAMES[self.agent]
        if not self.changed:
            return [f"{name}: pimem is already configured in {self.config_path} ({self.wanted.shell()}); "
                    "nothing changed"]
        lines = []
        if self.previous:
            lines.append(f"{name}: the pimem entry in {self.config_path} ran: {self.previous.shell()}")
        if self.method == "cli":
            lines += [f"{name}: {'would run' if self.dry_run else 'ran'}: {shlex.join(command)}"
                      for command in self.commands]
        else:
            lines.append(f"{name}: {'would edit' if self.dry_run else 'edited'} {self.config_path} "
                         f"(no `{self.agent}` command on PATH)")
        if self.dry_run:
            lines.append(f"{name}: would {'replace' if self.previous else 'add'} MCP server pimem: "
                         f"{self.wanted.shell()} (dry run: nothing changed)")
        else:
            lines.append(f"{name}: {'replaced' if self.previous else 'added'} MCP server pimem: {self.wanted.shell()}; "
                         f"new {name} sessions have its tools recall_memory and read_session")
        return lines


Runner = Callable[[Sequence[str]], "subprocess.CompletedProcess[str]"]


def _run(argv: Sequence[str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(list(argv), capture_output=True, text=True, timeout=_CLI_TIMEOUT_S, check=False,
                          stdin=subprocess.DEVNULL)


def install(agent: Agent, wanted: ServerCommand, *, dry_run: bool = False, env: Mapping[str, str] | None = None,
            which: Callable[[str], str | None] | None = None, run: Runner = _run) -> InstallReport:
    """Make ``pimem`` in ``agent``'s MCP servers run ``wanted`` (see the module docstring)."""
    env = os.environ if env is None else env
    if which is None:
        import shutil

        def which(name: str) -> str | None:
            return shutil.which(name, path=env.get("PATH"))
    if agent == "claude":
        return _install_claude(wanted, dry_run=dry_run, env=env, cli=which("claude"), run=run)
    if agent == "codex":
        return _install_codex(wanted, dry_run=dry_run, env=env, cli=which("codex"), run=run)
    if agent == "pi":
        return _install_pi(wanted, dry_run=dry_run, env=env, cli=which("pi"), run=run)
    raise AgentConfigError(f"unknown agent {agent!r} (expected one of {', '.join(AGENTS)})")


def _check(result: subprocess.CompletedProcess[str], argv: Sequence[str]) -> None:
    if result.returncode != 0:
        said = (result.stderr or result.stdout or "").strip().splitlines()
        reason = said[-1] if said else f"exit status {result.returncode}"
        raise AgentConfigError(f"{shlex.join(argv)} failed: {reason}")


# -- Claude Code --------------------------------------------------------------------------------------

def claude_config_path(env: Mapping[str, str]) -> Path:
    """Claude Code's user configuration: ``$CLAUDE_CONFIG_DIR/.claude.json``, else ``~/.claude.json``."""
    folder = env.get("CLAUDE_CONFIG_DIR")
    return Path(os.path.expanduser(folder)) / ".claude.json" if folder else home_dir(env) / ".claude.json"


def _read_json(path: Path) -> dict[str, Any]:
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return {}
    except OSError as error:
        raise AgentConfigError(f"cannot read {path}: {error.strerror or error}") from None
    try:
        data = json.loads(text) if text.strip() else {}
    except ValueError as error:
        raise AgentConfigError(f"{path} is not valid JSON ({error}); not touching it") from None
    if not isinstance(data, dict):
        raise AgentConfigError(f"{path} does not hold a JSON object; not touching it")
    return data


def _json_entry(data: Mapping[str, Any]) -> ServerCommand | None:
    """The command of ``mcpServers.pimem`` (Claude Code's and Pi's layout)."""
    servers = data.get("mcpServers")
    entry = servers.get(SERVER_NAME) if isinstance(servers, dict) else None
    if not isinstance(entry, dict) or not isinstance(entry.get("command"), str):
        return None
    args = entry.get("args") or []
    return ServerCommand(entry["command"], tuple(str(arg) for arg in args) if isinstance(args, list) else ())


def _claude_up_to_date(data: Mapping[str, Any], wanted: ServerCommand) -> bool:
    servers = data.get("mcpServers")
    entry = servers.get(SERVER_NAME) if isinstance(servers, dict) else None
    return (isinstance(entry, dict) and entry.get("type", "stdio") == "stdio" and not entry.get("env")
            and _json_entry(data) == wanted)


def _install_claude(wanted: ServerCommand, *, dry_run: bool, env: Mapping[str, str], cli: str | None,
                    run: Runner) -> InstallReport:
    path = claude_config_path(env)
    data = _read_json(path)
    previous = _json_entry(data)
    report = InstallReport("claude", path, wanted, previous, "unchanged", dry_run)
    if _claude_up_to_date(data, wanted):
        return report
    if cli:
        report.method = "cli"
        servers = data.get("mcpServers")
        if isinstance(servers, dict) and SERVER_NAME in servers:
            report.commands.append([cli, "mcp", "remove", "--scope", "user", SERVER_NAME])
        report.commands.append([cli, "mcp", "add", "--scope", "user", SERVER_NAME, "--", *wanted.argv()])
        if not dry_run:
            for argv in report.commands:
                _check(run(argv), argv)
            if not _claude_up_to_date(_read_json(path), wanted):
                raise AgentConfigError(f"claude mcp add succeeded but {path} does not hold the pimem entry; "
                                       f"add it by hand: claude mcp add --scope user pimem -- {wanted.shell()}")
        return report
    report.method = "file"
    if not dry_run:
        _write_json_entry(path, data, {"type": "stdio", "command": wanted.command, "args": list(wanted.args),
                                       "env": {}})
    return report


def _write_json_entry(path: Path, data: dict[str, Any], entry: dict[str, Any]) -> None:
    servers = data.setdefault("mcpServers", {})
    if not isinstance(servers, dict):
        raise AgentConfigError(f'"mcpServers" in {path} is not an object; not touching it')
    servers[SERVER_NAME] = entry
    _write_atomically(path, json.dumps(data, indent=2, ensure_ascii=False) + "\n")


# -- Pi -----------------------------------------------------------------------------------------------

def pi_config_path(env: Mapping[str, str]) -> Path:
    """Pi's user-level MCP servers: ``$PI_CODING_AGENT_DIR/mcp.json``, else ``~/.pi/agent/mcp.json``."""
    return pi_agent_dir(env) / "mcp.json"


def _install_pi(wanted: ServerCommand, *, dry_run: bool, env: Mapping[str, str], cli: str | None,
                run: Runner) -> InstallReport:
    path = pi_config_path(env)
    data = _read_json(path)
    previous = _json_entry(data)
    report = InstallReport("pi", path, wanted, previous, "unchanged", dry_run)
    if previous == wanted:  # an exposure the user chose stays
        return report
    if cli:
        report.method = "cli"
        # `pi mcp add` replaces an entry of the same name and keeps every other one.
        report.commands.append([cli, "mcp", "add", SERVER_NAME, "--exposure", PI_EXPOSURE, "--", *wanted.argv()])
        if not dry_run:
            for argv in report.commands:
                _check(run(argv), argv)
            if _json_entry(_read_json(path)) != wanted:
                raise AgentConfigError(f"pi mcp add succeeded but {path} does not hold the pimem entry; add it by "
                                       f"hand: pi mcp add pimem --exposure {PI_EXPOSURE} -- {wanted.shell()}")
        return report
    report.method = "file"
    if not dry_run:
        _write_json_entry(path, data, {"command": wanted.command, "args": list(wanted.args), "exposure": PI_EXPOSURE})
    return report


# -- Codex --------------------------------------------------------------------------------------------

def codex_config_path(env: Mapping[str, str]) -> Path:
    """Codex's configuration: ``$CODEX_HOME/config.toml``, else ``~/.codex/config.toml``."""
    folder = env.get("CODEX_HOME")
    return (Path(os.path.expanduser(folder)) if folder else home_dir(env) / ".codex") / "config.toml"


def _read_toml(path: Path) -> tuple[str, dict[str, Any]]:
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return "", {}
    except OSError as error:
        raise AgentConfigError(f"cannot read {path}: {error.strerror or error}") from None
    try:
        return text, tomllib.loads(text)
    except tomllib.TOMLDecodeError as error:
        raise AgentConfigError(f"{path} is not valid TOML ({error}); not touching it") from None


def _codex_entry(data: Mapping[str, Any]) -> ServerCommand | None:
    servers = data.get("mcp_servers")
    entry = servers.get(SERVER_NAME) if isinstance(servers, dict) else None
    if not isinstance(entry, dict) or not isinstance(entry.get("command"), str):
        return None
    args = entry.get("args") or []
    return ServerCommand(entry["command"], tuple(str(arg) for arg in args) if isinstance(args, list) else ())


def _install_codex(wanted: ServerCommand, *, dry_run: bool, env: Mapping[str, str], cli: str | None,
                   run: Runner) -> InstallReport:
    path = codex_config_path(env)
    text, data = _read_toml(path)
    previous = _codex_entry(data)
    report = InstallReport("codex", path, wanted, previous, "unchanged", dry_run)
    if previous == wanted:
        return report
    if cli:
        report.method = "cli"
        # `codex mcp add` replaces an entry of the same name and keeps every other one.
        report.commands.append([cli, "mcp", "add", SERVER_NAME, "--", *wanted.argv()])
        if not dry_run:
            for argv in report.commands:
                _check(run(argv), argv)
            if _codex_entry(_read_toml(path)[1]) != wanted:
                raise AgentConfigError(f"codex mcp add succeeded but {path} does not hold the pimem entry; "
                                       f"add it by hand: codex mcp add pimem -- {wanted.shell()}")
        return report
    report.method = "file"
    new_text = codex_config_with(text, data, wanted, path)
    if not dry_run:
        _write_atomically(path, new_text)
    return report


def _toml_string(value: str) -> str:
    return json.dumps(value, ensure_ascii=False)  # a JSON string is a valid TOML basic string


def codex_config_with(text: str, data: Mapping[str, Any], wanted: ServerCommand, path: Path) -> str:
    """``text`` with its ``[mcp_servers.pimem]`` table (and sub-tables) replaced by, or added as,
    one that runs ``wanted``; every other line kept. Verified by parsing the result."""
    table = [f"[mcp_servers.{SERVER_NAME}]", f"command = {_toml_string(wanted.command)}",
             f"args = [{', '.join(_toml_string(arg) for arg in wanted.args)}]"]
    lines = text.splitlines()
    header = f"[mcp_servers.{SERVER_NAME}]"
    start = next((i for i, line in enumerate(lines) if line.strip() == header), None)
    if start is None:
        if _codex_entry(data) is not None or SERVER_NAME in (data.get("mcp_servers") or {}):
            raise AgentConfigError(f"{path} defines mcp_servers.pimem in a form pimem does not edit; run "
                                   f"`codex mcp add pimem -- {wanted.shell()}` or edit it by hand")
        kept = lines + ([""] if lines and lines[-1].strip() else [])
        new_lines = kept + table
    else:
        stop = start + 1
        while stop < len(lines):
            stripped = lines[stop].strip()
            if stripped.startswith("[") and not stripped.startswith(f"[mcp_servers.{SERVER_NAME}."):
                break
            stop += 1
        # keep blank lines and comments that separate the next table
        while stop - 1 > start and (not lines[stop - 1].strip() or lines[stop - 1].lstrip().startswith("#")):
            stop -= 1
        new_lines = [*lines[:start], *table, *lines[stop:]]
    new_text = "\n".join(new_lines) + "\n"
    try:
        new_data = tomllib.loads(new_text)
    except tomllib.TOMLDecodeError as error:
        raise AgentConfigError(f"editing {path} would break it ({error}); not touching it") from None
    others_before = {key: value for key, value in data.items() if key != "mcp_servers"}
    others_after = {key: value for key, value in new_data.items() if key != "mcp_servers"}
    servers_before = {k: v for k, v in (data.get("mcp_servers") or {}).items() if k != SERVER_NAME}
    servers_after = {k: v for k, v in (new_data.get("mcp_servers") or {}).items() if k != SERVER_NAME}
    if others_before != others_after or servers_before != servers_after or _codex_entry(new_data) != wanted:
        raise AgentConfigError(f"editing {path} would change more than the pimem entry; not touching it "
                               f"(run `codex mcp add pimem -- {wanted.shell()}` instead)")
    return new_text


# -- files --------------------------------------------------------------------------------------------

def _write_atomically(path: Path, text: str) -> None:
    """Replace ``path`` in one step (a reader never sees half a file), keeping its permissions;
    a new file is owner-only (agent configurations hold tokens). A symlinked file is written
    through the link, as an editor would."""
    path = Path(os.path.realpath(path))
    try:
        mode = path.stat().st_mode & 0o7777
    except FileNotFoundError:
        mode = 0o600
    try:
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        fd, temporary = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".pimem", dir=path.parent)
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as handle:
                handle.write(text)
            os.chmod(temporary, mode)
            os.replace(temporary, path)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(temporary)
            raise
    except OSError as error:
        raise AgentConfigError(f"cannot write {path}: {error.strerror or error}") from None
