"""A minimal synchronous LSP client over the real server's stdio, for the tests and the benchmarks.

It sends exactly the JSON given (any params, or none, or raw bytes), records every message the
server sends (responses, notifications, its own requests, which get a null result), and keeps the
server's stderr: in a file when given one, else its last lines in memory. Standard library only.
"""

from __future__ import annotations

import collections
import contextlib
import json
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, BinaryIO

ABSENT = object()   # a request without a "params" member
# What a client that supports progress and workspace folders announces (as VS Code does).
CAPABILITIES: dict[str, Any] = {"window": {"workDoneProgress": True}, "workspace": {"workspaceFolders": True}}
STDERR_LINES = 200  # kept in memory when there is no stderr file


class LspError(Exception):
    """An error response, a server that exited, or no answer in time (from :meth:`LspProcess.call`)."""


class LspProcess:
    """``command`` (default: ``python -m pimem serve --stdio`` plus ``extra_args``) started with
    ``env``, its stderr written to ``stderr_path`` if given. ``ensure_ascii=False`` sends non-ASCII
    text as UTF-8 (as vscode-jsonrpc does) instead of ``\\u`` escapes; the escapes can carry any string,
    lone surrogates included."""

    def __init__(self, env: dict[str, str], stderr_path: Path | None = None, *, extra_args: tuple[str, ...] = (),
                 command: Sequence[str] | None = None, cwd: str | None = None, ensure_ascii: bool = True) -> None:
        self.stderr_path = stderr_path
        self._ensure_ascii = ensure_ascii
        self._stderr_file = open(stderr_path, "wb") if stderr_path is not None else None  # noqa: SIM115 - closed in close()
        self._stderr_tail: collections.deque[bytes] = collections.deque(maxlen=STDERR_LINES)
        argv = list(command) if command is not None else [sys.executable, "-m", "pimem", "serve", "--stdio",
                                                          *extra_args]
        self.process = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                        stderr=self._stderr_file or subprocess.PIPE, env=env, cwd=cwd)
        self.received: list[dict[str, Any]] = []
        self._responses: dict[int, dict[str, Any]] = {}
        self._condition = threading.Condition()
        self._write = threading.Lock()
        self._next_id = 0
        self.closed = False
        self._reader = threading.Thread(target=self._read_loop, daemon=True, name="lsp-reader")
        self._reader.start()
        self._stderr_reader: threading.Thread | None = None
        if self._stderr_file is None:
            self._stderr_reader = threading.Thread(target=self._drain_stderr, daemon=True, name="lsp-stderr")
            self._stderr_reader.start()

    @property
    def pid(self) -> int:
        return self.process.pid

    # -- wire ------------------------------------------------------------------------------------
    def _read_loop(self) -> None:
        stream: BinaryIO = self.process.stdout  # type: ignore[assignment]
        try:
            while True:
                length = None
                while True:
                    header = stream.readline()
                    if not header:
                        return
                    header = header.strip()
                    if not header:
                        break
                    name, _, value = header.decode("ascii").partition(":")
                    if name.lower() == "content-length":
                        length = int(value)
                assert length is not None, "a message without Content-Length"
                message = json.loads(stream.read(length))
                with self._condition:
                    self.received.append(message)
                    if "id" in message and "method" not in message and not isinstance(message["id"], dict | list):
                        self._responses[message["id"]] = message
                    self._condition.notify_all()
                if "method" in message and "id" in message:   # the server asks: accept
                    self._send({"jsonrpc": "2.0", "id": message["id"], "result": None})
        finally:
            with self._condition:
                self.closed = True
                self._condition.notify_all()

    def _drain_stderr(self) -> None:
        assert self.process.stderr is not None
        for line in self.process.stderr:
            self._stderr_tail.append(line)

    def _send(self, message: dict[str, Any]) -> None:
        body = json.dumps(message, ensure_ascii=self._ensure_ascii).encode("utf-8")
        self.send_raw(b"Content-Length: %d\r\n\r\n" % len(body) + body)

    def send_raw(self, data: bytes) -> None:
        """Exactly these bytes on the server's stdin (a frame of any shape, or a part of one)."""
        assert self.process.stdin is not None
        with self._write:
            self.process.stdin.write(data)
            self.process.stdin.flush()

    def close_stdin(self) -> None:
        assert self.process.stdin is not None
        with self._write:
            self.process.stdin.close()

    # -- requests ----------------------------------------------------------------------------------
    def send_request(self, method: str, params: Any = ABSENT) -> int:
        self._next_id += 1
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": self._next_id, "method": method}
        if params is not ABSENT:
            message["params"] = params
        self._send(message)
        return self._next_id

    def _response(self, request_id: int, timeout: float) -> dict[str, Any] | None:
        """The response to ``request_id``, or None when the server closed its output or time ran out."""
        deadline = time.monotonic() + timeout
        with self._condition:
            while request_id not in self._responses:
                remaining = deadline - time.monotonic()
                if self.closed or remaining <= 0:
                    return None
                self._condition.wait(remaining)
            return self._responses.pop(request_id)

    def wait_response(self, request_id: int, timeout: float = 60) -> dict[str, Any]:
        response = self._response(request_id, timeout)
        if response is None:
            raise AssertionError(f"no response to request {request_id} (server closed: {self.closed})")
        return response

    def request(self, method: str, params: Any = ABSENT, timeout: float = 60) -> dict[str, Any]:
        """The whole response message (a result or an error)."""
        return self.wait_response(self.send_request(method, params), timeout)

    def call(self, method: str, params: Any, timeout: float = 600.0) -> Any:
        """The result of a request; LspError on an error response, a server that exited, or no answer."""
        response = self._response(self.send_request(method, params), timeout)
        if response is None:
            if not self.closed:
                raise LspError(f"{method}: no answer in {timeout} s")
            with_code = ""
            with contextlib.suppress(subprocess.TimeoutExpired):
                with_code = f" ({self.process.wait(5)})"
            raise LspError(f"server exited{with_code}: " + "\n".join(self.stderr().splitlines()[-20:]))
        if "error" in response:
            raise LspError(f"{method}: {response['error']}")
        return response.get("result")

    def notify(self, method: str, params: Any = ABSENT) -> None:
        message: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
        if params is not ABSENT:
            message["params"] = params
        self._send(message)

    def wait_for(self, predicate: Callable[[dict[str, Any]], bool], timeout: float = 60,
                 start: int = 0) -> dict[str, Any]:
        """The first message from index ``start`` on that satisfies ``predicate``."""
        deadline = time.monotonic() + timeout
        with self._condition:
            while True:
                for message in self.received[start:]:
                    if predicate(message):
                        return message
                remaining = deadline - time.monotonic()
                if self.closed or remaining <= 0:
                    raise AssertionError("the expected message never came")
                self._condition.wait(remaining)

    def notifications(self, method: str) -> list[Any]:
        with self._condition:
            return [m.get("params") for m in self.received if m.get("method") == method and "id" not in m]

    # -- session -----------------------------------------------------------------------------------
    def initialize(self, *, options: dict[str, Any] | None = None, folders: list[str] | None = None,
                   capabilities: dict[str, Any] | None = None) -> dict[str, Any]:
        """initialize (with ``capabilities``, default CAPABILITIES) + initialized; the response."""
        params = {
            "processId": None, "rootUri": None,
            "capabilities": CAPABILITIES if capabilities is None else capabilities,
            "initializationOptions": options,
            "workspaceFolders": [{"uri": Path(folder).as_uri(), "name": Path(folder).name} for folder in folders or []],
        }
        response = self.request("initialize", params, timeout=60)
        assert "result" in response, response
        self.notify("initialized", {})
        return response

    def close(self, timeout: float = 30) -> int:
        """shutdown + exit; returns the exit status (the process is killed if it does not exit)."""
        try:
            if not self.closed and self.process.poll() is None:
                self.request("shutdown", None, timeout=timeout)
                self.notify("exit")
            return self.process.wait(timeout)
        except (AssertionError, OSError, subprocess.TimeoutExpired):
            self.process.kill()
            return self.process.wait(timeout)
        finally:
            self._reader.join(5)
            if self._stderr_reader is not None:
                self._stderr_reader.join(5)
            if self._stderr_file is not None:
                self._stderr_file.close()

    def stderr(self) -> str:
        """What the server wrote on stderr so far (its last STDERR_LINES lines without a file)."""
        if self._stderr_file is None:
            return b"".join(self._stderr_tail).decode("utf-8", "replace")
        if not self._stderr_file.closed:
            self._stderr_file.flush()
        assert self.stderr_path is not None
        return self.stderr_path.read_bytes().decode("utf-8", "replace")
