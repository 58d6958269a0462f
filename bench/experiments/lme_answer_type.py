#!/usr/bin/env python3
"""Experiment (issue 21, round 14): the kind of answer a question asks for, in the passage step (kept for number and
time as pimem/recall/answers.py; the ``name`` kind here measured and not kept). A question
about a fact said in passing often asks for a number, an amount or a time ("How many tomato plants did I put
in?", "When did I rearrange my living room furniture?"), and the sentence that answers it holds one next to the
question's words ("I just planted 12 new tomato saplings today"), where the rivals about the same topic hold
none. Here the passage step (``ranking.passage_bonus``) counts such an expression as one more query word, of
weight ``--weight`` × the query words' smallest idf, when the question asks for that kind: ``number`` (*how
many / much / long / often / old / far*: digits and number words) or ``time`` (*when*, *what time / date /
day*: digits, number words, months, weekdays and the day words *today*, *yesterday*, *ago*, ...); with
``--kinds name,number,time`` also ``name`` (*where*, *who*, *which*, *name of*: a capitalised word not at a
sentence's start). ``--self W``: in a first-person question, *I*, *my*, *me*, *we*, *our* ... near the words count
too, weight W × the smallest idf (measured, not kept). Only ASCII texts are searched for such words here.

Patches the ranking in this process only and runs ``lme_user_evidence.py``'s measurement (dev, its proxies and
a proxy file), so the options are those of that script plus ``--weight`` and ``--kinds``:

    nice -n 10 .venv/bin/python bench/experiments/lme_answer_type.py --weight 1.0 --dir /work/data/r1/real \\
        --questions bench/lme/proxy_ssu.json --out /tmp/type.json
"""

from __future__ import annotations

import re
import sys
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "lme"))
sys.path.insert(0, str(HERE))

import lme_ranking  # noqa: E402
import lme_user_evidence  # noqa: E402

from pimem import words  # noqa: E402
from pimem.recall import ranking  # noqa: E402
from pimem.recall.answers import NUMBER_WORDS, TIME_WORDS  # noqa: E402  (the words the server counts)

_ASKS_NUMBER = re.compile(r"\bhow (many|much|long|often|old|far)\b", re.I)
_ASKS_TIME = re.compile(r"^\W*when\b|\bwhat (time|date|day|year|month)\b|\bwhich (day|date|year|month)s?\b"
                        r"|\bhow (many|much) (days|weeks|months|years|hours|minutes)\b", re.I)   # elapsed
_DIGIT = re.compile(r"\d")
KIND_TOKEN = "\x00kind"

ASKED: dict[str, Any] = {"kind": None, "weight": 1.0, "kinds": ("number", "time"), "self": 0.0, "personal": False}
SELF_TOKEN = "\x00self"
SELF_WORDS = frozenset(("i", "my", "me", "mine", "myself", "we", "our", "us"))
_ASKS_SELF = re.compile(r"\b(I|my|me|mine|myself)\b")


_ASKS_NAME = re.compile(r"^\W*(where|who|which)\b|\bname of\b|\bwhat(?:'s| is) the name\b", re.I)


def name_spots(text: str) -> list[int]:
    """Offsets (in _ASCII_WORD tokens) of capitalised words not at a sentence's start, nor *I*."""
    spots = []
    for offset, match in enumerate(words._ASCII_WORD.finditer(text)):
        word = match.group(0)
        if not (word[0].isupper() and word not in ("I", "Im")):
            continue
        before = text[:match.start()].rstrip()
        if before and before[-1] not in ".!?\n\"'(":
            spots.append(offset)
    return spots


def asked_kind(question: str) -> str | None:
    if "name" in ASKED["kinds"] and _ASKS_NAME.search(question):
        return "name"
    if "time" in ASKED["kinds"] and _ASKS_TIME.search(question):
        return "time"
    if "number" in ASKED["kinds"] and _ASKS_NUMBER.search(question):
        return "number"
    return None


def kind_of(word: str, kind: str) -> bool:
    if _DIGIT.search(word) or word in NUMBER_WORDS:
        return True
    return kind == "time" and word in TIME_WORDS


_original = ranking.passage_bonus


def passage_bonus(head: Sequence[Any], held: Callable[[Any], Iterable[tuple[Any, list[float]]]],
                  idf: dict[str, float], user_texts: Callable[[list[Any]], dict[Any, str]],
                  _asks: str = "") -> list[float]:
    kind = ASKED["kind"]   # the experiment's own kinds (the product's ``asks`` is ignored here)
    personal = ASKED["personal"] and ASKED["self"] > 0
    if (kind is None and not personal) or not idf:
        return _original(head, held, idf, user_texts)
    extra = ASKED["weight"] * min(idf.values())
    weights = {**idf, KIND_TOKEN: extra, SELF_TOKEN: ASKED["self"] * min(idf.values())}
    docs_of: dict[Any, list[Any]] = {}
    best: dict[Any, float] = {}
    for conversation in head:
        docs_of[conversation] = []
        floor = 0.0
        for doc, found in held(conversation):
            if found:
                floor = max(floor, max(found))
                docs_of[conversation].append(doc)
        best[conversation] = floor
    read = [doc for docs in docs_of.values() for doc in docs]
    texts = user_texts(read) if read else {}
    placed = dict(zip(texts, words.positions(list(texts.values()), frozenset(idf)), strict=True))
    for doc, text in texts.items():
        if personal and text.isascii():
            mine = [i for i, word in enumerate(words._ASCII_WORD.findall(text[:words.POSITIONS_CHARS].lower()))
                    if word in SELF_WORDS]
            if mine:
                placed[doc] = {**placed[doc], SELF_TOKEN: mine}
        if kind is None:
            continue
        if kind == "name":
            spots = name_spots(text[:words.POSITIONS_CHARS]) if text.isascii() else []
        else:
            spots = [i for i, word in enumerate(words._ASCII_WORD.findall(text[:words.POSITIONS_CHARS].lower()))
                     if kind_of(word, kind)] if text.isascii() else []
        if spots:
            placed[doc] = {**placed[doc], KIND_TOKEN: spots}
    for conversation, docs in docs_of.items():
        for doc in docs:
            if placed.get(doc):
                best[conversation] = max(best[conversation], ranking.passage_score(placed[doc], weights,
                                                                                   ranking.PASSAGE_SIGMA))
    by_passage = sorted(range(len(head)), key=lambda i: -best[head[i]])
    added = [0.0] * len(head)
    for position, i in enumerate(by_passage):
        added[i] = ranking.PASSAGE_SHARE / (ranking.RRF_K + position + 1)
    return added


def main() -> int:
    argv = sys.argv[1:]
    for flag, key, cast in (("--weight", "weight", float), ("--kinds", "kinds", lambda v: tuple(v.split(","))),
                            ("--self", "self", float)):
        if flag in argv:
            at = argv.index(flag)
            ASKED[key] = cast(argv[at + 1])
            del argv[at:at + 2]
    ranking.passage_bonus = passage_bonus   # type: ignore[assignment]
    ranker = lme_ranking.pimem_ranker

    def typed_ranker(store: Path, mapping: dict[str, str]) -> Callable[[str], list[str]]:
        ask = ranker(store, mapping)

        def run(text: str) -> list[str]:
            ASKED["kind"] = asked_kind(text)
            ASKED["personal"] = bool(_ASKS_SELF.search(text))
            return ask(text)

        return run

    lme_user_evidence.pimem_ranker = typed_ranker   # type: ignore[assignment]
    sys.argv = [sys.argv[0], *argv]
    return lme_user_evidence.main()


if __name__ == "__main__":
    sys.exit(main())
