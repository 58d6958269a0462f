"""The line pre-filter is the parser contract's (TranscriptParser.wants from ``interesting``): an importer
declares its pattern and where it is looked for, it does not write its own filter."""

from __future__ import annotations

import pytest

from pimem.importers import PARSERS
from pimem.importers.base import TranscriptParser
from pimem.jsonl import Line


def line(data: bytes | None, head: bytes | None = None) -> Line:
    return Line(number=2, start=0, end=0, data=data, head=data[:4096] if head is None else head)


@pytest.mark.parametrize("source", ["gemini", "copilot-cli", "cursor"])
def test_the_new_importers_use_the_contracts_prefilter(source: str) -> None:
    parser_class = PARSERS[source]
    assert parser_class.interesting is not None
    assert all("wants" not in vars(klass) for klass in parser_class.__mro__ if klass is not TranscriptParser)


@pytest.mark.parametrize(("source", "wanted", "unwanted"), [
    ("gemini", b'{"id":"m1","type":"user","content":"hi"}', b'{"type":"info","content":"x"}'),
    ("gemini", b'{"$rewindTo":"m1"}', b'{"$other":1}'),
    ("copilot-cli", b'{"type":"user.message","data":{"content":"hi"}}', b'{"type":"tool.execution_complete"}'),
    ("cursor", b'{"role":"user","message":{"content":[]}}', b'{"role":"system"}'),
])
def test_the_prefilter_takes_the_lines_of_the_pattern_only(source: str, wanted: bytes, unwanted: bytes) -> None:
    parser = PARSERS[source]("/nowhere/x.jsonl", None)
    assert parser.wants(line(wanted))
    assert not parser.wants(line(unwanted))
    assert not parser.wants(Line(number=2, start=0, end=0, data=None, head=wanted))   # too long to read


def test_a_head_pattern_is_looked_for_in_the_head_only() -> None:
    parser = PARSERS["copilot-cli"]("/nowhere/x.jsonl", None)
    late = b'{"data":{"content":"' + b"x" * 5000 + b'"},"type":"user.message"}'
    assert not parser.wants(line(late))                     # the type after 4 KiB of payload: not a record read
    gemini = PARSERS["gemini"]("/nowhere/x.jsonl", None)
    assert gemini.wants(line(b'{"content":"' + b"x" * 5000 + b'","id":"m1"}'))   # the whole line


def test_a_parser_without_a_pattern_takes_every_line() -> None:
    class Plain(TranscriptParser):
        source = "pi"

        def feed(self, record: object, line_number: int, chunk: object) -> None: ...

        def session(self) -> object: ...

        def state(self) -> dict[str, object]:
            return {}

    assert Plain("/x", None).wants(line(b"{}"))   # type: ignore[abstract]
