"""How many turns hold a term, estimated cheaply from the trigram index (for choosing free-text terms).

The estimate only ranks terms and sets their weights; recall itself stays exact.

* A term of three or more characters, in each of the user and reply indexes: the docs holding its
  rarest trigrams (each trigram counted up to :data:`PROBE`) are a superset of the turns holding it.
  The newest :data:`SAMPLE` of them are checked against the stored text; fewer than that, the count
  is exact. Otherwise the superset is counted in the newest :data:`WINDOW` docs and extrapolated to
  the whole store (or, when few of them are in it, counted up to :data:`CAP`), then scaled by the
  share of the sample that holds the term. When none of the sample does (its trigrams are common,
  the term is not), the candidates are checked in SQL when there are at most :data:`CHECKED` of them;
  beyond, the term counts as absent (rare at best, and recalling it would read thousands of texts).
  So an estimate reads a bounded number of postings and texts whatever the store's size. A term
  found in a tenth of the replies is not counted in the user texts.
* A term of one or two characters (a Chinese word, ``s3``) is counted through the index's
  vocabulary: the docs of every trigram that starts with it (an upper bound).

Rows not indexed yet (pending, or written by the Pi extension since the last sync) are not counted;
they are few.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from dataclasses import dataclass

from pimem import index
from pimem.recall.candidates import fts_phrase, prefix_range

CAP = 2000
WINDOW = 1000
SAMPLE = 16
CHECKED = 400
_RECENT_ENOUGH = 10
PROBE = 64


@dataclass(frozen=True)
class Estimate:
    turns: dict[str, int]        # lower-cased term -> estimated turns holding it (0: none)
    candidates: dict[str, int]   # lower-cased term -> docs its index lists yield (what recalling it reads)
    total: int                   # turns in the store


class _Counter:
    def __init__(self, conn: sqlite3.Connection, total: int) -> None:
        self.conn = conn
        self.total = total
        self._window_low: int | None = None
        self._window_size = 0
        self._vocab: set[str] = set()
        self._grams: dict[tuple[str, str], int] = {}

    def window(self) -> tuple[int, int]:
        """The lowest doc key of the newest WINDOW docs, and how many docs that is."""
        if self._window_low is None:
            row = self.conn.execute(
                "SELECT min(doc_key), count(*) FROM (SELECT doc_key FROM pimem_docs ORDER BY doc_key DESC "
                f"LIMIT {WINDOW})").fetchone()
            self._window_low, self._window_size = int(row[0] or 0), int(row[1] or 0)
        return self._window_low, self._window_size

    def trigram_turns(self, table: str, term: str) -> tuple[int, int]:
        """(turns holding the term, docs holding all its trigrams), both estimated."""
        expression = self._expression(table, term)
        if expression is None:
            return 0, 0   # a trigram of it is in no doc
        sampled, held = self._sample(table, term, expression)
        if sampled < SAMPLE:
            return held, sampled   # few candidates: exact
        low, size = self.window()
        recent = int(self.conn.execute(
            f"SELECT count(*) FROM {table} WHERE {table} MATCH ? AND rowid >= ?", (expression, low)).fetchone()[0])
        if recent >= _RECENT_ENOUGH:
            count = recent * self.total // max(size, 1)   # common: extrapolated from the newest docs
        else:
            count = int(self.conn.execute(
                f"SELECT count(*) FROM (SELECT rowid FROM {table} WHERE {table} MATCH ? LIMIT {CAP})",
                (expression,)).fetchone()[0])
        if held:
            return max(held, count * held // SAMPLE), count
        if count <= CHECKED:
            # Common trigrams, none of the newest candidates holds the term: check them all in SQL
            # (SQLite's lower() folds ASCII only, which is enough for an estimate).
            return self._checked(table, term, expression), count
        return 0, count   # rare or absent among thousands of candidates: not worth searching

    def _expression(self, table: str, term: str) -> str | None:
        """The AND of the term's rarest trigrams (those in fewer than PROBE docs, at most three), or
        of four of them when all are common; None when one is in no doc. FTS5 intersects a rare list
        with common ones far more slowly than rare lists alone (1 ms against 0.02 ms at 20k turns)."""
        grams = list(dict.fromkeys(term[i:i + 3] for i in range(len(term) - 2)))
        counted = sorted((self._gram_docs(table, gram), position, gram) for position, gram in enumerate(grams))
        if counted[0][0] == 0:
            return None
        rare = [gram for docs, _, gram in counted if docs < PROBE][:3]
        chosen = rare or [gram for _, _, gram in counted[:4]]
        return " AND ".join(fts_phrase(gram) for gram in chosen)

    def _gram_docs(self, table: str, gram: str) -> int:
        """Docs holding a trigram, counted up to PROBE (shared by every term of one estimate)."""
        key = (table, gram)
        if key not in self._grams:
            self._grams[key] = int(self.conn.execute(
                f"SELECT count(*) FROM (SELECT rowid FROM {table} WHERE {table} MATCH ? LIMIT {PROBE})",
                (fts_phrase(gram),)).fetchone()[0])
        return self._grams[key]

    def _sample(self, table: str, term: str, expression: str) -> tuple[int, int]:
        """How many of the newest SAMPLE candidates there are, and how many hold the term. SQLite's
        lower() folds ASCII only: terms with other cased letters are checked in Python."""
        column = "t.user_text" if table == "pimem_fts_user" else "t.reply_text"
        newest = (f"FROM (SELECT rowid AS key FROM {table} WHERE {table} MATCH ? ORDER BY rowid DESC "
                  f"LIMIT {SAMPLE}) c JOIN pimem_docs d ON d.doc_key = c.key JOIN turns t ON t.turn_id = d.turn_id")
        if term.isascii() or term.lower() == term.upper():
            sampled, held = self.conn.execute(f"SELECT count(*), coalesce(sum(instr(lower({column}), ?) > 0), 0) "
                                              f"{newest}", (term, expression)).fetchone()
            return int(sampled), int(held)
        texts = [str(text or "").lower() for (text,) in self.conn.execute(f"SELECT {column} {newest}", (expression,))]
        return len(texts), sum(1 for text in texts if term in text)

    def _checked(self, table: str, term: str, expression: str) -> int:
        column = "t.user_text" if table == "pimem_fts_user" else "t.reply_text"
        return int(self.conn.execute(
            f"SELECT count(*) FROM (SELECT rowid AS key FROM {table} WHERE {table} MATCH ?) c "
            f"JOIN pimem_docs d ON d.doc_key = c.key JOIN turns t ON t.turn_id = d.turn_id "
            f"WHERE instr(lower({column}), ?) > 0", (expression, term)).fetchone()[0])

    def prefix_turns(self, table: str, term: str) -> tuple[int, int]:
        rows = f"temp.{table}_rows"
        if table not in self._vocab:
            self.conn.execute(f"CREATE VIRTUAL TABLE IF NOT EXISTS {rows} USING fts5vocab(main, {table}, row)")
            self._vocab.add(table)
        condition, bounds = prefix_range(term)
        value = self.conn.execute(f"SELECT sum(doc) FROM {rows} WHERE {condition}", bounds).fetchone()[0]
        turns = min(int(value or 0), self.total)
        return turns, turns


def store_size(conn: sqlite3.Connection) -> int:
    """Turns in the store (rowids are never reused: the highest is the count, cheaply)."""
    return int(conn.execute("SELECT max(rowid) FROM turns").fetchone()[0] or 0)


def estimate(conn: sqlite3.Connection, terms: Sequence[str]) -> Estimate:
    """Estimated turns holding each (lower-cased) term. Without an index every term gets the store's
    size (all terms weigh the same, as entities do)."""
    total = store_size(conn)
    if not index.fts_enabled(conn):
        return Estimate({term: total for term in terms}, {term: total for term in terms}, total)
    counter = _Counter(conn, total)
    turns: dict[str, int] = {}
    candidates: dict[str, int] = {}
    for term in terms:
        if term in turns:
            continue
        if "\x00" in term or "\x01" in term:
            turns[term] = candidates[term] = total
            continue
        count = counter.trigram_turns if len(term) >= 3 else counter.prefix_turns
        # Replies are most of the text: a term common there needs no count in the user texts.
        in_replies, reply_candidates = count("pimem_fts_reply", term)
        if in_replies >= max(total // 10, SAMPLE):
            turns[term], candidates[term] = in_replies, reply_candidates
            continue
        in_users, user_candidates = count("pimem_fts_user", term)
        turns[term] = max(in_replies, in_users)
        candidates[term] = max(reply_candidates, user_candidates)
    return Estimate(turns, candidates, total)
