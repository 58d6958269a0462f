"""The language server's wire and lifecycle, over a real stdio pipe (``python -m pimem serve``), fed
raw bytes: malformed frames and messages, the LSP lifecycle, exit codes, what reaches stderr.

Issue 10, item 7. The frame reader itself is unit-tested in tests/lsp/test_transport.py."""

from __future__ import annotations

import collections
import contextlib
import ctypes
import json
import os
import platform
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from pimem.lsp import methods
from pimem.lsp.transport import MAX_MESSAGE_BYTES
from support.env import history_env
from support.history import copy_samples
from support.jsonrpc import LspProcess

from ._support import SCRATCH

pytestmark = pytest.mark.e2e

MARKER = "pimem-marker-7f3a9c"          # stands for transcript text: must never reach stderr
PARSE_ERROR, INVALID_REQUEST, METHOD_NOT_FOUND, INVALID_PARAMS = -32700, -32600, -32601, -32602
SERVER_NOT_INITIALIZED, REQUEST_FAILED = -32002, -32803
RESULT = "result"                       # expected: a result, not an error
NO_ANSWER = None                        # expected: nothing (a notification)


def frame(body: bytes, header: bytes | None = None) -> bytes:
    return (b"Content-Length: %d\r\n" % len(body) if header is None else header) + b"\r\n" + body


def body(message: Any) -> bytes:
    return json.dumps(message).encode("utf-8")


def request(msg_id: Any, method: str = methods.STATUS, params: Any = None, **extra: Any) -> bytes:
    return body({"jsonrpc": "2.0", "id": msg_id, "method": method, "params": params or {}, **extra})


@contextlib.contextmanager
def server(base: Path, *, initialize: bool = True, options: dict[str, Any] | None = None,
           level: str | None = "WARNING") -> Iterator[LspProcess]:
    base.mkdir(parents=True, exist_ok=True)
    (base / "home").mkdir(exist_ok=True)
    env = history_env(base)
    if level is None:
        del env["PIMEM_LOG_LEVEL"]
    else:
        env["PIMEM_LOG_LEVEL"] = level
    lsp = LspProcess(env, base / "stderr.log")
    try:
        if initialize:
            lsp.initialize(options={"autoSync": False, **(options or {})})
        yield lsp
    finally:
        lsp.close()


def answer(lsp: LspProcess, msg_id: Any, start: int = 0, timeout: float = 30) -> dict[str, Any]:
    """The response to ``msg_id`` (None: an error with id null) received from message ``start`` on."""
    return lsp.wait_for(lambda m: "method" not in m and m.get("id") == msg_id and ("result" in m or "error" in m),
                        timeout=timeout, start=start)


def exit_code(lsp: LspProcess, timeout: float = 15) -> int:
    try:
        return lsp.process.wait(timeout)
    except subprocess.TimeoutExpired:
        pytest.fail(f"the server did not exit within {timeout} s")


def stderr_lines(lsp: LspProcess) -> list[str]:
    return [line for line in lsp.stderr().splitlines() if line.strip()]


# ---------------------------------------------------------------------------------------------
# Broken frames and messages the server recovers from: one server for all, each case followed by a
# valid request that must be answered.
# ---------------------------------------------------------------------------------------------

