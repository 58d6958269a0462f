"""Free text ranks conversations: BM25 over the word index (:mod:`pimem.words`), turns grouped by session.

Work in progress (experiment version): every posting of every query word is read.
"""

from __future__ import annotations

import math
import sqlite3
from collections import defaultdict
from dataclasses import dataclass, field

from pimem import words


@dataclass
class Params:
    k1: float = 1.2
    b: float = 0.75
    user_weight: float = 1.0
    reply_weight: float = 0.3
    mode: str = "rrf"        # max | session | rrf | sum
    rrf_k: float = 60.0
    other_turns: float = 0.25
    session_reply_weight: float = 0.0


@dataclass
class Ranked:
    session: int
    score: float
    best_doc: int
    best_score: float
    docs: list[tuple[float, int]] = field(default_factory=list)


def _postings(conn: sqlite3.Connection, column: str, token: str) -> list[int]:
    expression = f'{column} : "{token}"'
    return [int(key) for (key,) in conn.execute(
        f"SELECT rowid FROM {words.WORDS_TABLE} WHERE {words.WORDS_TABLE} MATCH ?", (expression,))]


def _totals(conn: sqlite3.Connection) -> tuple[int, float, float, int]:
    row = conn.execute("SELECT count(*), avg(user_chars), avg(reply_chars), count(DISTINCT session) "
                       "FROM pimem_word_docs").fetchone()
    return int(row[0] or 0), float(row[1] or 1.0), float(row[2] or 1.0), int(row[3] or 0)


_TOTALS: dict[int, tuple[int, float, float, int]] = {}


@dataclass
class Evidence:
    toks: list[str]
    user_post: dict[str, list[int]]
    reply_post: dict[str, list[int]]
    info: dict[int, tuple[int, int, int]]
    lengths: dict[int, float]
    totals: tuple[int, float, float, int]


_DOCS: dict[int, dict[int, tuple[int, int, int]]] = {}
_LENGTHS: dict[int, dict[int, float]] = {}


def gather(conn: sqlite3.Connection, toks: list[str]) -> Evidence:
    key = id(conn)
    if key not in _TOTALS:
        _TOTALS[key] = _totals(conn)
        _DOCS[key] = {int(d): (int(s), int(u), int(r)) for d, s, u, r in
                      conn.execute("SELECT doc_key, session, user_chars, reply_chars FROM pimem_word_docs")}
        lengths: dict[int, float] = defaultdict(float)
        for session, uc, _rc in _DOCS[key].values():
            lengths[session] += uc
        _LENGTHS[key] = dict(lengths)
    user_post: dict[str, list[int]] = {t: _postings(conn, "user", t) for t in toks}
    reply_post: dict[str, list[int]] = {t: _postings(conn, "reply", t) for t in toks}
    return Evidence(toks, user_post, reply_post, _DOCS[key], _LENGTHS[key], _TOTALS[key])


def rank(conn: sqlite3.Connection, toks: list[str], limit: int, params: Params | None = None) -> list[Ranked]:
    return score(gather(conn, toks), limit, params)


def score(evidence: Evidence, limit: int, params: Params | None = None) -> list[Ranked]:
    p = params or Params()
    toks, user_post, reply_post, info = evidence.toks, evidence.user_post, evidence.reply_post, evidence.info
    n_docs, avg_user, avg_reply, n_sessions = evidence.totals
    turn_score: dict[int, float] = defaultdict(float)
    sess_tf: dict[int, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    sess_df: dict[str, int] = {}
    for t in toks:
        df = len(set(user_post[t]) | set(reply_post[t]))
        idf = math.log(1 + (n_docs - df + 0.5) / (df + 0.5))
        sessions_with: set[int] = set()
        for doc in user_post[t]:
            if doc not in info:
                continue
            session, uc, _rc = info[doc]
            norm = (p.k1 + 1) / (1 + p.k1 * (1 - p.b + p.b * uc / avg_user))
            turn_score[doc] += idf * p.user_weight * norm
            sess_tf[session][t] += 1
            sessions_with.add(session)
        for doc in reply_post[t]:
            if doc not in info:
                continue
            session, _uc, rc = info[doc]
            norm = (p.k1 + 1) / (1 + p.k1 * (1 - p.b + p.b * rc / avg_reply))
            turn_score[doc] += idf * p.reply_weight * norm
        sess_df[t] = len(sessions_with)
    by_session: dict[int, list[tuple[float, int]]] = defaultdict(list)
    for doc, value in turn_score.items():
        by_session[info[doc][0]].append((value, doc))
    ranked: list[Ranked] = []
    for session, docs in by_session.items():
        docs.sort(reverse=True)
        ranked.append(Ranked(session, docs[0][0], docs[0][1], docs[0][0], docs[:5]))
    if p.mode == "sum":
        for r in ranked:
            r.score = r.best_score + p.other_turns * sum(value for value, _ in r.docs[1:3])
    elif p.mode != "max":
        avg_sess = (avg_user * n_docs / max(n_sessions, 1))
        sess_scores: dict[int, float] = {}
        for r in ranked:
            total = 0.0
            dl = evidence.lengths.get(r.session, avg_sess)
            for t, tf in sess_tf[r.session].items():
                sdf = sess_df[t]
                idf = math.log(1 + (n_sessions - sdf + 0.5) / (sdf + 0.5))
                total += idf * tf * (p.k1 + 1) / (tf + p.k1 * (1 - p.b + p.b * dl / avg_sess))
            sess_scores[r.session] = total
        if p.mode == "session":
            for r in ranked:
                r.score = sess_scores[r.session]
        else:
            by_max = sorted(ranked, key=lambda r: -r.best_score)
            by_sess = sorted(ranked, key=lambda r: -sess_scores[r.session])
            rrf: dict[int, float] = defaultdict(float)
            for position, r in enumerate(by_max):
                rrf[r.session] += 1 / (p.rrf_k + position + 1)
            for position, r in enumerate(by_sess):
                rrf[r.session] += 1 / (p.rrf_k + position + 1)
            for r in ranked:
                r.score = rrf[r.session]
    ranked.sort(key=lambda r: (-r.score, -r.best_doc))
    return ranked[:limit]


def _session_lengths(conn: sqlite3.Connection, sessions: list[int]) -> dict[int, float]:
    out: dict[int, float] = {}
    for start in range(0, len(sessions), 900):
        batch = sessions[start:start + 900]
        marks = ",".join("?" * len(batch))
        for session, total in conn.execute(
                f"SELECT session, sum(user_chars) FROM pimem_word_docs WHERE session IN ({marks}) GROUP BY session",
                batch):
            out[int(session)] = float(total)
    return out
