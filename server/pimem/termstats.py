"""How many turns hold a term, estimated cheaply from the trigram index (for choosing free-text terms).

The estimate only ranks terms and sets their weights; recall itself stays exact.

* A term of three or more characters, in each of the user and reply indexes: the docs holding all
  its trigrams are a superset of the turns holding it. The newest :data:`SAMPLE` of them are checked
  against the stored text; fewer than that, the count is exact. Otherwise the superset is counted in
  the newest :data:`WINDOW` docs and extrapolated to the whole store (or, when few of them are in it,
  counted up to :data:`CAP`), then scaled by the share of the sample that holds the term. When none
  of the sample does (its trigrams are common, the term is not), the candidates are checked in SQL
  when there are at most :data:`CHECKED` of them; beyond, the term counts as absent (rare at best,
  and recalling it would read thousands of texts). So an estimate reads a bounded number of postings
  and texts whatever the store's size. A term found in a tenth of the replies is not counted in the user texts.
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

CAP = 2000
WINDOW = 2000
SAMPLE = 32
CHECKED = 400
_RECENT_ENOUGH = 20
_MAX_TRIGRAMS = 12
TABLES = index.FTS_TABLES


@dataclass(frozen=True)
class Estimate:
    turns: dict[str, int]        # lower-cased term -> estimated turns holding it (0: none)
    candidates: dict[str, int]   # lower-cased term -> docs its index lists yield (what recalling it reads)
    total: int                   # turns in the store


def _quote(term: str) -> str:
    return '"' + term.replace('"', '""') + '"'


def trigram_expression(term: str) -> str:
    """The FTS5 AND of a term's distinct trigrams (at most 12, spread over the term)."""
    grams = list(dict.fromkeys(term[i:i + 3] for i in range(len(term) - 2)))
    if len(grams) > _MAX_TRIGRAMS:
        step = (len(grams) - 1) / (_MAX_TRIGRAMS - 1)
        grams = [grams[round(i * step)] for i in range(_MAX_TRIGRAMS)]
    return " AND ".join(_quote(gram) for gram in grams)


class _Counter:
    def __init__(self, conn: sqlite3.Connection, total: int) -> None:
        self.conn = conn
        self.total = total
        self._window_low: int | None = None
        self._window_size = 0
        self._vocab: set[str] = set()

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
        expression = trigram_expression(term)
        newest = [row[0] for row in self.conn.execute(
            f"SELECT rowid FROM {table} WHERE {table} MATCH ? ORDER BY rowid DESC LIMIT {SAMPLE}", (expression,))]
        held = self._holding(table, term, newest) if newest else 0
        if len(newest) < SAMPLE:
            return held, len(newest)   # few candidates: exact
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

    def _checked(self, table: str, term: str, expression: str) -> int:
        column = "t.user_text" if table == "pimem_fts_user" else "t.reply_text"
        return int(self.conn.execute(
            f"SELECT count(*) FROM (SELECT rowid AS key FROM {table} WHERE {table} MATCH ?) c "
            f"JOIN pimem_docs d ON d.doc_key = c.key JOIN turns t ON t.turn_id = d.turn_id "
            f"WHERE instr(lower({column}), ?) > 0", (expression, term)).fetchone()[0])

    def _holding(self, table: str, term: str, keys: list[int]) -> int:
        """How many of these docs really hold the term (the trigrams are only a superset)."""
        column = "t.user_text" if table == "pimem_fts_user" else "t.reply_text"
        placeholders = ",".join("?" * len(keys))
        return sum(1 for (text,) in self.conn.execute(
            f"SELECT {column} FROM pimem_docs d JOIN turns t ON t.turn_id = d.turn_id "
            f"WHERE d.doc_key IN ({placeholders})", keys) if term in str(text or "").lower())

    def prefix_turns(self, table: str, term: str) -> tuple[int, int]:
        rows = f"temp.{table}_rows"
        if table not in self._vocab:
            self.conn.execute(f"CREATE VIRTUAL TABLE IF NOT EXISTS {rows} USING fts5vocab(main, {table}, row)")
            self._vocab.add(table)
        if ord(term[-1]) < 0x10FFFF:
            bounds: tuple[str, ...] = (term, term[:-1] + chr(ord(term[-1]) + 1))
            condition = "term >= ? AND term < ?"
        else:
            bounds, condition = (term,), "term >= ?"
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