BIG_TEXT = "x" * (MAX_MESSAGE_BYTES + 1024)
RECOVERABLE = [
    pytest.param(frame(b"{not json " + MARKER.encode()), PARSE_ERROR, None, id="body-not-json"),
    pytest.param(frame(b'{"jsonrpc":"2.0","id":"r1","method":"\xff\xfe"}'), PARSE_ERROR, None, id="body-not-utf8"),
    pytest.param(frame(b""), PARSE_ERROR, None, id="content-length-0"),
    pytest.param(frame(b'{"jsonrpc":"2.0","id":"r2","method":"pimem/status","params":{"x":NaN}}'), PARSE_ERROR,
                 None, id="nan-literal"),
    pytest.param(frame(b"[" * 100_000 + b"]" * 100_000), PARSE_ERROR, None, id="nested-100000-levels"),
    pytest.param(frame(b'[{"jsonrpc":"2.0","id":"r3","method":"pimem/status"}]'), INVALID_REQUEST, None, id="batch"),
    pytest.param(frame(b"[]"), INVALID_REQUEST, None, id="empty-array"),
    pytest.param(frame(b'"pimem/status"'), INVALID_REQUEST, None, id="json-string"),
    pytest.param(frame(b"42"), INVALID_REQUEST, None, id="json-number"),
    pytest.param(frame(b"null"), INVALID_REQUEST, None, id="json-null"),
    pytest.param(frame(body({"jsonrpc": "2.0", "id": "r4"})), INVALID_REQUEST, "r4", id="no-method"),
    pytest.param(frame(body({"jsonrpc": "2.0", "id": "r5", "params": {}})), INVALID_REQUEST, "r5",
                 id="no-method-with-params"),
    pytest.param(frame(body({"jsonrpc": "2.0", "id": "r6", "method": ["pimem/status"]})), INVALID_REQUEST, "r6",
                 id="method-not-a-string"),
    pytest.param(frame(body({"id": "r7", "method": "pimem/status"})), INVALID_REQUEST, "r7", id="no-jsonrpc"),
    pytest.param(frame(body({"jsonrpc": "1.0", "id": "r8", "method": "pimem/status"})), INVALID_REQUEST, "r8",
                 id="jsonrpc-1.0"),
    pytest.param(frame(body({"jsonrpc": "2.0", "id": {"n": 9}, "method": "pimem/status"})), INVALID_REQUEST, None,
                 id="id-object"),
    pytest.param(frame(body({"jsonrpc": "2.0", "id": None, "method": "pimem/status"})), INVALID_REQUEST, None,
                 id="id-null"),
    pytest.param(frame(body({"jsonrpc": "2.0", "id": True, "method": "pimem/status"})), INVALID_REQUEST, None,
                 id="id-true"),
    pytest.param(frame(body({"jsonrpc": "2.0", "id": 1.5, "method": "pimem/status"})), INVALID_REQUEST, None,
                 id="id-fraction"),
    pytest.param(frame(request("r10", "textDocument/hover", {"textDocument": {"uri": "file:///tmp/x.md"},
                                                              "position": {"line": MARKER, "character": 0}})),
                 INVALID_PARAMS, "r10", id="typed-params-of-the-wrong-type"),
    pytest.param(frame(request("r11", "workspace/executeCommand", {"arguments": []})), INVALID_PARAMS, "r11",
                 id="typed-params-missing-a-field"),
    pytest.param(frame(request("r12", methods.RECALL, {"entities": ["flamingo"],
                                                       "meta": {"jsonrpc": "2.0", "id": 1}})),
                 RESULT, "r12", id="params-holding-a-message-shaped-object"),
    pytest.param(frame(request("r13"), b"content-length: %d\r\ncontent-type: application/vscode-jsonrpc; "
                       b"charset=utf-8\r\n" % len(request("r13"))), RESULT, "r13", id="lower-case-header-names"),
    pytest.param(b"Content-Length: %d\n\n" % len(request("r14")) + request("r14"), RESULT, "r14",
                 id="lf-line-endings"),
    pytest.param(frame(body({"jsonrpc": "2.0", "id": "r16", "method": "exit"})), INVALID_REQUEST, "r16",
                 id="exit-with-an-id"),
    pytest.param(frame(body({"jsonrpc": "2.0", "id": "r17", "method": "initialized", "params": {}})),
                 INVALID_REQUEST, "r17", id="initialized-with-an-id"),
    pytest.param(frame(body({"jsonrpc": "2.0", "method": "shutdown"})), NO_ANSWER, None,
                 id="shutdown-without-an-id"),
    pytest.param(frame(request("r15", methods.RECALL, {"text": BIG_TEXT})), INVALID_REQUEST, "r15",
                 id="request-over-4-mib"),
    pytest.param(frame(body({"jsonrpc": "2.0", "method": "pimem/unknown", "params": {"text": BIG_TEXT}})),
                 NO_ANSWER, None, id="notification-over-4-mib"),
]


