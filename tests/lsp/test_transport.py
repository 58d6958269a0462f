"""pimem.lsp.transport: frames out of a byte stream however it is cut, bounded memory for hostile
headers, and error messages that never quote the stream. (The server over a real pipe is in
tests/reliability/test_lsp_wire.py.)"""

from __future__ import annotations

import json
from collections.abc import Callable

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pimem.lsp.transport import (
    PREFIX_BYTES,
    Body,
    FrameReader,
    FramingError,
    Oversized,
    Parsed,
    Unreadable,
    decode,
    leading_members,
)

MARKER = b"pimem-marker-7f3a9c"


class Stream:
    """``read(n)`` over fixed bytes, cut into pieces of the given sizes (cycled); records each n."""

    def __init__(self, data: bytes, pieces: list[int] | None = None) -> None:
        self.data, self.position, self.pieces, self.asked = data, 0, pieces or [1 << 30], []

    def read(self, n: int) -> bytes:
        self.asked.append(n)
        size = min(n, self.pieces[len(self.asked) % len(self.pieces)])
        piece = self.data[self.position:self.position + size]
        self.position += len(piece)
        return piece


def frames(data: bytes, pieces: list[int] | None = None, **limits: int) -> list[Body | Oversized]:
    reader = FrameReader(Stream(data, pieces).read, **limits)
    found = []
    while (frame := reader.next()) is not None:
        found.append(frame)
    return found


HEADER_STYLES: list[Callable[[int], bytes]] = [
    lambda n: b"Content-Length: %d\r\n\r\n" % n,
    lambda n: b"content-length: %d\r\ncontent-type: application/vscode-jsonrpc; charset=utf-8\r\n\r\n" % n,
    lambda n: b"Content-Type: application/vscode-jsonrpc; charset=utf-8\r\nContent-Length:%d\r\n\r\n" % n,
    lambda n: b"CONTENT-LENGTH:   %d  \n\n" % n,
    lambda n: b"\r\n\r\nContent-Length: %d\r\nX-Other: Content-Length: 7\r\n\r\n" % n,
    lambda n: b"Content-Length: 000%d\r\n\r\n" % n,
]


@settings(max_examples=300, deadline=None)
@given(bodies=st.lists(st.binary(max_size=300), min_size=1, max_size=8),
       styles=st.lists(st.integers(0, len(HEADER_STYLES) - 1), min_size=8, max_size=8),
       pieces=st.lists(st.integers(1, 9), min_size=1, max_size=5))
def test_frames_come_out_whole_however_the_stream_is_cut(bodies: list[bytes], styles: list[int],
                                                          pieces: list[int]) -> None:
    """Any bodies (newlines, "Content-Length", binary), any header style, read 1-9 bytes at a time."""
    data = b"".join(HEADER_STYLES[style](len(body)) + body for body, style in zip(bodies, styles, strict=False))
    assert frames(data, pieces, chunk=4) == [Body(body) for body in bodies]


@pytest.mark.parametrize("cut", [1, 10, 21, 25, 30])
def test_a_stream_that_ends_inside_a_frame_ends_quietly(cut: int) -> None:
    data = b"Content-Length: 10\r\n\r\n0123456789"
    assert frames(data + data[:cut]) == [Body(b"0123456789")]


@pytest.mark.parametrize("header", [
    b"Content-Length: abc\r\n",
    b"Content-Length: -5\r\n",
    b"Content-Length: 5.0\r\n",
    b"Content-Length: +5\r\n",
    b"Content-Length: 0x10\r\n",
    b"Content-Length: \r\n",
    b"Content-Length: \xd9\xa5\r\n",   # ARABIC-INDIC DIGIT FIVE: a digit to str.isdigit, not to the protocol
    b"Content-Length: 99999999999999999999999999\r\n",
    b"Content-Length: 2000\r\n",      # over max_skipped in this test
    b"Content-Type: text/plain\r\n",
    b"Content-Length: 5\r\nContent-Length: 6\r\n",
    b"this is no header\r\n",
    b"X-Long: " + b"y" * 300 + b"\r\n",
])
def test_an_untrustworthy_header_is_a_framing_error(header: bytes) -> None:
    reader = FrameReader(Stream(header + b"\r\n" + b"x" * 5000).read, max_message=100, max_skipped=1000,
                         max_header=200, chunk=16)
    with pytest.raises(FramingError):
        reader.next()


@pytest.mark.parametrize("header", [
    b"Content-Length: 12" + MARKER + b"\r\n\r\n",
    MARKER + b"\r\n\r\n",
    b"X-Other: " + MARKER * 20,
    b'{"jsonrpc":"2.0","method":"x","params":{"text":"' + MARKER + b'"}}Content-Length: 5\r\n\r\n{}',
])
def test_a_framing_error_never_quotes_the_stream(header: bytes) -> None:
    """After a bad length, the "header" being read is often a body: transcript text."""
    with pytest.raises(FramingError) as raised:
        FrameReader(Stream(header).read, max_header=200).next()
    assert MARKER.decode() not in str(raised.value)


