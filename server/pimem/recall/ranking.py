"""Free text ranks conversations: BM25 over the word index (:mod:`pimem.words`), turns grouped by session.

A question ("where does my sister Emily live?"), a hovered line or a pasted error is a bag of words, and
what the person wants back is the conversation where that came up. So:

1. **Words** (:func:`pimem.recall.freetext.candidates`: stop words, question phrasing and code keywords
   dropped; identifiers whole and split; CJK pieces), each as the word index holds it (stemmed).
2. **Weights**: BM25's idf from the number of turns holding the word (counted in the index, kept per
   process). No word is left out for its cost: a common word weighs little, and is made cheap instead.
3. **Turns**: the postings of the rarer words are read (the rarest first, up to :data:`READ_BUDGET`
   postings in all; a word beyond it is read newest first up to the budget when nothing rarer is
   there). A turn scores, per word, idf × (:data:`USER_WEIGHT` if in what the person typed, plus
   :data:`REPLY_WEIGHT` if in the reply), each part normalised by the text's length (BM25 with a term
   frequency of one: the index keeps presence, not counts; b :data:`USER_B` for what the person typed,
   :data:`B` for the reply); in full scoring (4.) that sum is
   multiplied by 1 + :data:`COVERAGE` × the share of the query's idf the turn holds (a word counted
   whole when the person typed it, at :data:`REPLY_WEIGHT` when only the reply holds it).
4. **Conversations**: the best :data:`CANDIDATE_SESSIONS` sessions by their best turn are scored in full:
   every turn of theirs, the commoner words checked in their turns (index lookups by key range), and two
   rankings fused by reciprocal rank (k = :data:`RRF_K`): the session's best turn, and the session as one
   document of everything the person typed in it (BM25 over the session's user texts, the term frequency
   being the number of its turns that hold the word). What the person typed is what identifies a
   conversation; a long reply mentions everything.
5. **Passages**: the first :data:`PASSAGE_SESSIONS` conversations of that order are ranked once more, by
   the best passage of what the person typed (the question's words near one another in one user text,
   read at query time: :func:`passage_score`), and they are ordered by a weighted sum of their ranks by best
   turn, by session and by passage, and of their best turn's coverage (:data:`FUSED_HEAD`,
   :func:`fused_head_order`; without it, the passage rank is fused in with :data:`PASSAGE_SHARE`). A
   fact said in passing sits in one sentence of a long message about something else, which the length
   normalisation of 3. dilutes and word presence cannot tell from the same words strewn apart. When the
   question asks for a number or a time (:mod:`pimem.recall.answers`), a word of that kind counts in the
   passage as one more query word (:data:`ANSWER_WEIGHT`).
6. **Answer**: one row per conversation, its best turn (with the words it matched), paged by conversation.

Filters (sources, folder) apply to sessions before they compete. Turns not in the word index yet (the
newest ones, between a sync's commit and its index build) are scored from their text the same way.
"""

from __future__ import annotations

import bisect
import gc
import heapq
import json
import math
import sqlite3
import sys
import threading
import time
from collections import Counter, defaultdict
from collections.abc import Callable, Collection, Hashable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import compress, islice, repeat
from operator import add, eq, ge, is_not, itemgetter, lt, not_
from typing import TypeVar, cast

from pimem import words
from pimem.jsonl import loads_text
from pimem.paths import in_folder
from pimem.recall import answers, docmap, rankcache
from pimem.recall.query import RecallQuery
from pimem.recall.rows import ROW_COLUMNS, RecallRow, make_row
from pimem.store.batches import chunks, placeholders
from pimem.store.meta import STORE_ID, get_meta

K1 = 1.2
B = 0.75                      # length normalisation of a reply and of a session's typed text
# What the person typed is normalised by its length less than a reply is: a fact said in passing sits in one
# sentence of a long message about something else, and b 0.75 buries it under short texts holding one of the
# question's words (measured on LongMemEval dev: docs/benchmarks.md, "the typed text's length").
USER_B = 0.5
USER_WEIGHT = 1.0
REPLY_WEIGHT = 0.3
RRF_K = 60.0
TURN_SHARE = 0.7             # the best turn's share of the fused rank (the session's: the rest)
READ_BUDGET = 60_000          # postings read per query (the rarest words' first)
CANDIDATE_TURNS = 2_000        # turns whose sessions are looked up after the first scoring
CANDIDATE_SESSIONS = 150       # sessions scored in full
CHECKED_SESSIONS = 60         # sessions in which the commoner words are looked up
CHECK_GAP = 256               # sessions this close (in doc keys) are looked up in one key range
MAX_QUERY_WORDS = 32
CACHED_DF = 2_000             # a word's doc count is kept per process from this count on
PENDING_SCORED = 2_000         # turns not in the word index yet that are scored from their text
TOTALS_SAMPLE = 20_000         # the newest docs whose lengths give the averages
# A turn's score is multiplied by 1 + COVERAGE × the share of the query's weight (idf) the turn holds: one
# turn that holds most of the question beats one that holds one rare word (a coordination factor; BM25
# alone adds the words up, so a long turn with the rarest word outranks the turn that answers).
COVERAGE = 2.0
# Passages: the first PASSAGE_SESSIONS of the fused order are ranked once more, by their best position in
# a user text: the sum over the query's words of idf × exp(−d² / 2σ²), d the distance in words from there
# to the word's nearest occurrence (σ = PASSAGE_SIGMA words). That ranking adds PASSAGE_SHARE / (RRF_K +
# position) to their fused scores (the best turn's and the session's add up to 1). A fact said in passing
# sits in one sentence of a long message, which BM25's length normalisation dilutes. (Measured on
# LongMemEval dev: docs/benchmarks.md, "passages"; 50 sessions hold the first twenty conversations or so: round 14.)
PASSAGE_SESSIONS = 50
PASSAGE_SIGMA = 10.0
PASSAGE_SHARE = 0.5
# When the question asks for a number or a time (:mod:`pimem.recall.answers`), a word of that kind in the text is
# one more query word in its passages, of ANSWER_WEIGHT × the query words' smallest idf: the sentence that
# answers "how many tomato plants did I put in?" holds a number beside *tomato* and *plant*.
ANSWER_WEIGHT = 1.0
# Of a conversation's texts holding one query word, the passage step reads at most ANSWER_TEXTS (those of the
# best bound) for the answer's word (round q8: a bounded cost where the word is in many long texts).
ANSWER_TEXTS = 8
# The passage step's order (FUSED_HEAD): the first PASSAGE_SESSIONS conversations ordered by a score instead of their
# fused reciprocal ranks plus PASSAGE_SHARE of the passage rank: FUSED_WEIGHTS · (rr(best turn), rr(session),
# rr(passage), coverage), rr(x) = RRF_K / (RRF_K + 1 + the conversation's rank in the head by x), coverage the best
# turn's matched words' share of the query's idf (what a direct term adds to the turn score, which coverage already
# multiplies: the turn that holds the whole question first). The weights are the midpoints of round 15's out-of-fold
# fits; frozen before round 17's new proxy questions were written, and kept on them (docs/benchmarks.md, "Round 17").
# PASSAGE_SHARE 0 still turns the passage step off; with FUSED_HEAD its value is not used otherwise.
FUSED_HEAD = True
FUSED_WEIGHTS = (1.5, 2.65, 5.75, 5.75)
S = TypeVar("S", bound=Hashable)   # a conversation's key (local: a session rowid; shared: author, machine, id)
D = TypeVar("D", int, tuple[str, str, str])   # a turn's key (local: a doc rowid; shared: author, machine, key)


