"""Fixtures of the shared-store tests: one real PostgreSQL per session (tests/share/pgserver.py), and a
fresh database per test with pimem's schema, the team role and three members."""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import psycopg
import pytest

from pimem.share import schema
from pimem.share.db import apply_init
from share.pgserver import PgServer, running_server

MEMBERS = ("alice", "bob", "carol")


@pytest.fixture(scope="session")
def pg_server() -> Iterator[PgServer]:
    # Not under pytest's tmp_path: the server may run as another user, which must reach its directory.
    with tempfile.TemporaryDirectory(prefix="pimem-pg-") as base:
        Path(base).chmod(0o755)
        with running_server(Path(base) / "pg") as server:
            yield server


@dataclass(frozen=True)
class ShareDb:
    server: PgServer
    dbname: str

    def conninfo(self, user: str) -> str:
        return self.server.conninfo(user=user, dbname=self.dbname)

    @property
    def admin(self) -> str:
        return self.server.conninfo(dbname=self.dbname)


@pytest.fixture
def share_db(pg_server: PgServer) -> ShareDb:
    """A new database with pimem's shared schema applied, and the members alice, bob and carol."""
    if not pg_server.running():
        pg_server.start()
    dbname = pg_server.new_database()
    db = ShareDb(pg_server, dbname)
    apply_init(db.admin, members=MEMBERS)
    return db


def share_db_at_layout(pg_server: PgServer, layout: int) -> ShareDb:
    """A new database as a pimem of shared layout ``layout`` set it up (its migrations up to there, its
    meta rows, the team role and the members): what a migration test starts from."""
    db = ShareDb(pg_server, pg_server.new_database())
    with psycopg.connect(db.admin, autocommit=True) as conn:
        conn.execute(("".join(schema.MIGRATIONS[n]() for n in range(layout)) + "INSERT INTO pimem.pimem_share_meta "
                      f"VALUES ('layout', '{layout}'), ('min_reader_layout', '1');").encode())
        conn.execute(schema.roles_sql(members=MEMBERS).encode())
    return db
