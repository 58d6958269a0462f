"""A minimal stdio JSON-RPC (LSP) client for timing ``pimem serve`` requests from outside."""

from __future__ import annotations

import json
import subprocess
import threading
import time
from collections.abc import Sequence
from typing import Any


class LspError(Exception):
    pass


class LspClient:
    """Starts the server, speaks Content-Length framed JSON-RPC on its stdin/stdout. Requests the server
    sends to the client (registerCapability, workDoneProgress/create…) are answered with ``null``."""

    def __init__(self, command: Sequence[str], env: dict[str, str] | None = None, cwd: str | None = None) -> None:
        self.process = subprocess.Popen(list(command), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                        stderr=subprocess.PIPE, env=env, cwd=cwd)
        self._next_id = 0
        self._lock = threading.Lock()
        self._responses: dict[int, dict[str, Any]] = {}
        self._arrived = threading.Condition()
        self.notifications: list[dict[str, Any]] = []
        self.stderr: list[bytes] = []
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()
        self._err_reader = threading.Thread(target=self._drain_stderr, daemon=True)
        self._err_reader.start()

    @property
    def pid(self) -> int:
        return self.process.pid

    # -- wire ------------------------------------------------------------------------------------
    def _send(self, message: dict[str, Any]) -> None:
        body = json.dumps(message, ensure_ascii=False).encode()
        stdin = self.process.stdin
        assert stdin is not None
        with self._lock:
            stdin.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
            stdin.flush()

    def _read(self) -> None:
        stream = self.process.stdout
        assert stream is not None
        while True:
            length = None
            while True:
                line = stream.readline()
                if not line:
                    with self._arrived:
                        self._arrived.notify_all()
                    return
                line = line.strip()
                if not line:
                    break
                name, _, value = line.partition(b":")
                if name.lower() == b"content-length":
                    length = int(value)
            if length is None:
                continue
            message = json.loads(stream.read(length))
            if "id" in message and "method" in message:
                self._send({"jsonrpc": "2.0", "id": message["id"], "result": None})
            elif "id" in message:
                with self._arrived:
                    self._responses[message["id"]] = message
                    self._arrived.notify_all()
            else:
                self.notifications.append(message)

    def _drain_stderr(self) -> None:
        stream = self.process.stderr
        assert stream is not None
        for line in stream:
            self.stderr.append(line)
            del self.stderr[:-200]

    # -- API -------------------------------------------------------------------------------------
    def request(self, method: str, params: Any, timeout: float = 600.0) -> Any:
        """Send a request and wait for its result (raises LspError on an error response)."""
        self._next_id += 1
        request_id = self._next_id
        self._send({"jsonrpc": "2.0", "id": request_id, "method": method, "params": params})
        deadline = time.monotonic() + timeout
        with self._arrived:
            while request_id not in self._responses:
                if self.process.poll() is not None:
                    raise LspError(f"server exited ({self.process.returncode}): "
                                   + b"".join(self.stderr[-20:]).decode(errors="replace"))
                left = deadline - time.monotonic()
                if left <= 0:
                    raise LspError(f"{method}: no answer in {timeout} s")
                self._arrived.wait(min(left, 1.0))
            response = self._responses.pop(request_id)
        if "error" in response:
            raise LspError(f"{method}: {response['error']}")
        return response.get("result")

    def notify(self, method: str, params: Any) -> None:
        self._send({"jsonrpc": "2.0", "method": method, "params": params})

    def initialize(self, options: dict[str, Any], root: str | None = None) -> Any:
        result = self.request("initialize", {
            "processId": None, "rootUri": None, "capabilities": {},
            "initializationOptions": options, "workspaceFolders": None,
        })
        self.notify("initialized", {})
        return result

    def close(self) -> None:
        try:
            self.request("shutdown", None, timeout=30)
            self.notify("exit", None)
            self.process.wait(timeout=30)
        except (LspError, OSError, subprocess.TimeoutExpired):
            self.process.kill()
            self.process.wait()
