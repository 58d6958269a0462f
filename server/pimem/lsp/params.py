"""Decoding and validation of ``pimem/*`` params and ``initializationOptions``.

Plain JSON in, typed values out; every error names the offending field. No pygls here, so it is
unit-testable on its own; the handlers turn :class:`ParamsError` into JSON-RPC InvalidParams.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import unquote, urlparse
from urllib.request import url2pathname

from pimem.agent_tools import RECALL_MEMORY, ToolCall, ToolInputError, decode_call
from pimem.lsp import methods
from pimem.models import SOURCES, Source, is_source
from pimem.recall import MAX_ENTITIES, MAX_PATH_CHARS, RecallError, RecallQuery, check_turn_id, make_query
from pimem.recall.freetext import Candidate, parse_text
from pimem.share.scope import check_scope


class ParamsError(ValueError):
    def __init__(self, method: str, field_name: str, message: str) -> None:
        super().__init__(f"{method}: {message}")
        self.field = field_name


def _object(method: str, raw: Any) -> dict[str, Any]:
    if raw is None:
        return {}
    if not isinstance(raw, dict):
        raise ParamsError(method, "params", "params must be an object")
    return raw


def _optional_bool(method: str, params: dict[str, Any], name: str, default: bool) -> bool:
    value = params.get(name, default)
    if value is None:
        return default
    if not isinstance(value, bool):
        raise ParamsError(method, name, f'"{name}" must be a boolean')
    return value


def _unicode(method: str, name: str, value: Any) -> None:
    """A string (or each string of a list) must be valid Unicode: JSON can escape a lone surrogate,
    but SQLite and the file system cannot store one."""
    for item in value if isinstance(value, list) else [value]:
        if isinstance(item, str):
            try:
                item.encode("utf-8")
            except UnicodeEncodeError:
                raise ParamsError(method, name, f'"{name}" contains a lone surrogate (not valid Unicode)') from None


def uri_to_path(uri: str) -> str | None:
    """The filesystem path of a ``file://`` URI, or None for any other scheme."""
    parsed = urlparse(uri)
    if parsed.scheme != "file":
        return None
    path = url2pathname(unquote(parsed.path))
    if parsed.netloc and parsed.netloc != "localhost":
        path = f"//{parsed.netloc}{path}"  # UNC
    return path


@dataclass(frozen=True)
class RecallRequest:
    query: RecallQuery
    text: list[Candidate] | None = None   # free text: the candidate terms (chosen against the store later)
    scope: str = "local"                  # pimem.share.scope.SCOPES


def recall_params(raw: Any) -> RecallRequest:
    method = methods.RECALL
    params = _object(method, raw)
    has_entities, has_text = params.get("entities") is not None, params.get("text") is not None
    if has_entities == has_text:
        raise ParamsError(method, "entities", 'give exactly one of "entities" (a list of words) and "text"')
    cwd = params.get("cwd")
    if isinstance(cwd, str) and cwd.startswith("file:") and len(cwd) <= 3 * MAX_PATH_CHARS + len("file://"):
        cwd = uri_to_path(cwd)  # (a longer URI stays as it is, and is refused as too long)
    found: list[Candidate] | None = None
    try:  # the service's checks first: they refuse an oversized value without reading it
        if has_text:
            found = parse_text(params["text"])
            # The candidates stand in for the entities while the other fields are checked; the terms
            # themselves are chosen against the store when the request runs.
            query = make_query([candidate.term for candidate in found[:MAX_ENTITIES]], params.get("limit"),
                               params.get("sources"), cwd, params.get("offset"), params.get("withTotal"))
        else:
            query = make_query(params["entities"], params.get("limit"), params.get("sources"), cwd,
                               params.get("offset"), params.get("withTotal"))
        scope = check_scope(params.get("scope"))
    except RecallError as error:
        raise ParamsError(method, error.field, f'"{error.field}": {error}') from None
    for name in ("entities", "text", "cwd"):
        _unicode(method, name, params.get(name))
    return RecallRequest(query, found, scope)


def turn_params(raw: Any) -> str:
    """The ``turnId`` of a ``pimem/turn`` request."""
    method = methods.TURN
    params = _object(method, raw)
    try:
        turn_id = check_turn_id(params.get("turnId"))
    except RecallError as error:
        raise ParamsError(method, error.field, f'"{error.field}": {error}') from None
    _unicode(method, "turnId", turn_id)
    return turn_id


