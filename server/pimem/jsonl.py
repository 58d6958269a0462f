"""Streaming, resumable reading of JSONL transcripts.

Memory stays bounded whatever the file size: the reader holds one line at a time (a long one in a
single growing buffer), and a line longer than ``MAX_LINE_BYTES`` is skipped without being buffered
beyond that cap (only its head is kept, so the caller can tell a bookkeeping record from a turn).
A final line without a newline is only consumed when it is a complete JSON object; otherwise it is
presumed still being written and left for the next sync.

Transcripts are opened with :func:`open_regular`, which never blocks: a path that a FIFO, socket or
device replaced after discovery stat'ed it is opened without waiting (O_NONBLOCK), checked on the
open descriptor and refused (:class:`NotRegularFile`). A plain ``open()`` of a FIFO would wait for a
writer forever, and with it the sync (and, in the server, every later sync).

Just over ~400 lines for a reason: the line reader, its resumption at a byte offset and the three
ways to read ``.zst`` (python-zstandard, the ``zstd`` command, refusal) share the one bounded-buffer
invariant above.
"""

from __future__ import annotations

import io
import json
import os
import re
import shutil
import stat
import subprocess
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import IO, Any

_orjson: Any
_zstandard: Any
try:  # optional speed-up; pimem works without it
    import orjson as _orjson
except ImportError:  # pragma: no cover - exercised when orjson is absent
    _orjson = None

try:  # optional: Codex's compressed rollouts (.jsonl.zst)
    import zstandard as _zstandard
except ImportError:  # pragma: no cover
    _zstandard = None

MAX_LINE_BYTES = 32 * 1024 * 1024
HEAD_BYTES = 4096
_DISCARD_CHUNK = 1 << 20
_PIECE_BYTES = 1 << 20
_SCAN_BLOCK = 4 << 20
_ZSTD_INPUT_BYTES = 1 << 16


class UnsupportedFile(Exception):
    """The file cannot be read on this installation (e.g. .zst without a zstd decoder), or cannot be
    decoded at all (a damaged .zst)."""


class NotRegularFile(UnsupportedFile):
    """The path is no longer a regular file (a FIFO, socket, device or directory took its place)."""


_OPEN_FLAGS = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0) | getattr(os, "O_BINARY", 0)
_KINDS = ((stat.S_ISFIFO, "a FIFO"), (stat.S_ISSOCK, "a socket"), (stat.S_ISCHR, "a character device"),
          (stat.S_ISBLK, "a block device"), (stat.S_ISDIR, "a directory"))


def open_regular_fd(path: str) -> int:
    """A read-only descriptor of ``path`` if it is a regular file; raises NotRegularFile otherwise,
    without ever waiting (the check is made on the opened descriptor, so a swap after it cannot
    matter). The descriptor is left in blocking mode (a no-op for regular files)."""
    fd = os.open(path, _OPEN_FLAGS)
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            kind = next((name for test, name in _KINDS if test(mode)), "not a regular file")
            raise NotRegularFile(f"it is {kind}, not a regular file; skipped")
        if hasattr(os, "set_blocking"):
            os.set_blocking(fd, True)
    except BaseException:
        os.close(fd)
        raise
    return fd


def open_regular(path: str, buffering: int = -1) -> IO[bytes]:
    """:func:`open_regular_fd` as a binary stream."""
    return os.fdopen(open_regular_fd(path), "rb", buffering=buffering)


def loads(data: bytes | bytearray) -> Any:
    """Parse one JSON document; invalid UTF-8 is replaced rather than failing the record."""
    if _orjson is not None:
        try:
            return _orjson.loads(data)
        except _orjson.JSONDecodeError:
            pass  # orjson is strict about UTF-8 and surrogates; retry leniently
    return json.loads(data.decode("utf-8", "replace"))


