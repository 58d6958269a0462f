"""pimem touches only its own store, creates its folders owner-only, and fails on a store it cannot
use with one actionable line (issue 10, items 5, 8 and 11).

* Another program's file (SQLite or not, directly or through a symlink) is refused and left byte for
  byte as it was, permissions included; a dangling link is not followed to create a store; the
  read-only commands never create a store.
* Every folder pimem creates (the store's parents, Pi's sessions folder for a migration) is 0700
  under umask 0, intermediate parents included.
* A store locked past the busy timeout, on a full disk, read-only, or damaged (garbage, truncated):
  `pimem sync`/`status`/`recall` print one line on stderr and exit 1 (never a traceback), nothing
  stored is lost, and a damaged store is neither deleted nor created anew.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import resource
import shutil
import signal
import sqlite3
import stat
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from pimem.migrate import migrate_codex_sessions
from pimem.paths import make_private_dirs
from pimem.store import StoreError, connect
from pimem.sync import SyncRequest, run_sync
from support.env import env_for
from support.history import SAMPLES, roots_under

TURNS = "SELECT turn_id, session_id, turn_index, ts, user_text, reply_text, tool_names FROM turns ORDER BY turn_id"


def pimem(*args: str, env: dict[str, str], prefix: list[str] | None = None, **kwargs: object
          ) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*(prefix or []), sys.executable, "-m", "pimem", *args], env=env, capture_output=True,
                          text=True, timeout=120, check=False, **kwargs)


def one_line_failure(result: subprocess.CompletedProcess[str], *expected: str) -> str:
    """Exit status 1 and exactly one line on stderr (no traceback) containing every ``expected``."""
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert result.returncode == 1, (result.returncode, result.stderr)
    assert len(lines) == 1 and lines[0].startswith("pimem: "), result.stderr
    assert "Traceback" not in result.stderr
    for text in expected:
        assert text in lines[0], (text, lines[0])
    return lines[0]


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def file_state(path: Path) -> tuple[str, int]:
    return digest(path), stat.S_IMODE(path.stat().st_mode)


def listing(directory: Path) -> list[str]:
    return sorted(os.listdir(directory))


@pytest.fixture
def env(history: Path, tmp_path: Path) -> dict[str, str]:
    return env_for(history, tmp_path / "store" / "memory.db")


def stored_turns(db: Path) -> list[tuple[object, ...]]:
    conn = sqlite3.connect(db)   # read-write: the last one to close removes -wal and -shm, as pimem's do
    try:
        return conn.execute(TURNS).fetchall()
    finally:
        conn.close()


def add_pi_session(history: Path, marker: str) -> Path:
    """A new Pi session holding ``marker`` (so a later sync has something to store)."""
    session_id = str(uuid.uuid4())
    folder = history / "pi" / "agent" / "sessions" / "--tmp-pimem-added--"
    path = folder / f"2026-11-30T10-00-00-000Z_{session_id}.jsonl"
    path.parent.mkdir(parents=True, exist_ok=True)
    records = [
        {"type": "session", "version": 3, "id": session_id, "timestamp": "2026-11-30T10:00:00.000Z",
         "cwd": "/tmp/pimem-added"},
        {"type": "message", "id": "a1", "parentId": None, "timestamp": "2026-11-30T10:00:01.000Z",
         "message": {"role": "user", "content": [{"type": "text", "text": f"{marker} prompt"}],
                     "timestamp": 1764496801000}},
        {"type": "message", "id": "a2", "parentId": "a1", "timestamp": "2026-11-30T10:00:02.000Z",
         "message": {"role": "assistant", "content": [{"type": "text", "text": f"{marker} reply"}],
                     "timestamp": 1764496802000}},
    ]
    path.write_text("".join(json.dumps(record) + "\n" for record in records), encoding="utf-8")
    return path


# ---------------------------------------------------------------------------------------------
# Item 5: files that are not pimem's store
# ---------------------------------------------------------------------------------------------

def another_programs_database(path: Path, *, wal: bool = False) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    conn = sqlite3.connect(path, isolation_level=None)
    if wal:
        conn.execute("PRAGMA journal_mode = WAL")
    conn.execute("CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT)")
    conn.execute("INSERT INTO notes (body) VALUES ('groceries')")
    conn.close()
    os.chmod(path, 0o644)
    return path


@pytest.mark.parametrize("wal", [False, True], ids=["rollback-journal", "wal"])
def test_another_programs_sqlite_file_is_refused_and_left_untouched(tmp_path: Path, env: dict[str, str],
                                                                    wal: bool) -> None:
    foreign = another_programs_database(tmp_path / "app" / "app.db", wal=wal)
    before, files_before = file_state(foreign), listing(foreign.parent)
    for args in (["sync"], ["status"], ["recall", "groceries"]):
        result = pimem(*args, "--db", str(foreign), env=env)
        one_line_failure(result, str(foreign), "another program's SQLite database")
    with pytest.raises(StoreError, match="another program's SQLite database"):
        connect(foreign)
    assert file_state(foreign) == before and listing(foreign.parent) == files_before


def test_a_file_that_is_not_sqlite_is_refused_and_left_untouched(tmp_path: Path, env: dict[str, str]) -> None:
    notes = tmp_path / "notes.txt"
    notes.write_text("my notes, not a database\n" * 20, encoding="utf-8")
    os.chmod(notes, 0o644)
    before = file_state(notes)
    for args in (["sync"], ["status"]):
        one_line_failure(pimem(*args, "--db", str(notes), env=env), "is not an SQLite database")
    assert file_state(notes) == before and listing(tmp_path) == ["history", "notes.txt"]


def test_a_symlink_to_another_programs_file_changes_nothing_at_its_target(tmp_path: Path,
                                                                          env: dict[str, str]) -> None:
    foreign = another_programs_database(tmp_path / "app" / "app.db")
    link = tmp_path / "store" / "memory.db"
    link.parent.mkdir()
    link.symlink_to(foreign)
    before = file_state(foreign)
    one_line_failure(pimem("sync", env=env), "another program's SQLite database")
    assert file_state(foreign) == before


def test_a_symlinked_store_is_used_but_never_chmod_ed_through_the_link(tmp_path: Path, history: Path) -> None:
    target = tmp_path / "elsewhere" / "memory.db"
    run_sync(SyncRequest(db_path=str(target), roots=roots_under(history / "nowhere")))
    os.chmod(target, 0o640)   # the user's own choice for a file they keep elsewhere
    link = tmp_path / "store" / "memory.db"
    link.parent.mkdir()
    link.symlink_to(target)
    stats = run_sync(SyncRequest(db_path=str(link), roots=roots_under(history)))
    assert stats.turns > 0 and not stats.issues
    assert stat.S_IMODE(target.stat().st_mode) == 0o640
    assert link.is_symlink() and len(stored_turns(target)) == stats.turns


def test_a_dangling_symlink_is_not_followed_to_create_a_store(tmp_path: Path, env: dict[str, str]) -> None:
    link = tmp_path / "store" / "memory.db"
    link.parent.mkdir()
    link.symlink_to(tmp_path / "somewhere" / "else.db")
    (tmp_path / "somewhere").mkdir()
    one_line_failure(pimem("sync", env=env), "symbolic link to a missing file")
    assert listing(tmp_path / "somewhere") == []


@pytest.mark.parametrize("command", [["status"], ["recall", "flamingo"]])
def test_read_only_commands_never_create_a_store(tmp_path: Path, env: dict[str, str], command: list[str]) -> None:
    mistyped = tmp_path / "typo" / "memroy.db"
    one_line_failure(pimem(*command, "--db", str(mistyped), env=env), "no memory store at", "pimem sync")
    assert not (tmp_path / "typo").exists()
    empty = tmp_path / "empty.db"
    empty.touch()
    one_line_failure(pimem(*command, "--db", str(empty), env=env), "no memory store at")
    assert empty.stat().st_size == 0 and not Path(f"{empty}-wal").exists()


def test_an_empty_file_or_empty_database_becomes_a_store_for_sync(tmp_path: Path, env: dict[str, str]) -> None:
    empty_file = tmp_path / "empty.db"
    empty_file.touch()
    empty_database = tmp_path / "no-tables.db"   # a valid SQLite header, no table
    conn = sqlite3.connect(empty_database)
    conn.execute("CREATE TABLE t (x)")
    conn.execute("DROP TABLE t")
    conn.close()
    for path in (empty_file, empty_database):
        assert pimem("sync", "--db", str(path), env=env).returncode == 0
        assert len(stored_turns(path)) > 0


def test_the_journals_of_a_removed_store_are_not_taken_over_by_a_new_one(tmp_path: Path, env: dict[str, str],
                                                                          history: Path) -> None:
    db = tmp_path / "store" / "memory.db"
    run_sync(SyncRequest(db_path=str(db), roots=roots_under(history)))
    holder = sqlite3.connect(db, isolation_level=None)   # a running program: its -wal holds a commit
    holder.execute("INSERT INTO pimem_meta (key, value) VALUES ('written-by-another-program', '1')")
    try:
        db.unlink()                    # a "reset" that forgot the journals
        wal = Path(f"{db}-wal")
        assert wal.stat().st_size > 0
        wal_before = digest(wal)
        one_line_failure(pimem("sync", env=env), "-wal", "remove them too")
        assert not db.exists() and digest(wal) == wal_before
    finally:
        holder.close()


# ---------------------------------------------------------------------------------------------
# Item 8: folders pimem creates are 0700 whatever the umask
# ---------------------------------------------------------------------------------------------

@contextlib.contextmanager
def umask(value: int) -> Iterator[None]:
    previous = os.umask(value)
    try:
        yield
    finally:
        os.umask(previous)


def modes(base: Path, *relative: str) -> dict[str, int]:
    return {name: stat.S_IMODE((base / name).stat().st_mode) for name in relative}


def test_store_folders_are_owner_only_under_umask_0_intermediate_parents_included(tmp_path: Path) -> None:
    existing = tmp_path / "home"
    existing.mkdir(mode=0o755)
    os.chmod(existing, 0o755)
    with umask(0):
        connect(existing / ".pi" / "agent" / "memory.db").close()
    assert modes(existing, ".pi", ".pi/agent") == {".pi": 0o700, ".pi/agent": 0o700}
    assert stat.S_IMODE((existing / ".pi" / "agent" / "memory.db").stat().st_mode) == 0o600
    assert stat.S_IMODE(existing.stat().st_mode) == 0o755   # not pimem's folder: left alone


def test_the_pi_sessions_folders_a_migration_creates_are_owner_only_under_umask_0(tmp_path: Path) -> None:
    codex_home = tmp_path / "codex"
    shutil.copytree(SAMPLES / "codex", codex_home)
    home = tmp_path / "home"
    home.mkdir()
    agent = home / ".pi" / "agent"
    with umask(0):
        report = migrate_codex_sessions("/tmp/pimem-demo/webshop", False, env={
            "CODEX_HOME": str(codex_home), "PI_CODING_AGENT_DIR": str(agent), "HOME": str(home)})
    assert report.migrated and not report.issues
    folder = Path(report.migrated[0].pi_path).parent
    assert modes(home, ".pi", ".pi/agent", ".pi/agent/sessions", str(folder.relative_to(home))) == dict.fromkeys(
        [".pi", ".pi/agent", ".pi/agent/sessions", str(folder.relative_to(home))], 0o700)


def test_make_private_dirs_leaves_existing_folders_and_links_alone(tmp_path: Path) -> None:
    shared = tmp_path / "shared"
    shared.mkdir()
    os.chmod(shared, 0o755)
    (tmp_path / "link").symlink_to(shared)
    with umask(0):
        make_private_dirs(tmp_path / "link" / "a" / "b")
        make_private_dirs(tmp_path / "link" / "a")
    assert stat.S_IMODE(shared.stat().st_mode) == 0o755
    assert modes(shared, "a", "a/b") == {"a": 0o700, "a/b": 0o700}


# ---------------------------------------------------------------------------------------------
# Item 11: locked, full, read-only, damaged: one line, nothing lost
# ---------------------------------------------------------------------------------------------

@pytest.fixture
def synced(history: Path, env: dict[str, str]) -> Path:
    """A store after one sync of the sample history."""
    db = Path(env["MEMORY_DB_PATH"])
    assert pimem("sync", env=env).returncode == 0
    return db


def test_a_store_locked_past_the_busy_timeout_is_one_line_and_loses_nothing(
        synced: Path, env: dict[str, str], history: Path) -> None:
    before = stored_turns(synced)
    add_pi_session(history, "Quetzal-lock")
    fast = {**env, "PIMEM_BUSY_TIMEOUT_MS": "200"}
    writer = sqlite3.connect(synced, isolation_level=None)
    writer.execute("BEGIN IMMEDIATE")                      # another program's long write transaction
    try:
        one_line_failure(pimem("sync", env=fast), str(synced), "locked by another program", "0.2 s",
                         "PIMEM_BUSY_TIMEOUT_MS")
        # A reader is not blocked by a writer in WAL mode: status and recall still answer.
        assert pimem("status", env=fast).returncode == 0
    finally:
        writer.close()
    exclusive = sqlite3.connect(synced, isolation_level=None)
    exclusive.execute("PRAGMA locking_mode = EXCLUSIVE")
    exclusive.execute("BEGIN EXCLUSIVE")                   # blocks readers too
    try:
        one_line_failure(pimem("status", env=fast), "locked by another program")
        one_line_failure(pimem("recall", "flamingo", env=fast), "locked by another program")
    finally:
        exclusive.close()
    assert stored_turns(synced) == before
    again = pimem("sync", "--json", env=env)
    assert again.returncode == 0 and json.loads(again.stdout)["turns"] == 1


@contextlib.contextmanager
def small_filesystem(where: Path, size_kib: int) -> Iterator[Path]:
    """A tmpfs of ``size_kib`` mounted at ``where`` (root only)."""
    where.mkdir()
    if os.geteuid() != 0 or shutil.which("mount") is None:
        pytest.skip("mounting a small filesystem needs root")
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size_kib}k,mode=0700", "tmpfs", str(where)],
                             capture_output=True, check=False)
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {mounted.stderr.decode(errors='replace').strip()}")
    try:
        yield where
    finally:
        subprocess.run(["umount", "-l", str(where)], check=False)


def fill(directory: Path) -> Path:
    filler = directory / "filler"
    with open(filler, "wb", buffering=0) as handle, contextlib.suppress(OSError):
        while True:
            handle.write(b"\0" * 4096)
    return filler


def test_a_full_disk_is_one_line_and_loses_nothing(tmp_path: Path, history: Path) -> None:
    with small_filesystem(tmp_path / "disk", 3072) as disk:
        db = disk / "memory.db"
        env = env_for(history, db)
        assert pimem("sync", "--source", "pi", env=env).returncode == 0
        before = stored_turns(db)
        # Nobody holds the store: opening it needs a new -shm file, which the full disk refuses.
        filler = fill(disk)
        assert not Path(f"{db}-shm").exists()
        one_line_failure(pimem("status", env=env), str(db), "disk", "full", "what is stored is kept")
        one_line_failure(pimem("sync", env=env), str(db), "disk", "full", "what is stored is kept")
        filler.unlink()
        assert stored_turns(db) == before
        # A running program holds the store (-wal and -shm exist): the sync fails while writing.
        holder = sqlite3.connect(db)
        holder.execute("SELECT count(*) FROM turns").fetchone()
        try:
            filler = fill(disk)
            one_line_failure(pimem("sync", env=env), str(db), "disk", "full", "what is stored is kept")
            filler.unlink()
        finally:
            holder.close()
        assert stored_turns(db) == before
        assert sqlite3.connect(db).execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        result = pimem("sync", "--json", env=env)
        assert result.returncode == 0 and json.loads(result.stdout)["turns"] > 0


def _limit_file_size() -> None:
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)   # write() fails with EFBIG instead of killing us
    resource.setrlimit(resource.RLIMIT_FSIZE, (64 * 1024, 64 * 1024))


def test_a_write_past_the_file_size_limit_is_one_line_and_loses_nothing(
        synced: Path, env: dict[str, str], history: Path) -> None:
    """The same without root: past RLIMIT_FSIZE the store's writes fail as on a full disk."""
    before = stored_turns(synced)
    add_pi_session(history, "Quetzal-big " + "x" * 200_000)    # more than the limit to write
    result = pimem("sync", env=env, preexec_fn=_limit_file_size)
    one_line_failure(result, str(synced), "could not be read or written", "check the disk")
    assert stored_turns(synced) == before
    assert sqlite3.connect(synced).execute("PRAGMA integrity_check").fetchone()[0] == "ok"


