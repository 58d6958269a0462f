"""The word index: what free-text recall ranks conversations with (entities keep the trigram index).

A contentless FTS5 table, ``pimem_words(user, reply)``, holds the words of every indexed turn, keyed
by the same doc key as the trigram index (:mod:`pimem.index`), and ``pimem_word_docs`` holds what
ranking needs per doc without reading its text: its session (``sessions.rowid``) and the length of
its two texts in characters. Both are written by :func:`pimem.index.build_pending`, in the same
transactions as the trigram postings, so a turn is in both indexes or in neither.

Words: FTS5's ``unicode61`` tokenizer (Unicode case folding, diacritics removed, every character that
is not a letter or a digit separates words, so ``zeta_ratelimit`` and ``s3.get`` give their parts)
under ``porter`` (English stemming: *crashed*, *crashes* and *crashing* are one word). Two things
``unicode61`` does not do are done here, in :func:`word_text`, on both the indexed and the asked text:

* CJK: a run of Han characters is one "word" to ``unicode61``; it is replaced by its overlapping
  two-character pieces (and a lone character by itself), the usual bigram indexing of Chinese and
  Japanese kanji; katakana and Hangul words stay whole; hiragana (particles, endings) is dropped.
* identifiers written in camelCase (``getSignedUrl``) are kept whole and their parts (``get signed
  url``) are added, so that either finds them.

``detail=column``: a posting says which column holds the word, not where or how often (BM25 with a
term frequency of one: prose repeats words less than code, and the positions would double the
index). ``columnsize=0``: a turn whose reply grew is indexed again under the same key without
removing its old postings, as the trigram index does; a word of the old text is still in the new one
except after an edit, so such leftovers are rare, and a rebuild removes them.
"""

from __future__ import annotations

import re
import sqlite3
import threading
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from itertools import compress
from typing import Any

from pimem.store.meta import has_object
from pimem.store.schema import WORD_TOKENIZER

WORDS_TABLE = "pimem_words"

# Indexed text per field: a longer text is indexed up to here (the rest of a 50 MB paste adds
# postings, not findability: what a turn is about is in its start).
INDEXED_CHARS = 200_000

# The scripts' ranges, shared with the free-text candidates (pimem.recall.freetext).
HAN = "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\U00020000-\U0002fa1f"
HIRAGANA = "\u3040-\u309f"
KATAKANA = "\u30a0-\u30ff\u31f0-\u31ff\uff66-\uff9f"
HANGUL = "\uac00-\ud7af"
_HAN_START = re.compile(f"[{HAN}]")
_HIRAGANA_START = re.compile(f"[{HIRAGANA}]")
_CJK_ANY = re.compile(f"[{HAN}{HIRAGANA}{KATAKANA}{HANGUL}]")
_SCRIPT_RUN = re.compile(f"[{HAN}]+|[{HIRAGANA}]+|[{KATAKANA}]+|[{HANGUL}]+")
_SNAKE = re.compile(r"\b\w+_\w+\b")
_CAMEL = re.compile(r"\b[A-Za-z][a-z0-9]*(?:[A-Z][a-z0-9]+)+[A-Za-z0-9]*\b|\b[A-Z]{2,}[a-z]+[A-Za-z0-9]*\b")
_CAMEL_HINT = re.compile(r"[A-Za-z0-9][A-Z]")
_HUMP = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|[0-9]+")


def _cjk_piece(run: str) -> str:
    first = run[0]
    if _HIRAGANA_START.match(first):
        return " "
    if _HAN_START.match(first):
        if len(run) == 1:
            return f" {run} "
        return " " + " ".join(run[i:i + 2] for i in range(len(run) - 1)) + " "
    return f" {run} "


Parts = tuple[tuple[str, ...], tuple[str, ...]]   # (camelCase words' parts, snake_case words' parts)


def _identifiers(chunk: str) -> Parts | None:
    """The identifier scans of one whitespace-separated chunk of text; None when neither matches."""
    camel = tuple(" ".join(_HUMP.findall(word)) for word in _CAMEL.findall(chunk)) \
        if _CAMEL_HINT.search(chunk) else ()
    snake = tuple(" ".join(piece for piece in word.split("_") if piece) for word in _SNAKE.findall(chunk)) \
        if "_" in chunk else ()
    return (camel, snake) if camel or snake else None


