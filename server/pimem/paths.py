"""Where things live: the store file and each source's history roots (:data:`ROOTS`); how folders compare.

Every location can be overridden by the same environment variables the agents themselves honour,
so a test (or a user with a custom setup) points pimem anywhere without code changes.

Folders (a recall's ``cwd`` filter, a migration's workspace folder) are compared in one way only:
:func:`normalize_folder`, :func:`same_folder`, :func:`in_folder`.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Mapping
from pathlib import Path

from pimem.models import SOURCES, Source, is_source


def _expand(value: str) -> Path:
    """Tilde-expanded and absolute (relative settings are taken from the current directory)."""
    return Path(os.path.abspath(os.path.expanduser(value)))


def make_private_dirs(directory: Path) -> None:
    """Create ``directory`` and its missing parents owner-only (0700), whatever the umask.

    ``Path.mkdir(parents=True, mode=...)`` gives the parents the umask's mode (0777 under umask 0),
    and filters the leaf's mode through the umask too. Only the folders created here are chmod-ed
    (through a descriptor opened without following links); existing ones, and one that another
    process creates meanwhile, are left as they are.
    """
    missing: list[Path] = []
    current = directory
    while not os.path.lexists(current) and current.parent != current:
        missing.append(current)
        current = current.parent
    for path in reversed(missing):
        try:
            os.mkdir(path, 0o700)
        except FileExistsError:
            continue
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | getattr(os, "O_NOFOLLOW", 0))
        try:
            os.fchmod(fd, 0o700)
        finally:
            os.close(fd)


def normalize_folder(path: str) -> str:
    """Absolute, ``~`` expanded, ``.`` and ``..`` resolved, no trailing separator (a root stays itself).
    Symlinks are not resolved: the agents record the path as typed, and so does Pi's migration target.
    Only the platform's separator is one: on POSIX a backslash is a character of the name."""
    normalized = os.path.normpath(os.path.abspath(os.path.expanduser(path)))
    return normalized.rstrip(os.sep) or os.sep


def same_folder(a: str, b: str) -> bool:
    """Whether two paths name the same folder once normalized (case-insensitively on Windows)."""
    if not a or not b:
        return False
    a, b = normalize_folder(a), normalize_folder(b)
    return a.casefold() == b.casefold() if os.name == "nt" else a == b


def in_folder(cwd: str, folder: str) -> bool:
    """Whether a recorded ``cwd`` is ``folder`` (already normalized) or below it. The recorded path is
    only cleaned up (``normpath``), never made absolute: a relative cwd is in no folder."""
    if not cwd:
        return False
    cwd = os.path.normpath(cwd)
    if folder == os.sep:
        return cwd.startswith(os.sep)
    return cwd == folder or cwd.startswith(folder + os.sep)


def home_dir(env: Mapping[str, str] | None = None) -> Path:
    env = os.environ if env is None else env
    home = env.get("HOME") or env.get("USERPROFILE")
    return Path(home) if home else Path.home()


def default_db_path(env: Mapping[str, str] | None = None) -> Path:
    """``$MEMORY_DB_PATH`` (the Pi extension's variable), else ``~/.pi/agent/memory.db``."""
    env = os.environ if env is None else env
    override = env.get("MEMORY_DB_PATH")
    if override:
        return _expand(override)
    return home_dir(env) / ".pi" / "agent" / "memory.db"


def pi_agent_dir(env: Mapping[str, str] | None = None) -> Path:
    """Pi's agent directory: ``$PI_CODING_AGENT_DIR`` (tilde expanded), else ``~/.pi/agent``."""
    env = os.environ if env is None else env
    override = env.get("PI_CODING_AGENT_DIR")
    if override:
        return _expand(override)
    return home_dir(env) / ".pi" / "agent"


class SourceRoots:
    """The directories scanned for each source's history (every source; one without roots is not read).
    A missing root is not an error. Built from a mapping, or by keyword for the sources whose names are
    identifiers (``SourceRoots(pi=..., claude=...)``; a hyphen is written ``_``: ``copilot_cli=``)."""

    __slots__ = ("_roots",)

    def __init__(self, roots: Mapping[Source, tuple[Path, ...]] | None = None, **by_name: tuple[Path, ...]) -> None:
        merged: dict[Source, tuple[Path, ...]] = dict.fromkeys(SOURCES, ())
        named: dict[str, tuple[Path, ...]] = {str(name): paths for name, paths in (roots or {}).items()}
        named.update((name.replace("_", "-"), paths) for name, paths in by_name.items())
        for name, paths in named.items():
            if not is_source(name):
                raise ValueError(f"unknown source {name!r}")
            merged[name] = tuple(paths)
        self._roots = merged

    def for_source(self, source: Source) -> tuple[Path, ...]:
        return self._roots.get(source, ())

    def items(self) -> list[tuple[Source, tuple[Path, ...]]]:
        return [(source, self._roots[source]) for source in SOURCES]

    def __eq__(self, other: object) -> bool:
        return isinstance(other, SourceRoots) and self._roots == other._roots

    def __hash__(self) -> int:
        return hash(tuple(self.items()))

    def __repr__(self) -> str:
        return f"SourceRoots({dict(self.items())!r})"


def _env_dir(env: Mapping[str, str], name: str, default: Path) -> Path:
    return _expand(env[name]) if env.get(name) else default