@dataclass(frozen=True)
class QueryWord:
    token: str                 # as the word index holds it (stemmed, folded)
    surface: str               # as the person wrote it (what a result says it matched)
    form: str = ""             # what a MATCH is given (unstemmed: FTS5 stems the query; words.query_forms)
    asks: str = ""             # what the whole question asks for (pimem.recall.answers), the same on each word
    forms: tuple[str, ...] = ()   # an irregular verb's words, as written (words.verb_forms): it is any of them

    @property
    def match(self) -> str:
        """What a MATCH is given: the word as a phrase, or, for a form of an irregular verb, any of the verb's
        forms (``("buy" OR "bought")``: words.IRREGULAR_VERBS)."""
        if self.forms:
            return "(" + " OR ".join(_phrase(word) for word in self.forms) + ")"
        return _phrase(self.form or self.token)


@dataclass
class Conversation:
    session: int               # sessions.rowid
    score: float
    best_doc: int
    best_turn_score: float
    matched_tokens: set[str] = field(default_factory=set)


@dataclass
class RankedPage:
    rows: list[RecallRow]
    total: int                 # conversations ranked (capped by CANDIDATE_SESSIONS)
    searched: list[tuple[QueryWord, int, float]] = field(default_factory=list)  # (word, turns, idf), rarest first


def query_words(found: Iterable[object], skip: frozenset[str] = frozenset()) -> list[QueryWord]:
    """The words of free-text candidates (:class:`pimem.recall.freetext.Candidate`), as indexed, each once
    (two forms of one irregular verb are one word, searched as any of its forms: the first asked). A token
    in ``skip`` (stop words) is left out unless nothing else is left: the stemmer makes some words one with
    a stop word (*one* is held as ``on``, *used* as ``us``), and the index cannot tell them apart."""
    candidates = list(found)
    kept = _query_words(candidates, skip)
    return kept or _query_words(candidates, frozenset())


def _query_words(found: Iterable[object], skip: frozenset[str]) -> list[QueryWord]:
    seen: dict[str, QueryWord] = {}
    verbs: set[tuple[str, ...]] = set()   # the irregular verbs asked: a second form of one is the same word
    for candidate in found:
        term = str(getattr(candidate, "term", candidate))
        # The word as written (freetext's own stem() serves substring matching; Porter stems here).
        written = str(getattr(candidate, "written", None) or term)
        asks = str(getattr(candidate, "asks", ""))
        for token, form in words.query_forms(written):
            forms = words.verb_forms(token)
            if token not in seen and token not in skip and forms not in verbs:
                seen[token] = QueryWord(token, term, form, asks, forms)
                if forms:
                    verbs.add(forms)
        if len(seen) >= MAX_QUERY_WORDS:
            break
    return list(seen.values())


class _Stats:
    """Per-store counts kept per process: docs and their average lengths, and each word's doc count.
    A count is read again when the index has grown by a twentieth since it was read."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.df: dict[tuple[str, str], tuple[int, int]] = {}   # (store, token) -> (docs when counted, df)


_STATS = _Stats()


_TOTALS: dict[str, tuple[int, tuple[int, float, float]]] = {}


def _totals(conn: sqlite3.Connection, store_key: str) -> tuple[int, float, float]:
    """(docs, average user text, average reply) in characters; the averages from the newest 20,000
    docs, read again when the index grew by a twentieth."""
    top = _turn_count(conn)
    cached = _TOTALS.get(store_key)
    if cached is not None and cached[0] * 21 >= top * 20 and top >= cached[0]:
        return cached[1]
    totals = _read_totals(conn)
    _TOTALS[store_key] = (top, totals)
    return totals


def _read_totals(conn: sqlite3.Connection) -> tuple[int, float, float]:
    row = conn.execute("SELECT count(*), avg(user_chars), avg(reply_chars) FROM "
                       "(SELECT user_chars, reply_chars FROM pimem_word_docs ORDER BY doc_key DESC LIMIT ?)",
                       (TOTALS_SAMPLE,)).fetchone()
    sampled = int(row[0] or 0)
    # count(*) of a large table is a scan; the largest rowid of turns (never deleted) is close and free.
    # (Not pimem_word_docs': its rowid is the doc key, (UTC day << 20) | n, some 10^10.)
    docs = sampled if sampled < TOTALS_SAMPLE else max(_turn_count(conn), sampled)
    return docs, max(float(row[1] or 1.0), 1.0), max(float(row[2] or 1.0), 1.0)


def _turn_count(conn: sqlite3.Connection) -> int:
    return int(conn.execute("SELECT max(rowid) FROM turns").fetchone()[0] or 0)


def _doc_count(conn: sqlite3.Connection, store: str, token: str, docs: int, form: str) -> int:
    """The docs holding the word ``token``, counted by the MATCH ``form`` (:attr:`QueryWord.match`, a function
    of the token), a common word's count kept per process."""
    key = (store, token)
    with _STATS.lock:
        cached = _STATS.df.get(key)
    if cached is not None and cached[0] * 21 >= docs * 20:
        return cached[1]
    df = int(conn.execute(f"SELECT count(*) FROM {words.WORDS_TABLE} WHERE {words.WORDS_TABLE} MATCH ?",
                          (form,)).fetchone()[0])
    if df >= CACHED_DF:   # only common words are worth keeping (and a rare word's count must be exact)
        with _STATS.lock:
            if len(_STATS.df) > 100_000:
                _STATS.df.clear()
            _STATS.df[key] = (docs, df)
    return df


def _phrase(token: str) -> str:
    return '"' + token.replace('"', '""') + '"'


_POSTING_SIZES: dict[tuple[str, str, str], int] = {}   # (store, column, form) -> docs read the last time


def _postings(conn: sqlite3.Connection, column: str, form: str, limit: int | None, store_key: str) -> set[int]:
    """The docs whose ``column`` holds the word, the newest ``limit`` of them with a limit. Handed over as
    one JSON array: a row per posting costs SQLite and Python ~40 % more (tens of thousands of postings a
    word). The set is filled in the same order as from the rows, newest first with a limit (its iteration
    order, which breaks ties downstream, is the same).

    A column's posting that held fewer than ``limit`` docs the last time this process read it (kept per
    store, column and word) is read whole, oldest first, and its newest ``limit`` docs are kept: the same
    docs in the same order, but FTS5 walks the list forwards, ~25 % less than backwards (a common word's
    user posting, which a column filter makes FTS5 read to its end when the column holds fewer docs
    than the limit). If it has grown beyond the limit since, the older docs are dropped and the next
    read is newest first again."""
    key = (store_key, column, form)
    whole = limit is not None and _POSTING_SIZES.get(key, limit) < limit
    tail = " ORDER BY rowid" if whole else f" ORDER BY rowid DESC LIMIT {int(limit)}" if limit is not None else ""
    found = conn.execute(
        f"SELECT json_group_array(rowid) FROM (SELECT rowid FROM {words.WORDS_TABLE} "
        f"WHERE {words.WORDS_TABLE} MATCH ?{tail})", (f"{column} : {form}",)).fetchone()[0]
    docs = cast("list[int]", loads_text(found))
    if limit is not None:
        if len(_POSTING_SIZES) > 100_000:
            _POSTING_SIZES.clear()
        _POSTING_SIZES[key] = len(docs)
        if whole:
            docs.reverse()       # newest first, as the rows of the limited read
            del docs[limit:]
    return set(docs)


