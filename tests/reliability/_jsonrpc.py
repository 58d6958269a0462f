"""A minimal synchronous LSP client over the real server's stdio: sends exactly the JSON given (any
params, or none), records every message the server sends (responses, notifications, its own
requests, which get a null result), and keeps the server's stderr in a file."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, BinaryIO

ABSENT = object()   # a request without a "params" member


class LspProcess:
    def __init__(self, env: dict[str, str], stderr_path: Path, *, extra_args: tuple[str, ...] = ()) -> None:
        self.stderr_path = stderr_path
        self._stderr = open(stderr_path, "wb")  # noqa: SIM115 - closed in close()
        self.process = subprocess.Popen([sys.executable, "-m", "pimem", "serve", "--stdio", *extra_args],
                                        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self._stderr, env=env)
        self.received: list[dict[str, Any]] = []
        self._responses: dict[int, dict[str, Any]] = {}
        self._condition = threading.Condition()
        self._write = threading.Lock()
        self._next_id = 0
        self.closed = False
        self._reader = threading.Thread(target=self._read_loop, daemon=True, name="lsp-reader")
        self._reader.start()

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

    def _send(self, message: dict[str, Any]) -> None:
        body = json.dumps(message).encode("utf-8")
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

    def wait_response(self, request_id: int, timeout: float = 60) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        with self._condition:
            while request_id not in self._responses:
                remaining = deadline - time.monotonic()
                if self.closed or remaining <= 0:
                    raise AssertionError(f"no response to request {request_id} (server closed: {self.closed})")
                self._condition.wait(remaining)
            return self._responses.pop(request_id)

    def request(self, method: str, params: Any = ABSENT, timeout: float = 60) -> dict[str, Any]:
        return self.wait_response(self.send_request(method, params), timeout)

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
    def initialize(self, *, options: dict[str, Any] | None = None, folders: list[str] | None = None) -> dict[str, Any]:
        params = {
            "processId": None, "rootUri": None,
            "capabilities": {"window": {"workDoneProgress": True}, "workspace": {"workspaceFolders": True}},
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
            self._stderr.close()

    def stderr(self) -> str:
        if not self._stderr.closed:
            self._stderr.flush()
        return self.stderr_path.read_bytes().decode("utf-8", "replace")