def _pi_roots(env: Mapping[str, str]) -> tuple[Path, ...]:
    return (pi_agent_dir(env) / "sessions",)


def _claude_roots(env: Mapping[str, str]) -> tuple[Path, ...]:
    return (_env_dir(env, "CLAUDE_CONFIG_DIR", home_dir(env) / ".claude") / "projects",)


def _codex_roots(env: Mapping[str, str]) -> tuple[Path, ...]:
    codex_home = _env_dir(env, "CODEX_HOME", home_dir(env) / ".codex")
    return (codex_home / "sessions", codex_home / "archived_sessions")


def _gemini_roots(env: Mapping[str, str]) -> tuple[Path, ...]:
    """``$GEMINI_CLI_HOME/.gemini/tmp`` (Gemini CLI's own override of its home, packages/core/src/utils/paths.ts),
    else ``~/.gemini/tmp``: the same on every OS."""
    return (_env_dir(env, "GEMINI_CLI_HOME", home_dir(env)) / ".gemini" / "tmp",)


def _opencode_roots(env: Mapping[str, str]) -> tuple[Path, ...]:
    """``$XDG_DATA_HOME/opencode``, else ``~/.local/share/opencode``: OpenCode takes its data folder from
    xdg-basedir on every OS (Windows and macOS too), so this is the same everywhere."""
    return (_env_dir(env, "XDG_DATA_HOME", home_dir(env) / ".local" / "share") / "opencode",)


def _copilot_cli_roots(env: Mapping[str, str]) -> tuple[Path, ...]:
    """``$COPILOT_HOME/session-state`` (the CLI's own override, ``copilot help environment``), else
    ``~/.copilot/session-state``: the same on every OS."""
    return (_env_dir(env, "COPILOT_HOME", home_dir(env) / ".copilot") / "session-state",)


# VS Code's products whose chat pimem reads: stable, Insiders, VSCodium (their user-data folder names).
VSCODE_PRODUCTS = ("Code", "Code - Insiders", "VSCodium")


def app_data_dir(env: Mapping[str, str], platform: str | None = None) -> Path:
    """Where Electron editors keep their user data: ``%APPDATA%`` on Windows, ``~/Library/Application
    Support`` on macOS, ``$XDG_CONFIG_HOME`` (``~/.config``) elsewhere."""
    platform = sys.platform if platform is None else platform
    if platform == "win32":
        return _env_dir(env, "APPDATA", home_dir(env) / "AppData" / "Roaming")
    if platform == "darwin":
        return home_dir(env) / "Library" / "Application Support"
    return _env_dir(env, "XDG_CONFIG_HOME", home_dir(env) / ".config")


def _path_list(value: str) -> tuple[Path, ...]:
    return tuple(_expand(part) for part in value.split(os.pathsep) if part.strip())


def vscode_user_dirs(env: Mapping[str, str], platform: str | None = None) -> tuple[Path, ...]:
    """The ``User`` folders of VS Code, Insiders and VSCodium; ``$PIMEM_VSCODE_USER_DIRS`` (a path list)
    replaces them."""
    if env.get("PIMEM_VSCODE_USER_DIRS"):
        return _path_list(env["PIMEM_VSCODE_USER_DIRS"])
    base = app_data_dir(env, platform)
    return tuple(base / product / "User" for product in VSCODE_PRODUCTS)


def _copilot_chat_roots(env: Mapping[str, str]) -> tuple[Path, ...]:
    """Each VS Code ``User`` folder's ``workspaceStorage`` and ``globalStorage/emptyWindowChatSessions``."""
    return tuple(root for user in vscode_user_dirs(env)
                 for root in (user / "workspaceStorage", user / "globalStorage" / "emptyWindowChatSessions"))


def _cursor_roots(env: Mapping[str, str]) -> tuple[Path, ...]:
    """``~/.cursor/projects`` (the agent transcripts; ``$PIMEM_CURSOR_DIR`` replaces ``~/.cursor``, the same
    on every OS) and the IDE's ``User/globalStorage`` (``$PIMEM_CURSOR_USER_DIR`` replaces the ``User``
    folder: ``~/.config/Cursor/User``, ``~/Library/Application Support/Cursor/User``,
    ``%APPDATA%\\Cursor\\User``)."""
    user = _env_dir(env, "PIMEM_CURSOR_USER_DIR", app_data_dir(env) / "Cursor" / "User")
    return (_env_dir(env, "PIMEM_CURSOR_DIR", home_dir(env) / ".cursor") / "projects", user / "globalStorage")


# Each source's default roots (every source has an entry; tests/test_sources.py checks it). A source
# whose importer is not written yet has none.
ROOTS: dict[Source, Callable[[Mapping[str, str]], tuple[Path, ...]]] = {
    "pi": _pi_roots,
    "claude": _claude_roots,
    "codex": _codex_roots,
    "gemini": _gemini_roots,
    "opencode": _opencode_roots,
    "copilot-cli": _copilot_cli_roots,
    "copilot-chat": _copilot_chat_roots,
    "cursor": _cursor_roots,
}


def source_roots(env: Mapping[str, str] | None = None) -> SourceRoots:
    env = os.environ if env is None else env
    return SourceRoots({source: ROOTS[source](env) for source in SOURCES})
