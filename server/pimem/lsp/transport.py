"""The LSP base protocol on a byte stream, read defensively: header lines, a blank line, a body of
``Content-Length`` bytes, and that body decoded as UTF-8 JSON. Plain Python (no pygls), so every
boundary is unit-testable; :mod:`pimem.lsp.runtime` runs it on stdin.

Why not pygls' reader (``pygls.io_.run_async``, unchanged upstream since 2.1.1): it recognises only
a header line spelled exactly ``Content-Length: <digits>\\r\\n`` and silently skips any other line.
With a bad length (non-numeric, negative, lower-case name) or ``Content-Length: 0`` it reads the body
as header lines; a body has no line break, so it swallows the next message's header, and every later
message is lost the same way: one bad frame and the server never answers again. It calls
``stdin.read(n)`` for any declared ``n`` (CPython allocates n bytes up front, then waits for them),
and ``readline()`` without a limit. (No openlawlibrary/pygls issue reports this reader; the
nearest is #604, its writer counting characters for Content-Length.)

What is recovered and what is not:

- A frame whose header is well formed is always recovered, whatever its body: a body that is not
  UTF-8 JSON is :class:`Unreadable` (answered with -32700), a body over :data:`MAX_MESSAGE_BYTES` is
  read in pieces and thrown away (:class:`Oversized`, answered with -32600 when its id shows).
- A header that cannot be trusted (no valid Content-Length, a line that is not ``Name: value``, a
  header over :data:`MAX_HEADER_BYTES`, a length over :data:`MAX_SKIPPED_BYTES`) raises
  :class:`FramingError`: nothing says where the body ends, so any guess could run a fragment of
  text as a request. The server then exits with a clear line and the client restarts it.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

MAX_MESSAGE_BYTES = 4 * 1024 * 1024
"""The largest body the server reads (4 MiB). The service limits on requests are far below it."""
MAX_SKIPPED_BYTES = 1024 * 1024 * 1024
"""A declared length above this (1 GiB) is taken as a corrupt header, not as a message to skip."""
MAX_HEADER_BYTES = 8 * 1024
"""The header lines of one message together (real clients send one or two short lines)."""
PREFIX_BYTES = 4 * 1024
"""How much of an oversized body is kept to find its ``id``."""
READ_CHUNK = 64 * 1024

_LENGTH = re.compile(rb"[0-9]{1,19}")  # 19 digits: always below 2**63, so never a huge int


class FramingError(Exception):
    """The stream can no longer be split into messages. The message never quotes the stream."""


@dataclass(frozen=True)
class Body:
    data: bytes


@dataclass(frozen=True)
class Oversized:
    """A frame whose body was longer than the limit: skipped, only its beginning kept."""
    length: int
    prefix: bytes


@dataclass(frozen=True)
class Parsed:
    """A body that is JSON: any JSON value (validating it as JSON-RPC is the caller's job)."""
    value: Any


@dataclass(frozen=True)
class Unreadable:
    """A body that is not UTF-8 JSON. ``reason`` never quotes the body."""
    reason: str


class FrameReader:
    """Splits a byte stream into frames. ``read(n)`` returns up to n bytes, b"" at the end of the
    stream (``os.read`` on a pipe). Memory stays below the largest body plus one read."""

    def __init__(self, read: Callable[[int], bytes], *, max_message: int = MAX_MESSAGE_BYTES,
                 max_skipped: int = MAX_SKIPPED_BYTES, max_header: int = MAX_HEADER_BYTES,
                 chunk: int = READ_CHUNK) -> None:
        self._read = read
        self._max_message, self._max_skipped, self._max_header = max_message, max_skipped, max_header
        self._chunk = chunk
        self._buffer = bytearray()
        self._ended = False

    def next(self) -> Body | Oversized | None:
        """The next frame, or None when the stream ends (also in the middle of a frame: then the
        client is gone, and a partial message is no message)."""
        length = self._header()
        if length is None:
            return None
        if length <= self._max_message:
            data = self._take(length)
            return None if data is None else Body(data)
        if length > self._max_skipped:
            raise FramingError(f"a message header declares {length} bytes, more than any message "
                               f"({self._max_skipped} bytes)")
        prefix = self._skip(length)
        return None if prefix is None else Oversized(length, prefix)

    # -- reading -----------------------------------------------------------------------------------
    def _fill(self, wanted: int = 0) -> bool:
        if self._ended:
            return False
        data = self._read(max(self._chunk, min(wanted, self._max_message)))
        if not data:
            self._ended = True
            return False
        self._buffer += data
        return True

    def _line(self, budget: int) -> bytes | None:
        """One line without its line break (``\\r\\n``, or a bare ``\\n``); None at the end."""
        searched = 0
        while (end := self._buffer.find(b"\n", searched)) < 0:
            if len(self._buffer) > budget:
                raise FramingError(f"a message header is longer than {self._max_header} bytes")
            searched = len(self._buffer)
            if not self._fill():
                return None
        if end > budget:
            raise FramingError(f"a message header is longer than {self._max_header} bytes")
        line = bytes(self._buffer[:end])
        del self._buffer[:end + 1]
        return line[:-1] if line.endswith(b"\r") else line

    def _header(self) -> int | None:
        length: int | None = None
        used = 0
        lines = 0
        while True:
            line = self._line(self._max_header - used)
            if line is None:
                return None
            if not line.strip():
                if lines == 0:   # blank lines between messages are harmless
                    used = 0
                    continue
                if length is None:
                    raise FramingError("a message header has no Content-Length")
                return length
            lines += 1
            used += len(line) + 2
            name, colon, value = line.partition(b":")
            if not colon:
                raise FramingError("a message header line is not of the form 'Name: value'")
            if name.strip().lower() != b"content-length":
                continue   # Content-Type and unknown fields: the body is UTF-8 JSON whatever they say
            digits = value.strip()
            if not digits.isdigit():   # bytes.isdigit: ASCII digits only; "-5", "5.0", "" fail
                raise FramingError("a Content-Length is not a number of bytes")
            digits = digits.lstrip(b"0") or b"0"
            if _LENGTH.fullmatch(digits) is None:
                raise FramingError(f"a message header declares more than {self._max_skipped} bytes")
            declared = int(digits)
            if length is not None and declared != length:
                raise FramingError("a message header has two different Content-Length values")
            length = declared

    def _take(self, length: int) -> bytes | None:
        while len(self._buffer) < length:
            if not self._fill(length - len(self._buffer)):
                return None
        data = bytes(self._buffer[:length])
        del self._buffer[:length]
        return data

    def _skip(self, length: int) -> bytes | None:
        """Reads and drops ``length`` bytes, a piece at a time, keeping the first PREFIX_BYTES."""
        prefix = bytearray()
        remaining = length
        while remaining:
            if not self._buffer and not self._fill():
                return None
            piece = min(remaining, len(self._buffer))
            if len(prefix) < PREFIX_BYTES:
                prefix += self._buffer[:min(piece, PREFIX_BYTES - len(prefix))]
            del self._buffer[:piece]
            remaining -= piece
        return bytes(prefix)


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def decode(body: bytes) -> Parsed | Unreadable:
    """A body as JSON (strict: UTF-8, no BOM, no NaN/Infinity)."""
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError:
        return Unreadable("the body is not UTF-8")
    try:
        return Parsed(json.loads(text, parse_constant=_no_constant))
    except RecursionError:
        return Unreadable("the body is nested too deeply")
    except ValueError:   # JSONDecodeError, NaN/Infinity, integers of over 4300 digits
        return Unreadable("the body is not valid JSON")


_OPEN = re.compile(rb"\s*\{")
_SCALAR_MEMBER = re.compile(
    rb'\s*"(?P<key>[A-Za-z]{1,16})"\s*:\s*(?P<value>"(?:[^"\\\x00-\x1f]|\\.){0,256}"|-?[0-9]{1,19}|true|false|null)'
    rb"\s*(?P<next>[,}])")


def leading_members(prefix: bytes) -> dict[str, Any]:
    """The scalar members at the start of a JSON object, up to its first non-scalar value: how an
    oversized request is still answered with its id (clients write ``jsonrpc``, ``id`` and
    ``method`` before ``params``). Best effort: what this finds is only ever used to answer."""
    opening = _OPEN.match(prefix)
    if opening is None:
        return {}
    members: dict[str, Any] = {}
    position = opening.end()
    while (member := _SCALAR_MEMBER.match(prefix, position)) is not None:
        try:
            members[member["key"].decode("ascii")] = json.loads(member["value"])
        except ValueError:
            break
        if member["next"] == b"}":
            break
        position = member.end()
    return members
