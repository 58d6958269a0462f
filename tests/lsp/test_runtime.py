"""pimem.lsp.runtime in process: PimemProtocol fed decoded messages, its output captured. The cases
here need no event loop (synchronous handlers); the wire end to end is tests/reliability/test_lsp_wire.py."""

from __future__ import annotations

import json
import logging
from typing import Any

import pytest
from lsprotocol import types
from pygls.exceptions import JsonRpcMethodNotFound

from pimem.jsonl import dumps_bytes
from pimem.lsp.main import create_server
from pimem.lsp.runtime import PimemProtocol
from pimem.lsp.server import PimemServer
from pimem.lsp.transport import Parsed

MARKER = "pimem-marker-7f3a9c"
PROGRESS = types.WorkDoneProgressCreateParams(token="t")


class Capture:
    """A writer that keeps each message the server writes, decoded."""

    def __init__(self) -> None:
        self.messages: list[dict[str, Any]] = []

    def write(self, data: bytes) -> None:
        header, _, body = data.partition(b"\r\n\r\n")
        assert int(header.split(b"\r\n")[0].split(b":")[1]) == len(body)   # bytes, not characters
        self.messages.append(json.loads(body))

    def close(self) -> None:
        pass


@pytest.fixture
def server(tmp_path: Any) -> PimemServer:
    server = create_server()

    @server.feature("test/boom")
    def boom(ls: PimemServer, params: Any) -> None:
        raise ValueError(f"cannot use {MARKER}")

    @server.feature("test/unencodable")
    def unencodable(ls: PimemServer, params: Any) -> Any:
        return {"value": {1, 2}}

    server.protocol.set_writer(Capture())
    receive(server, {"jsonrpc": "2.0", "id": 0, "method": "initialize",
                     "params": {"capabilities": {}, "initializationOptions": {"autoSync": False,
                                                                              "dbPath": str(tmp_path / "m.db")}}})
    assert "result" in written(server)[-1]
    return server


def receive(server: PimemServer, message: Any) -> None:
    protocol: PimemProtocol = server.protocol  # type: ignore[assignment]
    protocol.receive(Parsed(message))


def written(server: PimemServer) -> list[dict[str, Any]]:
    return server.protocol.writer.messages  # type: ignore[union-attr]


def test_a_handler_exception_is_answered_with_its_type_only(server: PimemServer,
                                                            caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING):
        receive(server, {"jsonrpc": "2.0", "id": 1, "method": "test/boom", "params": {"text": MARKER}})
    assert written(server)[-1] == {"jsonrpc": "2.0", "id": 1, "error": {
        "code": -32603, "message": "test/boom: internal error (ValueError)"}}
    assert MARKER not in caplog.text and "Traceback" not in caplog.text
    assert "test/boom failed: ValueError" in caplog.text


def test_a_result_that_cannot_be_encoded_still_gets_its_one_answer(server: PimemServer) -> None:
    receive(server, {"jsonrpc": "2.0", "id": 2, "method": "test/unencodable"})
    assert written(server)[-1] == {"jsonrpc": "2.0", "id": 2, "error": {
        "code": -32603, "message": "internal error (the result could not be encoded)"}}


