"""Add ``pimem mcp`` to an agent's MCP servers (``pimem mcp install {claude,codex,pi}``).

A new ``pimem`` entry is added the way each agent adds one itself: its own ``mcp add`` command when
it is on PATH (Claude Code: ``claude mcp add --scope user pimem -- <pimem> mcp``; Codex: ``codex mcp
add pimem -- <pimem> mcp``; Pi: ``pi mcp add pimem --exposure direct -- <pimem> mcp``), otherwise an
edit of its configuration file (Claude Code's ``~/.claude.json`` and Pi's ``~/.pi/agent/mcp.json``
``mcpServers``, Codex's ``~/.codex/config.toml`` ``[mcp_servers.pimem]``). An existing entry is
always edited in the file: the agents' ``mcp add`` replaces the whole entry (the user's ``env``,
``enabled = false``, timeouts, Pi's exposure would go) and Claude Code's needs a ``remove`` first
(a failed ``add`` would lose the entry). The edit sets the entry's ``command`` and ``args`` only
(and a Claude Code entry's ``type`` to ``stdio``); every other byte of the file stays
(:mod:`pimem.config_edit`: minimal text edits, verified by reading the result back, an atomic
replacement keeping owner and mode, a backup, a re-read for the agent writing at the same moment).
Idempotent: an entry that already runs the same command is left alone. ``CLAUDE_CONFIG_DIR``,
``CODEX_HOME`` and ``PI_CODING_AGENT_DIR`` are honoured as the agents honour them.

Pi gets ``direct`` exposure (Pi's default, ``codemode``, hides tools from the model behind scripts):
two small, read-only tools the model should see, and the first prompt waits for direct servers.

The command is this pimem's absolute path, so the agent needs no PATH and no activated venv; a store
chosen with ``--db`` or ``$MEMORY_DB_PATH`` is written into it as ``--db`` (agents start their MCP
servers with an environment of their own, Codex with a filtered one).
"""

from __future__ import annotations

import copy
import os
import shlex
import subprocess
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from pimem.config_edit import (
    EditError,
    backup_path,
    check_writable,
    edit_file,
    json_set,
    load_json,
    load_toml,
    read_text,
    toml_table_set,
)
from pimem.config_edit import shown as _shown
from pimem.paths import home_dir, pi_agent_dir

Agent = Literal["claude", "codex", "pi"]
AGENTS: tuple[Agent, ...] = ("claude", "codex", "pi")
SERVER_NAME = "pimem"
AGENT_NAMES: dict[Agent, str] = {"claude": "Claude Code", "codex": "Codex", "pi": "Pi"}
PI_EXPOSURE = "direct"
_CLI_TIMEOUT_S = 60


class AgentConfigError(Exception):
    """The agent's configuration cannot be read or changed; the message says what to do."""


class InstallArgumentError(AgentConfigError):
    """What was asked for cannot be written into any configuration (a bad argument)."""


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
    backup: Path | None = None          # where the file edit kept the previous content
    notes: list[str] = field(default_factory=list)            # settings of the user's that were kept

    @property
    def changed(self) -> bool:
        return self.method != "unchanged"

    def lines(self) -> list[str]:
        """What was (or, with --dry-run, would be) changed, for the user (printable: lone surrogates
        of a command or a path shown as escapes)."""
        return [_shown(line) for line in self._lines()]

    def _lines(self) -> list[str]:
        name = AGENT_NAMES[self.agent]
        if not self.changed:
            return [f"{name}: pimem is already configured in {self.config_path} ({self.wanted.shell()}); "
                    "nothing changed", *self.notes]
        lines = []
        if self.previous:
            lines.append(f"{name}: the pimem entry in {self.config_path} ran: {self.previous.shell()}")
        if self.method == "cli":
            lines += [f"{name}: {'would run' if self.dry_run else 'ran'}: {shlex.join(command)}"
                      for command in self.commands]
        else:
            kept = f"; the file before is {self.backup}" if self.backup else ""
            lines.append(f"{name}: {'would edit' if self.dry_run else 'edited'} {self.config_path} (only the "
                         f"pimem entry; everything else kept{kept})")
        if self.dry_run:
            lines.append(f"{name}: would {'replace' if self.previous else 'add'} MCP server pimem: "
                         f"{self.wanted.shell()} (dry run: nothing changed)")
        else:
            lines.append(f"{name}: {'replaced' if self.previous else 'added'} MCP server pimem: {self.wanted.shell()}; "
                         f"new {name} sessions have its tools recall_memory and read_session")
        return lines + self.notes