def dumps_bytes(data: Any, default: Callable[[Any], Any]) -> bytes:
    """One JSON document as UTF-8 bytes (a language-server message): orjson when installed, ~7x faster
    than ``json.dumps`` on a page of recall (0.06 against 0.42 ms for 50 rows, 170 kB); the same JSON
    value, written compact and with non-ASCII characters as UTF-8 rather than ``\\u`` escapes.
    ``json.dumps`` (``default`` for what it cannot encode) writes what orjson refuses: a lone surrogate
    in a string, an integer beyond 64 bits, a key that is not a string, nesting beyond 255 levels."""
    if _orjson is not None:
        try:
            return _orjson.dumps(data, default=default)  # type: ignore[no-any-return]
        except _orjson.JSONEncodeError:
            pass
    return json.dumps(data, default=default).encode("utf-8")


def loads_text(text: str) -> Any:
    """Parse JSON text that is known to be valid (SQLite's ``json_group_array``): orjson when installed,
    2-3x faster on long arrays of integers, the same values."""
    return _orjson.loads(text) if _orjson is not None else json.loads(text)


@dataclass
class Line:
    number: int          # 1-based line number in the (decompressed) file
    start: int           # byte offset of the line
    end: int             # byte offset just after the line (and its newline)
    data: bytes | None   # the line without its newline; None when it was too long to read
    head: bytes          # the first HEAD_BYTES of the line (always available)


