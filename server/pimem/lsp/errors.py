"""The JSON-RPC / LSP error codes the server answers with (the single place they are spelled on the
Python side; docs/lsp-extensions.md documents them, client-vscode/src/protocol.ts mirrors those the
client reads), and how a failure of a handler becomes one of them: a one-line message, never a
traceback, never transcript text."""

from __future__ import annotations

import asyncio
import functools
import logging
import sqlite3
from collections.abc import Awaitable, Callable
from typing import Any

from lsprotocol import types
from pygls.exceptions import JsonRpcException, JsonRpcInvalidParams

from pimem.lsp.params import ParamsError
from pimem.migrate import MigrationError
from pimem.store import StoreError, store_failure

log = logging.getLogger("pimem.lsp")

PARSE_ERROR = types.ErrorCodes.ParseError.value                      # -32700
INVALID_REQUEST = types.ErrorCodes.InvalidRequest.value              # -32600
METHOD_NOT_FOUND = types.ErrorCodes.MethodNotFound.value             # -32601
INVALID_PARAMS = types.ErrorCodes.InvalidParams.value                # -32602
INTERNAL_ERROR = types.ErrorCodes.InternalError.value                # -32603
SERVER_NOT_INITIALIZED = types.ErrorCodes.ServerNotInitialized.value  # -32002
REQUEST_CANCELLED = types.LSPErrorCodes.RequestCancelled.value       # -32800
REQUEST_FAILED = types.LSPErrorCodes.RequestFailed.value             # -32803
# Errors that answer a bad or cancelled request: the client's business, not worth a log line.
CLIENT_ERRORS = frozenset({INVALID_REQUEST, METHOD_NOT_FOUND, INVALID_PARAMS, REQUEST_CANCELLED,
                           SERVER_NOT_INITIALIZED})


def failure(method: str, error: Exception, db_path: str | None = None) -> JsonRpcException:
    """The JSON-RPC error that answers ``method`` when its handler raised ``error``."""
    if isinstance(error, ParamsError):
        return JsonRpcInvalidParams(str(error))
    if isinstance(error, StoreError | MigrationError):
        return JsonRpcException(f"{method}: {error}", code=REQUEST_FAILED)
    if isinstance(error, sqlite3.Error):
        return JsonRpcException(f"{method}: {store_failure(error, db_path)}", code=REQUEST_FAILED)
    if isinstance(error, OSError):
        return JsonRpcException(f"{method}: {error.strerror or error}", code=REQUEST_FAILED)
    log.error("%s failed: %s", method, type(error).__name__)
    return JsonRpcException(f"{method}: internal error ({type(error).__name__})", code=REQUEST_FAILED)


def guarded(method: str) -> Callable[[Callable[..., Awaitable[Any]]], Callable[..., Awaitable[Any]]]:
    """Map every failure of a handler to a clean JSON-RPC error; let cancellation through."""

    def decorate(handler: Callable[..., Awaitable[Any]]) -> Callable[..., Awaitable[Any]]:
        @functools.wraps(handler)
        async def wrapper(ls: Any, params: Any) -> Any:
            try:
                return await handler(ls, params)
            except (asyncio.CancelledError, JsonRpcException):
                raise
            except Exception as error:
                raise failure(method, error, ls.db_path) from None

        return wrapper

    return decorate
