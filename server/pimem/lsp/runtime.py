"""How the pimem language server runs on stdio: reading frames, validating JSON-RPC messages, the LSP
lifecycle, clean errors and quiet logs. pygls 2.1.1 keeps what it does well (handlers, typed params,
progress, writing); this module replaces what it gets wrong with broken or hostile input. Upstream
issues (openlawlibrary/pygls) are named where pygls is at fault.

- Frames are read by :mod:`pimem.lsp.transport` on a thread of its own (pygls read stdin on the
  handler thread pool, and one bad frame made it stop answering for good; see that module).
- Every request with a usable id gets exactly one answer: a body that is not JSON gets -32700 with
  id null, a message that is not a JSON-RPC request -32600 (with its id when it has one), params of
  the wrong type -32602 naming the field. pygls raised these inside its read loop and answered
  nothing (its ``structure_message`` also ran on every nested object, through ``json.loads``'
  ``object_hook``, so a params value shaped like a message broke the request) (#326).
- The lifecycle of the LSP specification: a request before ``initialize`` gets -32002
  ServerNotInitialized, a notification then is dropped (``exit`` excepted); a second ``initialize``
  gets -32600; after ``shutdown`` every request gets -32600 (pygls dropped them unanswered, and
  dropped the client's responses too: #605); ``exit`` ends the process with 0 after ``shutdown``, 1
  otherwise (pygls' ``sys.exit`` was swallowed by its own ``start_io``, so it was always 0: #118).
- A handler that raises gets a one-line error: pygls sent the exception message and a traceback to
  the client (``JsonRpcInternalError.of``) and logged both with the request's params (#126, #443).
  A late response to a cancelled server request is ignored (pygls raised InvalidStateError: #621).
- Logs: at the default levels no record carries params, results or message bodies; other libraries'
  records (pygls, asyncio) keep their template, not their arguments or tracebacks.
  ``PIMEM_LOG_LEVEL=DEBUG`` shows everything, pygls' own debug output included.

Over ~400 lines for a reason: each rule above replaces one piece of pygls' read loop, and they
only make sense together (which message gets which answer, in which lifecycle state, logged how);
split, a reader would follow one message through several files.
"""

from __future__ import annotations

import asyncio
import contextvars
import enum
import functools
import io
import json
import logging
import os
import re
import signal
import sys
import threading
import uuid
from collections.abc import Callable, Iterator
from concurrent.futures import Future
from typing import Any, BinaryIO, TypeGuard

import attrs
import cattrs
from cattrs.errors import AttributeValidationNote, IterableValidationNote
from lsprotocol import types
from pygls.exceptions import JsonRpcException, JsonRpcMethodNotFound
from pygls.io_ import StdoutWriter
from pygls.protocol import (
    JsonRPCNotification,
    JsonRPCRequestMessage,
    JsonRPCResponseMessage,
    LanguageServerProtocol,
)

from pimem.jsonl import dumps_bytes
from pimem.lsp.errors import (
    CLIENT_ERRORS,
    INTERNAL_ERROR,
    INVALID_PARAMS,
    INVALID_REQUEST,
    METHOD_NOT_FOUND,
    PARSE_ERROR,
    REQUEST_CANCELLED,
    SERVER_NOT_INITIALIZED,
)
from pimem.lsp.transport import (
    MAX_MESSAGE_BYTES,
    FrameReader,
    FramingError,
    Oversized,
    Parsed,
    Unreadable,
    decode,
    leading_members,
)

log = logging.getLogger("pimem.lsp")

EXIT_AFTER_SHUTDOWN = 0      # `exit` (or the end of stdin) after `shutdown`
EXIT_WITHOUT_SHUTDOWN = 1    # `exit` or the end of stdin without `shutdown` first
EXIT_BROKEN_STREAM = 2       # a frame header that cannot be trusted: the client restarts the server

_QUEUED_MESSAGES = 64        # read ahead of the event loop at most this many messages


class Phase(enum.Enum):
    NEW = "new"              # before `initialize`
    RUNNING = "running"      # after `initialize`
    SHUTDOWN = "shutdown"    # after `shutdown`: only `exit` is accepted


def _is_id(value: Any) -> TypeGuard[str | int]:
    """LSP ids are integers or strings (JSON-RPC's null and fractions are not accepted)."""
    return isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool))