def _without_file_capabilities() -> list[str] | None:
    """As root, a prefix that drops the capabilities that bypass file permissions."""
    if os.geteuid() != 0:
        return []
    setpriv = shutil.which("setpriv")
    if setpriv is None:
        return None
    drop = "-dac_override,-dac_read_search"
    return [setpriv, f"--bounding-set={drop}", f"--inh-caps={drop}", "--"]


@pytest.mark.parametrize("folder_too", [False, True], ids=["file", "file-and-folder"])
def test_a_read_only_store_is_one_line_for_sync_and_still_read(
        synced: Path, env: dict[str, str], history: Path, folder_too: bool) -> None:
    prefix = _without_file_capabilities()
    if prefix is None:
        pytest.skip("running as root without setpriv: permissions would not apply")
    before = stored_turns(synced)
    add_pi_session(history, "Quetzal-readonly")
    os.chmod(synced, 0o400)
    if folder_too:
        os.chmod(synced.parent, 0o500)
    try:
        one_line_failure(pimem("sync", env=env, prefix=prefix), str(synced), "read-only")
        status = pimem("status", "--json", env=env, prefix=prefix)
        assert status.returncode == 0, status.stderr
        assert json.loads(status.stdout)["totalTurns"] == len(before)
        found = pimem("recall", "flamingo", "--json", env=env, prefix=prefix)
        assert found.returncode == 0 and json.loads(found.stdout)
    finally:
        os.chmod(synced.parent, 0o700)
        os.chmod(synced, 0o600)
    assert stored_turns(synced) == before