class LineReader:
    """Iterate the complete lines of a stream from a byte offset; ``position`` is where to resume."""

    def __init__(self, stream: IO[bytes], start_offset: int = 0, start_line: int = 0,
                 max_line: int = MAX_LINE_BYTES) -> None:
        self._stream = stream
        self.position = start_offset
        self.lines_read = start_line
        self._max_line = max_line
        self.oversized_lines = 0

    @classmethod
    def resume(cls, stream: IO[bytes], offset: int, lines: int) -> LineReader:
        """A reader that continues where an earlier one stopped (its ``position`` and ``lines_read``).
        A last line that had no newline yet was taken whole (it was complete JSON) and counted, so the
        newline that ends it later is skipped, not counted as a line of its own."""
        if offset:
            stream.seek(offset - 1)
            around = stream.read(2)
            if len(around) == 2 and around[0] != 0x0A and around[1] == 0x0A:
                offset += 1
            else:
                stream.seek(offset)
        return cls(stream, offset, lines)

    def _read_capped(self) -> bytes | bytearray:
        """The next line with its newline, or its first ``max_line + 1`` bytes. A long line is read in
        1 MiB pieces into one growing buffer, so it is held once rather than once per concatenation."""
        readline = self._stream.readline
        piece = min(self._max_line + 1, _PIECE_BYTES)
        chunk = readline(piece)
        if len(chunk) < piece or chunk.endswith(b"\n"):
            return chunk
        buffer = bytearray(chunk)
        while len(buffer) <= self._max_line:
            more = readline(min(_PIECE_BYTES, self._max_line + 1 - len(buffer)))
            if not more:
                break
            buffer += more
            if more.endswith(b"\n"):
                break
        return buffer

    def __iter__(self) -> Iterator[Line]:
        readline = self._stream.readline
        while True:
            start = self.position
            chunk = self._read_capped()
            if not chunk:
                return
            if chunk.endswith(b"\n"):
                self.lines_read += 1
                self.position = start + len(chunk)
                if isinstance(chunk, bytearray):  # a long line: trim in place, copy once
                    del chunk[-1:]
                    if chunk.endswith(b"\r"):
                        del chunk[-1:]
                    data = bytes(chunk)
                else:
                    data = chunk[:-1]
                    if data.endswith(b"\r"):
                        data = data[:-1]
                chunk = b""
                yield Line(self.lines_read, start, self.position, data, data[:HEAD_BYTES])
                continue
            if len(chunk) > self._max_line:
                head = bytes(chunk[:HEAD_BYTES])
                length = len(chunk)
                chunk = b""  # let the buffer go before reading on
                terminated = False
                while True:
                    more = readline(_DISCARD_CHUNK)
                    if not more:
                        break
                    length += len(more)
                    if more.endswith(b"\n"):
                        terminated = True
                        break
                if not terminated:
                    return  # an unfinished giant last line: leave it for the next sync
                self.lines_read += 1
                self.oversized_lines += 1
                self.position = start + length
                yield Line(self.lines_read, start, self.position, None, head)
                continue
            final = self._final_line(bytes(chunk))
            if final is not None:
                yield final
            return


    def scan(self, pattern: re.Pattern[bytes] | None) -> Iterator[Line]:
        """The lines in which ``pattern`` matches somewhere (plus the file's first line), found by
        searching whole blocks: the lines in between are counted and skipped without being split out
        one by one (they are most of a transcript's bytes). Same positions and line numbers as plain
        iteration; ``pattern=None`` is plain iteration."""
        if pattern is None:
            yield from self
            return
        read = self._stream.read
        carry = b""
        giant: tuple[int, bytes, int] | None = None   # (start, head, length) while inside a too-long line
        while True:
            block = read(_SCAN_BLOCK)
            if not block:
                break
            if giant is not None:
                cut = block.find(b"\n")
                start, head, length = giant
                if cut < 0:
                    giant = (start, head, length + len(block))
                    continue
                self.lines_read += 1
                self.position = start + length + cut + 1
                giant = None
                if self.lines_read == 1 or pattern.search(head):
                    self.oversized_lines += 1
                    yield Line(self.lines_read, start, self.position, None, head)
                block = block[cut + 1:]
            buffer = carry + block if carry else block
            cut = buffer.rfind(b"\n")
            if cut >= 0:
                yield from self._matching_lines(buffer, cut + 1, pattern)
                carry = buffer[cut + 1:]
            else:
                carry = buffer
            if len(carry) > self._max_line:
                giant = (self.position, carry[:min(HEAD_BYTES, self._max_line + 1)], len(carry))
                carry = b""
        if giant is not None or not carry:
            return  # an unfinished giant last line is left for the next sync
        final = self._final_line(carry)
        if final is not None:
            yield final

    def _final_line(self, data: bytes) -> Line | None:
        """A last line without a newline is taken only if it is already a whole JSON object;
        otherwise it is presumed still being written, and left for the next sync."""
        stripped = data.strip()
        if not (stripped.startswith(b"{") and stripped.endswith(b"}")):
            return None
        try:
            loads(stripped)
        except (ValueError, RecursionError):
            return None
        start = self.position
        self.lines_read += 1
        self.position = start + len(data)
        return Line(self.lines_read, start, self.position, data, data[:HEAD_BYTES])

    def _matching_lines(self, buffer: bytes, end: int, pattern: re.Pattern[bytes]) -> Iterator[Line]:
        """Complete lines ``buffer[:end]`` that the pattern hits (line 1 always); then advance."""
        base, counted_to, lines = self.position, 0, self.lines_read
        search = pattern.search
        position = 0
        if lines == 0 and base == 0:  # the first line is always wanted (format detection, headers)
            first_end = buffer.find(b"\n", 0, end)
            lines = 1
            counted_to = position = first_end + 1
            if first_end > self._max_line:
                self.oversized_lines += 1
                yield Line(1, base, base + first_end + 1, None, buffer[:min(HEAD_BYTES, self._max_line + 1)])
            else:
                yield self._line(lines, base, base + first_end + 1, buffer[:first_end])
        while position < end:
            match = search(buffer, position, end)
            if match is None:
                break
            line_start = buffer.rfind(b"\n", 0, match.start()) + 1
            line_end = buffer.find(b"\n", match.start(), end)
            lines += buffer.count(b"\n", counted_to, line_start) + 1
            counted_to = line_end + 1
            position = line_end + 1
            if line_end - line_start > self._max_line:  # too long to read: only its head is kept
                head = buffer[line_start:line_start + min(HEAD_BYTES, self._max_line + 1)]
                if search(head):
                    self.oversized_lines += 1
                    yield Line(lines, base + line_start, base + line_end + 1, None, head)
                continue
            yield self._line(lines, base + line_start, base + line_end + 1, buffer[line_start:line_end])
        lines += buffer.count(b"\n", counted_to, end)
        self.lines_read = lines
        self.position = base + end

    @staticmethod
    def _line(number: int, start: int, end: int, data: bytes) -> Line:
        if data.endswith(b"\r"):
            data = data[:-1]
        return Line(number, start, end, data, data[:HEAD_BYTES])