def sync_params(raw: Any, method: str = methods.SYNC) -> bool:
    """The ``force`` of a ``pimem/sync`` request (``method``: the name it was called by, for the
    error message; ``pimem/backfill`` is its deprecated alias)."""
    return _optional_bool(method, _object(method, raw), "force", False)


@dataclass(frozen=True)
class MigrateRequest:
    folder_uri: str | None
    dry_run: bool
    codex_id: str | None = None     # sessionId "codex:<thread id>": only this session


_CODEX_SESSION_ID = re.compile(r"codex:([0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12})")


def migrate_params(raw: Any) -> MigrateRequest:
    method = methods.MIGRATE_CODEX
    params = _object(method, raw)
    folder = params.get("workspaceFolder")
    _unicode(method, "workspaceFolder", folder)
    if folder is not None and (not isinstance(folder, str) or uri_to_path(folder) is None):
        raise ParamsError(method, "workspaceFolder", '"workspaceFolder" must be a file:// URI')
    session_id = params.get("sessionId")
    codex_id = None
    if session_id is not None:
        match = _CODEX_SESSION_ID.fullmatch(session_id) if isinstance(session_id, str) else None
        if match is None:
            raise ParamsError(method, "sessionId", '"sessionId" must be a Codex session id, "codex:<thread id>"')
        if folder is not None:
            raise ParamsError(method, "sessionId", 'give "sessionId" or "workspaceFolder", not both')
        codex_id = match.group(1)
    return MigrateRequest(folder, _optional_bool(method, params, "dryRun", False), codex_id)


def status_params(raw: Any) -> None:
    _object(methods.STATUS, raw)


def sources_params(raw: Any) -> None:
    _object(methods.SOURCES, raw)


@dataclass
class ServerOptions:
    db_path: str | None = None
    auto_sync: bool = True
    sources: set[Source] = field(default_factory=lambda: set(SOURCES))
    hover: str = "off"


def initialization_options(raw: Any) -> tuple[ServerOptions, list[str]]:
    """Options and the problems found; a bad value is reported and replaced by its default."""
    options = ServerOptions()
    problems: list[str] = []
    if raw is None:
        return options, problems
    if not isinstance(raw, dict):
        return options, ["initializationOptions must be an object; using the defaults"]
    db_path = raw.get("dbPath")
    if db_path is not None:
        try:
            _unicode("initializationOptions", "dbPath", db_path)
        except ParamsError:
            db_path = ""
        if isinstance(db_path, str) and db_path.strip():
            options.db_path = os.path.expanduser(db_path)
        else:
            problems.append('initializationOptions.dbPath must be a non-empty string; using the default store')
    auto_sync = raw.get("autoSync")
    if auto_sync is not None:
        if isinstance(auto_sync, bool):
            options.auto_sync = auto_sync
        else:
            problems.append("initializationOptions.autoSync must be a boolean; using true")
    sources = raw.get("sources")
    if sources is not None:
        if isinstance(sources, dict):
            for name, enabled in sources.items():
                if not is_source(name):
                    problems.append(f"initializationOptions.sources.{name} is not a known source; ignored")
                elif not isinstance(enabled, bool):
                    problems.append(f"initializationOptions.sources.{name} must be a boolean; using true")
                elif not enabled:
                    options.sources.discard(name)
        else:
            problems.append("initializationOptions.sources must be an object like {\"pi\": true}; using all")
    hover = raw.get("hover")
    if hover is not None:
        if hover in ("off", "word"):
            options.hover = hover
        else:
            problems.append('initializationOptions.hover must be "off" or "word"; using "off"')
    return options, problems


def agent_recall_params(raw: Any) -> ToolCall:
    """``pimem/agentRecall``: the arguments of the agents' ``recall_memory`` tool (validated by
    agent_tools, as in ``pimem mcp``), plus the client's ``redact`` setting (default true)."""
    method = methods.AGENT_RECALL
    params = _object(method, raw)
    redact = _optional_bool(method, params, "redact", True)
    arguments = {key: value for key, value in params.items() if key != "redact"}
    for name in ("entities", "cwd"):
        _unicode(method, name, arguments.get(name))
    try:
        return decode_call(RECALL_MEMORY, arguments, redact_secrets=redact)
    except ToolInputError as error:
        raise ParamsError(method, error.field, str(error)) from None