Runner = Callable[[Sequence[str]], "subprocess.CompletedProcess[str]"]
Plan = Callable[[str | None], str | None]   # the file's text (None: no file) -> its new text (None: no change)


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
    for arg in wanted.args:
        if _shown(arg) != arg:  # undecodable bytes of a --db path: no JSON or TOML file can hold them
            raise InstallArgumentError(f"{_shown(arg)} is not UTF-8: an agent's configuration cannot hold it "
                                       "(choose a store path that is)")
    try:
        if agent == "claude":
            return _install_claude(wanted, dry_run=dry_run, env=env, cli=which("claude"), run=run)
        if agent == "codex":
            return _install_codex(wanted, dry_run=dry_run, env=env, cli=which("codex"), run=run)
        if agent == "pi":
            return _install_pi(wanted, dry_run=dry_run, env=env, cli=which("pi"), run=run)
    except (AgentConfigError, EditError) as error:
        raise AgentConfigError(_shown(str(error))) from None
    raise AgentConfigError(f"unknown agent {agent!r} (expected one of {', '.join(AGENTS)})")


def _check(result: subprocess.CompletedProcess[str], argv: Sequence[str]) -> None:
    if result.returncode != 0:
        said = (result.stderr or result.stdout or "").strip().splitlines()
        reason = said[-1] if said else f"exit status {result.returncode}"
        raise AgentConfigError(f"{shlex.join(argv)} failed: {reason}")


def _add_with_cli(report: InstallReport, argv: list[str], run: Runner, installed: Callable[[], bool],
                  by_hand: str) -> None:
    """The agent's own ``mcp add``: used only when there is no pimem entry, so a failure loses nothing
    (its ``mcp add`` replaces a whole entry, and Claude Code's needs a ``remove`` first)."""
    report.method = "cli"
    report.commands.append(argv)
    if report.dry_run:
        return
    _check(run(argv), argv)
    if not installed():
        raise AgentConfigError(f"{shlex.join(argv[:3])} succeeded but {report.config_path} does not hold the "
                               f"pimem entry; add it by hand: {by_hand}")


def _edit(report: InstallReport, plan: Plan) -> None:
    """Edit the agent's file with ``plan`` (config_edit: atomic, backed up, re-read before the rename);
    a dry run only checks that the edit can be made."""
    report.method = "file"
    path = report.config_path
    if report.dry_run:
        check_writable(path)
        plan(read_text(path))
        return
    existed = os.path.exists(path)
    if edit_file(path, lambda text: _plan_for(report, plan, text)) and existed:
        report.backup = backup_path(path)


def _plan_for(report: InstallReport, plan: Plan, text: str | None) -> str | None:
    """``plan``, and the report follows what the file held when it was planned (it may be planned
    again after the agent wrote it)."""
    new = plan(text)
    if new is None:
        report.method = "unchanged"
    return new


def _verified(new_text: str, expected: Any, load: Callable[[str, str], Any], path: Path, entry: str,
              by_hand: str) -> str:
    """``new_text`` if it reads back as ``expected``: the edit changed the pimem entry's keys only."""
    try:
        ok = load(new_text, str(path)) == expected
    except EditError:
        ok = False
    if not ok:
        raise AgentConfigError(f"{path} defines {entry} in a form pimem does not edit; not touching it "
                               f"(edit it by hand, or run: {by_hand})")
    return new_text


# -- Claude Code and Pi (JSON) -------------------------------------------------------------------------

def claude_config_path(env: Mapping[str, str]) -> Path:
    """Claude Code's user configuration: ``$CLAUDE_CONFIG_DIR/.claude.json``, else ``~/.claude.json``."""
    folder = env.get("CLAUDE_CONFIG_DIR")
    return Path(os.path.expanduser(folder)) / ".claude.json" if folder else home_dir(env) / ".claude.json"