@pytest.fixture(scope="module")
def shared() -> Iterator[LspProcess]:
    base = Path(tempfile.mkdtemp(prefix="pimem-wire-", dir=SCRATCH))
    try:
        with server(base, options={"hover": "word"}) as lsp:
            yield lsp
            assert lsp.process.poll() is None, "the server exited"
            # Exactly one answer per request id (and one null-id error per case expecting one).
            answered = collections.Counter(json.dumps(m["id"]) for m in lsp.received
                                           if "method" not in m and "id" in m)
            for case in RECOVERABLE:
                reply_id = case.values[2]
                if reply_id is not None:
                    assert answered[json.dumps(reply_id)] == 1, (case.id, answered)
            nulls = sum(1 for case in RECOVERABLE if case.values[1] is not NO_ANSWER and case.values[2] is None)
            assert answered["null"] == nulls, answered
            stderr = lsp.stderr()
            assert "Traceback" not in stderr and MARKER not in stderr, stderr[-3000:]
        assert lsp.process.returncode == 0
    finally:
        shutil.rmtree(base, ignore_errors=True)


@pytest.mark.parametrize(("data", "expected", "reply_id"), RECOVERABLE)
def test_a_broken_message_is_answered_and_the_next_one_too(shared: LspProcess, data: bytes, expected: Any,
                                                           reply_id: Any) -> None:
    start = len(shared.received)
    shared.send_raw(data)
    if expected is not NO_ANSWER:
        reply = answer(shared, reply_id, start)
        if expected == RESULT:
            assert "result" in reply, reply
        else:
            assert reply["error"]["code"] == expected, reply
            assert "data" not in reply["error"], reply   # no traceback
    after = shared.request(methods.STATUS, {}, timeout=30)
    assert "result" in after, after


def test_errors_name_the_problem(shared: LspProcess) -> None:
    """The messages of a few of the answers above: the field, the limit, never the value."""
    start = len(shared.received)
    shared.send_raw(frame(request("n1", "textDocument/hover", {"textDocument": {"uri": "file:///tmp/x.md"},
                                                               "position": {"line": MARKER, "character": 0}})))
    shared.send_raw(frame(request("n2", methods.RECALL, {"text": BIG_TEXT})))
    shared.send_raw(frame(request("n3", "pimem/nope")))
    hover, big, unknown = (answer(shared, msg_id, start)["error"]["message"] for msg_id in ("n1", "n2", "n3"))
    assert hover == 'textDocument/hover: "params.position.line" has the wrong type'
    assert str(MAX_MESSAGE_BYTES) in big and str(len(request("n2", methods.RECALL, {"text": BIG_TEXT}))) in big
    assert unknown == "Method Not Found: pimem/nope"


# ---------------------------------------------------------------------------------------------
# Headers that cannot be trusted: a clean exit (code 2) with one line on stderr, for the client to
# restart the server. Nothing says where such a body ends, so no later message could be trusted.
# ---------------------------------------------------------------------------------------------

STATUS = request("after")
FATAL = [
    pytest.param(b"Content-Length: abc" + MARKER.encode() + b"\r\n", id="content-length-not-a-number"),
    pytest.param(b"Content-Length: -5\r\n", id="content-length-negative"),
    pytest.param(b"Content-Length: 5.0\r\n", id="content-length-fraction"),
    pytest.param(b"Content-Length: 99999999999999999999999999\r\n", id="content-length-26-digits"),
    pytest.param(b"Content-Length: 1099511627776\r\n", id="content-length-1-tib"),
    pytest.param(b"Content-Type: application/vscode-jsonrpc\r\n", id="content-length-missing"),
    pytest.param(b"Content-Length: 12\r\nContent-Length: 13\r\n", id="content-length-twice-different"),
    pytest.param(MARKER.encode() + b" is not a header\r\n", id="line-without-colon"),
    pytest.param(b"X-Padding: " + b"y" * 100_000 + b"\r\n", id="header-over-8-kib"),
]


@pytest.mark.parametrize("header", FATAL)
def test_an_untrustworthy_header_ends_the_server_cleanly(work: Path, header: bytes) -> None:
    with server(work) as lsp:
        with contextlib.suppress(BrokenPipeError):   # the server may be gone before all is written
            lsp.send_raw(header + b"\r\n" + STATUS)
            lsp.send_raw(frame(STATUS))
        assert exit_code(lsp) == 2
        lines = stderr_lines(lsp)
        assert len(lines) == 1, lines
        assert "stopping:" in lines[0] and "exit code 2" in lines[0], lines
        assert MARKER not in lines[0] and "Traceback" not in lines[0]


