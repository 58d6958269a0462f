"""Free text (a question, a selection, a hovered line, a pasted error) to the terms worth searching.

``recall {entities}`` matches what an agent extracted, exactly as given. People type or select text
instead, so this module decides which of its words to search, in two steps:

1. :func:`candidates` (store-independent): split the text into words; keep identifiers whole
   (``zeta_ratelimit``, ``getSignedUrl``, ``-XX:MaxRAMPercentage=70.0``, ``TS2345``) and also offer their
   parts (``signed``, ``url``, ``MaxRAMPercentage``); cut runs of Chinese at function words and
   stop characters and offer the overlapping two-character pieces of what is left (plus the piece
   itself when short); keep katakana words whole and drop hiragana (particles, endings); drop the stop
   words of English, German, French, Spanish, Chinese and Japanese, the phrasing of a question about a
   past conversation ("how did we … last spring") and the keywords of the main programming languages
   (``code.txt``; in a text that reads as a sentence only those that are how a question asks,
   ``asking.txt``: *how long*, *what type of*; *class*, *raise*, *join* are words of a question),
   unless nothing else is left. Lists: ``pimem/recall/stopwords/*.txt``.
2. :func:`choose_terms` (needs the store): estimate how many turns hold each candidate
   (:mod:`pimem.recall.termstats`, from the trigram index), drop those no turn holds, and keep the at most
   eight rarest, each with an integer weight that grows with its rarity (:func:`weight_for`). Terms in
   most turns (weight 1) and costly terms (:data:`COSTLY_CANDIDATES`) only when nothing else is there;
   never a term under a quarter of the rarest one's weight, nor a part that occurs only where its
   whole identifier occurs (it would add nothing but weight).

The recall itself is the entity recall with those weights (:mod:`pimem.recall`): a term counts its
weight twice when it is in the user's text and once when it is in the reply.
"""

from __future__ import annotations

import math
import re
import sqlite3
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace
from functools import cache
from pathlib import Path

from pimem import index, words
from pimem.recall import (
    MAX_LIMIT,
    MAX_PAGE_END,
    MAX_TEXT_CHARS,
    RecallError,
    RecallQuery,
    RecallRow,
    answers,
    make_query,
    ranking,
    recall_page,
    termstats,
)

MAX_TERMS = 8
STOPWORDS = Path(__file__).resolve().parent / "stopwords"   # package data (pyproject: package-data)
CODE_STOPWORDS = "code.txt"   # keywords of programming languages (not stop words in a sentence)
# Candidates whose frequency is looked up; longer texts keep the most specific-looking words (a prior
# from their shape, not their position), so a pasted page costs what a paragraph costs.
MAX_CANDIDATES = 32
# Text beyond this is not read (a selection or an error line is far shorter).
SCANNED_TEXT_CHARS = 20_000
MAX_TERM_CHARS = 200

_HAN, _HIRAGANA, _KATAKANA, _HANGUL = words.HAN, words.HIRAGANA, words.KATAKANA, words.HANGUL
_CJK = _HAN + _HIRAGANA + _KATAKANA + _HANGUL
_CJK_OR_NOT = re.compile(f"[{_CJK}]+|[^{_CJK}]+")
_CJK_RUN = re.compile(f"[{_CJK}]+")
_SCRIPT_RUNS = re.compile(f"[{_HAN}]+|[{_HIRAGANA}]+|[{_KATAKANA}]+|[{_HANGUL}]+")
_KANA = re.compile(f"[{_HIRAGANA}{_KATAKANA}]")
# Word boundaries: white space, brackets, quotes, commas, semicolons, and CJK/fullwidth punctuation.
_SPLIT = re.compile(r"[\s()\[\]{}<>\"'`,;!?¡¿|\u3000-\u303f\uff01-\uff0f\uff1a-\uff20\uff3b-\uff40\uff5b-\uff65]+")
_EDGE = ".:-/\\|=*#~^+&@$%,"
_OPTION = re.compile(r"-{1,2}[A-Za-z]")
# A hovered word: a run of word characters and the punctuation inside identifiers, paths and options
# (``.``, ``%``, ``\\``, ``:``, ``-``), or a run of CJK (the same ranges as the words above).
_HOVER_WORD = re.compile(rf"[\w.%\\:-]+|[{_CJK}]+")
# Inside an identifier: the separators between its parts, then camelCase humps (digits stay attached:
# TS2345, utf8, s3, base64).
_PART_SEPARATORS = re.compile(r"[^0-9A-Za-z\u00c0-\u024f\u0370-\u03ff\u0400-\u04ff]+")
_HUMPS = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z\u00df-\u024f]+[0-9]*|[A-Z]+[0-9]*|[0-9]+[A-Za-z]*")


