"""LineReader.scan (block search) yields exactly the lines plain iteration would, filtered by the
pattern, with the same numbers and positions, and ends at the same resume point."""

from __future__ import annotations

import io
import re

from hypothesis import given, settings
from hypothesis import strategies as st

from pimem.jsonl import LineReader

PATTERN = re.compile(rb'"type":"(?:user|assistant)"')
LINES = st.sampled_from([
    b'{"type":"user","x":1}', b'{"type":"assistant","y":"z"}', b'{"type":"attachment","big":"' + b"a" * 300 + b'"}',
    b'{"a":"b"}', b"", b"not json", b'{"type":"user"', b'{"type":"file-history-snapshot"}\r',
    b'{"k":"' + b"q" * 900 + b'","type":"assistant"}',
])


def plain(data: bytes, max_line: int, offset: int = 0, lines: int = 0) -> tuple[list[tuple[object, ...]], int, int]:
    reader = LineReader(io.BytesIO(data[offset:]), offset, lines, max_line=max_line)
    # Lines too long to read are judged by their head (all the scan keeps of them).
    out = [(line.number, line.start, line.end, line.data, line.head) for line in reader
           if line.number == 1 or PATTERN.search(line.head if line.data is None else line.data)]
    return out, reader.position, reader.lines_read


def scanned(data: bytes, max_line: int, offset: int = 0, lines: int = 0) -> tuple[list[tuple[object, ...]], int, int]:
    reader = LineReader(io.BytesIO(data[offset:]), offset, lines, max_line=max_line)
    out = [(line.number, line.start, line.end, line.data, line.head) for line in reader.scan(PATTERN)]
    return out, reader.position, reader.lines_read


@settings(max_examples=300, deadline=None)
@given(lines=st.lists(LINES, max_size=40), tail=st.sampled_from([b"", b'{"type":"user"}', b'{"type":"us', b"xx"]),
       max_line=st.sampled_from([64, 500, 1 << 20]))
def test_scan_equals_filtered_iteration(lines: list[bytes], tail: bytes, max_line: int) -> None:
    data = b"\n".join(lines) + (b"\n" if lines else b"") + tail
    assert scanned(data, max_line) == plain(data, max_line)


def test_scan_resumes_from_an_offset() -> None:
    data = b'{"type":"session"}\n{"type":"user"}\n{"x":1}\n{"type":"assistant"}\n{"y":2}\n'
    first = data.index(b"\n") + 1
    assert scanned(data, 1000, first, 1) == plain(data, 1000, first, 1)
    _rows, position, count = scanned(data, 1000)
    assert (position, count) == (len(data), 5)


def test_scan_across_block_boundaries(monkeypatch: object) -> None:
    import pimem.jsonl as jsonl

    monkeypatch.setattr(jsonl, "_SCAN_BLOCK", 7)  # type: ignore[attr-defined]
    data = b"".join(b'{"type":"user","n":%d}\n{"pad":"' % i + b"p" * (i % 13) + b'"}\n' for i in range(50))
    assert scanned(data, 40) == plain(data, 40)
