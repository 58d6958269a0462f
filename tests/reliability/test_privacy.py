"""Privacy and safety: owner-only store files, no transcript text in the server's logs, no network.

* The store directory, file, and SQLite's -wal and -shm files are owner-only, even when pimem runs
  under a permissive umask (tests/store/test_compat.py checks the directory and the file).
* A whole language-server session over the sample history (auto-sync, live update, recall,
  backfill, forced backfill, migrateCodex dry run, requests that fail with InvalidParams,
  MethodNotFound and RequestFailed) logs no transcript text: neither on stderr nor in any
  window/logMessage, window/showMessage or $/logTrace, at the default level and at INFO. The
  texts looked for are prompts of tests/fixtures/expected/*.json plus a marker appended live;
  the test first proves the server handled them (recall returns them) and that the capture works.
* The server opens no network socket: its process and its children are polled with psutil
  (net_connections, inet) during the session, and a test-only sitecustomize.py on PYTHONPATH
  records every AF_INET/AF_INET6 socket, connect, sendto and getaddrinfo of every Python process
  of the server (worker processes included), proven to work by a positive control.
* Migration never writes outside Pi's session directory nor through a symlink out of it: covered
  by tests/test_migrate.py (see docs/reliability.md); not repeated here.
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import sqlite3
import stat
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote

import psutil
import pytest

from pimem.lsp import methods
from pimem.store import connect, set_meta, transaction
from support.env import history_env
from support.history import EXPECTED, LEGACY, REPO, SAMPLES, copy_samples
from support.jsonrpc import LspProcess
from support.sync import sync

pytestmark = pytest.mark.e2e

FOLDER = "/tmp/pimem-demo/webshop"
REFUSED_FOLDER = "/tmp/pimem-demo/privacy-refused"    # its Pi directory is a symlink out of the sessions root
MARKER = "Zanzibar-quokka live prompt 7f3e about the saffron ledger"

TRIPWIRE = '''
import os, socket, sys
_LOG = os.environ.get("PIMEM_NET_TRIPWIRE")
if _LOG:
    def _note(what, detail=""):
        with open(_LOG, "a", encoding="utf-8") as handle:
            handle.write(f"{os.getpid()} {what} {detail}\\n")
    _note("loaded", " ".join(sys.argv[:3]))
    _INET = (socket.AF_INET, socket.AF_INET6)
    _init, _connect, _connect_ex, _sendto = (socket.socket.__init__, socket.socket.connect,
                                             socket.socket.connect_ex, socket.socket.sendto)
    _getaddrinfo = socket.getaddrinfo
    def __init__(self, family=-1, *args, **kwargs):
        _init(self, family, *args, **kwargs)
        if self.family in _INET:
            _note("socket", repr(self.family))
    def connect(self, address):
        if self.family in _INET:
            _note("connect", repr(address))
        return _connect(self, address)
    def connect_ex(self, address):
        if self.family in _INET:
            _note("connect_ex", repr(address))
        return _connect_ex(self, address)
    def sendto(self, *args):
        if self.family in _INET:
            _note("sendto", repr(args[-1]))
        return _sendto(self, *args)
    def getaddrinfo(*args, **kwargs):
        _note("getaddrinfo", repr(args[:2]))
        return _getaddrinfo(*args, **kwargs)
    socket.socket.__init__, socket.socket.connect, socket.socket.connect_ex = __init__, connect, connect_ex
    socket.socket.sendto, socket.getaddrinfo = sendto, getaddrinfo
'''


# The fixture roots copy_samples(..., legacy=True) copies (tests/fixtures/claude-interactive is not among them).
HISTORY_ROOTS = tuple(f"{root.relative_to(REPO).as_posix()}/" for root in (SAMPLES, LEGACY))


def distinctive_texts() -> list[str]:
    """A distinctive piece of the first prompt of every imported transcript of the history
    (copy_samples with legacy=True: samples/history and the legacy fixtures)."""
    texts = []
    for path in sorted(EXPECTED.glob("*/*.json")):
        case = json.loads(path.read_text(encoding="utf-8"))
        if not str(case["file"]).startswith(HISTORY_ROOTS):
            continue
        for turn in case.get("turns", [])[:1]:
            text = turn["userText"].strip().splitlines()[0][:48].strip()
            if len(text) >= 16:
                texts.append(text)
    return list(dict.fromkeys(texts))   # forks share their first prompts


TEXTS = distinctive_texts()


def test_there_are_enough_distinctive_texts() -> None:
    assert len(TEXTS) >= 8 and len(set(TEXTS)) == len(TEXTS)


def _modes(db: Path) -> dict[str, int]:
    return {path.name: stat.S_IMODE(path.stat().st_mode)
            for path in (db.parent, db, db.with_name(db.name + "-wal"), db.with_name(db.name + "-shm"))}


OWNER_ONLY = {"store": 0o700, "memory.db": 0o600, "memory.db-wal": 0o600, "memory.db-shm": 0o600}


def test_store_wal_and_shm_are_owner_only_under_a_permissive_umask(work: Path) -> None:
    previous = os.umask(0)
    try:
        base = copy_samples(work / "history", legacy=True)
        db = work / "store" / "memory.db"
        conn = connect(db)               # held open: SQLite keeps -wal and -shm while a connection is
        try:
            stats = sync(base, db)
            assert stats.turns > 0
            with transaction(conn):
                set_meta(conn, "privacy-test", "1")
            assert _modes(db) == OWNER_ONLY
        finally:
            conn.close()
    finally:
        os.umask(previous)


def test_a_store_created_by_another_program_becomes_owner_only(work: Path) -> None:
    db = work / "store" / "memory.db"
    db.parent.mkdir(mode=0o700)
    previous = os.umask(0o022)
    try:
        sqlite3.connect(db).close()          # what the extension's first open leaves: a 0644 file
    finally:
        os.umask(previous)
    assert stat.S_IMODE(db.stat().st_mode) == 0o644
    conn = connect(db)
    try:
        with transaction(conn):
            set_meta(conn, "privacy-test", "1")
        assert _modes(db) == OWNER_ONLY
    finally:
        conn.close()


# ---------------------------------------------------------------------------------------------
# One full server session
# ---------------------------------------------------------------------------------------------

class NetworkWatch:
    """Polls a process tree's inet sockets every 20 ms."""

    def __init__(self, pid: int) -> None:
        self.root = psutil.Process(pid)
        self.seen: list[Any] = []
        self.polls = 0
        self.pids: set[int] = set()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.is_set():
            with contextlib.suppress(psutil.Error):
                for process in [self.root, *self.root.children(recursive=True)]:
                    with contextlib.suppress(psutil.Error):
                        self.pids.add(process.pid)
                        self.seen.extend(process.net_connections(kind="inet"))
                self.polls += 1
            time.sleep(0.02)

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(5)