@cache
def stop_words() -> frozenset[str]:
    """Every stop word of every list (lower case), read once from the package data."""
    return _read_stop_words(prose=False)


@cache
def prose_stop_words() -> frozenset[str]:
    """The stop words of the languages only: in a sentence, ``class``, ``raise``, ``type``, ``new`` or ``long``
    are words of the question, not code's keywords."""
    return _read_stop_words(prose=True)


def _read_stop_words(prose: bool) -> frozenset[str]:
    words: set[str] = set()
    for entry in sorted(STOPWORDS.glob("*.txt")):
        if entry.is_file() and not (prose and entry.name == CODE_STOPWORDS):
            for line in entry.read_text(encoding="utf-8").splitlines():
                if not line.startswith("#"):
                    words.update(word.lower() for word in line.split())
    return frozenset(words)


@cache
def _han_stop_pattern() -> re.Pattern[str]:
    """Chinese stop words and characters, longest first (a run of Han characters is cut at them)."""
    han = sorted((word for word in stop_words() if re.fullmatch(f"[{_HAN}]+", word)), key=lambda w: (-len(w), w))
    return re.compile("|".join(map(re.escape, han)))


@dataclass(frozen=True)
class Candidate:
    """A word of the text that may be searched. ``whole`` is the identifier it is a part of, if any."""

    term: str            # as written (first spelling seen)
    whole: str | None = None
    prior: int = 0       # shape-based specificity, used only to cut very long texts (higher first)
    stop: bool = False   # a stop word (searched only when nothing else is left)
    written: str | None = None   # the word as written, when ``term`` is its stem (the word index stems itself)
    prose: bool = False  # a part of a word that reads as prose here (``get-together``; ``YouTube`` in a question)
    said: bool = False   # a stop word that is a word of the question here (a time the person said: said_times)
    asks: str = ""       # what the whole text asks for, when it reads as a question (pimem.recall.answers.asked)

    @property
    def key(self) -> str:
        return self.term.lower()


def _is_stop(word: str, sentence: bool = False) -> bool:
    """A stop word; in a sentence, a language's only (code's keywords are words there)."""
    return word.lower() in (prose_stop_words() if sentence else stop_words())


def _shape_prior(word: str) -> int:
    """Identifiers and long words look more specific than short plain words."""
    prior = min(len(word), 20)
    if any(char.isdigit() for char in word) and any(char.isalpha() for char in word):
        prior += 6
    if "_" in word or any(char.isupper() for char in word[1:]) or re.search(r"[.:=/\\-]\w", word):
        prior += 8
    if _CJK_RUN.search(word):
        prior += 10
    return prior


_PLAIN_WORD = re.compile(r"[A-Za-z][a-z]{4,}")
_VOWELS = set("aeiou")


def stem(word: str) -> str:
    """A plain English word without its inflection, so that the substring match finds every form
    (``crashed`` -> ``crash`` finds *crashes*, ``limited`` -> ``limit`` finds *limiter*; ``queries`` ->
    ``query``). Only the endings -ies, -ing, -ed (five letters left at least), -es and -s;
    identifiers and other words are returned as they are."""
    if not _PLAIN_WORD.fullmatch(word):
        return word
    lower = word.lower()
    if lower.endswith("ies"):
        return word[:-3] + "y"
    for ending in ("ing", "ed"):
        if lower.endswith(ending) and len(lower) - len(ending) >= 5:
            root = word[:-len(ending)]
            if root[-1] == root[-2] and root[-1].lower() not in _VOWELS | {"l", "s", "z"}:
                root = root[:-1]   # skipped -> skip
            return root
    if (lower.endswith("es") and lower[-3] in "sxz") or lower.endswith(("ches", "shes")):
        return word[:-2] if len(lower) >= 6 else word
    if lower.endswith("s") and not lower.endswith(("ss", "us", "is")):
        return word[:-1]
    return word