MEMO_SIZE = 50_000   # entries kept per memo; a full memo is emptied
MEMO_KEY_CHARS = 32   # longer pieces are computed each time (both memos: ~4 MB after 25,000 turns, 37 MB at most)


class _Memo(dict[str, Any]):
    """``function(key)``, computed once per distinct key: what :func:`word_text` finds per CJK run and
    per whitespace-separated chunk of text repeats from turn to turn (the same particles, words and
    identifiers), so an import pays the Python work once per distinct piece, not once per occurrence.
    Shared by threads: each dict operation is atomic, and a key computed twice gets the same value."""

    def __init__(self, function: Callable[[str], Any]) -> None:
        super().__init__()
        self.function = function

    def __missing__(self, key: str) -> Any:
        value = self.function(key)
        if len(key) <= MEMO_KEY_CHARS:
            if len(self) >= MEMO_SIZE:
                self.clear()
            self[key] = value
        return value


_CJK_PIECES = _Memo(_cjk_piece)
_IDENTIFIERS = _Memo(_identifiers)


def _cjk_words(match: re.Match[str]) -> str:
    return str(_CJK_PIECES[match.group(0)])


def _identifier_parts(text: str) -> list[str]:
    """The parts of every camelCase word of ``text``, then those of every snake_case word, in order, one
    string per word: what ``_CAMEL.findall`` and ``_SNAKE.findall`` over the whole text find. A match is
    a whole run of word characters and whitespace is never one, so they are the scans of the text's
    whitespace-separated chunks in order (each distinct chunk scanned once: ``_IDENTIFIERS``)."""
    found: list[Parts] = list(filter(None, map(_IDENTIFIERS.__getitem__, text.split())))
    if not found:
        return []
    return [part for camel, _ in found for part in camel] + [part for _, snake in found for part in snake]


def indexed(text: str) -> str:
    """The part of ``text`` the word index holds (its first :data:`INDEXED_CHARS` characters)."""
    return text[:INDEXED_CHARS] if len(text) > INDEXED_CHARS else text


def word_text(text: str) -> str:
    """``text`` as the word index sees it (see the module docstring): CJK cut into words, camelCase
    parts added at the end. Plain ASCII prose is returned as it is."""
    body, tail = word_text_pieces(text)
    return body + tail if tail else body


def word_text_pieces(text: str) -> tuple[str, str]:
    """:func:`word_text` in two pieces: ``text`` (its indexed part) with CJK cut into words (the very
    object ``text`` when nothing was cut), and what is appended to it ("" or the identifier parts)."""
    text = indexed(text)
    if not text.isascii() and _CJK_ANY.search(text):   # isascii() is a flag: no scan of ASCII text
        text = _SCRIPT_RUN.sub(_cjk_words, text)
    # Most texts cannot hold an identifier (no "_"; no capital after a letter or digit: every _CAMEL
    # match has one), which a cheaper test shows first.
    parts = _identifier_parts(text) if "_" in text or _CAMEL_HINT.search(text) else []
    return text, "\n" + " ".join(parts) if parts else ""


@dataclass(frozen=True)
class WordDoc:
    doc_key: int
    session: int          # sessions.rowid
    user_text: str
    reply_text: str


def word_texts(texts: list[str]) -> list[str]:
    """:func:`word_text` of each text (what :mod:`pimem.wordhelper` makes for an index batch)."""
    return [word_text(text) for text in texts]


def write_docs(conn: sqlite3.Connection, docs: Iterable[WordDoc], *, made: Sequence[str] | None = None) -> int:
    """Write the words of ``docs`` (inside the caller's transaction). Returns how many. ``made``: their
    word texts if already made (:func:`word_texts` of each doc's user text then reply text, in order)."""
    batch = list(docs)
    if not batch:
        return 0
    if made is None:
        made = word_texts([text for doc in batch for text in (doc.user_text, doc.reply_text)])
    if len(made) != 2 * len(batch):
        raise ValueError(f"{len(made)} word texts for {len(batch)} docs")
    conn.executemany(f"INSERT INTO {WORDS_TABLE}(rowid, user, reply) VALUES (?, ?, ?)",
                     [(doc.doc_key, made[2 * number], made[2 * number + 1]) for number, doc in enumerate(batch)])
    conn.executemany("INSERT OR REPLACE INTO pimem_word_docs(doc_key, session, user_chars, reply_chars) "
                     "VALUES (?, ?, ?, ?)",
                     [(doc.doc_key, doc.session, len(doc.user_text), len(doc.reply_text)) for doc in batch])
    return len(batch)