def pi_config_path(env: Mapping[str, str]) -> Path:
    """Pi's user-level MCP servers: ``$PI_CODING_AGENT_DIR/mcp.json``, else ``~/.pi/agent/mcp.json``."""
    return pi_agent_dir(env) / "mcp.json"


def _json_config(text: str | None, path: Path) -> dict[str, Any]:
    data = load_json(text, str(path)) if text and text.strip() else {}
    if not isinstance(data, dict):
        raise AgentConfigError(f"{path} does not hold a JSON object; not touching it")
    servers = data.get("mcpServers")
    if servers is not None and not isinstance(servers, dict):
        raise AgentConfigError(f'"mcpServers" in {path} is not an object; not touching it')
    if isinstance(servers, dict) and SERVER_NAME in servers and not isinstance(servers[SERVER_NAME], dict):
        raise AgentConfigError(f'"mcpServers.pimem" in {path} is not an object; not touching it')
    return data


def _json_entry(data: Mapping[str, Any]) -> ServerCommand | None:
    """The command of ``mcpServers.pimem`` (Claude Code's and Pi's layout)."""
    servers = data.get("mcpServers")
    entry = servers.get(SERVER_NAME) if isinstance(servers, dict) else None
    if not isinstance(entry, dict) or not isinstance(entry.get("command"), str):
        return None
    args = entry.get("args") or []
    return ServerCommand(entry["command"], tuple(str(arg) for arg in args) if isinstance(args, list) else ())


def _has_entry(data: Mapping[str, Any]) -> bool:
    servers = data.get("mcpServers")
    return isinstance(servers, dict) and SERVER_NAME in servers


def _claude_up_to_date(data: Mapping[str, Any], wanted: ServerCommand) -> bool:
    """The entry runs ``wanted`` as a stdio server (its ``env`` and other keys are the user's)."""
    servers = data.get("mcpServers")
    entry = servers.get(SERVER_NAME) if isinstance(servers, dict) else None
    return isinstance(entry, dict) and entry.get("type", "stdio") == "stdio" and _json_entry(data) == wanted


def _json_plan(report: InstallReport, up_to_date: Callable[[Mapping[str, Any]], bool],
               new_entry: dict[str, Any], by_hand: str) -> Plan:
    """Set the pimem entry's command and args (and a Claude Code entry's type to stdio), or add
    ``new_entry``; nothing else changes."""
    path, wanted = report.config_path, report.wanted

    def plan(text: str | None) -> str | None:
        data = _json_config(text, path)
        report.previous = _json_entry(data)
        if up_to_date(data):
            return None
        expected = copy.deepcopy(data)
        servers = expected.setdefault("mcpServers", {})
        new_text = text or ""
        if SERVER_NAME not in servers:
            servers[SERVER_NAME] = new_entry
            new_text = json_set(new_text, ("mcpServers", SERVER_NAME), new_entry, str(path))
        else:
            changes: dict[str, Any] = {"command": wanted.command, "args": list(wanted.args)}
            if "type" in new_entry and servers[SERVER_NAME].get("type", "stdio") != "stdio":
                changes["type"] = "stdio"
            for key, value in changes.items():
                servers[SERVER_NAME][key] = value
                new_text = json_set(new_text, ("mcpServers", SERVER_NAME, key), value, str(path))
        return _verified(new_text, expected, load_json, path, "mcpServers.pimem", by_hand)

    return plan


def _install_claude(wanted: ServerCommand, *, dry_run: bool, env: Mapping[str, str], cli: str | None,
                    run: Runner) -> InstallReport:
    path = claude_config_path(env)
    data = _json_config(read_text(path), path)
    report = InstallReport("claude", path, wanted, _json_entry(data), "unchanged", dry_run)
    if _claude_up_to_date(data, wanted):
        return report
    by_hand = f"claude mcp add --scope user pimem -- {wanted.shell()}"
    if cli and not _has_entry(data):
        _add_with_cli(report, [cli, "mcp", "add", "--scope", "user", SERVER_NAME, "--", *wanted.argv()], run,
                      lambda: _claude_up_to_date(_json_config(read_text(path), path), wanted), by_hand)
        return report
    entry = {"type": "stdio", "command": wanted.command, "args": list(wanted.args), "env": {}}
    _edit(report, _json_plan(report, lambda data: _claude_up_to_date(data, wanted), entry, by_hand))
    return report


