"""Where things live: the store file and the three agents' transcript roots; how folders compare.

Every location can be overridden by the same environment variables the agents themselves honour,
so a test (or a user with a custom setup) points pimem anywhere without code changes.

Folders (a recall's ``cwd`` filter, a migration's workspace folder) are compared in one way only:
:func:`normalize_folder`, :func:`same_folder`, :func:`in_folder`.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from pimem.models import SOURCES, Source


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


@dataclass(frozen=True)
class SourceRoots:
    """The directories scanned for each agent's transcripts. A missing root is not an error."""

    pi: tuple[Path, ...]
    claude: tuple[Path, ...]
    codex: tuple[Path, ...]

    def for_source(self, source: Source) -> tuple[Path, ...]:
        roots: tuple[Path, ...] = getattr(self, source)
        return roots

    def items(self) -> list[tuple[Source, tuple[Path, ...]]]:
        return [(source, self.for_source(source)) for source in SOURCES]


def source_roots(env: Mapping[str, str] | None = None) -> SourceRoots:
    env = os.environ if env is None else env
    claude_dir = _expand(env["CLAUDE_CONFIG_DIR"]) if env.get("CLAUDE_CONFIG_DIR") else home_dir(env) / ".claude"
    codex_home = _expand(env["CODEX_HOME"]) if env.get("CODEX_HOME") else home_dir(env) / ".codex"
    return SourceRoots(
        pi=(pi_agent_dir(env) / "sessions",),
        claude=(claude_dir / "projects",),
        codex=(codex_home / "sessions", codex_home / "archived_sessions"),
    )