def bm25_idf(count: int, docs: int) -> float:
    """BM25's idf of a word held by ``count`` of ``docs`` docs (local and shared ranking alike). A count kept
    from before the store shrank (the shared store's, after members' rows were forgotten) can exceed the docs:
    it is taken as every doc, so no weight is negative (a turn holding the word would rank below one without)."""
    docs = max(docs, 1)
    count = min(count, docs)
    return math.log(1 + (docs - count + 0.5) / (count + 0.5))


def _norm(length: float, average: float, b: float) -> float:
    """BM25's length factor for a word present once, b the share of normalisation (USER_B for a user text)."""
    return (K1 + 1) / (1 + K1 * (1 - b + b * length / average))


def _store_key(conn: sqlite3.Connection) -> str:
    """What the per-process counts are kept under: the store's file and its content's id (a store
    replaced or restored under the same path gets another id; pimem.store.meta)."""
    path = next((str(row[2]) for row in conn.execute("PRAGMA database_list") if row[1] == "main"), "")
    return f"{path}\0{get_meta(conn, STORE_ID) or ''}"


def rank(conn: sqlite3.Connection, qwords: Sequence[QueryWord], query: RecallQuery) -> RankedPage:
    """The conversations best matching ``qwords`` under ``query``'s filters, one row each (its best turn),
    the page ``query.offset``/``query.limit`` of them. The ranked list is kept per process while the store
    is unchanged (:mod:`pimem.recall.rankcache`), so the next page of a question is not ranked again."""
    if not qwords:
        return RankedPage([], 0)
    store_key = _store_key(conn)
    # Everything the list depends on: the store, the words (their order too: it orders float sums and
    # ties), the filters and the pool (which grows with a page beyond it).
    key = (store_key, tuple((w.token, w.surface, w.form, w.asks) for w in qwords), query.sources, query.cwd,
           _pool_size(query), FUSED_HEAD)
    ranked = _RANKED.get_or_make(conn, key, lambda: _ranked_without_gc(conn, qwords, query, store_key), _ranked_bytes)
    page = ranked.conversations[query.offset:query.offset + query.limit]
    rows = _rows(conn, page, {w.token: w.surface for w in qwords})
    return RankedPage(rows, len(ranked.conversations), list(ranked.searched))


@dataclass(frozen=True)
class _Ranked:
    conversations: tuple[Conversation, ...]          # best first (never changed once kept)
    searched: tuple[tuple[QueryWord, int, float], ...]


_CHANGES = rankcache.StoreChanges()
_RANKED: rankcache.RankedLists[_Ranked] = rankcache.RankedLists(_CHANGES, entries=32, max_bytes=8 << 20)


MAX_GC_PAUSE = 2.0   # seconds the cyclic collector is held off at most, while questions keep overlapping