def _name(method: Any) -> str:
    """A method name fit for a message or a log line: printable, at most 80 characters."""
    text = method if isinstance(method, str) else type(method).__name__
    text = text if len(text) <= 80 else text[:77] + "..."
    return repr(text) if not text.isprintable() else text


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(part[:1].upper() + part[1:] for part in rest)


def _problems(error: BaseException, path: str) -> Iterator[tuple[str, BaseException]]:
    """The leaves of a cattrs validation error, each with the JSON path of the value it concerns."""
    if isinstance(error, cattrs.ClassValidationError | cattrs.IterableValidationError):
        for sub in error.exceptions:
            step = ""
            for note in getattr(sub, "__notes__", []):
                if isinstance(note, AttributeValidationNote):
                    step = f".{_camel(note.name)}" if path else _camel(note.name)
                elif isinstance(note, IterableValidationNote):
                    step = f"[{note.index}]"
            yield from _problems(sub, path + step)
    else:
        yield path, error


def describe_params_error(method: str, error: Exception) -> str:
    """``initialize: "params.processId" has the wrong type``: the field, never the value."""
    problems = list(_problems(error, "")) if isinstance(error, cattrs.BaseValidationError) else []
    if not problems:
        return f"{_name(method)}: the params do not have the shape this method takes"
    path, leaf = problems[0]
    what = "is missing" if isinstance(leaf, KeyError) else "has the wrong type"
    more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
    return f'{_name(method)}: "{path or "params"}" {what}{more}'