def _install_pi(wanted: ServerCommand, *, dry_run: bool, env: Mapping[str, str], cli: str | None,
                run: Runner) -> InstallReport:
    path = pi_config_path(env)
    data = _json_config(read_text(path), path)
    report = InstallReport("pi", path, wanted, _json_entry(data), "unchanged", dry_run)
    if report.previous == wanted:  # an exposure the user chose stays
        return report
    by_hand = f"pi mcp add pimem --exposure {PI_EXPOSURE} -- {wanted.shell()}"
    if cli and not _has_entry(data):
        _add_with_cli(report, [cli, "mcp", "add", SERVER_NAME, "--exposure", PI_EXPOSURE, "--", *wanted.argv()],
                      run, lambda: _json_entry(_json_config(read_text(path), path)) == wanted, by_hand)
        return report
    entry = {"command": wanted.command, "args": list(wanted.args), "exposure": PI_EXPOSURE}
    _edit(report, _json_plan(report, lambda data: _json_entry(data) == wanted, entry, by_hand))
    return report


# -- Codex --------------------------------------------------------------------------------------------

def codex_config_path(env: Mapping[str, str]) -> Path:
    """Codex's configuration: ``$CODEX_HOME/config.toml``, else ``~/.codex/config.toml``."""
    folder = env.get("CODEX_HOME")
    return (Path(os.path.expanduser(folder)) if folder else home_dir(env) / ".codex") / "config.toml"


def _codex_config(text: str | None, path: Path) -> dict[str, Any]:
    data = load_toml(text or "", str(path))
    servers = data.get("mcp_servers")
    if servers is not None and not isinstance(servers, dict):
        raise AgentConfigError(f"mcp_servers in {path} is not a table; not touching it")
    return data


def _codex_entry(data: Mapping[str, Any]) -> ServerCommand | None:
    servers = data.get("mcp_servers")
    entry = servers.get(SERVER_NAME) if isinstance(servers, dict) else None
    if not isinstance(entry, dict) or not isinstance(entry.get("command"), str):
        return None
    args = entry.get("args") or []
    return ServerCommand(entry["command"], tuple(str(arg) for arg in args) if isinstance(args, list) else ())


def _codex_notes(data: Mapping[str, Any]) -> list[str]:
    entry = (data.get("mcp_servers") or {}).get(SERVER_NAME)
    if isinstance(entry, dict) and entry.get("enabled") is False:
        return ["Codex: the pimem entry keeps your `enabled = false`: set it to true for Codex to start pimem"]
    return []


def _install_codex(wanted: ServerCommand, *, dry_run: bool, env: Mapping[str, str], cli: str | None,
                   run: Runner) -> InstallReport:
    path = codex_config_path(env)
    data = _codex_config(read_text(path), path)
    report = InstallReport("codex", path, wanted, _codex_entry(data), "unchanged", dry_run)
    if report.previous == wanted:
        report.notes = _codex_notes(data)
        return report
    by_hand = f"codex mcp add pimem -- {wanted.shell()}"
    if cli and SERVER_NAME not in (data.get("mcp_servers") or {}):
        _add_with_cli(report, [cli, "mcp", "add", SERVER_NAME, "--", *wanted.argv()], run,
                      lambda: _codex_entry(_codex_config(read_text(path), path)) == wanted, by_hand)
        return report

    def plan(text: str | None) -> str | None:
        data = _codex_config(text, path)
        report.previous = _codex_entry(data)
        report.notes = _codex_notes(data)
        if report.previous == wanted:
            return None
        values = {"command": wanted.command, "args": list(wanted.args)}
        expected = copy.deepcopy(data)
        entry = expected.setdefault("mcp_servers", {}).setdefault(SERVER_NAME, {})
        if not isinstance(entry, dict):
            raise AgentConfigError(f"mcp_servers.pimem in {path} is not a table; not touching it")
        entry.update(values)
        new_text = toml_table_set(text or "", ("mcp_servers", SERVER_NAME), values, str(path))
        return _verified(new_text, expected, load_toml, path, "mcp_servers.pimem", by_hand)

    _edit(report, plan)
    return report
