"""A sync killed (SIGKILL) at random points of a large import leaves a sound store, and the next sync
ends with exactly the rows of an uninterrupted run."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from pimem.store import connect
from pimem.sync import SyncRequest, run_sync
from support.env import history_env
from support.history import copy_samples, grow_history, roots_under

TURN_QUERY = "SELECT turn_id, session_id, turn_index, ts, user_text, reply_text, tool_names FROM turns ORDER BY turn_id"


def check_sound(db: Path) -> None:
    conn = connect(db)
    assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    for table in ("pimem_fts_user", "pimem_fts_reply"):
        conn.execute(f"INSERT INTO {table}({table}) VALUES ('integrity-check')")
    conn.close()


@pytest.mark.slow
def test_sigkill_at_random_points_then_resume(tmp_path: Path) -> None:
    base = copy_samples(tmp_path / "h")
    grow_history(base, 60)
    db = base / "memory.db"
    env = history_env(base)
    # An uninterrupted run first: the reference rows. Then how long a whole `pimem sync` process takes
    # here (interpreter start included), so that the kills below land inside the runs however fast
    # this machine or pimem is.
    reference = tmp_path / "reference.db"
    run_sync(SyncRequest(db_path=str(reference), roots=roots_under(base)))
    started = time.monotonic()
    subprocess.run([sys.executable, "-m", "pimem", "sync"], env={**env, "MEMORY_DB_PATH": str(tmp_path / "timed.db")},
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
    wall = time.monotonic() - started
    rng = random.Random(7)
    kills = 0
    for attempt in range(10):
        # The first runs import, later ones re-parse everything (--force): either may be cut anywhere.
        process = subprocess.Popen([sys.executable, "-m", "pimem", "sync"] + (["--force"] if attempt >= 2 else []),
                                   env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                   start_new_session=True)
        time.sleep(rng.uniform(0.15, 0.85) * wall)
        if process.poll() is None:
            # Usually the whole process group (workers too); sometimes only the main process.
            if attempt % 4 == 3:
                process.send_signal(signal.SIGKILL)
            else:
                os.killpg(process.pid, signal.SIGKILL)
            kills += 1
        process.wait()
        time.sleep(0.3)  # orphaned workers, if any, end when they see their parent gone (sync/pool.py)
        check_sound(db)
    assert kills >= 5
    final = subprocess.run([sys.executable, "-m", "pimem", "sync"], env=env, capture_output=True, text=True)
    assert final.returncode == 0, final.stderr
    check_sound(db)
    assert connect(db).execute(TURN_QUERY).fetchall() == connect(reference).execute(TURN_QUERY).fetchall()
    assert connect(db).execute("SELECT count(*) FROM pimem_pending").fetchone()[0] == 0  # fully indexed