class PimemProtocol(LanguageServerProtocol):
    """pygls' protocol with pimem's message gate in front of its dispatch (see the module doc)."""

    def __init__(self, server: Any, converter: cattrs.Converter) -> None:
        super().__init__(server, converter)
        self.phase = Phase.NEW
        self._initialized_notified = False
        self._awaiting: set[str | int] = set()   # ids of the requests this server sent
        self._finished = False
        self.on_exit: Callable[[int], None] = lambda code: None   # set by the stdio loop

    # -- input: one decoded frame at a time, on the event loop ---------------------------------------
    def receive(self, item: Parsed | Unreadable | Oversized) -> None:
        if self._finished:   # read before `exit` took effect: the process is ending
            return
        try:
            if isinstance(item, Unreadable):
                log.warning("ignored a message: %s", item.reason)
                self._reply_error(None, PARSE_ERROR, f"Parse error: {item.reason}")
            elif isinstance(item, Oversized):
                self._refuse_oversized(item)
            else:
                self._receive_value(item.value)
        except Exception as error:   # a bug here must cost one message, and never print it
            log.error("could not handle a message: %s", type(error).__name__)

    def _receive_value(self, message: Any) -> None:
        if log.isEnabledFor(logging.DEBUG):   # PIMEM_LOG_LEVEL=DEBUG only: message bodies hold transcript text
            log.debug("received %s", json.dumps(message)[:2000])
        if not isinstance(message, dict):
            shape = "a batch (an array); batches are not supported" if isinstance(message, list) else "not an object"
            self._reply_error(None, INVALID_REQUEST, f"Invalid Request: the message is {shape}")
            return
        if "method" not in message:
            self._receive_response(message)
            return
        method, msg_id, has_id = message["method"], message.get("id"), "id" in message
        reply_to = msg_id if _is_id(msg_id) else None
        if message.get("jsonrpc") != "2.0":
            self._reply_error(reply_to, INVALID_REQUEST, 'Invalid Request: "jsonrpc" must be "2.0"')
        elif not isinstance(method, str):
            self._reply_error(reply_to, INVALID_REQUEST, 'Invalid Request: "method" must be a string')
        elif not has_id:
            self._receive_notification(method, message)
        elif not _is_id(msg_id):
            self._reply_error(None, INVALID_REQUEST, 'Invalid Request: "id" must be an integer or a string')
        else:
            self._receive_request(msg_id, method, message)

    def _receive_request(self, msg_id: str | int, method: str, message: dict[str, Any]) -> None:
        if self._kind(method) == "notification":   # `exit` or `initialized` with an id
            self._reply_error(msg_id, INVALID_REQUEST,
                              f"Invalid Request: {_name(method)} is a notification (sent without an id)")
            return
        if self.phase is Phase.SHUTDOWN:
            self._reply_error(msg_id, INVALID_REQUEST,
                              f"Invalid Request: the server is shutting down; {_name(method)} refused (only exit is "
                              "accepted after shutdown)")
            return
        if self.phase is Phase.NEW and method != types.INITIALIZE:
            self._reply_error(msg_id, SERVER_NOT_INITIALIZED,
                              f"the server is not initialized: {_name(method)} refused (the first request must be "
                              "initialize)")
            return
        if self.phase is Phase.RUNNING and method == types.INITIALIZE:
            self._reply_error(msg_id, INVALID_REQUEST, "Invalid Request: initialize may only be sent once")
            return
        if not self._has_handler(method):   # before the params: their shape does not matter then
            self._reply_error(msg_id, METHOD_NOT_FOUND, f"Method Not Found: {_name(method)}")
            return
        try:
            typed = self._structure(method, message)
        except _BadParams as error:
            self._reply_error(msg_id, INVALID_PARAMS, str(error))
            return
        if method == types.INITIALIZE:
            self.phase = Phase.RUNNING
        elif method == types.SHUTDOWN:
            self.phase = Phase.SHUTDOWN
        contextvars.copy_context().run(self._handle_request, msg_id, method, typed.params)

    def _receive_notification(self, method: str, message: dict[str, Any]) -> None:
        if method == types.EXIT:
            self._finish(EXIT_AFTER_SHUTDOWN if self.phase is Phase.SHUTDOWN else EXIT_WITHOUT_SHUTDOWN)
            return
        if self.phase is not Phase.RUNNING:
            log.debug("dropped the notification %s (%s)", _name(method),
                      "before initialize" if self.phase is Phase.NEW else "after shutdown")
            return
        if method == types.INITIALIZED:
            if self._initialized_notified:   # it would start a second watcher and a second sync
                log.warning("ignored a second initialized notification")
                return
            self._initialized_notified = True
        if method != types.CANCEL_REQUEST and not self._has_handler(method):
            log.debug("ignored the notification %s: no handler", _name(method))
            return
        if self._kind(method) == "request":   # `shutdown` without an id, say: nobody waits for it
            log.warning("ignored %s sent as a notification (it is a request: it needs an id)", _name(method))
            return
        try:
            typed = self._structure(method, message)
        except _BadParams as error:
            log.warning("ignored a notification: %s", error)
            return
        contextvars.copy_context().run(self._handle_notification, method, typed.params)

    def _receive_response(self, message: dict[str, Any]) -> None:
        msg_id = message.get("id")
        if "result" not in message and "error" not in message:
            self._reply_error(msg_id if _is_id(msg_id) else None, INVALID_REQUEST,
                              'Invalid Request: a request needs a "method" (and a response a "result" or an "error")')
            return
        if not _is_id(msg_id) or msg_id not in self._awaiting:   # never answered: JSON-RPC answers no response
            if msg_id is None and isinstance(message.get("error"), dict):
                log.warning("the client could not read a message of the server (JSON-RPC error %s)",
                            message["error"].get("code"))
            else:
                log.warning("ignored a response to no request of this server")
            return
        self._awaiting.discard(msg_id)
        future = self._request_futures.pop(msg_id, None)
        result_type = self._result_types.pop(msg_id, None)
        if future is None or future.done():   # cancelled meanwhile (pygls raised InvalidStateError: #621)
            return
        if message.get("jsonrpc") != "2.0":
            future.set_exception(JsonRpcException('the client\'s response lacks "jsonrpc": "2.0"', INTERNAL_ERROR))
        elif "error" in message:
            try:
                error = self._converter.structure(message["error"], types.ResponseError)
            except Exception:
                error = types.ResponseError(code=INTERNAL_ERROR, message="the client sent a malformed error")
            future.set_exception(JsonRpcException.from_error(error))
        else:
            try:
                response = {"jsonrpc": "2.0", "id": msg_id, "result": message["result"]}
                future.set_result(self._converter.structure(response, result_type or JsonRPCResponseMessage).result)
            except Exception:
                future.set_exception(JsonRpcException("the client's response is malformed", INTERNAL_ERROR))

    def _refuse_oversized(self, item: Oversized) -> None:
        log.warning("ignored a message of %d bytes (the limit is %d)", item.length, MAX_MESSAGE_BYTES)
        members = leading_members(item.prefix)
        msg_id, method = members.get("id"), members.get("method")
        if not _is_id(msg_id):
            return
        if isinstance(method, str):
            self._reply_error(msg_id, INVALID_REQUEST,
                              f"Invalid Request: the message is {item.length} bytes long; the server accepts at "
                              f"most {MAX_MESSAGE_BYTES} bytes per message")
        elif msg_id in self._awaiting and (future := self._request_futures.pop(msg_id, None)) is not None:
            self._awaiting.discard(msg_id)
            if not future.done():
                future.set_exception(JsonRpcException("the client's response is too large", INTERNAL_ERROR))

    def _kind(self, method: str) -> str:
        """"request" or "notification" for a method of the LSP specification, "" for any other."""
        message_type = self.get_message_type(method)
        if message_type is None or not attrs.has(message_type):
            return ""
        return "request" if "id" in attrs.fields_dict(message_type) else "notification"

    def _has_handler(self, method: str) -> bool:
        return method in self.fm.builtin_features or method in self.fm.features

    def _structure(self, method: str, message: dict[str, Any]) -> Any:
        message_type = self.get_message_type(method)
        if message_type is None:   # a custom method: params stay plain JSON (see server._converter)
            message_type = JsonRPCRequestMessage if "id" in message else JsonRPCNotification
        try:
            return self._converter.structure(message, message_type)
        except Exception as error:
            raise _BadParams(describe_params_error(method, error)) from None

    # -- dispatch (pygls' own, without its logging of params and its tracebacks) -------------------------
    def _handle_request(self, msg_id: Any, method_name: str, params: Any) -> None:
        try:
            handler = self._get_handler(method_name)
        except JsonRpcMethodNotFound:
            self._reply_error(msg_id, METHOD_NOT_FOUND, f"Method Not Found: {_name(method_name)}")
            return
        self._ctx_msg_id.set(msg_id)
        try:
            self._execute_handler(msg_id, handler, functools.partial(self._send_handler_result, msg_id=msg_id,
                                                                     method=method_name), args=(params,))
        except Exception as error:
            self._send_handler_error(msg_id, method_name, error)

    def _handle_notification(self, method_name: str, params: Any) -> None:
        if method_name == types.CANCEL_REQUEST:
            if _is_id(getattr(params, "id", None)):
                self._handle_cancel_notification(params.id)
            return
        try:
            handler = self._get_handler(method_name)
        except JsonRpcMethodNotFound:
            log.debug("ignored the notification %s: no handler", _name(method_name))
            return
        try:
            self._execute_handler(str(uuid.uuid4()), handler, self._check_handler_result, args=(params,))
        except Exception as error:
            log.error("the notification %s failed: %s", _name(method_name), type(error).__name__)

    def _handle_cancel_notification(self, msg_id: Any) -> None:
        if msg_id in self._awaiting:   # the client cannot cancel the server's own requests
            return
        future = self._request_futures.pop(msg_id, None)
        if future is not None:
            future.cancel()

    def _check_handler_result(self, future: Any) -> None:
        if not future.cancelled() and (error := future.exception()) is not None:
            log.error("a notification handler failed: %s", type(error).__name__)

    def _send_handler_result(self, future: Any, *, msg_id: Any, method: str = "") -> None:
        self._request_futures.pop(msg_id, None)
        if future.cancelled():
            self._reply_error(msg_id, REQUEST_CANCELLED, f"Request with id {json.dumps(msg_id)} is canceled")
            return
        error = future.exception()
        if error is None:
            self._send_response(msg_id, result=future.result())
        else:
            self._send_handler_error(msg_id, method, error)

    def _send_handler_error(self, msg_id: Any, method: str, error: BaseException) -> None:
        if isinstance(error, JsonRpcException):
            if error.code not in CLIENT_ERRORS:
                log.warning("%s failed: JSON-RPC error %s", _name(method), error.code)
            self._reply_error(msg_id, error.code, error.message, error.data)
            return
        # The message of an arbitrary exception may quote the params: the type only, to both sides.
        log.error("%s failed: %s", _name(method), type(error).__name__)
        self._reply_error(msg_id, INTERNAL_ERROR, f"{_name(method)}: internal error ({type(error).__name__})")

    # -- output ----------------------------------------------------------------------------------
    def _reply_error(self, msg_id: Any, code: int, message: str, data: Any = None) -> None:
        error: dict[str, Any] = {"code": code, "message": message}
        if data is not None:
            error["data"] = data
        # A plain dict: lsprotocol's ResponseErrorMessage drops an id of None, JSON-RPC wants "id": null.
        self._send_data({"jsonrpc": "2.0", "id": msg_id, "error": error})

    def _send_response(self, msg_id: Any, result: Any | None = None,
                       error: types.ResponseError | None = None) -> None:
        response: Any
        if error is not None:
            response = types.ResponseErrorMessage(id=msg_id, error=error)
        else:
            response_type = self._result_types.pop(msg_id, JsonRPCResponseMessage)
            if response_type is JsonRPCResponseMessage and type(result) is dict:
                # A pimem method's answer is JSON already (pimem.wire): the converter would copy it, value
                # by value, before it is encoded (1 ms for a page of recall); this is the JSON it gives.
                response = {"id": msg_id, "jsonrpc": "2.0", "result": result}
            else:
                response = response_type(id=msg_id, result=result, jsonrpc="2.0")
        if not self._send_data(response):   # the request must still get its one answer
            self._reply_error(msg_id, INTERNAL_ERROR, "internal error (the result could not be encoded)")

    def _send_data(self, data: Any) -> bool:
        """Writes one message; False if it cannot be encoded as JSON."""
        if not data or self.writer is None:
            return True
        try:
            body = dumps_bytes(data, self._serialize_message)
        except Exception as error:
            log.error("could not encode a message: %s", type(error).__name__)
            return False
        if log.isEnabledFor(logging.DEBUG):
            log.debug("sending %s", body[:2000])
        header = f"Content-Length: {len(body)}\r\nContent-Type: {self.CONTENT_TYPE}; charset=utf-8\r\n\r\n"
        try:
            self.writer.write(header.encode("ascii") + body)   # bytes: pygls counted characters (#604)
        except (BrokenPipeError, ConnectionError, ValueError):   # ValueError: stdout already closed
            log.info("the client is gone: stopping")
            self._finish(EXIT_AFTER_SHUTDOWN if self.phase is Phase.SHUTDOWN else EXIT_WITHOUT_SHUTDOWN)
        return True

    def send_request(self, method: str, params: Any | None = None, callback: Callable[[Any], None] | None = None,
                     msg_id: Any = None) -> Future[Any]:
        msg_id = str(uuid.uuid4()) if msg_id is None else msg_id
        self._awaiting.add(msg_id)   # only these ids are taken as responses
        future = super().send_request(method, params, callback, msg_id)
        future.add_done_callback(lambda _: self._awaiting.discard(msg_id))
        return future

    # -- the end of the stream -------------------------------------------------------------------------
    def _finish(self, code: int) -> None:
        self._finished = True
        self.on_exit(code)

    def stream_broken(self, reason: str) -> None:
        log.error("stopping: %s, so the following messages cannot be found (exit code %d; the client may "
                  "restart the server)", reason, EXIT_BROKEN_STREAM)
        self._finish(EXIT_BROKEN_STREAM)

    def connection_lost(self) -> None:
        log.info("stdin closed")
        self._finish(EXIT_AFTER_SHUTDOWN if self.phase is Phase.SHUTDOWN else EXIT_WITHOUT_SHUTDOWN)