_local = threading.local()


def _tokenizer() -> sqlite3.Connection:
    """A private in-memory FTS5 pair per thread: ``q`` tokenizes as the word index does, ``r`` the same
    without the stemmer (the two give the same token at the same offset)."""
    mem: sqlite3.Connection | None = getattr(_local, "conn", None)
    if mem is None:
        mem = sqlite3.connect(":memory:", check_same_thread=True)
        mem.execute(f"CREATE VIRTUAL TABLE q USING fts5(x, tokenize = '{WORD_TOKENIZER}')")
        mem.execute("CREATE VIRTUAL TABLE qv USING fts5vocab(q, 'instance')")
        mem.execute(f"CREATE VIRTUAL TABLE r USING fts5(x, tokenize = '{WORD_TOKENIZER.removeprefix('porter ')}')")
        mem.execute("CREATE VIRTUAL TABLE rv USING fts5vocab(r, 'instance')")
        _local.conn = mem
    return mem


def tokens(text: str) -> list[str]:
    """The words of ``text`` exactly as the word index holds them (:func:`word_text`, then FTS5's own
    tokenizer and stemmer, run on a private in-memory table), in order, each once."""
    mem = _tokenizer()
    mem.execute("DELETE FROM q")
    mem.execute("INSERT INTO q(rowid, x) VALUES (1, ?)", (word_text(text),))
    found = [str(term) for (term,) in mem.execute("SELECT term FROM qv ORDER BY offset")]
    return list(dict.fromkeys(found))


_ASCII_WORD = re.compile(r"[A-Za-z0-9_]+")   # unicode61's tokens of ASCII text (``_`` is a token character)
POSITIONS_CHARS = 50_000   # a longer text's word positions are read from its start
# English verbs whose forms Porter's stemmer does not bring to one token (*buy* is held as ``bui``,
# *bought* as ``bought``; *meet*/``meet`` and *met*/``met``). A question asks in the present what the person
# said in the past ("What did I buy …" / "I bought …"; "Where did I meet Alex?" / "I met Alex at …"), while
# the conversations that only *ask* about the thing say the verb as asked ("I'm thinking of buying …"). So
# a query word that is any form of one of these verbs is searched as any form of it (free text's word
# ranking, :func:`verb_forms`). The rule, its scope (every form, every query word) and this list were fixed
# before the test that shipped them (docs/benchmarks.md, rounds 25 and 26: on fresh single-session-user
# questions hit@5 +3, hit@1 +2; its known cost: *spend* found as *spent* in other people's expense lists,
# *writing* as *written*). One group per verb, the present first; a token in two groups keeps the first.
# Not a form: one the index holds as a word of most turns (round q10): *ate* (Porter holds it as ``at``) and
# *won* (also what unicode61 leaves of every *won't*); searched, they made *eat* and *win* words of most turns.
IRREGULAR_VERBS = (
    "buy bought", "bring brought", "take took taken", "give gave given", "leave left", "meet met", "run ran",
    "come came", "pay paid", "wear wore worn", "eat eaten", "see saw seen", "find found", "tell told",
    "sell sold", "spend spent", "send sent", "lose lost", "teach taught", "catch caught",
    "fly flew flown", "drive drove driven", "ride rode ridden", "write wrote written", "begin began begun",
    "sing sang sung", "swim swam swum", "break broke broken", "choose chose chosen", "feel felt", "keep kept",
    "sleep slept", "hold held", "build built", "grow grew grown", "draw drew drawn", "hear heard",
    "fall fell fallen", "forget forgot forgotten", "lend lent", "steal stole stolen", "throw threw thrown",
    "wake woke woken", "speak spoke spoken", "stand stood", "understand understood", "fight fought",
    "drink drank drunk", "sit sat", "dig dug", "feed fed", "hang hung", "shoot shot", "seek sought",
    "make made", "think thought", "become became", "freeze froze frozen", "hide hid hidden", "bite bit bitten",
    "shake shook shaken", "forgive forgave forgiven", "lead led", "mean meant", "bend bent", "sink sank sunk",
    "ring rang rung", "stick stuck", "strike struck", "swing swung", "tear tore torn", "wind wound",
)


