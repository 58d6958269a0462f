"""The editor's views of the past (issue 15): ``pimem/sessions``, ``pimem/session``,
``pimem/fileHistory`` — their params decoded and validated (InvalidParams naming the field) and their
handlers, kept together so that they move as one piece. No logic: each handler decodes, calls one
service on a reader thread (pimem.sessions, pimem.filehistory) and sends the service's dict.
"""

from __future__ import annotations

import json
import os
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar

from pygls.lsp.server import LanguageServer

from pimem import filehistory, sessions, wire
from pimem.lsp import methods
from pimem.lsp.params import ParamsError, _object, _unicode, uri_to_path
from pimem.models import SOURCES, Source, is_source
from pimem.paths import normalize_folder
from pimem.recall import MAX_PATH_CHARS, MAX_TURN_ID_CHARS

MAX_FOLDERS = 64
T = TypeVar("T")


class _Server(Protocol):
    def connection(self) -> Any: ...
    async def read(self, function: Callable[..., T], *args: Any) -> T: ...


Guard = Callable[[str], Callable[[Callable[..., Awaitable[Any]]], Callable[..., Awaitable[Any]]]]


def _int(method: str, params: dict[str, Any], name: str, default: int, low: int, high: int) -> int:
    value = params.get(name)
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise ParamsError(method, name, f'"{name}" must be an integer between {low} and {high}')
    return value


def _string(method: str, params: dict[str, Any], name: str, limit: int, *, required: bool) -> str | None:
    value = params.get(name)
    if value is None and not required:
        return None
    if not isinstance(value, str) or not value.strip():
        raise ParamsError(method, name, f'"{name}" must be a non-empty string')
    if len(value) > limit:
        raise ParamsError(method, name, f'"{name}" is longer than {limit} characters ({len(value)})')
    _unicode(method, name, value)
    return value


def _path(method: str, name: str, value: str) -> str:
    """A path or file:// URI as an absolute path."""
    if value.startswith("file:"):
        decoded = uri_to_path(value)
        if decoded is None:
            raise ParamsError(method, name, f'"{name}" must be an absolute path or a file:// URI')
        value = decoded
    if not os.path.isabs(value) or "\0" in value:
        raise ParamsError(method, name, f'"{name}" must be an absolute path or a file:// URI')
    return value


@dataclass(frozen=True)
class SessionsRequest:
    folders: list[str] | None
    sources: list[Source] | None
    limit: int
    offset: int


def sessions_params(raw: Any) -> SessionsRequest:
    method = methods.SESSIONS
    params = _object(method, raw)
    folders = params.get("folders")
    decoded: list[str] | None = None
    if folders is not None:
        if not isinstance(folders, list) or len(folders) > MAX_FOLDERS:
            raise ParamsError(method, "folders", f'"folders" must be a list of at most {MAX_FOLDERS} paths or URIs')
        decoded = []
        for folder in folders:
            if not isinstance(folder, str) or not folder.strip() or len(folder) > 3 * MAX_PATH_CHARS:
                raise ParamsError(method, "folders", f'"folders" must hold non-empty paths of at most '
                                                     f'{MAX_PATH_CHARS} characters')
            _unicode(method, "folders", folder)
            path = _path(method, "folders", folder)
            if len(path) > MAX_PATH_CHARS:
                raise ParamsError(method, "folders", f'"folders" holds a path longer than {MAX_PATH_CHARS} characters')
            decoded.append(normalize_folder(path))
    sources = params.get("sources")
    if sources is not None and (not isinstance(sources, list) or not all(is_source(item) for item in sources)):
        raise ParamsError(method, "sources", f'"sources" must be a list of {", ".join(map(json.dumps, SOURCES))}')
    return SessionsRequest(decoded, list(sources) if sources else None,
                           _int(method, params, "limit", sessions.DEFAULT_SESSIONS, 1, sessions.MAX_SESSIONS),
                           _int(method, params, "offset", 0, 0, 2**31 - 1))


@dataclass(frozen=True)
class SessionRequest:
    session_id: str
    turn_id: str | None
    before: int
    after: int


def session_params(raw: Any) -> SessionRequest:
    method = methods.SESSION
    params = _object(method, raw)
    session_id = _string(method, params, "sessionId", MAX_TURN_ID_CHARS, required=True)
    assert session_id is not None
    limit = sessions.MAX_VIEW_CONTEXT
    return SessionRequest(session_id, _string(method, params, "turnId", MAX_TURN_ID_CHARS, required=False),
                          _int(method, params, "before", sessions.DEFAULT_VIEW_CONTEXT, 0, limit),
                          _int(method, params, "after", sessions.DEFAULT_VIEW_CONTEXT, 0, limit))


@dataclass(frozen=True)
class FileHistoryRequest:
    path: str
    limit: int


def file_history_params(raw: Any) -> FileHistoryRequest:
    method = methods.FILE_HISTORY
    params = _object(method, raw)
    value = _string(method, params, "path", 3 * MAX_PATH_CHARS, required=True)
    assert value is not None
    path = _path(method, "path", value)
    if len(path) > MAX_PATH_CHARS:
        raise ParamsError(method, "path", f'"path" is longer than {MAX_PATH_CHARS} characters ({len(path)})')
    return FileHistoryRequest(filehistory.normalize_file_path(path),
                              _int(method, params, "limit", filehistory.DEFAULT_SESSIONS, 1, filehistory.MAX_SESSIONS))


def register(server: LanguageServer, guarded: Guard) -> None:
    """Register the three requests on the pygls server (``guarded`` maps failures to JSON-RPC errors)."""

    @server.feature(methods.SESSIONS)
    @guarded(methods.SESSIONS)
    async def on_sessions(ls: _Server, params: Any) -> dict[str, object]:
        request = sessions_params(params)
        page = await ls.read(lambda: sessions.list_sessions(ls.connection(), request.folders, request.sources,
                                                            request.limit, request.offset))
        return wire.sessions_page(page)

    @server.feature(methods.SESSION)
    @guarded(methods.SESSION)
    async def on_session(ls: _Server, params: Any) -> dict[str, object]:
        request = session_params(params)

        def run() -> dict[str, object]:
            try:
                window = sessions.read_window(ls.connection(), request.session_id, request.turn_id, request.before,
                                              request.after, max_context=sessions.MAX_VIEW_CONTEXT, files=True)
            except sessions.SessionError as error:
                raise ParamsError(methods.SESSION, error.field, f'"{error.field}": {error}') from None
            return wire.session_window(window)

        return await ls.read(run)

    @server.feature(methods.FILE_HISTORY)
    @guarded(methods.FILE_HISTORY)
    async def on_file_history(ls: _Server, params: Any) -> dict[str, object]:
        request = file_history_params(params)
        history = await ls.read(lambda: filehistory.file_history(ls.connection(), request.path, request.limit))
        return wire.file_history(history)
