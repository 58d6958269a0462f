"""The push under faults, against a real PostgreSQL: kill -9 mid-push, the server stopped and
restarted mid-push, three machines pushing at once; afterwards no turn is lost or doubled."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import psycopg

from pimem.share.push import PushStats, push
from pimem.share.state import ShareConfig
from share.conftest import ShareDb
from share.local import many, write

REPO = Path(__file__).resolve().parents[2]


def _count(db: ShareDb, machine: str | None = None) -> int:
    with psycopg.connect(db.admin) as conn:
        if machine is None:
            row = conn.execute("SELECT count(*) FROM pimem.turns").fetchone()
        else:
            row = conn.execute("SELECT count(*) FROM pimem.turns WHERE machine = %s", (machine,)).fetchone()
        assert row is not None
        return int(row[0])


def _exact(db: ShareDb, machine: str, expected: int, prefix: str = "t") -> None:
    """Every turn once, with its content."""
    with psycopg.connect(db.admin) as conn:
        rows = conn.execute("SELECT doc_key, user_text FROM pimem.turns WHERE machine = %s", (machine,)).fetchall()
    assert len(rows) == expected == len({row[0] for row in rows})
    assert {(str(k), str(u)) for k, u in rows} == {(f"{prefix}{n:07d}", f"fix the flamingo cache {n}")
                                                   for n in range(expected)}


def _wait_for_rows(db: ShareDb, low: int, timeout: float = 60) -> int:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        count = _count(db)
        if count >= low:
            return count
        time.sleep(0.02)
    raise AssertionError(f"no {low} rows after {timeout} s")


_CHILD = """
import sys
from pathlib import Path
from pimem.share.push import push
from pimem.share.state import ShareConfig
push(Path(sys.argv[1]), ShareConfig(conninfo=sys.argv[2], machine="laptop", folders=("/work/proj",)), batch_rows=100)
"""


def test_kill_9_during_a_push_loses_and_doubles_nothing(share_db: ShareDb, db_path: Path) -> None:
    total = 6000
    write(db_path, many(total))
    child = subprocess.Popen([sys.executable, "-c", _CHILD, str(db_path), share_db.conninfo("alice")],
                             env={**os.environ, "PYTHONPATH": str(REPO / "server")})
    try:
        seen = _wait_for_rows(share_db, 300)
        os.kill(child.pid, signal.SIGKILL)
    finally:
        child.wait(timeout=60)
    assert child.returncode == -signal.SIGKILL
    assert seen < total, "the push ended before the kill: the test proves nothing"
    stats = push(db_path, ShareConfig(conninfo=share_db.conninfo("alice"), machine="laptop",
                                      folders=("/work/proj",)))
    assert stats.unchanged > 0          # what the killed push committed and recorded is not sent again
    _exact(share_db, "laptop", total)
    assert push(db_path, ShareConfig(conninfo=share_db.conninfo("alice"), machine="laptop",
                                     folders=("/work/proj",))).sent == 0


def test_the_server_stopped_and_restarted_mid_push(share_db: ShareDb, db_path: Path) -> None:
    total = 6000
    write(db_path, many(total))
    cfg = ShareConfig(conninfo=share_db.conninfo("alice"), machine="laptop", folders=("/work/proj",))
    outcome: list[PushStats | BaseException] = []

    def run() -> None:
        try:
            outcome.append(push(db_path, cfg, batch_rows=100, retry_s=60))
        except BaseException as exc:
            outcome.append(exc)

    worker = threading.Thread(target=run)
    worker.start()
    seen = _wait_for_rows(share_db, 300)
    share_db.server.stop("immediate")       # as a crash: connections cut, no clean shutdown
    time.sleep(1.0)
    share_db.server.start()
    worker.join(timeout=300)
    assert seen < total, "the push ended before the stop: the test proves nothing"
    assert len(outcome) == 1 and isinstance(outcome[0], PushStats), outcome
    assert outcome[0].retries >= 1
    _exact(share_db, "laptop", total)


def test_three_machines_push_at_once(share_db: ShareDb, tmp_path: Path) -> None:
    machines = [("alice", "laptop"), ("alice", "desktop"), ("bob", "devbox")]
    stores = []
    for user, machine in machines:
        store = tmp_path / machine / "memory.db"
        write(store, many(1500))
        stores.append((store, ShareConfig(conninfo=share_db.conninfo(user), machine=machine,
                                          folders=("/work/proj",))))
    errors: list[BaseException] = []

    def run(store: Path, cfg: ShareConfig) -> None:
        try:
            push(store, cfg, batch_rows=200)
            push(store, cfg, batch_rows=200)
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=run, args=pair) for pair in stores]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=300)
    assert errors == []
    for _user, machine in machines:
        _exact(share_db, machine, 1500)
    with psycopg.connect(share_db.admin) as conn:
        assert conn.execute("SELECT author, machine, count(*) FROM pimem.turns GROUP BY 1, 2 ORDER BY 1, 2"
                            ).fetchall() == [("alice", "desktop", 1500), ("alice", "laptop", 1500),
                                             ("bob", "devbox", 1500)]
