"""``words.word_text`` computes what its scans find once per distinct CJK run and whitespace-separated
chunk (memos) and skips the identifier scans when a cheaper test shows they cannot match; the text it
gives, and so every token the word index holds and :func:`words.tokens` / :func:`words.query_forms`
give, is the one of the full scans over the whole text (pimem/words.py, issue 21).

``PIMEM_WORD_TEXT_STORE=<memory.db>`` also compares the stored texts of a real store (read only)."""

from __future__ import annotations

import os
import random
import re
import sqlite3
from collections.abc import Iterator

import pytest

from pimem import words
from pimem.store.schema import WORD_TOKENIZER

SAMPLES = (
    "plain prose without any identifier, as most questions are",
    "Where does my sister Emily live? I went to the US last May, OK?",
    "getSignedUrl returns 403 for zeta_ratelimit",
    "HTTPServer and XMLParser, then parseJSON2Html and s3.getObject()",
    "snake_case_name __dunder__ a_b _leading trailing_ x_1 ___ _ __",
    "数据库连接池满了 getUserID 怎么办 rate_limit",
    "iPhone eBay macOS IOError ABCdef A1B2 9Lives aB",
    "",
    "_",
    "A",
    "See `/var/log/game-engine/process/task_queue.go` and ./src/ml-pipeline/apiClient.ts:42",
    "def get_user(self):\n\treturn self.userName  # TODO fixMe\r\n",
    "fix 🐛 in parseJson 🚀🚀 emoji_test ✅ getURL👍now",
    "日本語のテキストでparseJsonを使う。データベース接続プール、한국어 데이터베이스 getUser",
    "wide\u3000space\u3000getUserId\u3000snake_case nbsp\u00a0camelCase line\u2028sepX_y next\x85lineA_b",
    "unit\x1fsep\x1cgetX\x1d_y_\x1eA_B\x0bvertical\x0cfeed getURLFor",
    "É_été Ünïcode_wörds naïveCase CaféBar straßeName ΑλφαBeta x²_y³ ①_②",
    "long " + "a" * 80 + "B" + "_c" * 40 + " run " + "数据" * 50 + " end",
    "getSignedUrl " * 50 + "zeta_ratelimit " * 50,
)


# -- the reference: word_text before the memos, copied verbatim (it scanned the whole text) --------

def _reference_cjk_piece(match: re.Match[str]) -> str:
    run = match.group(0)
    first = run[0]
    if words._HIRAGANA_START.match(first):
        return " "
    if words._HAN_START.match(first):
        if len(run) == 1:
            return f" {run} "
        return " " + " ".join(run[i:i + 2] for i in range(len(run) - 1)) + " "
    return f" {run} "


def _reference(text: str) -> str:
    if len(text) > words.INDEXED_CHARS:
        text = text[:words.INDEXED_CHARS]
    if words._CJK_ANY.search(text):
        text = words._SCRIPT_RUN.sub(_reference_cjk_piece, text)
    parts = [" ".join(words._HUMP.findall(word)) for word in words._CAMEL.findall(text)]
    parts.extend(" ".join(piece for piece in word.split("_") if piece) for word in words._SNAKE.findall(text))
    return text + "\n" + " ".join(parts) if parts else text


def _reference_tokens(text: str) -> list[str]:
    """:func:`words.tokens` of the reference text: FTS5's tokens in order, each once."""
    mem = sqlite3.connect(":memory:")
    mem.execute(f"CREATE VIRTUAL TABLE q USING fts5(x, tokenize = '{WORD_TOKENIZER}')")
    mem.execute("CREATE VIRTUAL TABLE qv USING fts5vocab(q, 'instance')")
    mem.execute("INSERT INTO q(rowid, x) VALUES (1, ?)", (_reference(text),))
    found = [str(term) for (term,) in mem.execute("SELECT term FROM qv ORDER BY offset")]
    mem.close()
    return list(dict.fromkeys(found))


def _generated(count: int, seed: int) -> list[str]:
    rng = random.Random(seed)
    alphabet = "aAbBzZ09_ .-:/éÉ锁数据キー한を🙂\n\t\u3000"
    texts = ["".join(rng.choice(alphabet) for _ in range(rng.randint(0, 60))) for _ in range(count)]
    vocabulary = ["getSignedUrl", "zeta_ratelimit", "HTTPServer", "parse_json", "s3.getObject()", "数据库",
                  "です", "コード", "데이터", "naïveCase", "__init__", "x_", "_y", "A_B", "`cfg.maxRetries`",
                  "the", "Error:", "/usr/lib/python3/site_packages/fooBar.py", "🚀", "IOError"]
    texts += [" ".join(rng.choice(vocabulary) for _ in range(rng.randint(1, 30))) for _ in range(count)]
    return texts


