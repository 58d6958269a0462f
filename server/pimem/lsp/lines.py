"""``pimem/lineHistory`` (issue 23): which past conversation's edit wrote each line of a document — its
params decoded and validated (InvalidParams naming the field) and its handler, which calls
pimem.lineblame on a reader thread and sends the ``wire`` view. No logic of its own.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from pygls.lsp.server import LanguageServer

from pimem import lineblame, wire
from pimem.filehistory import normalize_file_path
from pimem.lsp import methods
from pimem.lsp.params import ParamsError, _object
from pimem.recall import MAX_PATH_CHARS

Guard = Callable[[str], Callable[[Callable[..., Awaitable[Any]]], Callable[..., Awaitable[Any]]]]


@dataclass(frozen=True)
class LineHistoryRequest:
    path: str
    start: int            # 0-based
    end: int | None       # exclusive; None: to the end of the document
    text: str | None      # the buffer; None: read the file


def _position(method: str, value: Any, name: str) -> tuple[int, int]:
    if not isinstance(value, dict):
        raise ParamsError(method, "range", f'"range.{name}" must be a position {{line, character}}')
    found: list[int] = []
    for part, number in (("line", value.get("line")), ("character", value.get("character", 0))):
        if isinstance(number, bool) or not isinstance(number, int) or not 0 <= number < 2**31:
            raise ParamsError(method, "range", f'"range.{name}.{part}" must be a non-negative integer')
        found.append(number)
    return found[0], found[1]


def line_history_params(raw: Any) -> LineHistoryRequest:
    method = methods.LINE_HISTORY
    params = _object(method, raw)
    uri = params.get("uri")
    if not isinstance(uri, str) or not uri.strip() or len(uri) > 3 * MAX_PATH_CHARS:
        raise ParamsError(method, "uri", f'"uri" must be a file:// URI or an absolute path of at most '
                                         f'{MAX_PATH_CHARS} characters')
    from pimem.lsp.history import _path  # one decoding of a path or file:// URI for every request

    try:
        uri.encode("utf-8")
        path = normalize_file_path(_path(method, "uri", uri))
    except (UnicodeEncodeError, ValueError) as error:   # ValueError: urlparse's "Invalid IPv6 URL" too
        if isinstance(error, ParamsError):
            raise
        raise ParamsError(method, "uri", '"uri" must be a file:// URI or an absolute path') from None
    if len(path) > MAX_PATH_CHARS:
        raise ParamsError(method, "uri", f'"uri" names a path longer than {MAX_PATH_CHARS} characters')
    text = params.get("text")
    if text is not None:
        if not isinstance(text, str):
            raise ParamsError(method, "text", '"text" must be a string (the document\'s current text)')
        try:
            size = len(text.encode("utf-8"))
        except UnicodeEncodeError:
            raise ParamsError(method, "text", '"text" contains a lone surrogate (not valid Unicode)') from None
        if size > lineblame.MAX_TEXT_BYTES:
            raise ParamsError(method, "text", f'"text" is larger than {lineblame.MAX_TEXT_BYTES >> 20} MiB')
    start, end = 0, None
    span = params.get("range")
    if span is not None:
        if not isinstance(span, dict):
            raise ParamsError(method, "range", '"range" must be an object {start, end}')
        first, _ = _position(method, span.get("start"), "start")
        last, character = _position(method, span.get("end"), "end")
        if last < first:
            raise ParamsError(method, "range", '"range.end" must not be before "range.start"')
        # an end at the start of a later line leaves that line out (a selection of whole lines)
        end_line = last if character == 0 and last > first else last + 1
        if end_line - first > lineblame.MAX_RANGE_LINES:
            raise ParamsError(method, "range", f'"range" spans more than {lineblame.MAX_RANGE_LINES} lines')
        start, end = first, end_line
    return LineHistoryRequest(path, start, end, text)


def register(server: LanguageServer, guarded: Guard) -> None:
    """Register ``pimem/lineHistory`` on the pygls server (``guarded`` maps failures to JSON-RPC errors)."""

    @server.feature(methods.LINE_HISTORY)
    @guarded(methods.LINE_HISTORY)
    async def on_line_history(ls: Any, params: Any) -> dict[str, object]:
        request = line_history_params(params)

        def run() -> dict[str, object]:
            text = request.text
            if text is None:
                try:
                    text = lineblame.read_text(request.path)
                except (OSError, lineblame.TextTooLarge) as error:
                    reason = error.strerror if isinstance(error, OSError) and error.strerror else str(error)
                    raise ParamsError(methods.LINE_HISTORY, "uri", f'"uri": the file cannot be read ({reason}); '
                                                                   'send its "text"') from None
            # no range: the first MAX_RANGE_LINES lines (as the service counts lines: "\r" ends one too)
            end = request.start + lineblame.MAX_RANGE_LINES if request.end is None else request.end
            history = lineblame.line_history(ls.connection(), request.path, text, request.start, end)
            return wire.line_history(history)

        result: dict[str, object] = await ls.read(run)
        return result