class _GcPause:
    """Python's cyclic garbage collector paused while conversations are ranked, by any number of threads
    at once (it runs again when the last one is done, if it ran before the first began). A question
    makes tens of thousands of small containers (the postings' sets, the docs' scores, a session's
    turns): the collector was started ~10 times a question, walking the large sets each time it
    promoted them, ~8 % of a question's CPU at a million turns, and found nothing to free (what a
    question makes is freed when it ends, by reference counts; it makes no cycles). The pause is the
    whole process's: while questions keep overlapping (a client asking from several threads without a
    break, each begun before the last is done) it would never end, and the cycles the rest of the
    process makes (the server's event loop, a sync) would pile up; so once it has lasted MAX_GC_PAUSE
    seconds, the next question to begin or end runs a collection."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.depth = 0
        self.resume = False
        self.since = 0.0       # when the collector last ran or the pause began

    def __enter__(self) -> None:
        with self.lock:
            if self.depth == 0:
                self.resume = gc.isenabled()
                gc.disable()
                self.since = time.monotonic()
            else:
                self._collect_if_overdue()
            self.depth += 1

    def __exit__(self, *_exc: object) -> None:
        with self.lock:
            self.depth -= 1
            if self.depth == 0:
                if self.resume:
                    gc.enable()
            else:
                self._collect_if_overdue()

    def _collect_if_overdue(self) -> None:
        if self.resume and time.monotonic() - self.since > MAX_GC_PAUSE:
            gc.collect()
            self.since = time.monotonic()


_GC_PAUSE = _GcPause()


def _ranked_without_gc(conn: sqlite3.Connection, qwords: Sequence[QueryWord], query: RecallQuery,
                       store_key: str) -> _Ranked:
    with _GC_PAUSE:
        return _rank_all(conn, qwords, query, store_key)


def _ranked_bytes(ranked: _Ranked) -> int:
    """A generous estimate of what a kept list holds (objects, sets of matched words, the tuple)."""
    return 1_000 + sum(400 + 100 * len(c.matched_tokens) for c in ranked.conversations)


def _pool_size(query: RecallQuery) -> int:
    """The sessions ranked in full: CANDIDATE_SESSIONS, or as many as the page reaches."""
    return max(CANDIDATE_SESSIONS, query.offset + query.limit)


def _rank_all(conn: sqlite3.Connection, qwords: Sequence[QueryWord], query: RecallQuery, store_key: str) -> _Ranked:
    """Every candidate conversation ranked, best first (what :func:`rank` pages)."""
    docs, avg_user, avg_reply = _totals(conn, store_key)
    docs = max(docs, 1)   # an empty word index: the turns not in it yet are still scored below
    pending = _pending_docs(conn, qwords, store_key)
    form = {w.token: w.match for w in qwords}
    df = {w.token: _doc_count(conn, store_key, w.token, docs, w.match) for w in qwords}
    docs += len(pending)
    for user_tokens, reply_tokens, _session, _uc, _rc in pending.values():
        for token in user_tokens | reply_tokens:
            df[token] += 1
    idf = {token: bm25_idf(count, docs) for token, count in df.items()}
    indexed_df = {w.token: df[w.token] - sum(1 for u, r, *_ in pending.values() if w.token in u | r) for w in qwords}
    present = [w for w in qwords if indexed_df[w.token] > 0]
    present.sort(key=lambda w: df[w.token])
    read: list[str] = []
    spent = 0
    for w in present:
        if read and spent + df[w.token] > READ_BUDGET:
            break
        read.append(w.token)
        spent += df[w.token]
    checked = [w.token for w in present if w.token not in read]
    user_post: dict[str, set[int]] = {}
    reply_post: dict[str, set[int]] = {}
    for token in read:
        limit = READ_BUDGET if df[token] > READ_BUDGET else None
        user_post[token] = _postings(conn, "user", form[token], limit, store_key)
        reply_post[token] = _postings(conn, "reply", form[token], limit, store_key)
    # 1. every doc holding a read word, by presence and idf alone, the best CANDIDATE_TURNS of them.
    if len(read) == 1 and not pending:
        best_docs, first = _one_word_best(user_post[read[0]], reply_post[read[0]], idf[read[0]], CANDIDATE_TURNS)
    else:
        first = _presence_scores(read, user_post, reply_post, idf, pending)
        best_docs = _top(first, CANDIDATE_TURNS)
    # What the person typed, summed over a session's turns: a conversation that keeps coming back to
    # the question's words, though no single turn holds them all.
    # The docs' sessions: from the map this process keeps (pimem.recall.docmap; asked for after the
    # postings were read, so it is at least as new as they are), else read from the table.
    kept = docmap.current(conn, store_key)
    sessions_of, absent = _sessions_of(conn, kept, read, user_post, best_docs, pending)
    # 2. sessions by their best turn and by their typed words, filtered
    session_best = _session_best(best_docs, sessions_of(best_docs), first, absent)
    wanted = _pool_size(query)
    by_best = sorted(session_best, key=session_best.__getitem__, reverse=True)   # stable: ties in order
    by_typed = _typed_top(read, idf, user_post, sessions_of, absent, wanted)
    allowed = _filter_sessions(conn, list(dict.fromkeys(by_best + by_typed)), query)
    best_allowed = [s for s in by_best if s in allowed]
    typed_allowed = [s for s in by_typed if s in allowed]
    candidates = list(dict.fromkeys(best_allowed[:wanted] + typed_allowed[:wanted // 2]))
    if not candidates:
        return _Ranked((), tuple(sorted(((w, df[w.token], idf[w.token]) for w in qwords if df[w.token] > 0),
                                        key=lambda item: item[1])))
    # 3. every turn of those sessions, scored in full
    session_docs = _session_docs(conn, candidates) if kept is None else kept.session_docs(candidates)
    for doc, (_u, _r, session, uc, rc) in pending.items():
        if session in session_docs and doc not in {d for d, _, _ in session_docs[session]}:
            session_docs[session].append((doc, uc, rc))
    # The postings themselves (no copies: they are not read again but through these).
    holds_user: dict[str, set[int]] = dict(user_post)
    holds_reply: dict[str, set[int]] = dict(reply_post)
    for doc, (user_tokens, reply_tokens, _s, _uc, _rc) in pending.items():
        for token in user_tokens:
            holds_user.setdefault(token, set()).add(doc)
        for token in reply_tokens:
            holds_reply.setdefault(token, set()).add(doc)
    if checked:
        for token in checked:
            holds_user.setdefault(token, set())
            holds_reply.setdefault(token, set())
        _check_words(conn, checked, form, [session_docs[s] for s in candidates[:CHECKED_SESSIONS]],
                     holds_user, holds_reply)
    tokens = read + checked + [w.token for w in qwords
                               if w.token not in read and w.token not in checked and df[w.token] > 0]
    for token in tokens:
        holds_user.setdefault(token, set())
        holds_reply.setdefault(token, set())
    avg_session = avg_user * max(docs, 1) / max(_session_count(conn), 1)
    query_weight = sum(idf[token] for token in tokens) or 1.0
    conversations: list[Conversation] = []
    session_scores: dict[int, float] = {}
    # Which of the query words each doc of the candidates holds, found per word by a set intersection
    # (in C); a doc holding none scores 0.0 (the loop below adds nothing for it), so only the docs holding
    # one are scored word by word, their words in ``tokens``' order (the same additions in the same order).
    pool = {doc for session in candidates for doc, _, _ in session_docs[session]}
    users = [holds_user[token].intersection(pool) for token in tokens]
    replies = [holds_reply[token].intersection(pool) for token in tokens]
    held_words: dict[int, list[int]] = {}
    for at in range(len(tokens)):
        for doc in users[at].union(replies[at]):
            held_words.setdefault(doc, []).append(at)
    for session in candidates:
        matched: set[str]
        best_doc, best_score, matched = 0, -1.0, set()
        tf: dict[str, int] = defaultdict(int)
        length = 0.0
        for doc, uc, rc in session_docs[session]:
            length += uc
            ats = held_words.get(doc)
            if ats is None:   # value 0.0, no word
                if best_score < 0.0 or (best_score == 0.0 and doc > best_doc):
                    best_doc, best_score, matched = doc, 0.0, set()
                continue
            user_norm, reply_norm = _norm(uc, avg_user, USER_B), _norm(rc, avg_reply, B)
            value = 0.0
            covered = 0.0
            here: set[str] = set()
            for at in ats:
                token = tokens[at]
                in_user = doc in users[at]
                in_reply = doc in replies[at]
                if in_user:
                    tf[token] += 1
                    value += idf[token] * USER_WEIGHT * user_norm
                    covered += idf[token]
                elif in_reply:
                    # Coverage by the reply alone counts less: what the person typed identifies the turn.
                    covered += idf[token] * REPLY_WEIGHT
                if in_reply:
                    value += idf[token] * REPLY_WEIGHT * reply_norm
                if in_user or in_reply:
                    here.add(token)
            value *= 1 + COVERAGE * covered / query_weight
            if value > best_score or (value == best_score and doc > best_doc):
                best_doc, best_score, matched = doc, value, here
        whole = 0.0
        for token, count in tf.items():
            whole += idf[token] * count * (K1 + 1) / (count + K1 * (1 - B + B * length / max(avg_session, 1.0)))
        session_scores[session] = whole
        conversations.append(Conversation(session, 0.0, best_doc, best_score, matched))
    by_turn = sorted(conversations, key=lambda c: (-c.best_turn_score, -c.best_doc))
    by_session = sorted(conversations, key=lambda c: (-session_scores[c.session], -c.best_doc))
    fused: dict[int, float] = defaultdict(float)
    for position, conversation in enumerate(by_turn):
        fused[conversation.session] += TURN_SHARE / (RRF_K + position + 1)
    for position, conversation in enumerate(by_session):
        fused[conversation.session] += (1 - TURN_SHARE) / (RRF_K + position + 1)
    for conversation in conversations:
        conversation.score = fused[conversation.session]
    conversations.sort(key=lambda c: (-c.score, -c.best_turn_score, -c.best_doc))
    _add_passages(conn, conversations, session_docs, dict(zip(tokens, users, strict=True)), idf,
                  asked(qwords), session_scores, query_weight, verb_tokens(qwords))
    searched = sorted(((w, df[w.token], idf[w.token]) for w in qwords if df[w.token] > 0), key=lambda item: item[1])
    return _Ranked(tuple(conversations), tuple(searched))


def _session_best(best_docs: Sequence[int], sessions: Iterable[int | None], first: dict[int, float],
                  absent: int | None) -> dict[int, float]:
    """Each session's best step-1 score among ``best_docs`` (whose ``sessions`` are given in their order),
    sessions in the order first met: ``session_best[s] = max(session_best.get(s, 0.0), first[doc])`` doc
    by doc. ``best_docs`` come best first (``_top``, ``_one_word_best``), so a session's first doc holds its
    best score, and the dict is made in C; in any other order, the loop."""
    held = list(sessions)
    scores = list(map(first.__getitem__, best_docs))
    if scores and scores[-1] > 0.0 and all(map(ge, scores, islice(scores, 1, None))):
        # Keys in the order first met, each with its first doc's score (the reversed pairs' last write).
        found: dict[int | None, float] = dict.fromkeys(held, 0.0)
        found.update(zip(reversed(held), reversed(scores), strict=True))
        found.pop(None, None)
        found.pop(absent, None)
        return cast("dict[int, float]", found)
    session_best: dict[int, float] = {}
    for session, score in zip(held, scores, strict=True):
        if session is not None and session != absent:
            session_best[session] = max(session_best.get(session, 0.0), score)
    return session_best


def _typed_top(read: Sequence[str], idf: dict[str, float], user_post: dict[str, set[int]],
               sessions_of: Callable[[Collection[int]], Iterable[int | None]], absent: int | None,
               wanted: int) -> list[int]:
    """The ``wanted`` sessions of the most typed weight (``_top`` of it, ties in the order first met): per
    read word, its idf once per doc of the session whose user text holds it, added one doc at a time.
    A session's additions for one word come one after another, so counting its docs (in C, sessions in
    the order first met) and adding the weight that many times is the same sum (:func:`_add_typed`). With
    one read word a session's sum is ``repeated[n]`` for its n docs, which grows with n: the sessions of
    the most docs are those of the largest sums, ties alike, so ``_top`` is taken of the counts."""
    session_typed: dict[int, float] = {}
    for token in read:
        counts = Counter(sessions_of(user_post[token]))
        counts.pop(absent, None)                   # docs not in the index (deleted meanwhile)
        counts.pop(None, None)
        typed = cast("Counter[int]", counts)
        if len(read) == 1 and _increasing(_repeated(idf[token], max(typed.values(), default=0))):
            return _top(typed, wanted)
        _add_typed(session_typed, typed, idf[token])
    return _top(session_typed, wanted)


def _repeated(weight: float, most: int) -> list[float]:
    """0.0 + weight + ... + weight, n additions at ``[n]``, for n up to ``most``."""
    repeated = [0.0]
    for _ in range(most):
        repeated.append(repeated[-1] + weight)
    return repeated


def _increasing(values: Sequence[float]) -> bool:
    return all(map(lt, values, islice(values, 1, None)))


def _add_typed(session_typed: dict[int, float], counts: Counter[int], weight: float) -> None:
    """Add ``weight`` to ``session_typed[session]`` once per doc ``counts`` gives it, sessions new to it
    entered in ``counts``' order: the same floats as one addition at a time. 0.0 + weight + ... + weight
    (n additions) is at ``repeated[n]``, so a session met first here gets its sum in C; one met before adds
    the weight to its own, once per doc."""
    repeated = _repeated(weight, max(counts.values(), default=0))
    if not session_typed:   # every session is new: the sums in C alone
        session_typed.update(zip(counts, map(repeated.__getitem__, counts.values()), strict=True))
        return
    held = list(counts)
    sums = list(map(repeated.__getitem__, counts.values()))
    before = list(map(session_typed.get, held))
    for at in compress(range(len(held)), map(is_not, before, repeat(None))):
        value = cast(float, before[at])
        for _ in range(counts[held[at]]):
            value += weight
        sums[at] = value
    session_typed.update(zip(held, sums, strict=True))


def asked(qwords: Sequence[QueryWord]) -> str:
    """What the question of ``qwords`` asks for (:mod:`pimem.recall.answers`), or ``""``."""
    return next((w.asks for w in qwords if w.asks), "")


def verb_tokens(qwords: Sequence[QueryWord]) -> dict[str, tuple[str, ...]]:
    """Each query word's other index tokens, for a form of an irregular verb (``bui`` -> ``("bought",)``):
    what the passage step places as the word itself (:func:`passage_best`'s ``forms``)."""
    return {w.token: others for w in qwords if w.forms and (others := words.verb_tokens(w.token))}


def _add_passages(conn: sqlite3.Connection, conversations: list[Conversation],
                  session_docs: dict[int, list[tuple[int, int, int]]], holds_user: dict[str, set[int]],
                  idf: dict[str, float], asks: str, session_scores: dict[int, float], query_weight: float,
                  forms: dict[str, tuple[str, ...]]) -> None:
    """Rank the first PASSAGE_SESSIONS ``conversations`` (best first) by their best passage of what the
    person typed and add that ranking to their scores (:func:`passage_bonus`); the list is sorted again.
    The other conversations' scores are lower than all of these and do not move. With FUSED_HEAD, the head
    is ordered by :func:`fused_head_order` instead (``session_scores``: each one's BM25 of its typed text).
    ``holds_user``: per query word, the docs of ``conversations`` whose user text holds it (the candidates'
    docs only: a doc in none of them holds no query word, its weights are not looked up)."""
    head = conversations[:PASSAGE_SESSIONS]
    if PASSAGE_SHARE <= 0 or len(head) < 2:
        return
    weights = [(holding, idf[token]) for token, holding in holds_user.items()]
    holding_any: set[int] = set().union(*holds_user.values())

    def held(session: int) -> Iterator[tuple[int, list[float]]]:
        for doc, _, _ in session_docs.get(session, ()):
            yield doc, [weight for holding, weight in weights if doc in holding] if doc in holding_any else []

    def user_texts(docs: list[int]) -> dict[int, str]:
        rows = conn.execute(
            "SELECT d.doc_key, t.user_text FROM json_each(?) j JOIN pimem_docs d ON d.doc_key = j.value "
            "JOIN turns t ON t.turn_id = d.turn_id", (json.dumps(docs),)).fetchall()
        return {int(doc): str(text or "") for doc, text in rows}

    if FUSED_HEAD:
        order = head_order([c.session for c in head], held, idf, user_texts, asks,
                           [c.best_turn_score for c in head], [session_scores[c.session] for c in head],
                           [c.matched_tokens for c in head], query_weight, forms)
        top = head[0].score + 1.0   # the head stays above the rest, in its new order
        for position, i in enumerate(order):
            head[i].score = top + (len(head) - position)
        conversations[:len(head)] = [head[i] for i in order]
        return
    for c, added in zip(head, passage_bonus([c.session for c in head], held, idf, user_texts, asks, forms),
                        strict=True):
        c.score += added
    head.sort(key=lambda c: (-c.score, -c.best_turn_score, -c.best_doc))
    conversations[:len(head)] = head


def _rank_positions(values: Sequence[float]) -> list[int]:
    """Each value's 0-based rank, largest first; ties in the sequence's order."""
    positions = [0] * len(values)
    for position, i in enumerate(sorted(range(len(values)), key=lambda i: -values[i])):
        positions[i] = position
    return positions


def head_order(head: Sequence[S], held: Callable[[S], Iterable[tuple[D, list[float]]]], idf: dict[str, float],
               user_texts: Callable[[list[D]], dict[D, str]], asks: str, turn: Sequence[float],
               session: Sequence[float], matched: Sequence[Collection[str]], query_weight: float,
               forms: dict[str, tuple[str, ...]] | None = None) -> list[int]:
    """The passage step's order of ``head`` (FUSED_HEAD; local and shared ranking alike): each one's best passage
    (:func:`passage_best`; ``held``, ``user_texts`` and ``forms`` as there), its best turn's coverage (the
    ``matched`` words' idf over ``query_weight``), and :func:`fused_head_order` of those with ``turn`` and
    ``session`` scores."""
    passages = passage_best(head, held, idf, user_texts, asks, forms)
    coverage = [sum(idf.get(token, 0.0) for token in words_of) / query_weight for words_of in matched]
    return fused_head_order(turn, session, passages, coverage)


def fused_head_order(turn: Sequence[float], session: Sequence[float], passage: Sequence[float],
                     coverage: Sequence[float]) -> list[int]:
    """The indices of a head (its conversations in the order before the passage step) best first by
    FUSED_WEIGHTS · (rr(turn), rr(session), rr(passage), coverage), rr(x) = RRF_K / (RRF_K + 1 + rank by x);
    ties in the head's order (round 15's candidate, FUSED_HEAD)."""
    w_turn, w_session, w_passage, w_coverage = FUSED_WEIGHTS
    ranks = [_rank_positions(turn), _rank_positions(session), _rank_positions(passage)]
    score = [w_turn * RRF_K / (RRF_K + 1 + ranks[0][i]) + w_session * RRF_K / (RRF_K + 1 + ranks[1][i])
             + w_passage * RRF_K / (RRF_K + 1 + ranks[2][i]) + w_coverage * coverage[i] for i in range(len(turn))]
    return sorted(range(len(turn)), key=lambda i: -score[i])


def passage_bonus(head: Sequence[S], held: Callable[[S], Iterable[tuple[D, list[float]]]],
                  idf: dict[str, float], user_texts: Callable[[list[D]], dict[D, str]], asks: str = "",
                  forms: dict[str, tuple[str, ...]] | None = None) -> list[float]:
    """What each of ``head`` (the first PASSAGE_SESSIONS conversations, best first) gains from its best
    passage of what the person typed: PASSAGE_SHARE / (RRF_K + its rank by :func:`passage_score`; ties in
    ``head``'s order). ``held(conversation)`` gives each of its turns with the idf of every query word its
    user text holds; ``user_texts(turns)`` reads those texts. Only a text holding two query words or more
    is read (a text with one holds it at that word: its idf), and only while the sum of its words' idf (its
    bound) can beat what its conversation already has. When the question asks for a number or a time
    (``asks``), a word of that kind is one more query word (ANSWER_WEIGHT × the smallest idf), and a text with
    one query word is read too. Local and shared ranking both use it."""
    best = passage_best(head, held, idf, user_texts, asks, forms)
    by_passage = sorted(range(len(head)), key=lambda i: -best[i])   # ties: head's order
    added = [0.0] * len(head)
    for position, i in enumerate(by_passage):
        added[i] = PASSAGE_SHARE / (RRF_K + position + 1)
    return added


def passage_best(head: Sequence[S], held: Callable[[S], Iterable[tuple[D, list[float]]]],
                 idf: dict[str, float], user_texts: Callable[[list[D]], dict[D, str]], asks: str = "",
                 forms: dict[str, tuple[str, ...]] | None = None) -> list[float]:
    """Each of ``head``'s best passage score (:func:`passage_score`) of what the person typed, as
    :func:`passage_bonus` describes (the texts read and the bound cut-off). ``forms``: a query word's other
    index tokens (an irregular verb's, :func:`verb_tokens`), each placed in a text as the word itself."""
    extra = ANSWER_WEIGHT * min(idf.values()) if asks and idf else 0.0
    best: dict[S, float] = {}
    bounded: dict[S, list[tuple[float, D]]] = {}
    for conversation in head:
        floor = 0.0
        bounds: list[tuple[float, D]] = []
        singles: list[tuple[float, D]] = []
        for doc, weights in held(conversation):
            bound, top = extra, 0.0
            for weight in weights:
                bound += weight
                top = max(top, weight)
            floor = max(floor, top)
            if len(weights) > 1:
                bounds.append((bound, doc))
            elif extra and weights:
                singles.append((bound, doc))
        best[conversation] = floor
        # Best bound first; equal bounds by key, last first (the order is not neutral: a text's passage can
        # exceed its bound, as it counts query words whose postings were not read). Of the texts with one
        # query word (read for the answer's word only), the best ANSWER_TEXTS (round q8: all of them cost
        # ×300 where that word is in thousands of long texts).
        singles = sorted([item for item in singles if item[0] > floor], reverse=True)[:ANSWER_TEXTS]
        bounds = [item for item in bounds if item[0] > floor] + singles
        bounded[conversation] = sorted(bounds, reverse=True)
    # Those texts read and their words placed at once; then each conversation's, best bound first, until
    # the bound cannot beat what was found.
    read = [doc for bounds in bounded.values() for _, doc in bounds]
    placed: dict[D, dict[str, list[int]]] = {}
    scored = {**idf, words.ANSWER: extra} if extra else idf
    if read:
        texts = user_texts(read)
        pick = (lambda word: answers.is_answer(asks, word)) if extra else None
        placed = dict(zip(texts, _positions(list(texts.values()), frozenset(idf), pick, forms or {}), strict=True))
    for conversation, bounds in bounded.items():
        value = best[conversation]
        for bound, doc in bounds:
            if bound <= value:
                break
            if doc in placed:
                value = max(value, passage_score(placed[doc], scored, PASSAGE_SIGMA))
        best[conversation] = value
    return [best[conversation] for conversation in head]


def _positions(texts: Sequence[str], wanted: frozenset[str], pick: Callable[[str], bool] | None,
               forms: dict[str, tuple[str, ...]]) -> list[dict[str, list[int]]]:
    """:func:`pimem.words.positions` of ``wanted``, each word's other ``forms`` placed as the word itself
    (*bought* where *buy* is asked); a form that is itself a query word keeps its own place too."""
    others = {token: forms.get(token, ()) for token in wanted}
    extra = frozenset(other for group in others.values() for other in group)
    placed = words.positions(texts, wanted | extra, pick)
    if not extra:
        return placed
    for found in placed:
        spots = {token: found.get(token) for token in extra}
        for other in extra - wanted:
            found.pop(other, None)
        for token, group in others.items():
            merged = [spot for other in group if (spot_list := spots.get(other)) for spot in spot_list]
            if merged:
                found[token] = sorted(found.get(token, []) + merged)
    return placed


def passage_score(found: dict[str, list[int]], idf: dict[str, float], sigma: float) -> float:
    """The best position of a text for the query: at one of its query words' occurrences, the sum over the
    query words of idf × exp(−d² / 2σ²), d the distance (in words) to that word's nearest occurrence.
    Words side by side count (nearly) whole; far apart, each counts alone."""
    spread = 2 * sigma * sigma
    occurrences = [(idf[token], spots) for token, spots in found.items() if token in idf and spots]
    best = 0.0
    for _, spots in occurrences:
        for centre in spots:
            value = 0.0
            for weight, others in occurrences:
                at = bisect.bisect_left(others, centre)
                near = others[at] - centre if at < len(others) else sigma * 100
                if at and centre - others[at - 1] < near:
                    near = centre - others[at - 1]
                value += weight * math.exp(-near * near / spread)
            best = max(best, value)
    return best


def _presence_scores(read: Sequence[str], user_post: dict[str, set[int]], reply_post: dict[str, set[int]],
                     idf: dict[str, float], pending: dict[int, tuple[set[str], set[str], int, int, int]]
                     ) -> dict[int, float]:
    """Step 1's score of every doc holding a read word: per word, idf × USER_WEIGHT if what the person
    typed holds it, plus idf × REPLY_WEIGHT if the reply does. The hottest part (up to READ_BUDGET
    postings twice), so done in C but for the docs an earlier posting held: the same additions in the
    same order (word, user then reply) and the keys in the same order (ties: ``_top`` keeps it), so the
    same floats and the same answers as one loop over every posting."""
    first: dict[int, float] = defaultdict(float)
    for token in read:
        weight = idf[token]
        for posting, part in ((user_post[token], weight * USER_WEIGHT), (reply_post[token], weight * REPLY_WEIGHT)):
            fresh = dict.fromkeys(posting, part)       # 0.0 + part is part
            both = first.keys() & posting
            if both:                                   # first[doc] + part, in C
                fresh.update(zip(both, map(add, map(first.__getitem__, both), repeat(part)), strict=True))
            first.update(fresh)                        # a key already there keeps its place
    for doc, (user_tokens, reply_tokens, _session, _uc, _rc) in pending.items():
        for token in user_tokens:
            first[doc] += idf.get(token, 0.0) * USER_WEIGHT
        for token in reply_tokens:
            first[doc] += idf.get(token, 0.0) * REPLY_WEIGHT
    return first


def _one_word_best(users: set[int], replies: set[int], weight: float, count: int) -> tuple[list[int], dict[int, float]]:
    """``_top(_presence_scores(...), count)`` when one word is read and no doc is pending, and the scores of
    those docs, without scoring every doc. Its docs have three scores: user and reply part (what both
    hold; the sum step 1 makes), the user part (what the person typed only), the reply part; so the
    stable descending sort of ``_top`` lists the docs of both in step 1's order (the user posting's),
    then those of the user posting only (its order), then those of the reply only (the reply posting's
    order, in which step 1 added them), and the first ``count`` are taken from those three in C, most
    often from the first alone. When the weights do not order the three that way, step 1 and ``_top``."""
    user_part, reply_part = weight * USER_WEIGHT, weight * REPLY_WEIGHT
    both = user_part + reply_part
    if not both > user_part > reply_part:
        first = _presence_scores(["w"], {"w": users}, {"w": replies}, {"w": weight}, {})
        return _top(first, count), first
    groups = ((compress(users, map(replies.__contains__, users)), both),
              (compress(users, map(not_, map(replies.__contains__, users))), user_part),
              (compress(replies, map(not_, map(users.__contains__, replies))), reply_part))
    best: list[int] = []
    scores: dict[int, float] = {}
    for docs, value in groups:
        if len(best) >= count:
            break
        taken = list(islice(docs, count - len(best)))
        best.extend(taken)
        scores.update(dict.fromkeys(taken, value))
    return best, scores


def _top(scores: Mapping[int, float], count: int) -> list[int]:
    """The keys of ``heapq.nlargest(count, scores.items(), key=itemgetter(1))``, which is a stable
    descending sort's first ``count`` (ties in the dict's order): the same list, the scan in C. The
    ``count``-th best value (the floor) is picked out of the floats alone by a heap; the items above it
    (fewer than ``count``) are sorted, and the rest of the list is the first items equal to the floor, in
    the dict's order (where the stable sort puts them: after every larger value, in their order). Many
    docs share the floor (a score is a sum of a few words' weights): sorting them all cost more."""
    if count <= 0:
        return []
    if len(scores) <= count:
        return [key for key, _ in sorted(scores.items(), key=itemgetter(1), reverse=True)]
    floor = heapq.nlargest(count, scores.values())[-1]   # a sort of every value: 2-6x the time
    above = compress(scores.items(), map(lt, repeat(floor), scores.values()))
    ranked = [key for key, _ in sorted(above, key=itemgetter(1), reverse=True)]
    ranked.extend(islice(compress(scores, map(eq, repeat(floor), scores.values())), count - len(ranked)))
    return ranked


def _sessions_of(conn: sqlite3.Connection, kept: docmap.DocMap | None, read: Sequence[str],
                 user_post: dict[str, set[int]], best_docs: Sequence[int],
                 pending: dict[int, tuple[set[str], set[str], int, int, int]]
                 ) -> tuple[Callable[[Collection[int]], Iterable[int | None]], int | None]:
    """How ``_rank_all`` finds docs' sessions: a function giving each doc's session (in the docs'
    order), and what it gives for a doc not in the word index. A pending doc's session is its own."""
    if kept is None:
        typed: set[int] = set()
        for token in read:
            typed.update(user_post[token])
        session_of: dict[int, int] = _doc_sessions(conn, sorted(typed.union(best_docs)))
        for doc, (_u, _r, session, _uc, _rc) in pending.items():
            session_of[doc] = session
        return (lambda docs: map(session_of.get, docs)), None
    if not pending:
        return kept.sessions, docmap.MISSING
    own = {doc: session for doc, (_u, _r, session, _uc, _rc) in pending.items()}

    def with_pending(docs: Collection[int]) -> list[int]:
        return list(map(own.get, docs, kept.sessions(docs)))

    return with_pending, docmap.MISSING


def _doc_sessions(conn: sqlite3.Connection, docs: Sequence[int]) -> dict[int, int]:
    """Each doc's session (tens of thousands of docs a query: handed over as two JSON arrays, cheaper
    than a row per doc; the dict is filled in the same order)."""
    if not docs:
        return {}
    keys, sessions = conn.execute("SELECT json_group_array(w.doc_key), json_group_array(w.session) FROM json_each(?) j "
                                  "JOIN pimem_word_docs w ON w.doc_key = j.value", (json.dumps(list(docs)),)).fetchone()
    return dict(zip(loads_text(keys), loads_text(sessions), strict=True))


def _session_docs(conn: sqlite3.Connection, sessions: Sequence[int]) -> dict[int, list[tuple[int, int, int]]]:
    """Every doc of ``sessions`` with its lengths, in the index's order (at 1M turns some 10^4 docs a
    question: handed over as JSON arrays, cheaper than a row per doc)."""
    found: dict[int, list[tuple[int, int, int]]] = {session: [] for session in sessions}
    columns = conn.execute(
        "SELECT json_group_array(w.session), json_group_array(w.doc_key), json_group_array(w.user_chars), "
        "json_group_array(w.reply_chars) FROM json_each(?) j JOIN pimem_word_docs w ON w.session = j.value",
        (json.dumps(list(sessions)),)).fetchone()
    for session, doc, uc, rc in zip(*map(loads_text, columns), strict=True):
        found[session].append((doc, uc, rc))
    return found


def _session_count(conn: sqlite3.Connection) -> int:
    return int(conn.execute("SELECT max(rowid) FROM sessions").fetchone()[0] or 0)


def _check_words(conn: sqlite3.Connection, tokens: Sequence[str], form: dict[str, str],
                 groups: Sequence[list[tuple[int, int, int]]],
                 holds_user: dict[str, set[int]], holds_reply: dict[str, set[int]]) -> None:
    """Which docs of ``groups`` (one session's docs each) hold each of the commoner ``tokens``: one
    lookup by key range per word and run of sessions (FTS5 seeks a long list by rowid). Sessions whose
    key ranges lie within CHECK_GAP keys of each other (the same day's, most often) are one run: a
    lookup costs more than the few more postings its range then holds; only the groups' docs are kept."""
    runs: list[tuple[int, int, set[int]]] = []
    for low, high, members in sorted((min(doc for doc, _, _ in group), max(doc for doc, _, _ in group),
                                      {doc for doc, _, _ in group}) for group in groups if group):
        if runs and low - runs[-1][1] <= CHECK_GAP:
            runs[-1][2].update(members)
            runs[-1] = (runs[-1][0], max(runs[-1][1], high), runs[-1][2])
        else:
            runs.append((low, high, members))
    for low, high, members in runs:
        for token in tokens:
            # What the person typed only: a common word in a reply (they are long) tells little.
            for column, holds in (("user", holds_user),):
                for (doc,) in conn.execute(
                        f"SELECT rowid FROM {words.WORDS_TABLE} WHERE {words.WORDS_TABLE} MATCH ? "
                        "AND rowid BETWEEN ? AND ?", (f"{column} : {form[token]}", low, high)):
                    if doc in members:
                        holds[token].add(int(doc))


def _filter_sessions(conn: sqlite3.Connection, sessions: Sequence[int], query: RecallQuery) -> set[int]:
    if query.sources is None and query.cwd is None:
        return set(sessions)
    allowed: set[int] = set()
    for batch in chunks(list(sessions)):
        for rowid, source, cwd in conn.execute(
                f"SELECT rowid, source, cwd FROM sessions WHERE rowid IN ({placeholders(len(batch))})", batch):
            if query.sources is not None and source not in query.sources:
                continue
            if query.cwd is not None and not in_folder(str(cwd or ""), query.cwd):
                continue
            allowed.add(int(rowid))
    return allowed


class _PendingWords:
    """The words of the turns not in the word index yet, kept per process: tokenizing a turn's texts is
    most of a free-text query's cost while the index lags (2,000 turns: seconds), and the same turns
    are asked about again and again until the index build reaches them. An entry is used only while its
    turn's texts are the ones it was made from (their lengths and hashes), and dropped when the turn
    leaves the pending docs (indexed) or its texts changed, so answers are those of a fresh process."""

    STORES = 4                 # stores kept (a process rarely reads more than one)

    def __init__(self) -> None:
        self.lock = threading.Lock()
        # store -> doc -> (fingerprint of its texts, words of the user text, words of the reply)
        self.by_store: dict[str, dict[int, tuple[tuple[int, int, int, int], frozenset[str], frozenset[str]]]] = {}


_PENDING_WORDS = _PendingWords()


def _pending_docs(conn: sqlite3.Connection, qwords: Sequence[QueryWord], store_key: str
                  ) -> dict[int, tuple[set[str], set[str], int, int, int]]:
    """Turns not in the word index yet (at most PENDING_SCORED, newest first): the query words each
    holds in its user text and its reply, its session and lengths (a word of an irregular verb held when
    any of its forms is: as its MATCH finds it)."""
    as_word: dict[str, set[str]] = defaultdict(set)   # an index token -> the query words it is
    for w in qwords:
        for token in (w.token, *(words.verb_tokens(w.token) if w.forms else ())):
            as_word[token].add(w.token)
    wanted = frozenset(as_word)
    found: dict[int, tuple[set[str], set[str], int, int, int]] = {}
    rows = conn.execute(
        "SELECT p.doc_key, t.user_text, t.reply_text, s.rowid FROM "
        "(SELECT doc_key FROM pimem_pending UNION SELECT doc_key FROM pimem_words_pending ORDER BY doc_key DESC "
        f"LIMIT {PENDING_SCORED}) p JOIN pimem_docs d ON d.doc_key = p.doc_key JOIN turns t ON t.turn_id = d.turn_id "
        "JOIN sessions s ON s.session_id = t.session_id").fetchall()
    with _PENDING_WORDS.lock:
        known = _PENDING_WORDS.by_store.get(store_key, {})
    kept: dict[int, tuple[tuple[int, int, int, int], frozenset[str], frozenset[str]]] = {}
    for doc, user, reply, session in rows:
        user_text, reply_text = str(user or ""), str(reply or "")
        key = int(doc)
        fingerprint = (len(user_text), hash(user_text), len(reply_text), hash(reply_text))
        entry = known.get(key)
        if entry is None or entry[0] != fingerprint:
            entry = (fingerprint, frozenset(map(sys.intern, words.tokens(user_text))),
                     frozenset(map(sys.intern, words.tokens(reply_text))))
        kept[key] = entry
        user_tokens = {word for token in wanted.intersection(entry[1]) for word in as_word[token]}
        reply_tokens = {word for token in wanted.intersection(entry[2]) for word in as_word[token]}
        if user_tokens or reply_tokens:
            found[key] = (user_tokens, reply_tokens, int(session), len(user_text), len(reply_text))
    with _PENDING_WORDS.lock:
        stores = _PENDING_WORDS.by_store
        stores.pop(store_key, None)
        if kept:
            while len(stores) >= _PendingWords.STORES:
                del stores[next(iter(stores))]
            stores[store_key] = kept
    return found


def pending_backlog(conn: sqlite3.Connection) -> int:
    """Turns not in the word index yet (a first import or an upgrade still building it)."""
    return int(conn.execute("SELECT (SELECT count(*) FROM pimem_pending) + "
                            "(SELECT count(*) FROM pimem_words_pending)").fetchone()[0])


def _rows(conn: sqlite3.Connection, page: Sequence[Conversation], surface: dict[str, str]) -> list[RecallRow]:
    if not page:
        return []
    by_doc: dict[int, RecallRow] = {}
    keys = [c.best_doc for c in page]
    for values in conn.execute(
            f"SELECT {ROW_COLUMNS}, d.doc_key FROM json_each(?) j JOIN pimem_docs d ON d.doc_key = j.value "
            "JOIN turns t ON t.turn_id = d.turn_id JOIN sessions s ON s.session_id = t.session_id",
            (json.dumps(keys),)):
        by_doc[int(values[-1])] = make_row(values[:-1], 0)
    rows: list[RecallRow] = []
    for conversation in page:
        row = by_doc.get(conversation.best_doc)
        if row is None:
            continue
        row.hits = len(conversation.matched_tokens)
        row.matched = list(dict.fromkeys(surface[token] for token in conversation.matched_tokens if token in surface))
        rows.append(row)
    return rows