def _clear_memos() -> None:
    words._IDENTIFIERS.clear()
    words._CJK_PIECES.clear()
    words._QUERY_FORMS.clear()


@pytest.mark.parametrize("memo", ["cold", "warm", "tiny"])
def test_word_text_equals_the_whole_text_scans(memo: str, monkeypatch: pytest.MonkeyPatch) -> None:
    _clear_memos()
    if memo == "tiny":   # the memos emptied again and again while a text is cut
        monkeypatch.setattr(words, "MEMO_SIZE", 3)
    texts = [*SAMPLES, *_generated(1500, 21)]
    if memo == "warm":
        for text in texts:
            words.word_text(text)
    for text in texts:
        assert words.word_text(text) == _reference(text), text


def test_truncated_text_equals_the_reference() -> None:
    text = ("getSignedUrl zeta_ratelimit 数据库 " * 8000)[:words.INDEXED_CHARS + 500]
    assert words.word_text(text) == _reference(text)


def test_tokens_and_query_forms_are_the_reference_ones() -> None:
    _clear_memos()
    for text in (*SAMPLES, *_generated(150, 5)):
        assert words.tokens(text) == _reference_tokens(text), text
    assert words.query_forms("Coffee getSignedUrl 数据库") == [
        ("coffe", "coffee"), ("getsignedurl", "getsignedurl"), ("数据", "数据"), ("据库", "据库"), ("get", "get"),
        ("sign", "signed"), ("url", "url")]


def test_query_forms_are_kept_and_each_caller_gets_its_own_list() -> None:
    # Every page of a question asks the same words again: their forms are kept per process.
    _clear_memos()
    first = words.query_forms("Coffee")
    assert first == [("coffe", "coffee")] and "Coffee" in words._QUERY_FORMS
    first.append(("x", "x"))   # a caller's list is its own
    assert words.query_forms("Coffee") == [("coffe", "coffee")]
    long = "getSignedUrl" * 4   # beyond MEMO_KEY_CHARS: computed each time, the same
    assert words.query_forms(long) == words.query_forms(long) and long not in words._QUERY_FORMS


def test_a_repeated_identifier_is_scanned_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """The old code ran both scans over every text; code repeats its identifiers from turn to turn."""
    _clear_memos()
    scanned: list[str] = []
    camel = words._CAMEL

    class Counting:
        def findall(self, text: str) -> list[str]:
            scanned.append(text)
            return camel.findall(text)

    monkeypatch.setattr(words, "_CAMEL", Counting())
    for number in range(100):
        assert words.word_text(f"turn {number}: getSignedUrl failed, see getSignedUrl") \
            == f"turn {number}: getSignedUrl failed, see getSignedUrl\nget Signed Url get Signed Url"
    assert scanned == ["getSignedUrl"]


def test_memos_stay_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    _clear_memos()
    monkeypatch.setattr(words, "MEMO_SIZE", 10)
    long_chunk = "getX" * 10
    words.word_text(" ".join(f"camelCase{number}X" for number in range(50)) + " " + long_chunk + " " + "数据" * 100)
    assert len(words._IDENTIFIERS) <= 10 and long_chunk not in words._IDENTIFIERS
    assert len(words._CJK_PIECES) <= 10 and "数据" * 100 not in words._CJK_PIECES


def _stored_texts(path: str, limit: int) -> Iterator[str]:
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        for user, reply in conn.execute("SELECT user_text, reply_text FROM turns ORDER BY random() LIMIT ?",
                                        (limit,)):
            yield user or ""
            yield reply or ""
    finally:
        conn.close()


@pytest.mark.skipif(not os.environ.get("PIMEM_WORD_TEXT_STORE"), reason="PIMEM_WORD_TEXT_STORE names no store")
def test_stored_texts_equal_the_reference() -> None:
    _clear_memos()
    limit = int(os.environ.get("PIMEM_WORD_TEXT_TURNS", "3000"))
    compared = 0
    for text in _stored_texts(os.environ["PIMEM_WORD_TEXT_STORE"], limit):
        assert words.word_text(text) == _reference(text), text[:200]
        compared += 1
    assert compared > 0