@pytest.fixture
def tripwire(work: Path) -> Iterator[tuple[dict[str, str], Path]]:
    directory = work / "tripwire"
    directory.mkdir()
    (directory / "sitecustomize.py").write_text(TRIPWIRE, encoding="utf-8")
    log = work / "network.log"
    extra = {"PYTHONPATH": os.pathsep.join(filter(None, [str(directory), os.environ.get("PYTHONPATH")])),
             "PIMEM_NET_TRIPWIRE": str(log)}
    yield extra, log


def test_the_network_tripwire_and_the_poller_see_a_connection(tripwire: tuple[dict[str, str], Path]) -> None:
    """Positive control: the same instruments catch a process that does connect."""
    extra, log = tripwire
    with socket.create_server(("127.0.0.1", 0)) as listener:
        port = listener.getsockname()[1]
        code = f"import socket, time; s = socket.create_connection(('127.0.0.1', {port})); time.sleep(1.5)"
        process = subprocess.Popen([sys.executable, "-c", code], env={**os.environ, **extra})
        watch = NetworkWatch(process.pid)
        try:
            assert process.wait(30) == 0
        finally:
            watch.stop()
    events = log.read_text(encoding="utf-8")
    assert f"{process.pid} loaded" in events and f"{process.pid} connect" in events, events
    assert any(conn.raddr and conn.raddr[1] == port for conn in watch.seen), watch.seen