@pytest.mark.parametrize(("params", "message"), [
    ({"capabilities": {}, "processId": "one"}, 'initialize: "params.processId" has the wrong type'),
    ({}, 'initialize: "params.capabilities" is missing'),
    ({"capabilities": {}, "workspaceFolders": [{"uri": "file:///a", "name": "a"}, {"uri": "file:///b"}]},
     'initialize: "params.workspaceFolders[1].name" is missing'),
    ({"capabilities": {}, "processId": MARKER, "workspaceFolders": [{"uri": "file:///b"}]},
     'initialize: "params.processId" has the wrong type (and 1 more)'),
    (MARKER, 'initialize: "params.capabilities" has the wrong type'),
])
def test_typed_params_errors_name_the_field_never_the_value(params: Any, message: str) -> None:
    server = create_server()
    server.protocol.set_writer(Capture())
    receive(server, {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": params})
    assert written(server)[-1] == {"jsonrpc": "2.0", "id": 1, "error": {"code": -32602, "message": message}}


def test_a_late_response_to_a_cancelled_server_request_is_ignored(server: PimemServer,
                                                                 caplog: pytest.LogCaptureFixture) -> None:
    """pygls#621: the response to a request whose future was cancelled raised InvalidStateError."""
    future = server.protocol.send_request("window/workDoneProgress/create", PROGRESS)
    sent = written(server)[-1]
    assert sent["method"] == "window/workDoneProgress/create"
    future.cancel()
    with caplog.at_level(logging.WARNING):
        receive(server, {"jsonrpc": "2.0", "id": sent["id"], "result": None})
    assert "ERROR" not in caplog.text and "InvalidStateError" not in caplog.text
    assert written(server)[-1] == sent   # nothing answered to a response


def test_a_response_completes_the_servers_request(server: PimemServer) -> None:
    future = server.protocol.send_request("window/workDoneProgress/create", PROGRESS)
    receive(server, {"jsonrpc": "2.0", "id": written(server)[-1]["id"], "result": None})
    assert future.result(timeout=5) is None


def test_the_client_cannot_cancel_the_servers_own_requests(server: PimemServer) -> None:
    future = server.protocol.send_request("window/workDoneProgress/create", PROGRESS)
    receive(server, {"jsonrpc": "2.0", "method": "$/cancelRequest", "params": {"id": written(server)[-1]["id"]}})
    receive(server, {"jsonrpc": "2.0", "method": "$/cancelRequest", "params": {"id": {"not": "an id"}}})
    assert not future.done()


def test_an_error_response_fails_the_servers_request(server: PimemServer) -> None:
    future = server.protocol.send_request("client/registerCapability", types.RegistrationParams(registrations=[]))
    receive(server, {"jsonrpc": "2.0", "id": written(server)[-1]["id"],
                     "error": {"code": -32601, "message": "no"}})
    with pytest.raises(JsonRpcMethodNotFound, match="no"):
        future.result(timeout=5)


def test_a_json_answer_is_written_as_the_converter_would_write_it(server: PimemServer) -> None:
    # A pimem method's answer (a dict of JSON values: pimem.wire) skips the converter's copy of every value;
    # the bytes written are the same, whatever it holds (an lsprotocol object inside still goes through it).
    from pygls.protocol import JsonRPCResponseMessage

    answer = {"results": [{"userText": "naïve \u2028 ✓ \"q\"", "ts": 1_700_000_000_000, "toolNames": ("a", "b"),
                           "line": None, "truncated": False, "score": 0.1 + 0.2}],
              "nested": {"position": types.Position(line=1, character=2)}, "empty": {}, "list": []}
    bodies: list[bytes] = []

    class Raw(Capture):
        def write(self, data: bytes) -> None:
            bodies.append(data.partition(b"\r\n\r\n")[2])
            super().write(data)

    @server.feature("test/answer")
    def answered(ls: PimemServer, params: Any) -> Any:
        return answer

    server.protocol.set_writer(Raw())
    receive(server, {"jsonrpc": "2.0", "id": 7, "method": "test/answer"})
    protocol: PimemProtocol = server.protocol  # type: ignore[assignment]
    converted = protocol._converter.unstructure(JsonRPCResponseMessage(id=7, result=answer, jsonrpc="2.0"))
    assert bodies == [dumps_bytes(converted, protocol._serialize_message)]
    assert json.loads(bodies[0]) == json.loads(json.dumps(converted))
    assert written(server)[-1]["result"]["nested"] == {"position": {"line": 1, "character": 2}}


@pytest.mark.parametrize("value", [
    "lone \ud800 surrogate",   # orjson refuses these: json.dumps writes them
    2 ** 70,
    {1: "a key not a string"},
    "naïve \u2028 ✓ 😀 \"q\" \x00",
    [0.1 + 0.2, -0.0, 1e300, None, True, ()],
])
def test_every_json_answer_is_written_with_its_value(server: PimemServer, value: Any) -> None:
    # The fast encoder (orjson, when installed) writes the same JSON value as json.dumps, and what it refuses
    # is still written (by json.dumps) rather than answered with an internal error.
    @server.feature("test/value")
    def answered(ls: PimemServer, params: Any) -> Any:
        return {"value": value}

    receive(server, {"jsonrpc": "2.0", "id": 8, "method": "test/value"})
    assert written(server)[-1] == {"jsonrpc": "2.0", "id": 8, "result": json.loads(json.dumps({"value": value}))}