def _identifier_parts(word: str) -> list[str]:
    """``s3.getSignedUrl`` -> ``s3``, ``getSignedUrl``, ``get``, ``Signed``, ``Url`` (each once)."""
    parts: list[str] = []
    pieces = [piece for piece in _PART_SEPARATORS.split(word) if piece]
    if len(pieces) > 1:
        parts.extend(pieces)
    for piece in pieces:
        humps = _HUMPS.findall(piece)
        if len(humps) > 1:
            parts.extend(humps)
    return [part for part in dict.fromkeys(parts) if part != word]


def bigram_segments(run: str, japanese: bool) -> list[str]:
    """Words of a run of Han characters: the run is cut at Chinese stop words and characters (not in
    Japanese text, whose kana already cut it); each piece gives its overlapping two-character pieces,
    and itself when it is at most six characters long."""
    pieces = [run] if japanese else [piece for piece in _han_stop_pattern().split(run) if piece]
    words: list[str] = []
    for piece in pieces:
        if len(piece) <= 6:
            words.append(piece)
        if len(piece) > 2:
            words.extend(piece[i:i + 2] for i in range(len(piece) - 1))
    return words


Segmenter = Callable[[str, bool], list[str]]


def _cjk_words(run: str, japanese: bool, segment: Segmenter) -> list[str]:
    words: list[str] = []
    for script_run in _SCRIPT_RUNS.findall(run):
        first = script_run[0]
        if "\u3040" <= first <= "\u309f":
            continue  # hiragana: particles and inflection
        if re.match(f"[{_KATAKANA}]", first) or re.match(f"[{_HANGUL}]", first):
            words.append(script_run)  # a loanword in katakana / a Korean word, whole
            continue
        words.extend(segment(script_run, japanese))
    return words


# Letters joined by hyphens (``faith-related``, ``UK-based``, ``Hardware-Aware``): an English compound, not code.
_COMPOUND = re.compile(r"[^\W\d_]+(?:-[^\W\d_]+)+")
# Letters only (``YouTube``, ``iPhone``, ``HelloFresh``): a name when the text around it is a sentence.
_LETTERS = re.compile(r"[^\W\d_]+")
# What code and errors have and questions do not: brackets, operators, a leading ``Name:`` (``KeyError: 'x'``).
_CODE_MARKS = re.compile(r"[(){}\[\]<>=;`|\\]|->|::|^\s*[\w.]+:(?:\s|$)")
# Times of the day, the week and the year are English stop words (en.txt, "when it was"): in "last Saturday",
# "this weekend" they say when the question's now was, which the conversation does not hold. Said without a
# deictic word before them ("on Saturday mornings", "Sunday mass", "the 'Summer Nights' festival", "in the
# evening") they are what the person said, and a word of the question (in a sentence; plurals too). A time
# word right after an anchored one is anchored too ("last Saturday morning").
_TIMES = frozenset(("afternoon", "autumn", "evening", "fall", "friday", "monday", "morning", "night", "saturday",
                    "spring", "summer", "sunday", "thursday", "tuesday", "wednesday", "weekend", "winter"))
_DEICTIC = frozenset(("last", "this", "next", "past", "coming", "previous", "that", "these", "those", "yesterday",
                      "today", "tonight", "tomorrow"))
_LATIN_WORD = re.compile(r"[A-Za-z]+")
SENTENCE_WORDS = 4          # a sentence has at least this many words,
SENTENCE_STOP_WORDS = 2     # this many of them stop words (what, did, I, my, the)


def _reads_as_sentence(text: str) -> bool:
    """One line of words with the stop words of a sentence and none of code's marks: a question, not a
    hovered line or a pasted error (which keep camelCase words as identifiers)."""
    line = text.strip()
    if "\n" in line or _CODE_MARKS.search(line):
        return False
    words = [word.strip(_EDGE + "?!\"'") for word in line.split()]
    words = [word for word in words if word]
    return len(words) >= SENTENCE_WORDS and sum(1 for word in words if _is_stop(word)) >= SENTENCE_STOP_WORDS


