"""``pimem share …`` end to end (the CLI in process, a real PostgreSQL): config refuses passwords and
writes owner-only files, push/status/allow/forget print one-line results, failures are one line."""

from __future__ import annotations

import json
import stat
from pathlib import Path

import psycopg
import pytest

from pimem.cli import main
from pimem.share.schema import LAYOUT
from pimem.share.state import config_path, state_path
from share.conftest import ShareDb
from share.local import Turn, many, write


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_config_push_status_forget(share_db: ShareDb, db_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    held = Turn("held1", "hs", "/work/proj", "token Zx81QmPw3LrT9vKd2NcY7hJs", "r")
    write(db_path, [*many(30, per_session=10), held])
    db = str(db_path)
    code, out, err = run(capsys, "share", "config", "--db", db, "--conninfo", share_db.conninfo("alice"),
                         "--folder", "/work/proj", "--machine", "laptop")
    assert code == 0, err
    for path in (config_path(db_path),):
        assert stat.S_IMODE(path.stat().st_mode) == 0o600
    code, out, err = run(capsys, "share", "push", "--db", db, "--json")
    assert code == 0, err
    assert json.loads(out)["sent"] == 30 and json.loads(out)["held"] == 1
    assert stat.S_IMODE(state_path(db_path).stat().st_mode) == 0o600
    code, out, err = run(capsys, "share", "status", "--db", db)
    assert code == 0 and "30 pushed, 0 pending, 1 held back" in out and "held held1 (session hs" in out
    assert f"reachable, layout {LAYOUT}, 30 rows from this machine" in out
    code, out, err = run(capsys, "share", "allow", "--db", db, "held1")
    assert code == 0 and "allowed turn held1" in out
    code, out, err = run(capsys, "share", "push", "--db", db)
    assert code == 0 and out.startswith("pushed 1 turns")
    code, out, err = run(capsys, "share", "forget", "--db", db, "t-s1")
    assert code == 0 and "10 shared rows deleted" in out
    with psycopg.connect(share_db.admin) as conn:
        assert conn.execute("SELECT count(*) FROM pimem.turns").fetchone() == (21,)


def test_a_password_in_the_connection_string_is_refused(db_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "share", "config", "--db", str(db_path), "--conninfo",
                         "host=db.example user=alice password=hunter2", "--folder", "/w")
    assert code == 2 and "passfile" in err and "hunter2" not in err + out
    assert not config_path(db_path).exists()
    code, out, err = run(capsys, "share", "config", "--db", str(db_path), "--conninfo",
                         "postgresql://alice:hunter2@db.example/team")
    assert code == 2 and "hunter2" not in err + out


def test_unconfigured_and_unreachable_are_one_line(db_path: Path, tmp_path: Path,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    write(db_path, many(3))
    code, out, err = run(capsys, "share", "status", "--db", str(db_path))
    assert code == 0 and "not configured" in out and "0 pushed, 0 pending, 0 held back" in out
    assert not state_path(db_path).exists() and not config_path(db_path).exists()
    code, out, err = run(capsys, "share", "push", "--db", str(db_path))
    assert code == 1 and err.count("\n") == 1 and "not configured" in err
    run(capsys, "share", "config", "--db", str(db_path), "--conninfo",
        f"host={tmp_path} port=1 user=alice dbname=x", "--folder", "/work/proj")
    code, out, err = run(capsys, "share", "push", "--db", str(db_path))
    assert code == 1 and err.count("\n") == 1 and "cannot reach the shared store" in err
    code, out, err = run(capsys, "share", "status", "--db", str(db_path))
    assert code == 0 and "not usable" in out and "3 pending" in out


def test_another_member_cannot_forget_your_rows(share_db: ShareDb, db_path: Path, tmp_path: Path,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    write(db_path, many(10))
    run(capsys, "share", "config", "--db", str(db_path), "--conninfo", share_db.conninfo("alice"),
        "--folder", "/work/proj")
    assert run(capsys, "share", "push", "--db", str(db_path))[0] == 0
    bobs = tmp_path / "bob" / "memory.db"
    write(bobs, many(4, prefix="b"))
    run(capsys, "share", "config", "--db", str(bobs), "--conninfo", share_db.conninfo("bob"), "--folder", "/work/proj")
    code, out, _err = run(capsys, "share", "forget", "--db", str(bobs), "/work/proj")
    assert code == 0 and "0 shared rows deleted" in out
    with psycopg.connect(share_db.admin) as conn:
        assert conn.execute("SELECT author, count(*) FROM pimem.turns GROUP BY 1").fetchall() == [("alice", 10)]


def test_init_prints_sql_and_refuses_odd_names(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "share", "init", "--member", "alice")
    assert code == 0 and "FORCE ROW LEVEL SECURITY" in out and 'CREATE ROLE "alice" LOGIN' in out
    assert "PASSWORD" not in out.upper().replace("\\PASSWORD", "")
    code, out, err = run(capsys, "share", "init", "--member", 'x"; DROP TABLE t; --')
    assert code == 2 and err.count("\n") == 1


def test_sync_pushes_afterwards_when_auto_is_set(share_db: ShareDb, history: Path, tmp_path: Path) -> None:
    import subprocess
    import sys

    from support.env import env_for

    db_path = tmp_path / "memory.db"
    env = env_for(history, db_path)

    def pimem(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "pimem", *args], env=env, capture_output=True, text=True,
                              timeout=300)

    first = pimem("sync", "--json")           # not configured: nothing about sharing
    assert first.returncode == 0 and "share" not in first.stderr
    assert pimem("share", "config", "--conninfo", share_db.conninfo("alice"), "--agent", "pi").returncode == 0
    assert "share push" not in pimem("sync").stderr                          # configured, but not --auto
    assert pimem("share", "config", "--auto").returncode == 0
    synced = pimem("sync", "--json")
    assert synced.returncode == 0 and json.loads(synced.stdout)["turns"] == 0      # stdout stays JSON
    assert "pimem share push: " in synced.stderr and "turns pushed" in synced.stderr
    with psycopg.connect(share_db.admin) as conn:
        pushed = conn.execute("SELECT count(*), count(DISTINCT source) FROM pimem.turns").fetchone()
    assert pushed is not None and pushed[0] > 0 and pushed[1] == 1


def test_init_apply_sets_up_a_new_database(share_db: ShareDb, capsys: pytest.CaptureFixture[str]) -> None:
    dbname = share_db.server.new_database()
    admin = share_db.server.conninfo(dbname=dbname)
    code, out, err = run(capsys, "share", "init", "--member", "dave", "--apply", admin)
    assert code == 0 and out.strip() == f"shared store ready: layout {LAYOUT}, group pimem_team, members dave", err
    with psycopg.connect(share_db.server.conninfo(user="dave", dbname=dbname)) as conn:
        layout = conn.execute("SELECT value FROM pimem.pimem_share_meta WHERE key = 'layout'").fetchone()
        assert layout == (str(LAYOUT),)
    code, out, err = run(capsys, "share", "init", "--apply", share_db.server.conninfo(dbname="no_such_db"))
    assert code == 1 and err.count("\n") == 1 and "cannot reach the shared store" in err


def test_a_missing_local_store_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    db = tmp_path / "nothing" / "memory.db"
    run(capsys, "share", "config", "--db", str(db), "--conninfo", "host=/x dbname=y", "--folder", "/w")
    for action in ("status", "push"):
        code, out, err = run(capsys, "share", action, "--db", str(db))
        assert code == 1 and err.count("\n") == 1 and err.startswith("pimem"), (action, out, err)
        assert "Traceback" not in err
    assert not db.exists()


def test_recall_without_a_shared_store_says_so_once(db_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    write(db_path, many(3, per_session=3))
    code, _out, err = run(capsys, "recall", "--db", str(db_path), "--scope", "mine", "t-s1")
    assert code == 0
    assert err.count("no shared store configured") == 1 and "unconfigured" not in err
    assert err.rstrip().endswith("this machine's rows only")