def test_an_oversized_body_is_skipped_without_being_held(work: Path) -> None:
    """64 MiB for one request: read in pieces and dropped; the server's peak memory barely moves."""
    status = Path("/proc/self/status")
    if not status.exists():
        pytest.skip("needs /proc")
    huge = request("huge", methods.RECALL, {"text": "y" * (64 * 1024 * 1024)})

    def peak(lsp: LspProcess) -> int:   # VmHWM: the resident set's high-water mark, in kB
        text = Path(f"/proc/{lsp.process.pid}/status").read_text(encoding="ascii")
        return int(next(line.split()[1] for line in text.splitlines() if line.startswith("VmHWM:")))

    with server(work) as lsp:
        assert "result" in lsp.request(methods.STATUS, {})
        before = peak(lsp)
        lsp.send_raw(frame(huge))
        reply = answer(lsp, "huge", timeout=60)
        assert reply["error"]["code"] == INVALID_REQUEST, reply
        assert "result" in lsp.request(methods.STATUS, {})
        grown_mib = (peak(lsp) - before) / 1024
        assert grown_mib < 16, f"peak memory grew by {grown_mib:.1f} MiB for a skipped 64 MiB body"


# ---------------------------------------------------------------------------------------------
# The lifecycle (LSP specification, "Server lifecycle")
# ---------------------------------------------------------------------------------------------

def test_requests_before_initialize_get_server_not_initialized(work: Path) -> None:
    with server(work, initialize=False) as lsp:
        for method in (methods.STATUS, methods.RECALL, "shutdown", "pimem/nope"):
            reply = lsp.request(method, {"entities": ["flamingo"]} if method == methods.RECALL else None, timeout=30)
            assert reply["error"]["code"] == SERVER_NOT_INITIALIZED, (method, reply)
        lsp.initialize(options={"autoSync": False})
        assert "result" in lsp.request(methods.STATUS, {})


def test_notifications_before_initialize_are_dropped(work: Path) -> None:
    """An early ``initialized`` would start the watcher and a sync before the options are known."""
    base = copy_samples(work / "history")
    with server(base, initialize=False) as lsp:
        lsp.notify("initialized", {})
        lsp.notify("workspace/didChangeWorkspaceFolders",
                   {"event": {"added": [{"uri": "file:///tmp", "name": "tmp"}], "removed": []}})
        reply = lsp.request("initialize", {"processId": None, "rootUri": None, "capabilities": {},
                                           "initializationOptions": {"autoSync": True}})
        assert "result" in reply, reply
        status = lsp.request(methods.STATUS, {})["result"]
        assert status["lastSync"] is None and not status["syncing"], status
        assert lsp.notifications(methods.SYNC_STATUS) == []
        # The migration scope is still "no folder": the early folder change was dropped.
        refused = lsp.request(methods.MIGRATE_CODEX, {"dryRun": True})
        assert refused["error"]["code"] == INVALID_PARAMS and "no workspace folder" in refused["error"]["message"]
        assert stderr_lines(lsp) == []


def test_a_second_initialize_is_invalid_request(work: Path) -> None:
    with server(work) as lsp:
        again = lsp.request("initialize", {"processId": None, "rootUri": None, "capabilities": {},
                                           "initializationOptions": {"dbPath": str(work / "other.db")}})
        assert again["error"]["code"] == INVALID_REQUEST, again
        assert lsp.request(methods.STATUS, {})["result"]["dbPath"] == str(work / "memory.db")


def test_a_failed_initialize_can_be_retried(work: Path) -> None:
    with server(work, initialize=False) as lsp:
        bad = lsp.request("initialize", {"processId": "one", "capabilities": {}})
        assert bad["error"]["code"] == INVALID_PARAMS and '"params.processId"' in bad["error"]["message"], bad
        assert lsp.request(methods.STATUS, {})["error"]["code"] == SERVER_NOT_INITIALIZED
        lsp.initialize(options={"autoSync": False})
        assert "result" in lsp.request(methods.STATUS, {})