def said_times(text: str) -> frozenset[str]:
    """The time words of ``text`` (lower case, as written) that are words of the question: not anchored to
    the question's now by a deictic word before them (see ``_TIMES``)."""
    said: set[str] = set()
    anchored = False
    previous = ""
    for match in _LATIN_WORD.finditer(text):
        word = match.group(0).lower()
        single = word[:-1] if word.endswith("s") and word[:-1] in _TIMES else word
        if single in _TIMES:
            anchored = previous in _DEICTIC or anchored
            if not anchored:
                said.add(word)
        else:
            anchored = False
        previous = word
    return frozenset(said)


def _prose_word(word: str, sentence: bool) -> bool:
    """A word with parts that is prose, not an identifier: a hyphenated compound anywhere, a name of letters
    (camelCase included) inside a sentence. Prose is ranked by the word index, identifiers by substring."""
    return bool(_COMPOUND.fullmatch(word)) or (sentence and bool(_LETTERS.fullmatch(word)))


def candidates(text: str, segment: Segmenter = bigram_segments) -> list[Candidate]:
    """Every word of ``text`` that may be worth searching, stop words already dropped (unless nothing
    else is left), each once (case-insensitively), in the order they appear."""
    if len(text) > SCANNED_TEXT_CHARS:
        text = text[:SCANNED_TEXT_CHARS]
        head, space, _cut = text.rpartition(" ")
        text = head if space else text   # not the piece of a word the cut leaves at the end
    text = text.replace("\u2019", "'").replace("\u2018", "'")   # I’m, it’s: the typographic apostrophe splits too
    japanese = bool(_KANA.search(text))
    sentence = _reads_as_sentence(text)
    found: list[Candidate] = []
    said = said_times(text) if sentence else frozenset()
    for chunk in _SPLIT.split(text):
        for piece in _CJK_OR_NOT.findall(chunk):
            if _CJK_RUN.fullmatch(piece):
                found.extend(Candidate(word, None, _shape_prior(word)) for word in _cjk_words(piece, japanese, segment))
                continue
            word = piece.rstrip(_EDGE)
            word = word if _OPTION.match(word) else word.lstrip(_EDGE)
            if not any(char.isalnum() for char in word) or len(word) > MAX_TERM_CHARS:
                continue
            parts = [part for part in _identifier_parts(word) if len(part) >= 3 or not part.isascii()]
            if word.lower() in said:   # a time of day, week or year the person said: a word here
                found.append(Candidate(stem(word), None, _shape_prior(word), written=word, said=True))
                continue
            if _is_stop(word, sentence) or (parts and all(_is_stop(part, sentence) for part in parts)):
                found.append(Candidate(word, None, 0, stop=True))   # a stop word, or made of them (avons-nous)
                continue
            found.append(Candidate(stem(word), None, _shape_prior(word), written=word))
            prose = bool(parts) and _prose_word(word, sentence)
            found.extend(Candidate(part, word, _shape_prior(part) - 2, prose=prose) for part in parts)
    distinct: dict[str, Candidate] = {}
    for candidate in found:
        distinct.setdefault(candidate.key, candidate)
    everything = list(distinct.values())
    meaningful = [c for c in everything
                  if not c.stop and (c.said or not _is_stop(c.term, sentence)) and not _noise(c.term)]
    chosen = meaningful or [c for c in everything if not (len(c.term) == 1 and c.term.isascii())] or everything
    asks = answers.asked(text) if sentence else ""
    return [replace(c, asks=asks) for c in chosen] if asks else chosen


def word_at(line: str, column: int) -> str | None:
    """The word of ``line`` under the cursor at ``column`` (touching its start or end), or None: what
    the server-side word hover (``hover: "word"``) recalls, through :func:`candidates`."""
    return next((m.group(0) for m in _HOVER_WORD.finditer(line) if m.start() <= column <= m.end()), None)


def _noise(word: str) -> bool:
    """Words that match nearly anything as a substring: one ASCII character, and short numbers (line
    numbers, counts)."""
    if len(word) == 1 and word.isascii():
        return True
    return word.isdigit() and len(word) <= 2