def test_garbage_in_place_of_the_store_is_refused_never_replaced(tmp_path: Path, env: dict[str, str]) -> None:
    db = Path(env["MEMORY_DB_PATH"])
    db.parent.mkdir()
    db.write_bytes(os.urandom(64 * 1024))
    before = file_state(db)
    for args in (["sync"], ["status"], ["recall", "flamingo"]):
        one_line_failure(pimem(*args, env=env), str(db), "not an SQLite database", "damaged")
    assert file_state(db) == before and listing(db.parent) == ["memory.db"]


@pytest.mark.parametrize("damage", ["truncated", "overwritten-pages"])
def test_a_damaged_store_is_one_line_and_is_never_deleted_or_recreated(
        synced: Path, env: dict[str, str], damage: str) -> None:
    size = synced.stat().st_size
    with open(synced, "r+b") as handle:
        if damage == "truncated":
            handle.truncate(size // 3)
        else:
            for page in range(2, size // 4096, 2):
                handle.seek(page * 4096)
                handle.write(os.urandom(4096))
    before = file_state(synced)
    outcomes = {" ".join(args): pimem(*args, env=env) for args in (["sync"], ["status"], ["recall", "flamingo"])}
    for command, result in outcomes.items():
        if result.returncode != 0:
            one_line_failure(result, "damaged", "pimem leaves it as it is")
        else:   # what survived may still answer a read; never a write
            assert command != "sync" and "Traceback" not in result.stderr
    assert outcomes["sync"].returncode == 1
    assert file_state(synced) == before


def test_opening_the_store_keeps_the_locks_of_the_other_connections_of_this_process(tmp_path: Path) -> None:
    """POSIX locks belong to the process: closing any descriptor of the file drops every lock SQLite
    holds on it. connect() runs in the server next to its other connections, so it must never open
    and close the store's files behind SQLite's back (it did: reader threads then failed with
    SQLITE_IOERR_SHORT_READ while a sync ran)."""
    db = tmp_path / "store" / "memory.db"
    connect(db).close()
    holder = connect(db)
    holder.execute("SELECT count(*) FROM turns").fetchone()     # keeps its locks on memory.db and -shm
    try:
        for path in (db, Path(f"{db}-wal"), Path(f"{db}-shm")):
            os.chmod(path, 0o644)                                   # something for connect() to take away
        connect(db, for_writing=False).close()
        switch = ("import sqlite3, sys\nc = sqlite3.connect(sys.argv[1], timeout=0, isolation_level=None)\n"
                  "try:\n    print(c.execute('PRAGMA journal_mode = DELETE').fetchone()[0])\n"
                  "except sqlite3.OperationalError as error:\n    print(error)\n")
        other = subprocess.run([sys.executable, "-c", switch, str(db)], capture_output=True, text=True, check=True)
        assert other.stdout.strip() in ("wal", "database is locked"), other.stdout   # blocked by the holder
        assert stat.S_IMODE(db.stat().st_mode) == 0o600
    finally:
        holder.close()