class _Verbs:
    """Index token of any form of a verb of IRREGULAR_VERBS -> (the group's words as written, their index
    tokens), built once (each word stemmed as the index stems it)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.groups: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] | None = None

    def get(self) -> dict[str, tuple[tuple[str, ...], tuple[str, ...]]]:
        with self.lock:
            if self.groups is None:
                groups: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {}
                for group in IRREGULAR_VERBS:
                    written = tuple(group.split())
                    held = tuple(dict.fromkeys(token for word in written for token in tokens(word)))
                    for token in held:
                        groups.setdefault(token, (written, held))
                self.groups = groups
            return self.groups


_VERBS = _Verbs()


def verb_forms(token: str) -> tuple[str, ...]:
    """The words (as written) of the irregular verb (:data:`IRREGULAR_VERBS`) that the index token ``token``
    is a form of (``bui`` and ``bought`` -> ``("buy", "bought")``), or ``()``."""
    found = _VERBS.get().get(token)
    return found[0] if found is not None else ()


def verb_tokens(token: str) -> tuple[str, ...]:
    """The index tokens of the other forms of ``token``'s irregular verb (``bui`` -> ``("bought",)``), or ``()``."""
    found = _VERBS.get().get(token)
    return tuple(other for other in found[1] if other != token) if found is not None else ()


ANSWER = "#answer"   # positions()' key of the words ``answer`` picks (no index token holds a "#")


class _Stems:
    """ASCII words (lower-cased) -> their tokens as the word index holds them (Porter), kept per process: a
    text's words are looked up (in C), and only words never seen are stemmed. (One dict of strings: the
    garbage collector does not walk it.)"""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.stem: dict[str, str] = {}

    def learn(self, unknown: list[str]) -> None:
        """Stem ``unknown`` (distinct ASCII words) in one pass of the tokenizer."""
        mem = _tokenizer()
        mem.execute("DELETE FROM q")
        mem.execute("INSERT INTO q(rowid, x) VALUES (1, ?)", (" ".join(unknown),))
        found = [str(term) for (term,) in mem.execute("SELECT term FROM qv ORDER BY offset")]
        if len(found) != len(unknown):   # every ASCII word is one token; if not, one word at a time
            found = [next(iter(tokens(word)), word) for word in unknown]
        with self.lock:
            if len(self.stem) + len(unknown) > MEMO_SIZE * 4:
                self.stem.clear()
            self.stem.update(zip(unknown, found, strict=True))


_STEMS = _Stems()


def positions(texts: Sequence[str], wanted: frozenset[str],
              answer: Callable[[str], bool] | None = None) -> list[dict[str, list[int]]]:
    """Where the index tokens ``wanted`` occur in each of ``texts``: token offsets as the word index counts
    them (FTS5's tokenizer and stemmer over :func:`word_text`'s text, without the identifier parts it adds
    at the end), ascending, per token. Of each text's first :data:`POSITIONS_CHARS` characters. With
    ``answer``, also where the words it picks (given lower case, unstemmed) are, under :data:`ANSWER`."""
    result: list[dict[str, list[int]]] = []
    seen_of: dict[int, list[str]] = {}
    for number, text in enumerate(texts):
        text = text[:POSITIONS_CHARS]
        if text.isascii():   # unicode61 over ASCII: runs of letters, digits and _, case folded
            seen_of[number] = _ASCII_WORD.findall(text.lower())
            result.append({})
        else:
            result.append(_positions_by_fts(text, wanted, answer))
    if not seen_of:
        return result
    distinct = set().union(*seen_of.values())
    if answer is not None:
        picked = {word for word in distinct if answer(word)}
        for number, seen in seen_of.items():
            spots = list(compress(range(len(seen)), map(picked.__contains__, seen)))
            if spots:
                result[number][ANSWER] = spots
    # The words never seen that may stem to a wanted token, stemmed in one pass. Porter only rewrites a
    # word's end (at most an "e" added, "y" made "i"): a word whose stem is t starts with t but for its
    # last two letters, so the others cannot be one of ``wanted``.
    starts = tuple(token[:max(len(token) - 2, 1)] for token in wanted)
    unknown = [word for word in distinct.difference(_STEMS.stem) if word.startswith(starts)]
    if unknown:
        _STEMS.learn(sorted(unknown))
    with _STEMS.lock:
        known = _STEMS.stem
        stem = {word: token for word in distinct if (token := known.get(word)) is not None and token in wanted}
    if not stem:
        return result
    for number, seen in seen_of.items():
        found = result[number]
        # the offsets of those words, picked out in C (a text has thousands of words, a few of these)
        for offset in compress(range(len(seen)), map(stem.__contains__, seen)):
            found.setdefault(stem[seen[offset]], []).append(offset)
    return result