def test_a_second_initialized_notification_is_ignored(work: Path) -> None:
    """Each ``initialized`` started a watcher and a sync: two of each."""
    base = copy_samples(work / "history")
    with server(base, initialize=False) as lsp:
        assert "result" in lsp.request("initialize", {"processId": None, "rootUri": None, "capabilities": {},
                                                      "initializationOptions": {"autoSync": True}})
        lsp.notify("initialized", {})
        lsp.notify("initialized", {})
        lsp.wait_for(lambda m: m.get("method") == methods.SYNC_STATUS and not m["params"]["syncing"], timeout=60)
        # Syncs run one at a time on the writer thread: a second automatic sync would be queued
        # before this backfill, so it has ended when the backfill answers.
        assert "result" in lsp.request(methods.BACKFILL, {}, timeout=60)
        ended = [p for p in lsp.notifications(methods.SYNC_STATUS) if not p["syncing"]]
        assert len(ended) == 2, ended   # the automatic sync and the backfill, not a third


def test_requests_after_shutdown_are_invalid_request(work: Path) -> None:
    with server(work) as lsp:
        assert lsp.request("shutdown", None)["result"] is None
        for method in (methods.STATUS, "shutdown", "initialize", "pimem/nope"):
            reply = lsp.request(method, None, timeout=30)
            assert reply["error"]["code"] == INVALID_REQUEST, (method, reply)
        lsp.notify("exit")
        assert exit_code(lsp) == 0


@pytest.mark.parametrize(("steps", "expected"), [
    pytest.param(("initialize", "shutdown", "exit"), 0, id="exit-after-shutdown"),
    pytest.param(("initialize", "exit"), 1, id="exit-without-shutdown"),
    pytest.param(("exit",), 1, id="exit-before-initialize"),
    pytest.param(("initialize", "shutdown", "eof"), 0, id="stdin-closed-after-shutdown"),
    pytest.param(("initialize", "eof"), 1, id="stdin-closed-without-shutdown"),
    pytest.param(("initialize", "sigint"), 1, id="interrupted"),
])
def test_exit_codes(work: Path, steps: tuple[str, ...], expected: int) -> None:
    with server(work, initialize=False) as lsp:
        for step in steps:
            if step == "initialize":
                lsp.initialize(options={"autoSync": False})
            elif step == "shutdown":
                assert "result" in lsp.request("shutdown", None)
            elif step == "exit":
                lsp.notify("exit")
            elif step == "sigint":   # Ctrl-C in a terminal
                lsp.process.send_signal(signal.SIGINT)
            else:
                lsp.close_stdin()
        assert exit_code(lsp) == expected
        assert stderr_lines(lsp) == []


# tgkill(2): a signal to one thread of a process (kill(2) lets the kernel choose, most often the main one)
_TGKILL = {"x86_64": 234, "aarch64": 131}.get(platform.machine())


@pytest.mark.skipif(sys.platform != "linux" or _TGKILL is None, reason="tgkill(2) is Linux's")
def test_an_interrupt_that_reaches_another_thread_ends_the_server(work: Path) -> None:
    """Ctrl-C is delivered to any thread the kernel picks: when it was one of the server's own threads (the
    stdin reader), the idle event loop never woke to run Python's handler and the server ran on (a flaky
    `interrupted` above, 1 run in a few hundred)."""
    libc = ctypes.CDLL(None, use_errno=True)
    with server(work, initialize=False) as lsp:
        lsp.initialize(options={"autoSync": False})
        time.sleep(0.5)   # the loop idle, waiting on its selector (a message in flight would wake it)
        pid = lsp.process.pid
        others = sorted(int(task) for task in os.listdir(f"/proc/{pid}/task") if int(task) != pid)
        assert others, "the server runs a thread besides its main one (the stdin reader)"
        assert libc.syscall(_TGKILL, pid, others[0], signal.SIGINT) == 0, ctypes.get_errno()
        assert exit_code(lsp) == 1
        assert stderr_lines(lsp) == []