def _shortlist(found: list[Candidate]) -> list[Candidate]:
    if len(found) <= MAX_CANDIDATES:
        return found
    ranked = sorted(range(len(found)), key=lambda i: (-found[i].prior, i))[:MAX_CANDIDATES]
    return [found[i] for i in sorted(ranked)]


@dataclass(frozen=True)
class Term:
    """A term chosen for the search: its text, the turns estimated to hold it, its weight."""

    text: str
    turns: int
    weight: int


# A term whose index lists yield at least this many turns, four times more than hold it, is costly:
# recalling it verifies every one of them (measured on bench/quality: 2,500 keeps the rare words a
# question needs, e.g. ``texture``, and leaves out those that cost most).
COSTLY_CANDIDATES = 2500
# Terms lighter than a quarter of the rarest term's weight are left out: they rarely change which
# conversation comes first, and their long lists are most of a recall's cost (half of it on bench/quality).
MIN_WEIGHT_SHARE_INVERSE = 4


def _costly(candidates: int, turns: int) -> bool:
    return candidates >= COSTLY_CANDIDATES and turns * 4 < candidates


def weight_for(turns: int, total: int) -> int:
    """Rarer terms weigh more: ``round(2·ln(total / turns))``, at least 1. A term in 5 of 20,000 turns
    weighs 17, one in a tenth of them 5, one in half of them 1."""
    return max(1, round(2 * math.log(max(total, 1) / max(turns, 1))))


def choose_terms(conn: sqlite3.Connection, found: Iterable[Candidate], limit: int = MAX_TERMS) -> list[Term]:
    """The at most ``limit`` rarest candidates that some turn holds, rarest first, with their weights.
    When no candidate occurs anywhere, the first ``limit`` are returned (with weight 1), so that the
    caller can still say what was searched."""
    shortlist = _shortlist(list(found))
    if not shortlist:
        return []
    estimate = termstats.estimate(conn, [candidate.key for candidate in shortlist])
    present = [(estimate.turns[c.key], position, c) for position, c in enumerate(shortlist)
               if estimate.turns[c.key] > 0]
    # A term in most turns weighs 1 and tells nothing apart, but costs a long list; a term whose index
    # lists hold far more turns than the term does (common trigrams: ``item`` in *system*, *iterate*)
    # makes recall read all of them. Both are searched only when nothing better is there.
    informative = [item for item in present if weight_for(item[0], estimate.total) > 1]
    cheap = [item for item in informative if not _costly(estimate.candidates[item[2].key], item[0])]
    present = cheap or informative or present
    if not present:
        return [Term(c.term, 0, 1) for c in shortlist[:limit]]
    present.sort(key=lambda item: (item[0], -len(item[2].key), item[1]))
    chosen: list[Term] = []
    for turns, _position, candidate in present:
        if len(chosen) == limit:
            break
        if any(candidate.key in term.text.lower() and turns <= term.turns for term in chosen):
            continue  # only ever found inside a term already chosen: it adds weight, not evidence
        weight = weight_for(turns, estimate.total)
        if chosen and weight * MIN_WEIGHT_SHARE_INVERSE < chosen[0].weight:
            break  # far lighter than the rarest term (see MIN_WEIGHT_SHARE_INVERSE)
        chosen.append(Term(candidate.term, turns, weight))
    return chosen


@dataclass
class TextRecall:
    """The answer to a free-text recall: the terms searched (with their weights) and the rows."""

    terms: list[Term]
    query: RecallQuery
    rows: list[RecallRow]
    total: int | None = None           # with query.with_total: the matching turns (RecallPage)
    total_capped: bool | None = None

    @property
    def entities(self) -> list[str]:
        return list(self.query.entities)


def parse_text(text: object) -> list[Candidate]:
    """The candidates of a free-text query, or RecallError naming ``text``."""
    if not isinstance(text, str):
        raise RecallError("text", "text must be a string")
    if len(text) > MAX_TEXT_CHARS:
        raise RecallError("text", f"text is longer than {MAX_TEXT_CHARS} characters ({len(text)})")
    found = candidates(text)
    if not found:
        raise RecallError("text", "text contains no word to recall")
    return found


