"""What this machine knows about its sharing: the configuration (``<store>-share.json``) and the push's
state (``<store>-share.db``), both owner-only files beside the memory store, never inside it (the
store's layout is shared with the Pi extension and other pimem versions).

Configuration (JSON, edited by ``pimem share config``): the connection string or ``service=NAME``
(never a password: libpq's passfile ``~/.pgpass`` or its service file hold it; a string with one is
refused), this machine's name, the shared folders and agents (nothing by default), and whether
``pimem sync`` pushes afterwards.

State (SQLite): per turn the fingerprint of what was pushed (``pushed``), the turns held back by the
gate (``held``), the held turns the person allowed, as they were when held (``allowed``), what they
forgot (``forgotten``), and ``meta``: the local store's ``store_id`` and the target the state belongs
to (a replaced store or another database starts afresh: everything is compared again, nothing pushed
twice thanks to the shared key), the position in the store's ``pimem_index_log`` up to which changes
were pushed, and the last push.
"""

from __future__ import annotations

import json
import os
import socket
import sqlite3
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path

from pimem.paths import make_private_dirs, normalize_folder

STATE_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS pushed (turn_id TEXT PRIMARY KEY, fingerprint TEXT NOT NULL) WITHOUT ROWID;
-- content: the fingerprint of the turn's local content when it was held; an allowance is for that
-- content only (a turn that changes afterwards goes through the gate again)
CREATE TABLE IF NOT EXISTS held (
  turn_id TEXT PRIMARY KEY, session_id TEXT NOT NULL, reasons TEXT NOT NULL, ts INTEGER NOT NULL,
  content TEXT NOT NULL
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS allowed (turn_id TEXT PRIMARY KEY, content TEXT NOT NULL) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS forgotten (
  scope TEXT NOT NULL, value TEXT NOT NULL, remote_done INTEGER NOT NULL DEFAULT 0, PRIMARY KEY (scope, value)
);
"""


class ShareConfigError(ValueError):
    """A configuration pimem refuses (a password in it, an unreadable file): one line for the user."""


@dataclass(frozen=True)
class ShareConfig:
    conninfo: str = ""
    machine: str = field(default_factory=socket.gethostname)
    folders: tuple[str, ...] = ()
    sources: tuple[str, ...] = ()
    auto: bool = False

    @property
    def configured(self) -> bool:
        return bool(self.conninfo) and bool(self.folders or self.sources)

    def scope_fingerprint(self) -> str:
        return json.dumps([sorted(self.folders), sorted(self.sources)])

    def target(self) -> str:
        return json.dumps([self.conninfo, self.machine])


def config_path(db_path: Path) -> Path:
    return db_path.with_name(db_path.stem + "-share.json")


def state_path(db_path: Path) -> Path:
    return db_path.with_name(db_path.stem + "-share.db")


def check_conninfo(conninfo: str) -> str:
    """A connection string libpq accepts and that holds no password."""
    import psycopg.conninfo  # here, not at import: the editor's bundled server reads the config without the driver

    try:
        parts = psycopg.conninfo.conninfo_to_dict(conninfo)
    except psycopg.ProgrammingError as exc:
        raise ShareConfigError(f"--conninfo: not a libpq connection string ({str(exc).strip()})") from None
    if parts.get("password"):
        raise ShareConfigError("--conninfo: holds a password; put it in libpq's passfile (~/.pgpass, mode 0600) "
                               "or a service file instead, so it is never stored in pimem's configuration")
    return conninfo


def load_config(db_path: Path) -> ShareConfig | None:
    path = config_path(db_path)
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as exc:
        raise ShareConfigError(f"cannot read the share configuration {path}: {exc}") from None
    if not isinstance(raw, dict):
        raise ShareConfigError(f"the share configuration {path} is not a JSON object")
    try:
        return ShareConfig(conninfo=str(raw.get("conninfo", "")), machine=str(raw.get("machine") or
                                                                                socket.gethostname()),
                           folders=tuple(str(f) for f in raw.get("folders", [])),
                           sources=tuple(str(s) for s in raw.get("sources", [])), auto=bool(raw.get("auto", False)))
    except TypeError:
        raise ShareConfigError(f"the share configuration {path} has a field of the wrong type") from None


def save_config(db_path: Path, config: ShareConfig) -> Path:
    """Write the configuration atomically, owner-only."""
    path = config_path(db_path)
    make_private_dirs(path.parent)
    temp = path.with_name(path.name + f".{os.getpid()}.tmp")
    fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | getattr(os, "O_NOFOLLOW", 0), 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as out:
        out.write(json.dumps(asdict(config), indent=2) + "\n")
    os.replace(temp, path)
    return path


def updated_config(config: ShareConfig, *, conninfo: str | None = None, machine: str | None = None,
                   add_folders: tuple[str, ...] = (), remove_folders: tuple[str, ...] = (),
                   add_sources: tuple[str, ...] = (), remove_sources: tuple[str, ...] = (),
                   auto: bool | None = None) -> ShareConfig:
    folders = [f for f in config.folders if f not in {normalize_folder(r) for r in remove_folders}]
    folders += [normalize_folder(f) for f in add_folders if normalize_folder(f) not in folders]
    sources = [s for s in config.sources if s not in remove_sources]
    sources += [s for s in add_sources if s not in sources]
    if machine is not None and not machine.strip():
        raise ShareConfigError("--machine: give a non-empty name")
    return replace(config, conninfo=check_conninfo(conninfo) if conninfo is not None else config.conninfo,
                   machine=machine.strip() if machine is not None else config.machine,
                   folders=tuple(dict.fromkeys(folders)), sources=tuple(sources),
                   auto=config.auto if auto is None else auto)


def open_state(db_path: Path) -> sqlite3.Connection:
    """The push's state file (created owner-only when missing)."""
    path = state_path(db_path)
    make_private_dirs(path.parent)
    if not path.exists():
        os.close(os.open(path, os.O_WRONLY | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0), 0o600))
    conn = sqlite3.connect(path, timeout=15, isolation_level=None)
    conn.execute("PRAGMA journal_mode = WAL")
    conn.execute("PRAGMA synchronous = NORMAL")
    conn.executescript(STATE_SCHEMA)
    return conn


def get_meta(conn: sqlite3.Connection, key: str) -> str | None:
    row = conn.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
    return None if row is None else str(row[0])


def set_meta(conn: sqlite3.Connection, key: str, value: str) -> None:
    conn.execute("INSERT INTO meta(key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value",
                 (key, value))
