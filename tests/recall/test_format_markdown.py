"""Transcript text in a recall answer's Markdown (pimem/recall/format.py): every character Markdown
could read as syntax escaped, the rest kept, whatever the text holds."""

from __future__ import annotations

import random

from pimem.recall.format import _MARKDOWN_SPECIALS, escape_markdown


def _reference(text: str) -> str:
    """The escaping as first written: a backslash before each special character, one character at a time."""
    return "".join("\\" + char if char in _MARKDOWN_SPECIALS else char for char in text)


def test_every_special_character_is_escaped_and_nothing_else() -> None:
    assert escape_markdown("[link](http://x) *a* _b_ `c` <b>&amp; #1 a-b! ~x~ |t| {y} +z.") == \
        "\\[link\\]\\(http://x\\) \\*a\\* \\_b\\_ \\`c\\` \\<b\\>\\&amp; \\#1 a\\-b\\! \\~x\\~ \\|t\\| \\{y\\} \\+z\\."
    assert escape_markdown("\\") == "\\\\" and escape_markdown("") == ""
    assert escape_markdown("naïve 東京 \U0001f600 \ud800 \x00\n") == "naïve 東京 \U0001f600 \ud800 \x00\n"


def test_the_escaping_is_the_reference_on_random_text() -> None:
    rng = random.Random(21)
    alphabet = sorted(_MARKDOWN_SPECIALS) + list("ab Z09\n\t\x00é東\U0001f600\ud800\\")
    for _ in range(500):
        text = "".join(rng.choice(alphabet) for _ in range(rng.randrange(0, 60)))
        assert escape_markdown(text) == _reference(text)