@pytest.mark.parametrize("level", ["default", "INFO"])
def test_a_full_session_logs_no_transcript_text_and_opens_no_socket(
        level: str, work: Path, tripwire: tuple[dict[str, str], Path]) -> None:
    base = copy_samples(work / "history", legacy=True)
    outside = work / "outside"
    outside.mkdir()
    sessions = base / "pi" / "agent" / "sessions"
    os.symlink(outside, sessions / "--tmp-pimem-demo-privacy-refused--", target_is_directory=True)
    extra, network_log = tripwire
    db = work / "store" / "memory.db"
    env = {**history_env(base), **extra, "MEMORY_DB_PATH": str(db)}
    env.pop("PIMEM_LOG_LEVEL")
    if level != "default":
        env["PIMEM_LOG_LEVEL"] = level
    lsp = LspProcess(env, work / "stderr.log")
    watch = NetworkWatch(lsp.process.pid)
    answers: dict[str, dict[str, Any]] = {}
    try:
        # A bad option: reported with window/showMessage (proves the capture of those messages).
        lsp.initialize(options={"autoSync": True, "hover": "everywhere"}, folders=[FOLDER, REFUSED_FOLDER])
        lsp.wait_for(lambda m: m.get("method") == "pimem/indexChanged", timeout=120)
        lsp.wait_for(lambda m: m.get("method") == "pimem/syncStatus" and not m["params"]["syncing"], timeout=120)
        assert _modes(db) == OWNER_ONLY   # the server holds connections: -wal and -shm exist

        answers["recall"] = lsp.request(methods.RECALL, {"entities": ["flamingo"], "limit": 50})
        answers["recall-text"] = lsp.request(methods.RECALL, {"text": TEXTS[0]})
        answers["status"] = lsp.request(methods.STATUS, {})
        answers["backfill"] = lsp.request(methods.BACKFILL, {})
        answers["backfill-force"] = lsp.request(methods.BACKFILL, {"force": True})
        answers["migrate-dry-run"] = lsp.request(methods.MIGRATE_CODEX, {"dryRun": True,
                                                                         "workspaceFolder": Path(FOLDER).as_uri()})
        # Failing requests, with transcript text in their params.
        answers["bad-entities"] = lsp.request(methods.RECALL, {"entities": [TEXTS[1], ""]})
        answers["bad-limit"] = lsp.request(methods.RECALL, {"text": TEXTS[2], "limit": TEXTS[3]})
        answers["bad-folder"] = lsp.request(methods.MIGRATE_CODEX, {"workspaceFolder": "file:///" + quote(TEXTS[4])})
        answers["unknown-method"] = lsp.request("pimem/" + TEXTS[5].replace(" ", ""), {"text": TEXTS[5]})
        answers["service-failure"] = lsp.request(methods.MIGRATE_CODEX, {
            "workspaceFolder": Path(REFUSED_FOLDER).as_uri(), "dryRun": False})
        # A live update: a new prompt appended to a Pi session is imported by the watcher.
        start = len(lsp.received)
        pi_file = next(sessions.glob("--tmp-pimem-demo-webshop--/*.jsonl"))
        with open(pi_file, "a", encoding="utf-8") as handle:
            handle.write(json.dumps({"type": "message", "id": "live0001", "parentId": None,
                                     "timestamp": "2026-12-01T10:00:00.000Z",
                                     "message": {"role": "user", "content": [{"type": "text", "text": MARKER}],
                                                 "timestamp": 1796119200000}}) + "\n")
        lsp.wait_for(lambda m: m.get("method") == "pimem/indexChanged", timeout=60, start=start)
        answers["recall-live"] = lsp.request(methods.RECALL, {"entities": ["saffron ledger"]})
        assert lsp.process.poll() is None
    finally:
        exit_status = lsp.close()
        watch.stop()
    assert exit_status == 0

    # The requests did what they should: the server really handled the texts looked for below.
    results = json.dumps([answers["recall"], answers["recall-text"], answers["recall-live"]], ensure_ascii=False)
    assert sum(text in results for text in TEXTS) >= 3 and MARKER in results
    assert answers["migrate-dry-run"]["result"]["reports"][0]["migrated"]
    assert [answers[name]["error"]["code"] for name in ("bad-entities", "bad-limit", "bad-folder")] == [-32602] * 3
    assert answers["unknown-method"]["error"]["code"] == -32601
    assert answers["service-failure"]["error"]["code"] == -32803
    assert "outside the Pi sessions directory" in answers["service-failure"]["error"]["message"]
    assert not list(outside.iterdir())
    conn = connect(db)
    try:
        stored = "\n".join(text for row in conn.execute("SELECT user_text, reply_text FROM turns") for text in row)
    finally:
        conn.close()
    assert all(text in stored for text in [*TEXTS, MARKER])

    # Everything the server logged.
    stderr = lsp.stderr()
    log_messages = [message.get("params") for message in lsp.received
                    if message.get("method") in ("window/logMessage", "window/showMessage",
                                                 "window/showMessageRequest", "$/logTrace", "telemetry/event")]
    logs = stderr + "\n" + json.dumps(log_messages, ensure_ascii=False)
    assert any("initializationOptions.hover" in str(params) for params in log_messages), log_messages
    if level == "INFO":
        assert "sync:" in stderr and "turns changed" in stderr, stderr   # INFO lines are captured
    leaked = [text for text in [*TEXTS, MARKER] if text in logs]
    assert not leaked, (leaked, logs[-3000:])
    assert "Traceback" not in stderr, stderr[-3000:]

    # No network: neither seen by the poller nor recorded by the tripwire in any server process.
    assert watch.polls > 20 and lsp.process.pid in watch.pids
    assert not watch.seen, watch.seen
    events = network_log.read_text(encoding="utf-8").splitlines()
    assert any(line.startswith(f"{lsp.process.pid} loaded") for line in events), events
    assert [line for line in events if " loaded " not in line] == [], events
