"""pimem.jsonl.LineReader against a plain reference model, on random streams, with the line cap and
the read-piece size made tiny so that every boundary (a line of exactly the cap, one byte more, a
line ending inside or just after a piece, CRLF, an unfinished last line) is hit often."""

from __future__ import annotations

import contextlib
import io
import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pimem import jsonl
from pimem.jsonl import HEAD_BYTES, LineReader

EXAMPLES = 600


def reference(content: bytes, max_line: int) -> list[tuple[int, int, bytes | None, bytes]]:
    """(start, end, data, head) of every line the reader must yield, by the rules in pimem/jsonl.py."""
    out: list[tuple[int, int, bytes | None, bytes]] = []
    position = 0
    while position < len(content):
        newline = content.find(b"\n", position)
        if newline < 0:   # an unfinished last line
            chunk = content[position:]
            stripped = chunk.strip()
            if len(chunk) <= max_line and stripped.startswith(b"{") and stripped.endswith(b"}"):
                try:
                    json.loads(stripped.decode("utf-8", "replace"))
                except ValueError:
                    return out
                out.append((position, len(content), chunk, chunk[:HEAD_BYTES]))
            return out
        line = content[position:newline]
        end = newline + 1
        if len(line) > max_line:
            out.append((position, end, None, line[:min(HEAD_BYTES, max_line + 1)]))  # what was read of it
        else:
            data = line[:-1] if line.endswith(b"\r") else line
            out.append((position, end, data, data[:HEAD_BYTES]))
        position = end
    return out


LINE = st.one_of(
    st.binary(max_size=40).map(lambda data: data.replace(b"\n", b"x")),
    st.integers(0, 6).map(lambda n: json.dumps({"k": "v" * n}).encode()),
)


@settings(max_examples=EXAMPLES, deadline=None)
@given(lines=st.lists(st.tuples(LINE, st.sampled_from([b"\n", b"\r\n", b""])), max_size=12),
       max_line=st.integers(1, 30), piece=st.integers(1, 9))
def test_line_reader_matches_the_reference(lines: list[tuple[bytes, bytes]], max_line: int, piece: int) -> None:
    content = b"".join(data + (ending or b"\n") for data, ending in lines[:-1])
    if lines:
        content += lines[-1][0] + lines[-1][1]
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(jsonl, "_PIECE_BYTES", piece)
        reader = LineReader(io.BufferedReader(io.BytesIO(content), buffer_size=8), max_line=max_line)
        got = [(line.start, line.end, line.data, line.head) for line in reader]
    expected = reference(content, max_line)
    assert got == expected
    assert reader.position == (expected[-1][1] if expected else 0)
    assert reader.oversized_lines == sum(1 for item in expected if item[2] is None)
    assert all(isinstance(item[2], bytes | None) and isinstance(item[3], bytes) for item in got)


@settings(max_examples=60, deadline=None)
@given(frames=st.lists(st.binary(max_size=300_000).map(lambda data: data * 3), min_size=0, max_size=4),
       level=st.integers(1, 6))
def test_open_zst_reads_every_frame_whole(frames: list[bytes], level: int) -> None:
    """Multi-frame .zst files (as a compressor writing in several goes makes) come back byte for byte."""
    import tempfile

    import zstandard

    compressed = b"".join(zstandard.ZstdCompressor(level=level).compress(frame) for frame in frames)
    with tempfile.NamedTemporaryFile(suffix=".jsonl.zst") as handle:
        handle.write(compressed)
        handle.flush()
        with contextlib.closing(jsonl.open_zst(handle.name)) as stream:
            assert stream.read() == b"".join(frames)
