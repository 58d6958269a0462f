"""``pimem.words.tokens_many`` (what the push stores as a turn's words) gives, for every text, the
words :func:`pimem.words.tokens` gives (the local word index's), each once."""

from __future__ import annotations

import random

from pimem.words import tokens, tokens_many
from recall.corpus import random_text


def test_tokens_many_equals_tokens_per_text() -> None:
    rng = random.Random(24)
    texts = [random_text(rng, 0, 40) for _ in range(300)]
    texts += ["", "Crashed crash CRASHES getSignedUrl zeta_ratelimit s3.get 锁的问题 カタカナ 한국어 ǅemal İstanbul",
              "x" * 300_000 + " tail"]
    many = tokens_many(texts)
    assert len(many) == len(texts)
    for text, words in zip(texts, many, strict=True):
        assert len(words) == len(set(words))
        assert sorted(words) == sorted(tokens(text)), text[:80]