# ---------------------------------------------------------------------------------------------
# A handler that fails, and what reaches stderr
# ---------------------------------------------------------------------------------------------

def test_a_failing_handler_gets_a_one_line_error_without_traceback(work: Path) -> None:
    """With a store that cannot be opened, hover (a pygls-dispatched handler) raised, and pygls
    answered the exception's text with a traceback in ``data`` (and logged it). Now hover has nothing
    to show (null), and a request that needs the store gets one line without ``data``."""
    (work / "not-a-store").mkdir()
    document = {"uri": (work / "notes.md").as_uri(), "languageId": "markdown", "version": 1,
                "text": f"flamingo {MARKER}"}
    with server(work, options={"hover": "word", "dbPath": str(work / "not-a-store")}) as lsp:
        lsp.notify("textDocument/didOpen", {"textDocument": document})
        reply = lsp.request("textDocument/hover", {"textDocument": {"uri": document["uri"]},
                                                   "position": {"line": 0, "character": 3}})
        assert "error" not in reply and reply["result"] is None, reply
        reply = lsp.request(methods.STATUS, {})
        error = reply["error"]
        assert error["code"] == REQUEST_FAILED and "data" not in error, error
        assert "\n" not in error["message"] and "Traceback" not in error["message"], error
        assert error["message"].startswith(f"{methods.STATUS}: "), error
        stderr = lsp.stderr()
        assert "Traceback" not in stderr and MARKER not in stderr, stderr


def hostile_session(lsp: LspProcess) -> None:
    """Requests and notifications carrying MARKER: valid, malformed, failing, unanswerable."""
    document = {"uri": "file:///tmp/notes.md", "languageId": "markdown", "version": MARKER, "text": MARKER}
    sent = [
        lsp.send_request(methods.RECALL, {"entities": [MARKER]}),
        lsp.send_request(methods.RECALL, {"text": MARKER, "limit": MARKER}),
        lsp.send_request("textDocument/hover", {"textDocument": {"uri": f"file:///{MARKER}"},
                                                "position": {"line": MARKER, "character": 0}}),
        lsp.send_request("workspace/executeCommand", {"command": MARKER, "arguments": [MARKER]}),
        lsp.send_request(f"pimem/{MARKER}", {"text": MARKER}),
    ]
    lsp.notify("textDocument/didOpen", {"textDocument": document})
    lsp.notify("$/cancelRequest", {"id": MARKER})
    lsp.notify("window/workDoneProgress/cancel", {"token": MARKER})
    lsp.notify("workspace/didChangeWorkspaceFolders",
               {"event": {"added": [], "removed": [{"uri": f"file:///{MARKER}", "name": MARKER}]}})
    lsp.notify(f"pimem/{MARKER}", {"text": MARKER})
    lsp.send_raw(frame(body({"jsonrpc": "1.0", "id": "h1", "method": methods.RECALL, "params": {"text": MARKER}})))
    lsp.send_raw(frame(body({"jsonrpc": "2.0", "id": "h2", "result": {"text": MARKER}})))
    lsp.send_raw(frame(f'{{"jsonrpc": "2.0", "id": "h3", "params": "{MARKER}'.encode()))
    lsp.send_raw(frame(request("h4", methods.RECALL, {"text": MARKER * (MAX_MESSAGE_BYTES // len(MARKER) + 1)})))
    for msg_id in sent:
        lsp.wait_response(msg_id, timeout=20)
    for msg_id in ("h1", None, "h4"):
        answer(lsp, msg_id, timeout=20)
    assert "result" in lsp.request(methods.STATUS, {})


@pytest.mark.parametrize("level", [None, "DEBUG"], ids=["default-level", "debug"])
def test_stderr_never_holds_params_or_bodies_at_the_default_level(work: Path, level: str | None) -> None:
    """At the default level the marker never reaches stderr; at DEBUG it does, which shows the
    capture would see it."""
    with server(work, options={"hover": "word"}, level=level) as lsp:
        hostile_session(lsp)
        stderr = lsp.stderr()
    if level is None:
        assert MARKER not in stderr, stderr[-3000:]
        assert "Traceback" not in stderr, stderr[-3000:]
    else:
        assert MARKER in stderr
