"""A real PostgreSQL server for the shared-store tests, started in a temporary directory.

The Debian ``postgresql`` package's ``initdb``/``pg_ctl`` (installed by ``scripts/setup-postgres.sh``,
which ``make test-python`` runs) are used rather than a wheel bundling server binaries: they are the
server a team runs, patched by the distribution, and the same on every Debian CI machine.

The server listens on a Unix socket in its own directory only (``listen_addresses=''``), so parallel
runs never collide on a port; ``fsync=off`` for speed (a crash of the machine is not what the tests
simulate; a killed server is, and survives). Authentication is ``trust``: the tests log in as any
member role. When the tests run as root, the server runs as the ``postgres`` user (initdb refuses root).

Outside CI, missing binaries skip the tests with the reason; in CI (``CI`` set) they fail.
"""

from __future__ import annotations

import contextlib
import glob
import itertools
import os
import pwd
import shutil
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

ADMIN = "pimem_admin"
PORT = 5432   # the socket's name only: it lives in the server's own directory


def find_bindir() -> Path | None:
    """The newest PostgreSQL (15 or newer) server binaries: $PIMEM_PG_BINDIR, Debian's layout, or PATH."""
    candidates: list[str] = []
    if os.environ.get("PIMEM_PG_BINDIR"):
        candidates.append(os.environ["PIMEM_PG_BINDIR"])
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin"), key=lambda p: int(Path(p).parent.name)
                   if Path(p).parent.name.isdigit() else 0, reverse=True)
    candidates.extend(found)
    initdb = shutil.which("initdb")
    if initdb:
        candidates.append(str(Path(initdb).parent))
    for candidate in candidates:
        path = Path(candidate)
        if (path / "initdb").exists() and (path / "pg_ctl").exists():
            return path
    return None


def _run_as() -> list[str]:
    if os.getuid() != 0:
        return []
    try:
        pwd.getpwnam("postgres")
    except KeyError:
        pytest.fail("running as root and there is no 'postgres' user to run the test server as")
    return ["runuser", "-u", "postgres", "--"]


@dataclass
class PgServer:
    bindir: Path
    base: Path
    prefix: list[str]
    _databases: Iterator[int] = field(default_factory=itertools.count)

    @property
    def datadir(self) -> Path:
        return self.base / "data"

    @property
    def sockdir(self) -> Path:
        return self.base / "sock"

    def conninfo(self, user: str = ADMIN, dbname: str = "postgres") -> str:
        return f"host={self.sockdir} port={PORT} user={user} dbname={dbname}"

    def _ctl(self, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        return subprocess.run([*self.prefix, str(self.bindir / "pg_ctl"), "-D", str(self.datadir), *args],
                              capture_output=True, text=True, check=check, timeout=120)

    def init(self) -> None:
        self.base.mkdir(parents=True, exist_ok=True)
        self.sockdir.mkdir(exist_ok=True)
        if self.prefix:
            shutil.chown(self.base, "postgres")
            shutil.chown(self.sockdir, "postgres")
        subprocess.run([*self.prefix, str(self.bindir / "initdb"), "-D", str(self.datadir), "-U", ADMIN,
                        "--auth=trust", "--no-sync", "-E", "UTF8", "--locale=C.UTF-8"],
                       capture_output=True, text=True, check=True, timeout=300)

    def start(self) -> None:
        options = (f"-c listen_addresses='' -c unix_socket_directories='{self.sockdir}' -c port={PORT} "
                   "-c fsync=off -c synchronous_commit=off -c full_page_writes=off -c max_connections=60")
        self._ctl("-w", "-t", "60", "-l", str(self.base / "server.log"), "-o", options, "start")

    def stop(self, mode: str = "fast") -> None:
        self._ctl("-w", "-m", mode, "stop", check=False)

    def running(self) -> bool:
        return self._ctl("status", check=False).returncode == 0

    def new_database(self) -> str:
        """A fresh empty database (roles are cluster-wide and shared by all)."""
        import psycopg

        name = f"t{os.getpid()}_{next(self._databases)}"
        with psycopg.connect(self.conninfo(), autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{name}"')
        return name


@contextlib.contextmanager
def running_server(base: Path) -> Iterator[PgServer]:
    bindir = find_bindir()
    if bindir is None:
        reason = ("PostgreSQL server binaries (initdb, pg_ctl) not found: run scripts/setup-postgres.sh "
                  "(Debian package postgresql) or set PIMEM_PG_BINDIR")
        if os.environ.get("CI"):
            pytest.fail(reason)
        pytest.skip(reason)
    server = PgServer(bindir, base, _run_as())
    server.init()
    server.start()
    try:
        yield server
    finally:
        server.stop("immediate")