def _positions_by_fts(text: str, wanted: frozenset[str], answer: Callable[[str], bool] | None
                      ) -> dict[str, list[int]]:
    if _CJK_ANY.search(text):
        text = _SCRIPT_RUN.sub(_cjk_words, text)
    mem = _tokenizer()
    mem.execute("DELETE FROM q")
    mem.execute("INSERT INTO q(rowid, x) VALUES (1, ?)", (text,))
    found: dict[str, list[int]] = {}
    for term, offset in mem.execute("SELECT term, offset FROM qv ORDER BY offset"):
        if term in wanted:
            found.setdefault(str(term), []).append(int(offset))
    if answer is not None:   # the words as written (``r``: no stemmer), at the same offsets
        mem.execute("DELETE FROM r")
        mem.execute("INSERT INTO r(rowid, x) VALUES (1, ?)", (text,))
        spots = [int(offset) for term, offset in mem.execute("SELECT term, offset FROM rv ORDER BY offset")
                 if answer(str(term))]
        if spots:
            found[ANSWER] = spots
    return found


def query_forms(text: str) -> list[tuple[str, str]]:
    """The words of ``text`` as (index token, the word as written, folded), in order, each token once.
    A MATCH expression must be given the written form: FTS5 runs the table's stemmer on the query too,
    and Porter's stemmer is not idempotent (*coffee* is held as ``coffe``, but ``coffe`` is searched as
    ``coff``, which no turn holds). Kept per process (``_QUERY_FORMS``): every page of a question, and
    many questions, ask the same words, and each costs four statements of the tokenizer."""
    return list(_QUERY_FORMS[text])


def _query_forms(text: str) -> tuple[tuple[str, str], ...]:
    mem = _tokenizer()
    prepared = word_text(text)
    for table in ("q", "r"):
        mem.execute(f"DELETE FROM {table}")
        mem.execute(f"INSERT INTO {table}(rowid, x) VALUES (1, ?)", (prepared,))
    found: dict[str, str] = {}
    for stemmed, written in mem.execute("SELECT qv.term, rv.term FROM qv JOIN rv ON rv.offset = qv.offset "
                                        "ORDER BY qv.offset"):
        found.setdefault(str(stemmed), str(written))
    return tuple(found.items())


_QUERY_FORMS = _Memo(_query_forms)


def words_enabled(conn: sqlite3.Connection) -> bool:
    return has_object(conn, "pimem_word_docs")


def delete_all(conn: sqlite3.Connection) -> None:
    """Empty the word index (a rebuild: :func:`pimem.index.rebuild` marks every doc pending)."""
    conn.execute(f"INSERT INTO {WORDS_TABLE}({WORDS_TABLE}) VALUES ('delete-all')")
    conn.execute("DELETE FROM pimem_word_docs")
    conn.execute("DELETE FROM pimem_words_pending")


_local_many = threading.local()


def tokens_many(texts: list[str]) -> list[list[str]]:
    """The words of each text as the word index holds them (as :func:`tokens`, each once), for many
    texts in one pass of the tokenizer: what the shared store's push stores per turn
    (:mod:`pimem.share.push`). Each list is in the index's term order, not the text's."""
    mem: sqlite3.Connection | None = getattr(_local_many, "conn", None)
    if mem is None:
        mem = sqlite3.connect(":memory:", check_same_thread=True)
        mem.execute(f"CREATE VIRTUAL TABLE q USING fts5(x, tokenize = '{WORD_TOKENIZER}', detail = column)")
        mem.execute("CREATE VIRTUAL TABLE qv USING fts5vocab(q, 'instance')")
        _local_many.conn = mem
    found: list[list[str]] = [[] for _ in texts]
    with mem:
        mem.execute("DELETE FROM q")
        mem.executemany("INSERT INTO q(rowid, x) VALUES (?, ?)",
                        ((index, word_text(text)) for index, text in enumerate(texts) if text))
        # detail=column and one column: one instance row per (term, doc) already (a DISTINCT would sort
        # them all: 4x the time). Grouped by term, which is the table's order (no sort): one row per
        # term instead of one per (term, doc) costs a third less than reading every pair.
        for term, docs in mem.execute("SELECT term, group_concat(doc, ' ') FROM qv GROUP BY term"):
            for doc in map(int, docs.split()):
                found[doc].append(term)
    return found
