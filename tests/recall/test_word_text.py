"""``words.word_text`` skips its identifier scans when a cheaper test shows they cannot match; the text
it gives is the one of the full scans (pimem/words.py)."""

from __future__ import annotations

import random

from pimem import words

SAMPLES = (
    "plain prose without any identifier, as most questions are",
    "Where does my sister Emily live? I went to the US last May, OK?",
    "getSignedUrl returns 403 for zeta_ratelimit",
    "HTTPServer and XMLParser, then parseJSON2Html and s3.getObject()",
    "snake_case_name __dunder__ a_b _leading trailing_ x_1",
    "数据库连接池满了 getUserID 怎么办 rate_limit",
    "iPhone eBay macOS IOError ABCdef A1B2 9Lives aB",
    "",
    "_",
    "A",
)


def _full_scans(text: str) -> str:
    """word_text as it was before the cheaper tests: both scans run on every text."""
    if len(text) > words.INDEXED_CHARS:
        text = text[:words.INDEXED_CHARS]
    if words._CJK_ANY.search(text):
        text = words._SCRIPT_RUN.sub(words._cjk_piece, text)
    parts = [" ".join(words._HUMP.findall(word)) for word in words._CAMEL.findall(text)]
    parts.extend(" ".join(piece for piece in word.split("_") if piece) for word in words._SNAKE.findall(text))
    return text + "\n" + " ".join(parts) if parts else text


def test_word_text_equals_the_full_scans() -> None:
    rng = random.Random(21)
    alphabet = "aAbBzZ09_ .-:éÉ锁数キ한\n"
    generated = ["".join(rng.choice(alphabet) for _ in range(rng.randint(0, 40))) for _ in range(3000)]
    for text in (*SAMPLES, *generated):
        assert words.word_text(text) == _full_scans(text), text