def test_a_huge_declared_length_reads_nothing_of_the_body() -> None:
    header = b"Content-Length: 9999999999999999999\r\n\r\n"
    stream = Stream(header + b"x" * 100_000)
    with pytest.raises(FramingError):
        FrameReader(stream.read, chunk=16).next()
    assert stream.position <= len(header) + 16 and max(stream.asked) == 16


def test_an_endless_header_line_is_refused_after_the_header_limit() -> None:
    stream = Stream(b"X: " + b"y" * 1_000_000)
    with pytest.raises(FramingError):
        FrameReader(stream.read, max_header=1000, chunk=64).next()
    assert stream.position <= 1000 + 64


def test_an_oversized_body_is_skipped_in_pieces_and_the_next_frame_survives() -> None:
    big = b'{"jsonrpc":"2.0","id":42,"method":"pimem/recall","params":{"text":"' + b"z" * 20_000 + b'"}}'
    small = b'{"jsonrpc":"2.0","id":43,"method":"pimem/status"}'
    stream = Stream(b"Content-Length: %d\r\n\r\n" % len(big) + big + b"Content-Length: %d\r\n\r\n" % len(small) + small)
    reader = FrameReader(stream.read, max_message=1000, chunk=256)
    skipped = reader.next()
    assert isinstance(skipped, Oversized) and skipped.length == len(big)
    assert skipped.prefix == big[:PREFIX_BYTES]
    assert reader.next() == Body(small)
    assert reader.next() is None
    assert max(stream.asked) <= 1000   # never a read sized by the declared length


def test_reads_are_sized_by_the_limit_not_by_the_declared_length() -> None:
    body = b"a" * 3000
    stream = Stream(b"Content-Length: 3000\r\n\r\n" + body)
    assert FrameReader(stream.read, max_message=4000, chunk=16).next() == Body(body)
    assert max(stream.asked) <= 4000


@pytest.mark.parametrize(("raw", "expected"), [
    (b'{"jsonrpc":"2.0","id":1,"method":"x"}', Parsed({"jsonrpc": "2.0", "id": 1, "method": "x"})),
    (b"[1, 2]", Parsed([1, 2])),
    (b'"\\ud800"', Parsed("\ud800")),
    (b"", Unreadable("the body is not valid JSON")),
    (b"{not json", Unreadable("the body is not valid JSON")),
    (b'{"a": NaN}', Unreadable("the body is not valid JSON")),
    (b"[Infinity]", Unreadable("the body is not valid JSON")),
    (b"1" * 5000, Unreadable("the body is not valid JSON")),   # over Python's 4300-digit int limit
    (b"\xef\xbb\xbf{}", Unreadable("the body is not valid JSON")),
    (b'{"a": "\xff"}', Unreadable("the body is not UTF-8")),
    ('{"a": 1}'.encode("utf-16"), Unreadable("the body is not UTF-8")),
    (b"[" * 100_000 + b"]" * 100_000, Unreadable("the body is nested too deeply")),
])
def test_decode(raw: bytes, expected: Parsed | Unreadable) -> None:
    assert decode(raw) == expected


@pytest.mark.parametrize(("prefix", "expected"), [
    (b'{"jsonrpc":"2.0","id":7,"method":"pimem/recall","params":{"text":"abc',
     {"jsonrpc": "2.0", "id": 7, "method": "pimem/recall"}),
    (b' { "jsonrpc" : "2.0" , "id" : "a\\"b" , "method" : "x" , "params" : [',
     {"jsonrpc": "2.0", "id": 'a"b', "method": "x"}),
    (b'{"params":{"id":1},"id":2,"method":"x"}', {}),          # an id after params is not trusted
    (b'{"jsonrpc":"2.0","id":-3}', {"jsonrpc": "2.0", "id": -3}),
    (b'{"jsonrpc":"2.0","id":1.5,"method":"x"', {"jsonrpc": "2.0"}),
    (b"[1, 2, 3", {}),
    (b"", {}),
])
def test_leading_members_find_the_id_of_an_oversized_request(prefix: bytes, expected: dict[str, object]) -> None:
    assert leading_members(prefix) == expected


def test_leading_members_of_what_vscode_jsonrpc_writes() -> None:
    message = {"jsonrpc": "2.0", "id": 12, "method": "pimem/recall", "params": {"text": "q" * 10_000}}
    assert leading_members(json.dumps(message, separators=(",", ":")).encode()[:PREFIX_BYTES]) == {
        "jsonrpc": "2.0", "id": 12, "method": "pimem/recall"}
