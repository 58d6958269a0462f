"""Streaming, resumable reading of JSONL transcripts.

Memory stays bounded whatever the file size: the reader holds one line at a time, and a line longer
than ``MAX_LINE_BYTES`` is skipped without being buffered (only its head is kept, so the caller can
tell a bookkeeping record from a turn). A final line without a newline is only consumed when it is a
complete JSON object; otherwise it is presumed still being written and left for the next sync.
"""

from __future__ import annotations

import io
import json
import os
import shutil
import subprocess
from collections.abc import Iterator
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


class UnsupportedFile(Exception):
    """The file cannot be read on this installation (e.g. .zst without a zstd decoder)."""


def loads(data: bytes) -> Any:
    """Parse one JSON document; invalid UTF-8 is replaced rather than failing the record."""
    if _orjson is not None:
        try:
            return _orjson.loads(data)
        except _orjson.JSONDecodeError:
            pass  # orjson is strict about UTF-8 and surrogates; retry leniently
    return json.loads(data.decode("utf-8", "replace"))


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

    def __iter__(self) -> Iterator[Line]:
        readline = self._stream.readline
        while True:
            start = self.position
            chunk = readline(self._max_line + 1)
            if not chunk:
                return
            if chunk.endswith(b"\n"):
                self.lines_read += 1
                self.position = start + len(chunk)
                data = chunk[:-1]
                if data.endswith(b"\r"):
                    data = data[:-1]
                yield Line(self.lines_read, start, self.position, data, data[:HEAD_BYTES])
                continue
            if len(chunk) > self._max_line:
                head = chunk[:HEAD_BYTES]
                length = len(chunk)
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
            # A last line without a newline: take it only if it is already a whole JSON object.
            stripped = chunk.strip()
            if stripped.startswith(b"{") and stripped.endswith(b"}"):
                try:
                    loads(stripped)
                except (ValueError, RecursionError):
                    return
                self.lines_read += 1
                self.position = start + len(chunk)
                yield Line(self.lines_read, start, self.position, chunk, chunk[:HEAD_BYTES])
            return


def open_zst(path: str) -> IO[bytes]:
    """A decompressed stream of a .zst file (python-zstandard, else the zstd command)."""
    if _zstandard is not None:
        raw = open(path, "rb")  # noqa: SIM115 - closed through the wrapper
        reader = _zstandard.ZstdDecompressor().stream_reader(raw, closefd=True)
        return io.BufferedReader(reader, buffer_size=1 << 20)
    zstd = shutil.which("zstd")
    if zstd is None:
        raise UnsupportedFile(
            "compressed rollout (.jsonl.zst) needs the 'zstandard' Python package or the zstd command"
        )
    process = subprocess.Popen([zstd, "-dc", "--", path], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    assert process.stdout is not None
    return process.stdout


def open_transcript(path: str) -> IO[bytes]:
    """A binary stream of a transcript's JSONL text (decompressed for .zst)."""
    if path.endswith(".zst"):
        return open_zst(path)
    return open(path, "rb", buffering=1 << 20)


def read_window(path: str, offset: int, length: int) -> bytes:
    """Read ``length`` bytes at ``offset`` (fewer at EOF)."""
    with open(path, "rb") as handle:
        return os.pread(handle.fileno(), length, offset) if hasattr(os, "pread") else _seek_read(handle, offset, length)


def _seek_read(handle: IO[bytes], offset: int, length: int) -> bytes:
    handle.seek(offset)
    return handle.read(length)