class _BadParams(Exception):
    """Params that do not structure into the method's type; the message names the field."""


# -- running on stdio --------------------------------------------------------------------------------
def _reader_for(stream: BinaryIO) -> Callable[[int], bytes]:
    """``os.read`` on the descriptor: no Python buffer and no lock, so a read blocked in a daemon
    thread cannot hold up the interpreter's exit (a buffered stdin's lock would)."""
    try:
        return functools.partial(os.read, stream.fileno())
    except (AttributeError, OSError, io.UnsupportedOperation):
        return getattr(stream, "read1", stream.read)


def _read_messages(stream: BinaryIO, loop: asyncio.AbstractEventLoop, protocol: PimemProtocol) -> None:
    """The reader thread: frames are read and decoded here, handled on the event loop, in order."""
    frames = FrameReader(_reader_for(stream))
    slots = threading.Semaphore(_QUEUED_MESSAGES)

    def deliver(item: Parsed | Unreadable | Oversized) -> None:
        try:
            protocol.receive(item)
        finally:
            slots.release()

    try:
        while True:
            try:
                frame = frames.next()
            except FramingError as error:
                loop.call_soon_threadsafe(protocol.stream_broken, str(error))
                return
            except OSError as error:
                log.warning("cannot read stdin: %s", type(error).__name__)
                frame = None
            if frame is None:
                loop.call_soon_threadsafe(protocol.connection_lost)
                return
            item = frame if isinstance(frame, Oversized) else decode(frame.data)
            slots.acquire()
            loop.call_soon_threadsafe(deliver, item)
    except RuntimeError:   # the event loop is closed: the server is exiting
        return