def recall_candidates(conn: sqlite3.Connection, found: Sequence[Candidate], base: RecallQuery) -> TextRecall:
    """Choose the terms among ``found`` and recall them with their weights; ``base`` gives the limit and
    the filters (its entities are ignored)."""
    terms = choose_terms(conn, found)
    query = replace(base, entities=tuple(term.text for term in terms),
                    weights=tuple(term.weight for term in terms))
    page = recall_page(conn, query)
    return TextRecall(terms, query, page.rows, page.total, page.total_capped)


def recall_text(conn: sqlite3.Connection, text: object, limit: object = None, sources: object = None,
                cwd: object = None) -> TextRecall:
    """Free-text recall (what ``pimem recall --text`` and ``pimem/recall {text}`` do)."""
    found = parse_text(text)
    base = make_query([candidate.term for candidate in found[:MAX_TERMS]], limit, sources, cwd)
    return recall_conversations(conn, found, base)


# A word index still being built for more turns than this (a first import, an upgrade) is not used yet:
# free text then ranks with the trigram index (the weighted terms above), one row per conversation.
WORD_BACKLOG_LIMIT = ranking.PENDING_SCORED


def looks_like_code(found: Sequence[Candidate]) -> bool:
    """Whether the text is code or an error (a hovered line, a pasted stack trace) rather than prose: it
    holds an identifier (a word with parts: ``period_end``, ``getSignedUrl``, ``s3.get``, ``TypeError``).
    Such text is recalled by literal substrings of its rarest terms (the trigram index), which finds an
    identifier inside any other (``self.period_end``, ``periodEndDate``); the word index ranks prose,
    hyphenated compounds and names in a question included (:func:`_prose_word`): for them substring
    matching is wrong (``art-related`` is not inside *start-related*) and the trigram path is slow."""
    return any(candidate.whole is not None and not candidate.prose for candidate in found)


def recall_conversations(conn: sqlite3.Connection, found: Sequence[Candidate], base: RecallQuery) -> TextRecall:
    """Free text as people ask it: conversations ranked by the word index (:mod:`pimem.recall.ranking`),
    one row each (its best turn), paged by conversation; ``base`` gives the page and the filters."""
    if index.fts_enabled(conn) and words.words_enabled(conn) and not looks_like_code(found) \
            and ranking.pending_backlog(conn) <= WORD_BACKLOG_LIMIT:
        # The candidates dropped the stop words as written; this drops the index tokens that are stop words
        # (*one* held as ``on``): a language's only, as a keyword left in a sentence is a word (``classes``).
        qwords = ranking.query_words(_shortlist(list(found)), prose_stop_words())
        page = ranking.rank(conn, qwords, base)
        searched = list(dict.fromkeys(word.surface for word, _, _ in page.searched)) or \
            list(dict.fromkeys(w.surface for w in qwords))
        turns = {word.surface: count for word, count, _ in reversed(page.searched)}
        weight = {word.surface: max(1, round(value)) for word, _, value in reversed(page.searched)}
        terms = [Term(surface, turns.get(surface, 0), weight.get(surface, 1)) for surface in searched]
        query = replace(base, entities=tuple(searched[:MAX_TERMS]) or base.entities)
        order = {surface: position for position, surface in enumerate(searched)}
        for row in page.rows:   # in the order of the answer's entities (docs/lsp-extensions.md)
            row.matched.sort(key=lambda surface: order.get(surface, len(order)))
        total = page.total if base.with_total else None
        return TextRecall(terms, query, page.rows, total, False if base.with_total else None)
    # No word index yet: the weighted trigram recall, its rows grouped by conversation.
    wide = replace(base, offset=0, limit=min(MAX_PAGE_END, max(MAX_LIMIT, 4 * (base.offset + base.limit))),
                   with_total=False)
    answer = recall_candidates(conn, found, wide)
    seen: set[str] = set()
    rows: list[RecallRow] = []
    for row in answer.rows:
        if row.session_id not in seen:
            seen.add(row.session_id)
            rows.append(row)
    page_rows = rows[base.offset:base.offset + base.limit]
    total = len(rows) if base.with_total else None
    return TextRecall(answer.terms, replace(answer.query, limit=base.limit, offset=base.offset), page_rows, total,
                      False if base.with_total else None)