def _damaged(cause: object) -> UnsupportedFile:
    return UnsupportedFile(f"the compressed rollout is damaged ({cause})")


class _ZstdReader(io.RawIOBase):
    """The decompressed bytes of a .zst file, frame after frame, through python-zstandard. A damaged
    stream, or one that ends inside a frame, raises UnsupportedFile (python-zstandard's own ZstdError
    is a plain Exception, and its stream reader ends a truncated frame silently)."""

    def __init__(self, path: str) -> None:
        super().__init__()
        self._raw = open_regular(path)  # closed in close()
        self._decompressor = _zstandard.ZstdDecompressor()
        self._frame: Any = None            # the decoder of the frame being read; None between frames
        self._output = memoryview(b"")
        self._done = False

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        while not self._output and not self._done:
            self._decode_more()
        count = min(len(buffer), len(self._output))
        buffer[:count] = self._output[:count]
        self._output = self._output[count:]
        return count

    def _decode_more(self) -> None:
        data = self._raw.read(_ZSTD_INPUT_BYTES)
        if not data:
            self._done = True
            if self._frame is not None:
                raise _damaged("it ends inside a frame")
            return
        output = []
        try:
            while data:
                if self._frame is None:
                    self._frame = self._decompressor.decompressobj()
                output.append(self._frame.decompress(data))
                data = b""
                if self._frame.eof:
                    data = self._frame.unused_data
                    self._frame = None
        except _zstandard.ZstdError as error:
            raise _damaged(error) from None
        self._output = memoryview(b"".join(output))

    def close(self) -> None:
        if not self.closed:
            self._raw.close()
        super().close()


class _ZstdProcess(io.RawIOBase):
    """The output of ``zstd -dc``; a non-zero exit status at the end raises UnsupportedFile."""

    def __init__(self, zstd: str, path: str) -> None:
        super().__init__()
        # The file is opened here (checked to be regular) and handed over as stdin: zstd never
        # opens a path itself, so it cannot be made to wait on a FIFO swapped in meanwhile.
        fd = open_regular_fd(path)
        try:
            self._process = subprocess.Popen([zstd, "-dc"], stdin=fd, stdout=subprocess.PIPE,
                                             stderr=subprocess.DEVNULL)
        finally:
            os.close(fd)
        assert self._process.stdout is not None
        self._stdout: Any = self._process.stdout   # a BufferedReader over the pipe

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        count = int(self._stdout.readinto(buffer))
        if not count and self._process.wait() != 0:
            raise _damaged(f"zstd exit status {self._process.returncode}")
        return count

    def close(self) -> None:
        if not self.closed:
            self._stdout.close()
            if self._process.poll() is None:
                self._process.kill()
            self._process.wait()
        super().close()


def open_zst(path: str) -> IO[bytes]:
    """A decompressed stream of a .zst file (python-zstandard, else the zstd command)."""
    if _zstandard is not None:
        return io.BufferedReader(_ZstdReader(path), buffer_size=1 << 20)
    zstd = shutil.which("zstd")
    if zstd is None:
        raise UnsupportedFile(
            "compressed rollout (.jsonl.zst) needs the 'zstandard' Python package or the zstd command"
        )
    return io.BufferedReader(_ZstdProcess(zstd, path), buffer_size=1 << 20)


def is_compressed(path: str) -> bool:
    """Does :func:`open_transcript` decompress this file (so its bytes are not the JSONL text)?"""
    return path.endswith(".zst")


def open_transcript(path: str) -> IO[bytes]:
    """A binary stream of a transcript's JSONL text (decompressed for .zst)."""
    if is_compressed(path):
        return open_zst(path)
    return open_regular(path, buffering=1 << 20)


def read_window(handle: IO[bytes], offset: int, length: int) -> bytes:
    """Read ``length`` bytes at ``offset`` (fewer at EOF) of an open file, without moving its position."""
    if hasattr(os, "pread"):
        return os.pread(handle.fileno(), length, offset)
    position = handle.tell()  # pragma: no cover - platforms without pread
    try:
        handle.seek(offset)
        return handle.read(length)
    finally:
        handle.seek(position)