def _loop_exception(loop: asyncio.AbstractEventLoop, context: dict[str, Any]) -> None:
    """asyncio's default handler prints the failing task's repr, exception message included."""
    if log.isEnabledFor(logging.DEBUG):
        loop.default_exception_handler(context)
        return
    error = context.get("exception")
    log.warning("%s (%s)", context.get("message", "asyncio error"), type(error).__name__ if error else "no exception")


async def _serve(protocol: PimemProtocol, stdin: BinaryIO) -> int:
    loop = asyncio.get_running_loop()
    loop.set_exception_handler(_loop_exception)
    finished: asyncio.Future[int] = loop.create_future()

    def finish(code: int) -> None:
        if not finished.done():
            finished.set_result(code)

    protocol.on_exit = finish
    _end_on_interrupt(loop, finish)
    threading.Thread(target=_read_messages, args=(stdin, loop, protocol), name="pimem-stdin", daemon=True).start()
    return await finished


def _end_on_interrupt(loop: asyncio.AbstractEventLoop, finish: Callable[[int], None]) -> None:
    """Ctrl-C (SIGINT) ends the server as an end without shutdown. The kernel may deliver it to any thread
    (the stdin reader's, a read's): Python then runs its handler only when the main thread next runs
    Python code, and the idle event loop waits on its selector, so asyncio.run's own handler could wait
    forever. The loop's handler also wakes the selector from whichever thread the signal reached."""
    if threading.current_thread() is not threading.main_thread():
        return
    try:
        loop.add_signal_handler(signal.SIGINT, finish, EXIT_WITHOUT_SHUTDOWN)
    except (NotImplementedError, RuntimeError, ValueError):   # Windows: asyncio.run's KeyboardInterrupt
        return


def run_stdio(server: Any, stdin: BinaryIO | None = None, stdout: BinaryIO | None = None) -> int:
    """Serve until ``exit``, the end of stdin or a broken stream; returns the exit code."""
    protocol: PimemProtocol = server.protocol
    protocol.set_writer(StdoutWriter(stdout or sys.stdout.buffer))
    try:
        return asyncio.run(_serve(protocol, stdin or sys.stdin.buffer))
    except KeyboardInterrupt:   # Ctrl-C in a terminal: an end without shutdown, not a traceback
        return EXIT_WITHOUT_SHUTDOWN
    finally:
        server.shutdown()


# -- logging -----------------------------------------------------------------------------------------
_PLACEHOLDER = re.compile(r"%(?:\(\w+\))?[#0 +-]*(?:\*|\d+)?(?:\.(?:\*|\d+))?[diouxXeEfFgGcrsa%]")


class _ForeignRecords(logging.Filter):
    """Records of other libraries' loggers (pygls, asyncio, concurrent.futures, watchdog) keep their
    template and their exception's type, not their arguments or traceback: pygls puts message
    bodies and params in its arguments ("Failed to handle request %s %s %s", 'Unknown message "%s"',
    "Sending data: %s"), and an exception's message can quote params."""

    def filter(self, record: logging.LogRecord) -> bool:
        if record.name == "pimem" or record.name.startswith("pimem."):
            return True
        if record.args:
            record.msg = _PLACEHOLDER.sub(lambda m: "%" if m.group(0) == "%%" else "<…>", str(record.msg))
            record.args = None
        if record.exc_info:
            error = record.exc_info[1]
            record.msg = f"{record.msg} ({type(error).__name__ if error else 'error'})"
            record.exc_info, record.exc_text = None, None
        record.stack_info = None
        return True


def configure_logging() -> None:
    """stderr, at ``PIMEM_LOG_LEVEL`` (default WARNING). Below DEBUG, pygls' own logger stays at
    WARNING (it logs every message body at INFO) and foreign records are reduced to their template."""
    name = os.environ.get("PIMEM_LOG_LEVEL", "WARNING").upper()
    level = getattr(logging, name, logging.WARNING) if name in logging.getLevelNamesMapping() else logging.WARNING
    logging.basicConfig(level=level, stream=sys.stderr, format="pimem %(levelname)s %(name)s: %(message)s", force=True)
    debug = level <= logging.DEBUG
    logging.getLogger("pygls").setLevel(logging.DEBUG if debug else logging.WARNING)
    if debug:
        return
    for handler in logging.getLogger().handlers:
        handler.addFilter(_ForeignRecords())

    def thread_failed(args: threading.ExceptHookArgs) -> None:   # the default prints the message and traceback
        log.error("thread %s failed: %s", args.thread.name if args.thread else "?", args.exc_type.__name__)

    threading.excepthook = thread_failed
