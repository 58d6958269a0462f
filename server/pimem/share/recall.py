"""Recall on the shared PostgreSQL store, with the semantics of local recall (:mod:`pimem.recall`).

**Entities** (:func:`entity_rows`): literal and case-insensitive exactly as locally, i.e. as Python's
``str.lower``. PostgreSQL's ``lower()`` and ``ILIKE`` fold case differently (below), so neither is used:
the push stores ``user_lower``/``reply_lower`` (``str.lower`` of the pushed texts, :mod:`pimem.share.push`),
the entity is lowered here in Python, and the match is ``col LIKE '%' || e || '%' ESCAPE '\\'`` with
``%``, ``_`` and ``\\`` of the entity escaped: a literal substring test on two ``str.lower`` strings, the
very test of :func:`pimem.recall.semantics.score`. The pg_trgm GIN indexes on the lowered columns serve
the ``LIKE`` (pg_trgm folds case again inside the index, which only makes the index's candidates a
superset; the row is then checked by ``LIKE`` itself); on a layout-7 store one GIN over both lowered
texts (``schema.LOWERED``) and the grams does, with ``strpos`` on the columns deciding. On a layout-4
store an entity with short grams (:func:`pimem.share.schema.short_grams`: ``锁``, ``缓存``, ``a_b``) is
narrowed by ``turns.grams`` too, ``grams @> its grams`` (an entity pg_trgm cannot narrow then tested by
``strpos``, the same literal test). Score 2w in the user text + w in the reply, order
score desc / time desc / turn id asc (then author, machine), copies (same texts and time) once, the
``source`` and ``cwd`` filters: as :mod:`pimem.recall.semantics`.

Where PostgreSQL's folding differs from ``str.lower`` (docs/share-recall.md has the table): on the
tests' server (PostgreSQL 15, ``C.UTF-8``, glibc) ``lower('İstanbul')`` is ``'istanbul'`` where Python
gives ``'i̇stanbul'`` (i + U+0307), and ``lower('ΟΔΟΣ')`` is ``'οδοσ'`` where Python gives the final
``'ς'``; with other providers and locales more differ (a ``C`` database folds ASCII only, ``tr_TR`` maps
``'I'`` to ``'ı'``, older C libraries leave the titlecase digraphs such as ``'ǅ'``).
``tests/share/test_recall.py`` stores each of these and compares shared recall with local recall.

**Free text** (:func:`text_page`): conversations ranked as :mod:`pimem.recall.ranking` ranks them, from the
words the push stored (``user_words``/``reply_words``: the local word index's tokens), read through their
GIN indexes: BM25 idf from the words' document counts, a turn scores idf x (user weight, normalised by its
length) + idf x (reply weight), the best sessions by best turn and by typed words are scored in full, the
two rankings fused by reciprocal rank, one row per conversation (its best turn). A conversation is
``(author, machine, session_id)``. A layout-3 store keeps the postings apart (``pimem.turn_words``: the
words as ``word_docs`` ids in a row without texts), and they are read there. The postings are scored
and the candidate conversations picked by one SQL statement (:func:`_text_sql`), with the very floats
:func:`rank_docs` computes (one order of addition); only the candidates' docs come back and are scored
in full in Python (:func:`rank_sessions`).
The statistics (rows, average lengths, sessions) are those of the whole shared store, read once a minute
per process (past 200,000 rows from a sample and the planner's row estimate), as the local ones are per
store.

The ``mine``/``team`` scopes are filters here (``author = current_user``, this machine's rows left out);
merging with local rows is :mod:`pimem.share.scope`'s. psycopg is imported in ``pimem.share`` only.
"""

from __future__ import annotations

import heapq
import itertools
import re
import threading
import time
from collections import defaultdict
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from operator import itemgetter
from typing import Any

import psycopg

from pimem.paths import in_folder
from pimem.recall import ranking
from pimem.recall.query import RecallQuery
from pimem.recall.rows import RecallRow
from pimem.recall.semantics import score
from pimem.share.schema import LOWERED, NARROW, SCHEMA, short_grams
from pimem.share.schema import LOWERED_INDEX as LOWERED_INDEX_NAME
from pimem.words import tokens_many

Conn = psycopg.Connection[tuple[Any, ...]]

# The row columns of a recall answer, in make_shared_row's order.
_ROW = ("author, machine, doc_key, session_id, source, cwd, (extract(epoch from ts) * 1000)::bigint, "
        "user_text, reply_text, tools")
_FETCH = 500          # rows fetched at a time from the ordered candidates
STATS_TTL_S = 60.0
STATS_SAMPLED = 200_000   # rows counted exactly; a larger store's statistics come from a sample


@dataclass(frozen=True)
class Who:
    """Whose rows: every member's, or ``mine`` (``author = current_user``); ``skip_machine``: leave out
    this member's rows from that machine (copies of the local store's turns, merged from there)."""

    mine: bool = False                 # author = current_user
    skip_machine: str | None = None    # with mine or with everyone: current_user's rows from this machine


def escape_like(text: str) -> str:
    r"""``text`` as a LIKE pattern matching itself (``\``, ``%``, ``_`` escaped; ESCAPE '\')."""
    return text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")


# Paths that os.path.normpath may change (doubled or trailing slashes, . and .. parts): the folder
# filter lets them through SQL and decides in Python (pimem.paths.in_folder), as locally.
_UNNORMAL_PATH = r"//|/\.\.?(/|$)|./$"


def _filters(query: RecallQuery, who: Who) -> tuple[list[str], list[object]]:
    where: list[str] = []
    params: list[object] = []
    if who.mine:
        where.append("author = current_user")
    if who.skip_machine is not None:
        where.append("NOT (author = current_user AND machine = %s)")
        params.append(who.skip_machine)
    if query.sources is not None:
        where.append("source = ANY(%s)")
        params.append(sorted(query.sources))
    if query.cwd is not None:
        folder = query.cwd
        prefix = "/%" if folder == "/" else escape_like(folder) + "/%"
        where.append("(cwd = %s OR cwd LIKE %s ESCAPE '\\' OR cwd ~ %s)")
        params.extend([folder, prefix, _UNNORMAL_PATH])
    return where, params


def _keep(row: RecallRow, query: RecallQuery) -> bool:
    return query.cwd is None or in_folder(row.cwd, query.cwd)


def make_shared_row(values: Sequence[Any], hits: int) -> RecallRow:
    tools = values[9] if isinstance(values[9], list) else []
    return RecallRow(turn_id=str(values[2]), session_id=str(values[3]), source=str(values[4]), cwd=str(values[5]),
                     ts=int(values[6]), user_text=str(values[7]), reply_text=str(values[8]),
                     tool_names=[str(name) for name in tools], hits=hits, jsonl_path="", line=None,
                     author=str(values[0]), machine=str(values[1]))


def merge_key(row: RecallRow) -> tuple[int, int, str, str, str]:
    """Recall's order over local and shared rows (local rows have no author/machine: they sort first
    among equal turn ids)."""
    return (-row.hits, -row.ts, row.turn_id, row.author or "", row.machine or "")


def trigram_indexable(entity: str) -> bool:
    """Whether pg_trgm can narrow ``LIKE '%entity%'``: a run of at least three letters or digits (its
    words are runs of alphanumerics; a shorter one, bounded by wildcards, gives no trigram). An entity
    that cannot (``锁``, ``缓存``, ``a_b``, ``io``) makes the query read every row."""
    return any(len(run) >= 3 for run in re.findall(r"[^\W_]+", entity))


SELECTIVE_ROWS = 3_000   # an indexable entity with more rows than this is read by the ordered scan instead
SCAN_ROWS = 5_000        # matching rows the ordered scan reads before every row of the rest is read instead
# ... when every entity of the rest has trigrams: reading the rows that can still enter is then cheap
# (conjunctions answered by pg_trgm, _rest_rows), so the scan gives up sooner.
INDEXED_SCAN_ROWS = 1_000
_SCAN_BATCH = 1_000      # the largest batch read from the ordered scan (the first ones are smaller)
_KEY_COLUMNS = "author, machine, doc_key, (extract(epoch from ts) * 1000)::bigint"

Key = tuple[str, str, str]    # (author, machine, doc_key)


def has_grams(conn: Conn) -> bool:
    """Whether the shared store has layout 4's ``turns.grams`` (read at each entity query: one catalog
    lookup, so a store migrated while a process runs is used at once)."""
    return _store_indexes(conn)[0]


LOWERED_INDEX = f"{SCHEMA}.{LOWERED_INDEX_NAME}"


NARROW_TABLE = f"{SCHEMA}.{NARROW}"     # layout 8's narrow table of the lowered texts


def _store_indexes(conn: Conn) -> tuple[bool, bool, bool]:
    """Whether the store has layout 4's ``turns.grams``, layout 7's trigram index of both lowered texts and
    layout 8's narrow table of them (one catalog lookup at each entity query, so a store migrated while a
    process runs is used at once)."""
    row = conn.execute("SELECT EXISTS (SELECT 1 FROM pg_attribute WHERE attrelid = to_regclass('pimem.turns') "
                       "AND attname = 'grams' AND NOT attisdropped), to_regclass(%s) IS NOT NULL, "
                       "to_regclass(%s) IS NOT NULL", [LOWERED_INDEX, NARROW_TABLE]).fetchone()
    return (bool(row and row[0]), bool(row and row[1]), bool(row and row[2]))


COMMON_GRAMS_ROWS = 10 * SELECTIVE_ROWS   # grams the planner expects in more rows narrow too little


def _unnarrow_common_grams(conn: Conn, sql: _EntitySql) -> None:
    """Read an entity pg_trgm narrows without its grams when the planner expects them in more than
    COMMON_GRAMS_ROWS rows (``slugify_title``'s ``y_``, ``_t``: a tenth of the rows at 2M): their bitmap,
    built in every conjunction holding the entity, cost more than pg_trgm's (70 against 25 ms) and
    removed few rows. The planner's estimate (from ANALYZE's most common elements, which members
    cannot read in ``pg_stats`` under row-level security, but the planner uses) only picks the path."""
    chosen = [i for i, grams in enumerate(sql.grams) if grams is not None and trigram_indexable(sql.entities[i])]
    if not chosen:
        return
    # One EXPLAIN for all of them (a round trip each cost ~4 ms under load): an Append of their scans.
    plan = conn.execute("EXPLAIN (FORMAT JSON) " + " UNION ALL ".join(
        f"SELECT 1 FROM {sql.table} WHERE grams @> %s::text[]" for _ in chosen), [sql.grams[i] for i in chosen],
        prepare=False).fetchone()
    try:
        top = plan[0][0]["Plan"] if plan else {}
        scans = top["Plans"] if len(chosen) > 1 else [top]
        estimates = [float(scan["Plan Rows"]) for scan in scans]
    except (KeyError, IndexError, TypeError, ValueError):
        return
    if len(estimates) != len(chosen):
        return
    for i, rows in zip(chosen, estimates, strict=True):
        if rows > COMMON_GRAMS_ROWS:
            sql.grams[i] = None


SAMPLE_ROWS = 200        # rows sampled per process to tell pg_trgm's rare trigrams from its common ones
SAMPLE_TTL_S = 600.0
SAMPLE_CHARS = 2_000     # of each sampled text
RARE_TRIGRAM_SHARE = 0.05   # a trigram in at most this share of the sampled rows is rare
RARE_TRIGRAMS = 3        # the most trigrams an entity is narrowed by
TIGHT_TRIGRAMS = 2       # ... alone too (listed, counted) when at least this many of them
TIGHT_COUNT = 0          # ... are each in at most this many sampled rows
_SAMPLES: dict[str, tuple[float, list[tuple[str, str]], dict[str, int]]] = {}


def _contains(text: str) -> str:
    return "%" + escape_like(text) + "%"


def _sample(conn: Conn) -> tuple[list[tuple[str, str]], dict[str, int]]:
    """About SAMPLE_ROWS rows' lowered texts (the same blocks each time: ``REPEATABLE``), kept per process
    and store for SAMPLE_TTL_S, with the trigram counts found in them so far."""
    key = f"{conn.info.host}:{conn.info.port}/{conn.info.dbname}"
    now = time.monotonic()
    with _STATS_LOCK:
        cached = _SAMPLES.get(key)
    if cached is not None and now - cached[0] < SAMPLE_TTL_S:
        return cached[1], cached[2]
    estimate = conn.execute("SELECT reltuples::bigint FROM pg_class WHERE oid = 'pimem.turns'::regclass").fetchone()
    rows = int(estimate[0]) if estimate is not None and estimate[0] is not None else -1
    share = 100.0 if rows <= SAMPLE_ROWS else 100.0 * SAMPLE_ROWS / rows
    texts = [(str(u), str(r)) for u, r in conn.execute(
        f"SELECT left(user_lower, {SAMPLE_CHARS}), left(reply_lower, {SAMPLE_CHARS}) FROM pimem.turns "
        f"TABLESAMPLE SYSTEM ({share:.6f}) REPEATABLE (24) LIMIT {2 * SAMPLE_ROWS}", prepare=False)]
    counts: dict[str, int] = {}
    with _STATS_LOCK:
        _SAMPLES[key] = (now, texts, counts)
    return texts, counts


def _narrow_trigrams(conn: Conn, sql: _EntitySql) -> None:
    """For each entity with trigrams, the rarest of them (in at most RARE_TRIGRAM_SHARE of a sample of
    rows, up to RARE_TRIGRAMS), which pg_trgm then narrows it by instead of all of its own.

    pg_trgm's bitmap for ``LIKE '%flamingo%'`` reads the list of every trigram of the pattern, common
    ones too (``ing``, ``min``: most rows), which costs ~20 ms per entity at 2,000,000 rows (the user
    texts: 9 ms for 6,470 rows against 1 ms for ``ngo`` alone, 7,200 rows); the conjunctions of
    :func:`_rest_rows` build each entity's bitmaps once per set. The rows of the rare trigrams are a
    superset of the entity's, which ``strpos`` then tests row by row: the sample only picks the path,
    never the answer. An entity whose trigrams are all common keeps them all."""
    if not any(trigram_indexable(e) for e in sql.entities):
        sql.trigrams = [None] * len(sql.entities)
        return
    texts, counts = _sample(conn)
    rare = RARE_TRIGRAM_SHARE * max(len(texts), 1)
    chosen: list[list[str] | None] = []
    tight: list[bool] = []
    for i, entity in enumerate(sql.entities):
        trigrams = sorted({run[k:k + 3] for run in re.findall(r"[^\W_]+", entity) if len(run) >= 3
                           for k in range(len(run) - 2)})
        for trigram in trigrams:
            if trigram not in counts:
                counts[trigram] = sum(1 for user, reply in texts if trigram in user or trigram in reply)
        few = sorted((t for t in trigrams if counts[t] <= rare), key=lambda t: (counts[t], t))[:RARE_TRIGRAMS]
        narrow = few if few and len(few) < len(trigrams) else None
        # Alone (the entity's rows counted or read in full: a heap visit per row of the superset) only
        # by TIGHT_TRIGRAMS or more trigrams found in no sampled row: their rows together are then few.
        tight.append(narrow is not None and len(few) >= TIGHT_TRIGRAMS and all(counts[t] <= TIGHT_COUNT for t in few))
        # Behind its grams on a layout-7 store an entity gives pg_trgm its rare trigrams only, never its pattern
        # (:meth:`_EntitySql._match_lowered`): all of them when all are rare (round q10: ``qzx.py``'s ``qzx``,
        # else the grams alone, ``x.`` and ``.p``, narrowed it).
        chosen.append(few if narrow is None and few and sql.lowered and sql.grams[i] is not None else narrow)
    sql.trigrams, sql.tight = chosen, tight


def _narrowing_grams(entity: str) -> list[str]:
    """The entity's grams without the characters its pairs already hold (``缓存``: ``{缓存}``, not also
    ``缓`` and ``存``): the same rows, and the planner's estimate (a product over the grams) stays near."""
    grams = short_grams(entity)
    pairs = [g for g in grams if len(g) == 2]
    return sorted(g for g in grams if len(g) == 2 or not any(g in pair for pair in pairs))


# The entity statements are never prepared (``prepare=False``): psycopg prepares a statement run five
# times on a connection, and PostgreSQL then may plan it once for any pattern (a generic plan), which
# for these LIKEs and grams is a scan of the whole table (0.3 s -> 5.7 s at 200,000 rows).
_LIKE_EITHER = "user_lower LIKE %s ESCAPE '\\' OR reply_lower LIKE %s ESCAPE '\\'"
_STRPOS_EITHER = "strpos(user_lower, %s) > 0 OR strpos(reply_lower, %s) > 0"


@dataclass
class _EntitySql:
    """A query's entities as SQL: each one's match (escaped LIKE on the lowered columns, behind its grams
    for an entity only they can narrow) and the score."""

    entities: list[str]
    weights: list[int]
    patterns: list[str]
    score: str
    score_params: list[object]
    where: list[str]
    where_params: list[object]
    grams: list[list[str] | None]      # the grams narrowing each entity (None: pg_trgm's, or nothing)
    grams_store: bool = False          # a layout-4+ store (its grams, and its words' counts)
    # The rare trigrams pg_trgm narrows each entity by in the conjunctions (None: all of its own), and
    # whether they narrow it alone too (:func:`_narrow_trigrams`).
    trigrams: list[list[str] | None] = field(default_factory=list)
    tight: list[bool] = field(default_factory=list)
    lowered: bool = False              # a layout-7 store: one trigram index over both lowered texts
    table: str = f"{SCHEMA}.turns"     # where the lowered texts are read (layout 8: NARROW_TABLE)

    @classmethod
    def of(cls, query: RecallQuery, who: Who, grams: bool = False) -> _EntitySql:
        entities = [entity.lower() for entity in query.entities]
        weights = list(query.weights) if query.weights is not None else [1] * len(entities)
        patterns = ["%" + escape_like(entity) + "%" for entity in entities]
        terms: list[str] = []
        params: list[object] = []
        for pattern, weight in zip(patterns, weights, strict=True):
            terms.append(f"(CASE WHEN user_lower LIKE %s ESCAPE '\\' THEN {2 * int(weight)} ELSE 0 END"
                         f" + CASE WHEN reply_lower LIKE %s ESCAPE '\\' THEN {int(weight)} ELSE 0 END)")
            params.extend([pattern, pattern])
        where, where_params = _filters(query, who)
        narrowing = [_narrowing_grams(e) or None if grams else None for e in entities]
        return cls(entities, weights, patterns, "(" + " + ".join(terms) + ")", params, where, where_params, narrowing,
                   grams)

    def indexable(self, i: int) -> bool:
        """Whether an index narrows entity ``i``'s rows (pg_trgm, or the grams)."""
        return self.grams[i] is not None or trigram_indexable(self.entities[i])

    def match(self, i: int, conjunct: bool = False) -> tuple[str, list[object]]:
        """The condition "holds entity ``i``" and its parameters (``conjunct``: in a conjunction with
        another entity's, which narrows the rows of its rare trigrams further)."""
        grams = self.grams[i]
        trigrams = self.trigrams[i] if i < len(self.trigrams) else None
        if not (conjunct or (i < len(self.tight) and self.tight[i])):
            trigrams = None
        if self.lowered:
            return self._match_lowered(i, grams, trigrams)
        if trigrams is not None and trigram_indexable(self.entities[i]):
            # pg_trgm reads the lists of the entity's rare trigrams only (a superset of its rows), and
            # strpos, which the planner cannot take to an index, tests the entity itself on each row.
            likes = [f"{column} LIKE %s ESCAPE '\\'" for column in ("user_lower", "reply_lower") for _ in trigrams]
            half = len(trigrams)
            condition = (f"(({' AND '.join(likes[:half])}) OR ({' AND '.join(likes[half:])})) "
                         f"AND ({_STRPOS_EITHER})")
            values: list[object] = [*(_contains(t) for t in trigrams), *(_contains(t) for t in trigrams),
                                    self.entities[i], self.entities[i]]
            if grams is None:
                return f"({condition})", values
            return f"(grams @> %s::text[] AND {condition})", [grams, *values]
        if grams is None:
            return f"({_LIKE_EITHER})", [self.patterns[i], self.patterns[i]]
        if not trigram_indexable(self.entities[i]):
            # strpos, not LIKE: the same literal test, which the planner cannot take to pg_trgm (whose
            # candidates for such an entity are most rows: `a_b` gives the trigram "  b").
            return (f"(grams @> %s::text[] AND ({_STRPOS_EITHER}))",
                    [grams, self.entities[i], self.entities[i]])
        return f"(grams @> %s::text[] AND ({_LIKE_EITHER}))", [grams, self.patterns[i], self.patterns[i]]

    def _match_lowered(self, i: int, grams: list[str] | None, trigrams: list[str] | None) -> tuple[str, list[object]]:
        """:meth:`match` on a layout-7 store: the index narrows by the grams and by the trigrams of both
        lowered texts at once (``LOWERED``: a superset of the rows holding the entity in either text;
        every key of a conjunction goes to one GIN scan, which skips through the commoner lists), and
        ``strpos`` tests the entity itself on each row. An entity with grams gives pg_trgm only its rare
        trigrams, listed or in a conjunction, or none (docs/benchmarks.md "s15-narrow")."""
        entity = self.entities[i]
        parts: list[str] = []
        values: list[object] = []
        if grams is not None:
            parts.append("grams @> %s::text[]")
            values.append(grams)
        if grams is not None:
            # Behind the grams, only the entity's rare trigrams (none: the grams alone). The whole pattern
            # brings pg_trgm's word-boundary trigrams of its pieces (``c:\path\file``: "  p", " pa", "  f",
            # " fi": lists of most rows), which the GIN scan reads in full: ~100 ms a conjunction at 2M rows.
            rare = self.trigrams[i] if i < len(self.trigrams) else None
            likes = [_contains(t) for t in rare or []]
            parts.extend(f"{LOWERED} LIKE %s ESCAPE '\\'" for _ in likes)
            values.extend(likes)
        elif trigram_indexable(entity):
            likes = [_contains(t) for t in trigrams] if trigrams is not None else [self.patterns[i]]
            parts.extend(f"{LOWERED} LIKE %s ESCAPE '\\'" for _ in likes)
            values.extend(likes)
        parts.append(f"({_STRPOS_EITHER})")
        values.extend([entity, entity])
        return "(" + " AND ".join(parts) + ")", values

    def matching(self, chosen: Sequence[int]) -> tuple[str, list[object]]:
        """The condition "holds one of the ``chosen`` entities", with the filters, and its parameters."""
        any_of: list[str] = []
        params: list[object] = []
        for i in chosen:
            condition, values = self.match(i)
            any_of.append(condition)
            params.extend(values)
        return " AND ".join(["(" + " OR ".join(any_of) + ")", *self.where]), [*params, *self.where_params]


def _order(hits: int, ts: int, key: Key) -> tuple[int, int, str, str, str]:
    return (-hits, -ts, key[2], key[0], key[1])     # as merge_key: recall's order


def entity_sql(conn: Conn, query: RecallQuery, who: Who) -> _EntitySql:
    """The query's entity statements as this store's layout reads them: with the grams (layout 4+), through
    the one index over both lowered texts (layout 7), from the narrow table of them (layout 8)."""
    grams, lowered, narrow = _store_indexes(conn)
    sql = _EntitySql.of(query, who, grams)
    sql.lowered = lowered or narrow
    if narrow:
        sql.table = NARROW_TABLE
    return sql


def entity_rows(conn: Conn, query: RecallQuery, who: Who, wanted: int) -> list[RecallRow]:
    """The best ``wanted`` shared rows for ``query``'s entities (offset/limit not applied: the caller
    pages, :func:`pimem.recall.semantics.page_of`), one per exchange, in recall's order.

    Reading every row that holds an entity costs a heap visit per row, and an entity with no trigram
    (``锁``, ``缓存``, ``a_b``) reads the whole table. So the page is first found without them
    (:func:`_pruned`): the rows of the selective entities are listed and scored in full; every other
    row holds only the others, so its score is at most their bound; when the page's last row scores
    more, the page is final. With several others, the rows holding two or three of them are read first
    through their conjunctions (:func:`_probe`; the commonest left out of them and tested on the rows
    read); when they fill the page above what fewer can score, it is final. Otherwise the rows holding
    the others are read newest first until no unread row can enter the page. Past SCAN_ROWS rows, the
    rows holding the others are all read (:func:`_rest_rows`), scored on the others only (the listed
    entities are not in them) and kept when they reach the page. All give the answer of
    :func:`scan_oracle`. An entity whose words the store counts in more than COMMON_ESTIMATE rows is
    not counted at all (:func:`_estimates`)."""
    sql = entity_sql(conn, query, who)
    _unnarrow_common_grams(conn, sql)
    _narrow_trigrams(conn, sql)
    return _pruned(conn, sql, query, wanted)


class _Page:
    """Scored candidates and the page they make: rows fetched (texts) only as far as the page reaches,
    then kept as recall keeps them (the folder filter, one copy of an exchange)."""

    def __init__(self, conn: Conn, query: RecallQuery, wanted: int) -> None:
        self.conn, self.query, self.wanted = conn, query, wanted
        self.scores: dict[Key, tuple[int, int]] = {}       # key -> (hits, ts)
        self.rows: dict[Key, RecallRow | None] = {}        # fetched (None: gone since it was scored)

    def add(self, batch: Iterable[Sequence[Any]]) -> None:
        """Scored rows; a row scored twice keeps its higher score (a listed row's is its whole score;
        :func:`_rest_rows` scores the other entities only)."""
        for author, machine, doc_key, ts, hits in batch:
            key = (str(author), str(machine), str(doc_key))
            known = self.scores.get(key)
            if int(hits) > 0 and (known is None or known[0] < int(hits)):
                self.scores[key] = (int(hits), int(ts))

    def kept(self) -> list[RecallRow]:
        ordered = sorted(self.scores, key=lambda k: _order(*self.scores[k], k))
        rows: list[RecallRow] = []
        seen: set[tuple[str, str, int]] = set()
        for start in range(0, len(ordered), 100):
            part = ordered[start:start + 100]
            self._fetch([k for k in part if k not in self.rows])
            for k in part:
                row = self.rows[k]
                if row is None or not _keep(row, self.query) or row.copy_key in seen:
                    continue
                seen.add(row.copy_key)
                rows.append(row)
                if len(rows) == self.wanted:
                    return rows
        return rows

    def _fetch(self, keys: Sequence[Key]) -> None:
        if not keys:
            return
        for values in self.conn.execute(
                f"SELECT {_ROW} FROM pimem.turns WHERE (author, machine, doc_key) IN "
                "(SELECT * FROM unnest(%s::text[], %s::text[], %s::text[]))",
                [[k[0] for k in keys], [k[1] for k in keys], [k[2] for k in keys]]):
            key = (str(values[0]), str(values[1]), str(values[2]))
            self.rows[key] = make_shared_row(values, self.scores[key][0])
        for k in keys:
            self.rows.setdefault(k, None)


def _pruned(conn: Conn, sql: _EntitySql, query: RecallQuery, wanted: int) -> list[RecallRow]:
    page = _Page(conn, query, wanted)
    indexable = [i for i in range(len(sql.entities)) if sql.indexable(i)]
    estimates = _estimates(conn, sql, indexable)
    # An entity whose words are in many rows is not counted (its bitmap alone costs tens of ms at
    # millions of rows): it goes to the rest, where any entity may be (the guess only picks the path).
    listed = _selective(conn, sql, [i for i in indexable if estimates[i] <= COMMON_ESTIMATE])
    rest = [i for i in range(len(sql.entities)) if i not in listed]
    if listed:
        # Every row holding a listed entity, read and scored once (one row may hold several of them).
        where, params = sql.matching(listed)
        page.add(conn.execute(f"SELECT {_KEY_COLUMNS}, {sql.score} FROM {sql.table} WHERE {where}",
                              [*sql.score_params, *params], prepare=False).fetchall())
    bound = sum(3 * sql.weights[i] for i in rest)     # the most a row holding only the rest can score
    kept = page.kept()
    if not rest or (len(kept) == wanted and kept[-1].hits > bound):
        return kept
    if len(rest) > 1:
        probed = _probe(conn, sql, rest, page, estimates)
        if probed is not None:
            return probed
        kept = page.kept()
    indexed = all(sql.indexable(i) for i in rest)
    # With several indexed entities in the rest, the scan ends early only on a page of rows holding them
    # all (the bound): it only fills the page, and their conjunctions (_rest_rows) do the rest.
    fill_only = indexed and len(rest) > 1
    if fill_only and len(kept) == wanted:
        page.add(_rest_rows(conn, sql, rest, kept[-1].hits))
        return page.kept()
    where, params = sql.matching(rest)
    budget = INDEXED_SCAN_ROWS if indexed else SCAN_ROWS
    with conn.transaction():
        # Newest first through the time index: the bitmap plan would read every matching row first.
        conn.execute("SET LOCAL enable_bitmapscan = off")
        conn.execute("SET LOCAL enable_seqscan = off")
        with conn.cursor(name="pimem_entity_scan") as cursor:
            cursor.execute(f"SELECT {_KEY_COLUMNS}, {sql.score} FROM {sql.table} WHERE {where} ORDER BY ts DESC",
                           [*sql.score_params, *params])
            scanned = 0
            # Small batches first: the scan often stops within the first rows read.
            size = min(max(2 * wanted, 20), _SCAN_BATCH)
            while True:
                batch = cursor.fetchmany(size)
                scanned += len(batch)
                page.add(batch)
                kept = page.kept()
                if len(batch) < size:
                    return kept      # every row holding one of the rest was read
                oldest = int(batch[-1][3])
                # Unread rows score at most ``bound`` and are older than ``oldest``.
                if len(kept) == wanted and (kept[-1].hits > bound or (kept[-1].hits == bound
                                                                      and kept[-1].ts > oldest)):
                    return kept
                if scanned >= budget or (fill_only and len(kept) == wanted):
                    break
                size = min(size * 4, _SCAN_BATCH)
    page.add(_rest_rows(conn, sql, rest, kept[-1].hits if len(kept) == wanted else 1))
    return page.kept()


COMMON_ESTIMATE = SELECTIVE_ROWS   # an entity whose words are in more rows is not counted (_estimates)


def _estimates(conn: Conn, sql: _EntitySql, indexable: Sequence[int]) -> dict[int, int]:
    """A cheap guess of each indexable entity's rows: the fewest rows holding one of its words (the word
    index's tokens, :func:`pimem.words.tokens_many`; ``pimem.word_docs`` keeps their counts, one lookup
    for all), or -1 when one of them is in no row (a piece of a word: no guess). Words are not
    substrings (``cach`` is also the stem of ``caching``), so a guess only orders the entities and
    skips counting the very common ones; no answer depends on it. Read on a layout-4+ store only (the
    grams say the counts are there)."""
    if not indexable or not sql.grams_store:
        return {i: -1 for i in indexable}
    words = tokens_many([sql.entities[i] for i in indexable])
    counts = {str(word): int(docs) for word, docs in conn.execute(
        "SELECT word, docs FROM pimem.word_docs WHERE word = ANY(%s)",
        [sorted({w for ws in words for w in ws})], prepare=False)}
    return {i: min((counts.get(w, -1) for w in ws), default=-1) if all(w in counts for w in ws) else -1
            for i, ws in zip(indexable, words, strict=True)}


def _probe(conn: Conn, sql: _EntitySql, rest: Sequence[int], page: _Page,
           estimates: dict[int, int]) -> list[RecallRow] | None:
    """The page from the rows holding several of the ``rest`` entities, when they fill it: the final
    page, or None (nothing decided; the rows read stay in ``page``).

    Level ``n``: every row whose score on the rest exceeds what any ``n - 1`` of them can score
    (``threshold``), read through conjunctions (:func:`_rest_rows`) and scored. A row not read then
    holds a listed entity (scored in full already) or scores below ``threshold``; so when the page is
    full and its last row reaches ``threshold``, no unread row can enter it. The levels go down from 3
    (with five or more of the rest; else from 2). At each, the entities no index narrows and then the
    commonest (known common by :func:`_estimates`) are left out of the conjunctions while the others
    must still hold two of them together (``drop``: tested on each row read, never read through their
    index: at millions of rows a common entity's bitmap costs more than the rows it would remove)."""
    bounds = sorted((3 * sql.weights[i] for i in rest), reverse=True)
    top = 3 if len(rest) >= 5 else 2
    for level in range(top, 1, -1):
        threshold = sum(bounds[:level - 1]) + 1
        kept = page.kept()
        if len(kept) == page.wanted:
            threshold = max(threshold, kept[-1].hits)
        drop: list[int] = []
        for i in sorted(rest, key=lambda i: (sql.indexable(i), -estimates.get(i, -1))):
            if sql.indexable(i) and estimates.get(i, -1) <= COMMON_ESTIMATE:
                break
            kept_in = [j for j in rest if j != i and j not in drop]
            left = threshold - sum(3 * sql.weights[j] for j in [*drop, i])
            if len(kept_in) >= 2 and left > max(3 * sql.weights[j] for j in kept_in):
                drop.append(i)
        if not all(sql.indexable(i) for i in rest if i not in drop):
            return None
        page.add(_rest_rows(conn, sql, rest, threshold, drop))
        kept = page.kept()
        if len(kept) == page.wanted and kept[-1].hits >= threshold:
            return kept
    return None


def _selective(conn: Conn, sql: _EntitySql, indexable: Sequence[int]) -> list[int]:
    """The entities of ``indexable`` held by at most SELECTIVE_ROWS rows (with the filters), counted up to
    that by one statement. An entity narrowed by its grams is counted on them alone (no text read: a
    count at least the true one, which only decides the path, never the answer)."""
    if not indexable:
        return []
    parts: list[str] = []
    params: list[object] = []
    for i in indexable:
        grams = sql.grams[i]
        condition, values = ("grams @> %s::text[]", [grams]) if grams is not None else sql.match(i)
        where = " AND ".join([condition, *sql.where])
        parts.append(f"SELECT {int(i)}, count(*) FROM (SELECT 1 FROM {sql.table} WHERE {where} "
                     f"LIMIT {SELECTIVE_ROWS + 1}) counted")
        params.extend([*values, *sql.where_params])
    counts = conn.execute(" UNION ALL ".join(parts), params, prepare=False).fetchall()
    return [int(i) for i, n in counts if int(n) <= SELECTIVE_ROWS]


def _rest_rows(conn: Conn, sql: _EntitySql, rest: Sequence[int], threshold: int,
               drop: Sequence[int] = ()) -> list[tuple[Any, ...]]:
    """Every row holding one of the ``rest`` entities whose score on them reaches ``threshold`` (the
    page's last score: a row below it cannot enter). For a row holding no listed entity that is its
    whole score; a listed row's is already known (and higher). PostgreSQL reads every such row, but
    matches only the rest, sorts nothing and returns only the rows that may enter the page.

    A row reaching ``threshold`` holds one of the smallest sets of the rest that can (:func:`_sufficient`);
    when every one of the rest has trigrams, the condition is their conjunctions, which pg_trgm answers by
    intersecting its lists before any row is read (with a trigram-less one, every row is read anyway).

    ``drop``: entities of the rest left out of the sets (scored on each row read, not read through
    their index): the sets are then those of the others reaching ``threshold`` less the dropped ones'
    bounds, which must stay positive (a row reaching ``threshold`` holds such a set)."""
    dropped = sum(3 * sql.weights[i] for i in drop)
    bounds = [(i, 3 * sql.weights[i]) for i in rest if i not in drop]
    if drop and threshold - dropped < 1:
        raise ValueError("the dropped entities alone reach the threshold")
    sets = _sufficient(bounds, threshold - dropped)
    if not sets:
        return []       # the rest together cannot reach the page
    # Too many sets: those of a lower threshold (fewer, smaller) hold every row reaching this one too.
    lower = threshold - dropped
    while len(sets) > _MAX_CONJUNCTIONS and lower > 1:
        lower -= 1
        sets = _sufficient(bounds, lower)
    score = " + ".join(
        f"(CASE WHEN user_lower LIKE %s ESCAPE '\\' THEN {2 * sql.weights[i]} ELSE 0 END"
        f" + CASE WHEN reply_lower LIKE %s ESCAPE '\\' THEN {sql.weights[i]} ELSE 0 END)" for i in rest)
    score_params: list[object] = [sql.patterns[i] for i in rest for _ in range(2)]
    # OFFSET 0 keeps the score computed once per row (not again in the outer WHERE).
    scored = f"SELECT * FROM (SELECT {_KEY_COLUMNS}, ({score}) AS score FROM {sql.table} WHERE {{}} OFFSET 0) s " \
             "WHERE score >= %s"
    if all(sql.indexable(i) for i, _ in bounds) and len(sets) <= _MAX_CONJUNCTIONS:
        # One query per set, each planned alone (its indexes intersected, only its own LIKEs rechecked);
        # a row holding several sets comes back several times with one score (_Page.add keeps one).
        parts: list[str] = []
        params: list[object] = []
        for chosen in sets:
            conditions = [sql.match(i, conjunct=len(chosen) > 1) for i in chosen]
            parts.append(scored.format(" AND ".join([*(c for c, _ in conditions), *sql.where])))
            params.extend([*score_params, *(v for _, values in conditions for v in values), *sql.where_params,
                           threshold])
        return _run(conn, " UNION ALL ".join(parts), params)
    where, params = sql.matching([i for i, _ in bounds])
    return _run(conn, scored.format(where), [*score_params, *params, threshold])


ENTITY_WORK_MEM_KB = 64 * 1024    # the conjunctions' at least (that transaction only)


def _run(conn: Conn, statement: str, params: Sequence[object]) -> list[tuple[Any, ...]]:
    """An entity statement reading many rows: never prepared; in its transaction no JIT (compiling its
    expressions costs tens of ms, more than it saves on these statements) and work memory enough that
    a common entity's bitmap stays exact (in 4 MB, past ~100,000 rows, it goes lossy: every row of its
    pages then tested)."""
    with conn.transaction():
        conn.execute("SET LOCAL jit = off")
        conn.execute("SET LOCAL max_parallel_workers_per_gather = 0")
        conn.execute("SELECT set_config('work_mem', greatest(setting::bigint, %s)::text || 'kB', true) "
                     "FROM pg_settings WHERE name = 'work_mem'", [ENTITY_WORK_MEM_KB])
        return conn.execute(statement, params, prepare=False).fetchall()


_MAX_CONJUNCTIONS = 28    # the pairs of 8 entities


def _sufficient(bounds: Sequence[tuple[int, int]], threshold: int) -> list[tuple[int, ...]]:
    """The smallest sets of entities (by index) whose bounds together reach ``threshold``: every row
    scoring at least that much on them holds all of one of these sets."""
    found: list[tuple[int, ...]] = []
    for size in range(1, len(bounds) + 1):
        for chosen in itertools.combinations(bounds, size):
            indexes = tuple(i for i, _ in chosen)
            if sum(b for _, b in chosen) >= threshold and not any(set(f) <= set(indexes) for f in found):
                found.append(indexes)
    return found


def scan_oracle(conn: Conn, query: RecallQuery, who: Who, wanted: int) -> list[RecallRow]:
    """The plain oracle: every shared row read, lowered and scored in Python (the texts, not the stored
    lowered columns), filtered and ordered as :func:`pimem.recall.semantics.recall_scan`. Tests and the
    benchmark compare :func:`entity_rows` with it."""
    entities = [entity.lower() for entity in query.entities]
    where, params = _filters(query, who)
    sql = f"SELECT {_ROW} FROM pimem.turns" + (f" WHERE {' AND '.join(where)}" if where else "")
    found: list[RecallRow] = []
    for values in conn.execute(sql, params):
        if query.sources is not None and values[4] not in query.sources:
            continue
        hits = score(str(values[7]).lower(), str(values[8]).lower(), entities, query.weights)
        row = make_shared_row(values, hits)
        if hits > 0 and _keep(row, query):
            found.append(row)
    chosen: list[RecallRow] = []
    seen: set[tuple[str, str, int]] = set()
    for row in sorted(found, key=merge_key):
        if row.copy_key not in seen:
            seen.add(row.copy_key)
            chosen.append(row)
    return chosen[:wanted]


# -- free text ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Stats:
    docs: int
    avg_user: float
    avg_reply: float
    sessions: int
    word_docs: bool = False    # the store keeps its words' counts (layout 2: pimem.word_docs)
    turn_words: bool = False   # ... and its narrow postings, words as ids (layout 3: pimem.turn_words)
    beyond_buffers: bool = False   # turn_words is larger than the server's shared buffers (see _text_sql)


_STATS: dict[str, tuple[float, Stats]] = {}
_STATS_LOCK = threading.Lock()


def store_stats(conn: Conn, key: str) -> Stats:
    """The shared store's size, average lengths and conversations, kept STATS_TTL_S per process."""
    now = time.monotonic()
    with _STATS_LOCK:
        cached = _STATS.get(key)
    if cached is not None and now - cached[0] < STATS_TTL_S:
        return cached[1]
    estimate = conn.execute("SELECT reltuples::bigint FROM pg_class WHERE oid = 'pimem.turns'::regclass").fetchone()
    rows = int(estimate[0]) if estimate is not None and estimate[0] is not None else -1
    # Counting a large table takes seconds, past the recall's deadline: past STATS_SAMPLED rows (by the
    # planner's estimate), a sample of about that many rows gives the averages and the conversations'
    # share, and the estimate the size (local ranking, too, reads its averages from a sample).
    source = "pimem.turns"
    if rows > STATS_SAMPLED:
        source += f" TABLESAMPLE SYSTEM ({100.0 * STATS_SAMPLED / rows:.4f}) REPEATABLE (24)"
    row = conn.execute("SELECT count(*), avg(user_chars), avg(reply_chars), "
                       f"count(DISTINCT (author, machine, session_id)) FROM {source}").fetchone()
    assert row is not None
    counted, sessions = int(row[0] or 0), int(row[3] or 0)
    docs = counted
    if rows > STATS_SAMPLED and counted:
        docs, sessions = rows, sessions * rows // counted
    kept = conn.execute("SELECT to_regclass('pimem.word_docs') IS NOT NULL, "
                        "to_regclass('pimem.turn_words') IS NOT NULL, "
                        "coalesce((SELECT relpages FROM pg_class WHERE oid = to_regclass('pimem.turn_words')), 0)"
                        "::bigint * current_setting('block_size')::bigint "
                        "> pg_size_bytes(current_setting('shared_buffers'))").fetchone()
    stats = Stats(docs, max(float(row[1] or 1.0), 1.0), max(float(row[2] or 1.0), 1.0), sessions,
                  bool(kept and kept[0]), bool(kept and kept[1]), bool(kept and kept[2]))
    with _STATS_LOCK:
        _STATS[key] = (now, stats)
    return stats


Doc = tuple[str, str, str, str]          # (author, machine, session_id, doc_key)
Session = tuple[str, str, str]           # (author, machine, session_id)


@dataclass
class _DocInfo:
    session: Session
    order: tuple[int, str, str, str]     # (ts, author, machine, doc_key): "newer" breaks ties, as doc keys do locally
    user_chars: int
    reply_chars: int
    user: set[str] = field(default_factory=set)    # query tokens in the user text
    reply: set[str] = field(default_factory=set)   # query tokens in the reply


@dataclass
class SharedTextPage:
    rows: list[RecallRow]
    total: int
    searched: list[tuple[ranking.QueryWord, int, float]]


_DF: dict[tuple[str, str], tuple[int, int]] = {}    # (store, token) -> (docs when counted, count)


def word_forms(qwords: Sequence[ranking.QueryWord]) -> dict[str, tuple[str, ...]]:
    """Each query word's index tokens: its own, then, for a form of an irregular verb, the verb's other forms
    (*buy*: ``bui``, ``bought``; pimem.words.IRREGULAR_VERBS): a turn holding any of them holds the word, as
    local ranking's MATCH finds it (:attr:`pimem.recall.ranking.QueryWord.match`)."""
    others = ranking.verb_tokens(qwords)
    return {w.token: (w.token, *others.get(w.token, ())) for w in qwords}


def _doc_counts(conn: Conn, tokens: Sequence[str], stats: Stats, stats_key: str,
                ids: dict[str, int] | None = None, forms: dict[str, tuple[str, ...]] | None = None) -> dict[str, int]:
    """Each word's number of shared turns (the whole store's, as the local counts are the whole store's).
    Layout 2 keeps them (``pimem.word_docs``, exact: kept by the database's triggers): one lookup for
    all the words. A layout-1 store has them counted, one GIN lookup per word with a heap visit per
    row; a common word's count (at least ranking.CACHED_DF) is then kept per process until the store
    grew by a twentieth, as :func:`pimem.recall.ranking._doc_count` keeps it. Layout 3 numbers its
    words: their ids go to ``ids`` (a word counted in no row may have none).

    ``forms``: a word's index tokens (:func:`word_forms`); a word of several is counted as the turns holding
    any of them (one lookup of the union when two or more are held, kept per process as a common word's
    count is)."""
    forms = forms or {}
    counts: dict[str, int] = dict.fromkeys(tokens, 0)
    if stats.word_docs:
        each: dict[str, int] = {}
        numbers: dict[str, int] = {}
        every = list(dict.fromkeys(form for token in tokens for form in forms.get(token, (token,))))
        for kept in conn.execute(f"SELECT word, docs{', id' if stats.turn_words else ''} FROM pimem.word_docs "
                                 "WHERE word = ANY(%s)", [every]):
            each[str(kept[0])] = max(int(kept[1]), 0)
            if stats.turn_words:
                numbers[str(kept[0])] = int(kept[2])
        if ids is not None:
            ids.update(numbers)
        for token in tokens:
            held = [form for form in forms.get(token, (token,)) if each.get(form, 0) > 0]
            if len(held) <= 1:
                counts[token] = each[held[0]] if held else 0
            elif stats.turn_words:
                counts[token] = _union_count(conn, token, stats, stats_key, "pimem.turn_words", "user_ids",
                                             "reply_ids", "integer[]", [numbers[form] for form in held])
            else:
                counts[token] = _union_count(conn, token, stats, stats_key, "pimem.turns", "user_words",
                                             "reply_words", "text[]", held)
        return counts
    for token in tokens:
        counts[token] = _union_count(conn, token, stats, stats_key, "pimem.turns", "user_words", "reply_words",
                                     "text[]", list(forms.get(token, (token,))))
    return counts


def _union_count(conn: Conn, token: str, stats: Stats, stats_key: str, table: str, user: str, reply: str,
                 element: str, values: list[Any]) -> int:
    """The rows of ``table`` whose ``user`` or ``reply`` array holds any of ``values`` (the word ``token``'s
    forms, or their ids), by their GIN indexes; a common word's count (ranking.CACHED_DF) kept per process
    until the store grew by a twentieth."""
    with _STATS_LOCK:
        cached = _DF.get((stats_key, token))
    if cached is not None and cached[0] * 21 >= stats.docs * 20:
        return cached[1]
    if not values:
        return 0
    op = "@>" if len(values) == 1 else "&&"   # one word: as it always was searched
    row = conn.execute(f"SELECT count(*) FROM {table} WHERE {user} {op} %s::{element} OR {reply} {op} %s::{element}",
                       (values, values)).fetchone()
    count = int(row[0]) if row is not None else 0
    if count >= ranking.CACHED_DF:
        with _STATS_LOCK:
            if len(_DF) > 100_000:
                _DF.clear()
            _DF[(stats_key, token)] = (stats.docs, count)
    return count


_DOC_COLUMNS = ("author, machine, session_id, doc_key, (extract(epoch from ts) * 1000)::bigint, user_chars, "
                "reply_chars, cwd, ARRAY(SELECT w FROM unnest(user_words) w WHERE w = ANY(%s)), "
                "ARRAY(SELECT w FROM unnest(reply_words) w WHERE w = ANY(%s))")


def _read_docs(rows: Iterable[Sequence[Any]], query: RecallQuery, into: dict[Doc, _DocInfo],
               as_word: dict[str, set[str]]) -> None:
    """``rows`` (:data:`_DOC_COLUMNS`) into ``into``, each index token held as the query words it is (``as_word``:
    an irregular verb's other forms as the word)."""
    for values in rows:
        if query.cwd is not None and not in_folder(str(values[7]), query.cwd):
            continue
        doc: Doc = (str(values[0]), str(values[1]), str(values[2]), str(values[3]))
        info = into.get(doc)
        if info is None:
            info = _DocInfo((doc[0], doc[1], doc[2]), (int(values[4]), doc[0], doc[1], doc[3]), int(values[5]),
                            int(values[6]))
            into[doc] = info
        info.user.update(word for w in values[8] for word in as_word[str(w)])
        info.reply.update(word for w in values[9] for word in as_word[str(w)])


TEXT_WORK_MEM_KB = 32 * 1024    # the free-text statement's at least (that transaction only)


def read_words(qwords: Sequence[ranking.QueryWord], df: dict[str, int]) -> tuple[list[str], list[str]]:
    """The words whose postings are read (the rarest first, up to ranking.READ_BUDGET postings; a word
    past it alone, by its newest postings) and the commoner ones, checked in the first conversations."""
    present = sorted((w for w in qwords if df[w.token] > 0), key=lambda w: df[w.token])
    read: list[str] = []
    spent = 0
    for w in present:
        if read and spent + df[w.token] > ranking.READ_BUDGET:
            break
        read.append(w.token)
        spent += df[w.token]
    return read, [w.token for w in present if w.token not in read]


def text_page(conn: Conn, qwords: Sequence[ranking.QueryWord], query: RecallQuery, who: Who,
              stats_key: str) -> SharedTextPage:
    """The conversations of the shared store best matching ``qwords``, ranked as
    :func:`pimem.recall.ranking.rank` ranks local ones; the page ``query.offset``/``query.limit``.

    One statement (:func:`_text_sql`) reads the read words' postings from their GIN indexes, scores
    every doc holding one and picks the candidate conversations, as :func:`rank_docs` does, with the
    same floats; only the candidates' docs come back, with the words each holds, and are scored in
    full here (:func:`rank_sessions`)."""
    if not qwords:
        return SharedTextPage([], 0, [])
    stats = store_stats(conn, stats_key)
    ids: dict[str, int] = {}
    forms = word_forms(qwords)
    df = _doc_counts(conn, [w.token for w in qwords], stats, stats_key, ids, forms)
    read, checked = read_words(qwords, df)
    if not read:
        return SharedTextPage([], 0, searched_words(qwords, df, idfs(df, stats)))
    allowed: list[str] = []       # paths normpath changes (_UNNORMAL_PATH) that are in the folder
    decided: set[str] = set()
    while True:
        sql, params = _text_sql(read, checked, df, stats, query, who, allowed, ids if stats.turn_words else None,
                                forms)
        with conn.transaction():
            # One process: the parallel plan (partial aggregates, a sort, a merge) costs more than its
            # workers save on the postings, and takes cores from the other members' queries. Memory
            # for the groups (tens of thousands of docs) without spilling to disk (a server that
            # gives more keeps its own). No JIT: at millions of rows the planner's cost passes its
            # threshold and compiling the statement's ~80 expressions took 60 ms of a 4 s question
            # (nothing gained back: the time is the postings' heap pages).
            conn.execute("SET LOCAL max_parallel_workers_per_gather = 0")
            conn.execute("SET LOCAL jit = off")
            conn.execute("SELECT set_config('work_mem', greatest(setting::bigint, %s)::text || 'kB', true) "
                         "FROM pg_settings WHERE name = 'work_mem'", [TEXT_WORK_MEM_KB])
            found = conn.execute(sql, params).fetchall()
        if query.cwd is None:
            break
        # The folder filter decides such paths in Python (pimem.paths.in_folder): when the postings
        # hold some not decided yet, they are, and the statement runs again with them (rarely: a path
        # recorded with a trailing slash, a doubled one, . or ..).
        unnormal = set(found[0][-1] or ()) - decided if found else set()
        if not unnormal:
            found = [values for values in found if values[0] is not None]
            break
        decided.update(unnormal)
        allowed = sorted(cwd for cwd in decided if in_folder(cwd, query.cwd))
    candidates: list[Session] = []
    session_docs: dict[Session, list[_DocInfo]] = {}
    words: dict[tuple[int, int, int], tuple[frozenset[str], frozenset[str]]] = {}
    for values in found:
        author, machine, session_id, doc_key, ts, user_chars, reply_chars, cwd, user_bits, reply_bits, checked_bits \
            = values[1:12]
        session = (author, machine, session_id)
        if session not in session_docs:
            candidates.append(session)
            session_docs[session] = []
        if query.cwd is not None and not in_folder(cwd, query.cwd):
            continue
        bits = (user_bits, reply_bits, checked_bits)
        held = words.get(bits)
        if held is None:
            held = words[bits] = (
                frozenset([t for i, t in enumerate(read) if user_bits >> i & 1]
                          + [t for i, t in enumerate(checked) if checked_bits >> i & 1]),
                frozenset(t for i, t in enumerate(read) if reply_bits >> i & 1))
        session_docs[session].append(_DocInfo(session, (ts, author, machine, doc_key), user_chars, reply_chars,
                                              held[0], held[1]))   # type: ignore[arg-type]
    if not candidates:
        return SharedTextPage([], 0, searched_words(qwords, df, idfs(df, stats)))
    return rank_sessions(candidates, session_docs, qwords, read, checked, df, stats, query,
                         lambda page: _page_rows(conn, page), lambda keys: _user_texts(conn, keys))


def _text_sql(read: Sequence[str], checked: Sequence[str], df: dict[str, int], stats: Stats, query: RecallQuery,
              who: Who, allowed: Sequence[str], ids: dict[str, int] | None = None,
              forms: dict[str, tuple[str, ...]] | None = None) -> tuple[str, list[object]]:
    """The statement behind :func:`text_page`: :func:`rank_docs`'s first pass and candidates in SQL.

    * ``raw``: the postings, per read word and column, from the GIN index (``@>`` on one element, no
      recheck; the word arrays are never read), a word past the read budget by its newest
      READ_BUDGET postings; each tagged with its word's bit (``um`` user text, ``rm`` reply). With
      ``ids`` and turn_words beyond the shared buffers, the words read in full come from one scan
      instead (``&&`` on either column), each row's bits from its id arrays (inline, on the page the
      scan visits anyway): one heap visit per row.
    * ``post``: one row per doc, its bits OR-ed.
    * ``scored``: :func:`first_score` as one float expression: the weights are parameters (the floats
      Python computed) added in the same order, so the sums are the same floats; the best
      CANDIDATE_TURNS docs, ties to the newer (``order``: time, then author, machine, doc key in code
      point order: ``COLLATE "C"`` compares UTF-8 bytes, which order as code points do).
    * ``best``/``typed``: conversations by their best doc among those, and by :func:`typed_score`
      (count x idf per word, in the read order) over every doc; ``cand``: the first ``pool_size``
      of the one and half as many of the other, in that order, each once.
    * the result: every doc of the candidates (the session index), with its bits (0 when it holds no
      read word) and, in the first CHECKED_SESSIONS, the commoner words its user text holds.

    With a folder filter, the docs whose path normpath changes count only when listed in ``allowed``;
    the result's last column lists those the postings hold (one row at least: ``text_page`` decides
    them and runs the statement again).

    With ``ids`` (layout 3: every read and checked word's ``word_docs`` id), the postings and the
    candidates' docs are read from the narrow ``pimem.turn_words`` (``user_ids``/``reply_ids``), never
    from ``pimem.turns``: the same rows, the same answer, fewer and smaller heap pages.

    With ``forms`` (:func:`word_forms`), a word of several index tokens (an irregular verb's) is held by a row
    holding any of them (``&&`` on their array, where a word of one is ``@>`` on its one element)."""
    idf = idfs(df, stats)
    table = "pimem.turns" if ids is None else "pimem.turn_words"
    columns = ("user_words", "reply_words") if ids is None else ("user_ids", "reply_ids")
    element = "text[]" if ids is None else "integer[]"

    def value(token: str) -> list[object]:
        held = (forms or {}).get(token, (token,))
        return list(held) if ids is None else [ids[form] for form in held if form in ids]

    def holds(column: str, token: str) -> str:
        return f"{column} {'@>' if len(value(token)) == 1 else '&&'} %s::{element}"

    where, filter_params = _filters(query, who)
    extra = "".join(" AND " + clause for clause in where)
    folder = query.cwd is not None
    cwd = ", cwd" if folder else ""
    branches: list[str] = []
    params: list[object] = []
    # Layout 3, turn_words larger than the shared buffers: the words read in full, all in one scan of the
    # rows holding any of them in either column, each row's bits from its (inline) id arrays: a row
    # holding several read words, or one in both columns, is one heap visit, not one per posting (at 2M
    # rows the heap pages read from outside the buffers are the statement's time). A store the buffers
    # hold keeps a branch per (word, column): there the bits' array checks cost more than the visits
    # saved (docs/benchmarks.md, s11-text). The words past READ_BUDGET keep their own branches (their
    # newest postings per column).
    whole = [i for i, token in enumerate(read)
             if ids is not None and stats.beyond_buffers and df[token] <= ranking.READ_BUDGET]
    if whole:
        bits = {column: " | ".join(f"CASE WHEN {holds(column, read[i])} THEN {1 << i}::bigint ELSE 0::bigint END"
                                   for i in whole) for column in columns}
        branches.append(f"(SELECT author, machine, session_id, doc_key, ts{cwd}, {bits[columns[0]]} AS um, "
                        f"{bits[columns[1]]} AS rm FROM {table} WHERE ({columns[0]} && %s::{element} OR "
                        f"{columns[1]} && %s::{element}){extra})")
        any_of = [one for i in whole for one in value(read[i])]
        params.extend([*(value(read[i]) for i in whole), *(value(read[i]) for i in whole), any_of, any_of,
                       *filter_params])
    for i, token in enumerate(read):
        if i in whole:
            continue
        limit = f" ORDER BY ts DESC LIMIT {ranking.READ_BUDGET}" if df[token] > ranking.READ_BUDGET else ""
        for column, user_bit, reply_bit in ((columns[0], 1 << i, 0), (columns[1], 0, 1 << i)):
            branches.append(f"(SELECT author, machine, session_id, doc_key, ts{cwd}, {user_bit}::bigint AS um, "
                            f"{reply_bit}::bigint AS rm FROM {table} WHERE {holds(column, token)}{extra}{limit})")
            params.extend([value(token), *filter_params])
    ok = ""
    if folder:
        ok = " WHERE NOT (cwd ~ %s) OR cwd = ANY(%s::text[])"
        params.extend([_UNNORMAL_PATH, list(allowed)])
    score: list[str] = []
    for i, token in enumerate(read):
        score.append(f"CASE WHEN um & {1 << i} <> 0 THEN %s::float8 ELSE 0::float8 END")
        score.append(f"CASE WHEN rm & {1 << i} <> 0 THEN %s::float8 ELSE 0::float8 END")
        params.extend([idf[token] * ranking.USER_WEIGHT, idf[token] * ranking.REPLY_WEIGHT])
    typed: list[str] = []
    for i, token in enumerate(read):
        typed.append(f"(count(*) FILTER (WHERE um & {1 << i} <> 0))::float8 * %s::float8")
        params.append(idf[token])
    wanted = pool_size(query)
    session_order = 'author COLLATE "C", machine COLLATE "C", session_id COLLATE "C"'
    checked_sql = _checked_bits([value(token) for token in checked], columns[0], element, params)
    # A candidate's docs with the query's agents only: a local session has one agent, but a member may
    # write one conversation's rows under several, and the oracle (and local recall) reads only the
    # rows the filter keeps (the others would lengthen the conversation's typed text).
    of_sources = ""
    if query.sources is not None:
        of_sources = " WHERE t.source = ANY(%s)"
        params.append(sorted(query.sources))
    sql = (
        f"WITH raw AS ({' UNION ALL '.join(branches)}), "
        "post AS (SELECT author, machine, session_id, doc_key, (extract(epoch from ts) * 1000)::bigint AS ms, "
        f"bit_or(um) AS um, bit_or(rm) AS rm FROM raw{ok} GROUP BY author, machine, session_id, doc_key, ts), "
        f"top AS (SELECT author, machine, session_id, {_sum(score)} AS score FROM post "
        'ORDER BY 4 DESC, ms DESC, author COLLATE "C" DESC, machine COLLATE "C" DESC, doc_key COLLATE "C" DESC '
        f"LIMIT {ranking.CANDIDATE_TURNS}), "
        "best AS (SELECT author, machine, session_id, row_number() OVER (ORDER BY v DESC, "
        f"{session_order}) AS pos FROM (SELECT author, machine, session_id, greatest(0::float8, max(score)) AS v "
        f"FROM top GROUP BY author, machine, session_id ORDER BY v DESC, {session_order} LIMIT {wanted}) b), "
        f"typed AS (SELECT author, machine, session_id, {wanted} + row_number() OVER (ORDER BY v DESC, "
        f"{session_order}) AS pos FROM (SELECT author, machine, session_id, {_sum(typed)} AS v FROM post "
        f"WHERE um <> 0 GROUP BY author, machine, session_id ORDER BY v DESC, {session_order} "
        f"LIMIT {wanted // 2}) t), "
        "cand AS (SELECT author, machine, session_id, row_number() OVER (ORDER BY min(pos)) AS n "
        "FROM (SELECT * FROM best UNION ALL SELECT * FROM typed) c GROUP BY author, machine, session_id), "
        # Every doc of the candidates (the session index), then their bits from ``post`` without a join
        # (the planner cannot know how many rows the CTEs hold, and would join them row by row): both
        # grouped by doc, the groups without a candidate doc dropped.
        "cdocs AS (SELECT c.n, t.author, t.machine, t.session_id, t.doc_key, "
        "(extract(epoch from t.ts) * 1000)::bigint AS ms, t.user_chars, t.reply_chars, t.cwd, "
        f"CASE WHEN c.n <= {ranking.CHECKED_SESSIONS} THEN {checked_sql} ELSE 0 END AS cm "
        f"FROM cand c JOIN {table} t ON t.author = c.author AND t.machine = c.machine "
        f"AND t.session_id = c.session_id{of_sources}), "
        "docs AS (SELECT max(n) AS n, author, machine, max(session_id) AS session_id, doc_key, max(ms) AS ms, "
        "max(user_chars) AS user_chars, max(reply_chars) AS reply_chars, max(cwd) AS cwd, bit_or(um) AS um, "
        "bit_or(rm) AS rm, bit_or(cm) AS cm FROM (SELECT n, author, machine, session_id, doc_key, ms, user_chars, "
        "reply_chars, cwd, 0::bigint AS um, 0::bigint AS rm, cm FROM cdocs UNION ALL SELECT NULL, author, machine, "
        "NULL, doc_key, NULL, NULL, NULL, NULL, um, rm, 0 FROM post WHERE (author, machine, session_id) IN "
        "(SELECT author, machine, session_id FROM cand)) x GROUP BY author, machine, doc_key) ")
    if folder:
        # One row at least, carrying the paths to decide.
        sql += ("SELECT d.*, m.unnormal FROM (SELECT (SELECT array_agg(DISTINCT cwd) FROM raw WHERE cwd ~ %s) "
                "AS unnormal) m LEFT JOIN docs d ON true ORDER BY d.n")
        params.append(_UNNORMAL_PATH)
    else:
        sql += "SELECT * FROM docs ORDER BY n"
    return sql, params


def _sum(terms: Sequence[str]) -> str:
    """``terms`` added one after another from 0, as Python's ``value += term`` adds them."""
    expression = "0::float8"
    for term in terms:
        expression = f"({expression} + {term})"
    return expression


def _checked_bits(checked: Sequence[list[object]], column: str, element: str, params: list[object]) -> str:
    """The bits of the commoner words a doc's user text holds (read from the row: a few hundred docs);
    ``checked``: each word as its array (the word, or its id in layout 3; an irregular verb's forms: any of them)."""
    if not checked:
        return "0::bigint"
    params.extend(checked)
    return " | ".join(f"CASE WHEN t.{column} {'@>' if len(one) == 1 else '&&'} %s::{element} THEN {1 << j}::bigint "
                      "ELSE 0::bigint END" for j, one in enumerate(checked))


def rank_docs(docs: dict[Doc, _DocInfo], qwords: Sequence[ranking.QueryWord], read: Sequence[str],
              checked: Sequence[str], df: dict[str, int], stats: Stats, query: RecallQuery,
              fetch_sessions: Any, fetch_rows: Any, fetch_texts: Any) -> SharedTextPage:
    """The ranking itself (pure Python): :func:`pimem.recall.ranking.rank`'s steps 1-5 over ``docs``
    (the docs holding a read word, with the query words each holds), ``fetch_sessions`` giving every
    doc of some conversations, ``fetch_rows`` the rows of a page's best docs and ``fetch_texts`` the user
    texts of some docs (the passages).

    Every float is summed in one fixed order (:func:`first_score`, :func:`typed_score`, the words'
    order in :func:`rank_sessions`), never in the order rows or sets happen to come in: equal scores
    are then equal floats whatever read them, and :func:`text_page` computes the same floats in SQL."""
    idf = idfs(df, stats)
    weights = [(token, idf[token] * ranking.USER_WEIGHT, idf[token] * ranking.REPLY_WEIGHT) for token in read]
    typed_weights = [idf[token] for token in read]
    read_set = set(read)
    first: dict[Doc, float] = {}
    typed_counts: dict[Session, list[int]] = {}
    for doc, info in docs.items():
        if not (info.user & read_set or info.reply & read_set):
            continue
        first[doc] = first_score(weights, info.user, info.reply)
        held = [i for i, token in enumerate(read) if token in info.user]
        if held:
            counts = typed_counts.setdefault(info.session, [0] * len(read))
            for i in held:
                counts[i] += 1
    best_docs = [doc for doc, _ in heapq.nlargest(ranking.CANDIDATE_TURNS, first.items(),
                                                  key=lambda item: (item[1], docs[item[0]].order))]
    session_best: dict[Session, float] = {}
    for doc in best_docs:
        session = docs[doc].session
        session_best[session] = max(session_best.get(session, 0.0), first[doc])
    session_typed = {session: typed_score(typed_weights, counts) for session, counts in typed_counts.items()}
    wanted = pool_size(query)
    by_best = sorted(session_best, key=lambda s: (-session_best[s], s))
    by_typed = [s for s, _ in heapq.nlargest(wanted, sorted(session_typed.items()), key=itemgetter(1))]
    candidates = list(dict.fromkeys(by_best[:wanted] + by_typed[:wanted // 2]))
    if not candidates:
        return SharedTextPage([], 0, searched_words(qwords, df, idf))
    session_docs: dict[Session, list[_DocInfo]] = {s: [] for s in candidates}
    for info in fetch_sessions(candidates).values():
        if info.session in session_docs:
            session_docs[info.session].append(info)
    return rank_sessions(candidates, session_docs, qwords, read, checked, df, stats, query, fetch_rows,
                         fetch_texts)


def idfs(df: dict[str, int], stats: Stats) -> dict[str, float]:
    """BM25's idf of each word, from its count and the store's size (:func:`pimem.recall.ranking.bm25_idf`)."""
    return {token: ranking.bm25_idf(count, stats.docs) for token, count in df.items()}


def pool_size(query: RecallQuery) -> int:
    """The conversations scored in full: CANDIDATE_SESSIONS, or as many as the page reaches."""
    return max(ranking.CANDIDATE_SESSIONS, query.offset + query.limit)


def searched_words(qwords: Sequence[ranking.QueryWord], df: dict[str, int],
                   idf: dict[str, float]) -> list[tuple[ranking.QueryWord, int, float]]:
    return sorted(((w, df[w.token], idf[w.token]) for w in qwords if df[w.token] > 0), key=lambda item: item[1])


def first_score(weights: Sequence[tuple[str, float, float]], user: set[str] | frozenset[str],
                reply: set[str] | frozenset[str]) -> float:
    """A doc's first-pass score: for each read word in the read order (rarest first), its user weight
    if the user text holds it, then its reply weight if the reply does, added one after another as
    local ranking adds them (word by word, user then reply)."""
    value = 0.0
    for token, in_user, in_reply in weights:
        if token in user:
            value += in_user
        if token in reply:
            value += in_reply
    return value


def typed_score(weights: Sequence[float], counts: Sequence[int]) -> float:
    """A conversation's typed words: for each read word in the read order, its idf times the number of
    the conversation's user texts holding it, the products added one after another."""
    value = 0.0
    for weight, count in zip(weights, counts, strict=True):
        value += count * weight
    return value


def rank_sessions(candidates: Sequence[Session], session_docs: dict[Session, list[_DocInfo]],
                  qwords: Sequence[ranking.QueryWord], read: Sequence[str], checked: Sequence[str],
                  df: dict[str, int], stats: Stats, query: RecallQuery, fetch_rows: Any,
                  fetch_texts: Any) -> SharedTextPage:
    """Steps 3-6 of local ranking: every doc of the ``candidates`` (``session_docs``: the query words
    each holds, the commoner words only in the first CHECKED_SESSIONS) scored in full, each conversation
    by its best turn and as one document of its user texts, the two fused by reciprocal rank, the first
    ranking.PASSAGE_SESSIONS ordered once more with their best passage (``fetch_texts`` reading the user texts
    it needs) and their best turn's coverage (ranking.head_order, as locally); the page
    ``query.offset``/``query.limit``, its rows from ``fetch_rows``."""
    total_docs = max(stats.docs, 1)
    idf = idfs(df, stats)
    searched = searched_words(qwords, df, idf)
    read_set = set(read)
    checked_sessions = set(candidates[:ranking.CHECKED_SESSIONS])
    tokens = list(read) + list(checked)
    avg_session = stats.avg_user * total_docs / max(stats.sessions, 1)
    query_weight = sum(idf[token] for token in tokens) or 1.0
    conversations: list[tuple[Session, _DocInfo, float, set[str]]] = []
    session_scores: dict[Session, float] = {}
    for session in candidates:
        best: _DocInfo | None = None
        best_score, matched = -1.0, set()
        tf: dict[str, int] = defaultdict(int)
        length = 0.0
        for info in session_docs[session]:
            length += info.user_chars
            user_norm = ranking._norm(info.user_chars, stats.avg_user, ranking.USER_B)
            reply_norm = ranking._norm(info.reply_chars, stats.avg_reply, ranking.B)
            value = 0.0
            covered = 0.0
            here: set[str] = set()
            for token in tokens:
                # The commoner words: in what the person typed, in the first sessions only (as locally).
                is_checked = token not in read_set
                in_user = token in info.user and (not is_checked or session in checked_sessions)
                in_reply = token in info.reply and not is_checked
                if in_user:
                    tf[token] += 1
                    value += idf[token] * ranking.USER_WEIGHT * user_norm
                    covered += idf[token]
                elif in_reply:
                    covered += idf[token] * ranking.REPLY_WEIGHT
                if in_reply:
                    value += idf[token] * ranking.REPLY_WEIGHT * reply_norm
                if in_user or in_reply:
                    here.add(token)
            value *= 1 + ranking.COVERAGE * covered / query_weight   # as locally (ranking.COVERAGE)
            if best is None or value > best_score or (value == best_score and info.order > best.order):
                best, best_score, matched = info, value, here
        whole = 0.0
        for token in tokens:      # the words' order, not the order the docs came in
            count = tf.get(token, 0)
            if count:
                whole += idf[token] * count * (ranking.K1 + 1) / (
                    count + ranking.K1 * (1 - ranking.B + ranking.B * length / max(avg_session, 1.0)))
        session_scores[session] = whole
        if best is not None:
            conversations.append((session, best, best_score, matched))
    newest_first = sorted(conversations, key=lambda c: c[1].order, reverse=True)   # ties: the newer best turn
    by_turn = sorted(newest_first, key=lambda c: -c[2])
    by_session = sorted(newest_first, key=lambda c: -session_scores[c[0]])
    fused: dict[Session, float] = defaultdict(float)
    for position, conversation in enumerate(by_turn):
        fused[conversation[0]] += ranking.TURN_SHARE / (ranking.RRF_K + position + 1)
    for position, conversation in enumerate(by_session):
        fused[conversation[0]] += (1 - ranking.TURN_SHARE) / (ranking.RRF_K + position + 1)
    conversations = sorted(newest_first, key=lambda c: (-fused[c[0]], -c[2]))
    head = conversations[:ranking.PASSAGE_SESSIONS]
    if ranking.PASSAGE_SHARE > 0 and len(head) >= 2:
        def held(session: Session) -> Iterator[tuple[tuple[str, str, str], list[float]]]:
            for info in session_docs[session]:
                yield (info.session[0], info.session[1], info.order[3]), [
                    idf[token] for token in tokens
                    if token in info.user and (token in read_set or session in checked_sessions)]
        if ranking.FUSED_HEAD:   # as locally (ranking._add_passages)
            order = ranking.head_order([c[0] for c in head], held, idf, fetch_texts, ranking.asked(qwords),
                                       [c[2] for c in head], [session_scores[c[0]] for c in head],
                                       [c[3] for c in head], query_weight, ranking.verb_tokens(qwords))
            conversations[:len(head)] = [head[i] for i in order]
        else:
            for conversation, added in zip(head, ranking.passage_bonus([c[0] for c in head], held, idf, fetch_texts,
                                                                       ranking.asked(qwords),
                                                                       ranking.verb_tokens(qwords)), strict=True):
                fused[conversation[0]] += added
            conversations[:len(head)] = sorted(head, key=lambda c: (-fused[c[0]], -c[2]))
    page = conversations[query.offset:query.offset + query.limit]
    rows: list[RecallRow] = []
    fetched: dict[Doc, RecallRow] = fetch_rows([(c[1].session[0], c[1].session[1], c[1].order[3]) for c in page])
    for _session, best, _score, matched in page:
        row = fetched.get((best.session[0], best.session[1], best.session[2], best.order[3]))
        if row is None:
            continue
        row.hits = len(matched)
        row.matched = list(dict.fromkeys(w.surface for w in qwords if w.token in matched))
        rows.append(row)
    return SharedTextPage(rows, len(conversations), searched)


def _page_rows(conn: Conn, keys: Sequence[tuple[str, str, str]]) -> dict[Doc, RecallRow]:
    """The rows of a page's best docs, in one query."""
    found: dict[Doc, RecallRow] = {}
    if not keys:
        return found
    for values in conn.execute(f"SELECT {_ROW} FROM pimem.turns WHERE (author, machine, doc_key) IN "
                               "(SELECT * FROM unnest(%s::text[], %s::text[], %s::text[]))",
                               [[k[0] for k in keys], [k[1] for k in keys], [k[2] for k in keys]]):
        row = make_shared_row(values, 0)
        found[(row.author or "", row.machine or "", row.session_id, row.turn_id)] = row
    return found


def _user_texts(conn: Conn, keys: Sequence[tuple[str, str, str]]) -> dict[tuple[str, str, str], str]:
    """The user texts of some docs ``(author, machine, doc_key)``, in one query (the passages)."""
    if not keys:
        return {}
    found = conn.execute(
        "SELECT author, machine, doc_key, user_text FROM pimem.turns WHERE (author, machine, doc_key) IN "
        "(SELECT * FROM unnest(%s::text[], %s::text[], %s::text[]))",
        [[k[0] for k in keys], [k[1] for k in keys], [k[2] for k in keys]])
    return {(str(author), str(machine), str(doc_key)): str(text or "") for author, machine, doc_key, text in found}


def text_oracle(conn: Conn, qwords: Sequence[ranking.QueryWord], query: RecallQuery, who: Who,
                stats_key: str, *, budgeted: bool = False) -> SharedTextPage:
    """Free text ranked from every shared row (a plain scan: no index; each word's count by a scan).
    Without ``budgeted``: every word read, no read budget: what :func:`text_page` must equal while its
    budgets are not reached. With it: the budgets of local ranking applied to the scanned rows as
    :func:`text_page` applies them (the rarest words read up to ranking.READ_BUDGET postings, a word past
    it by its newest postings, the commoner words checked in the user texts of the first
    ranking.CHECKED_SESSIONS conversations): what it must equal at any size. Tests and the benchmark."""
    tokens = [w.token for w in qwords]
    forms = word_forms(qwords)
    as_word: dict[str, set[str]] = defaultdict(set)   # an index token -> the query words it is
    for token in tokens:
        for form in forms[token]:
            as_word[form].add(token)
    every = list(as_word)
    stats = store_stats(conn, stats_key)
    where, params = _filters(query, who)
    docs: dict[Doc, _DocInfo] = {}
    _read_docs(conn.execute(f"SELECT {_DOC_COLUMNS} FROM pimem.turns" + (f" WHERE {' AND '.join(where)}"
                                                                          if where else ""),
                            [every, every, *params]), query, docs, as_word)
    df: dict[str, int] = {}
    for token in dict.fromkeys(tokens):   # the turns holding any of the word's forms
        row = conn.execute("SELECT count(*) FROM pimem.turns WHERE user_words && %s::text[] "
                           "OR reply_words && %s::text[]", [list(forms[token])] * 2).fetchone()
        df[token] = int(row[0]) if row is not None else 0
    if not budgeted:
        holding = {doc: info for doc, info in docs.items() if info.user or info.reply}
        present = sorted((t for t in dict.fromkeys(tokens) if df[t] > 0), key=lambda t: df[t])

        def sessions(wanted: Sequence[Session]) -> dict[Doc, _DocInfo]:
            chosen = set(wanted)
            return {doc: info for doc, info in docs.items() if info.session in chosen}

        return rank_docs(holding, qwords, present, [], df, stats, query, sessions,
                         lambda keys: _page_rows(conn, keys), lambda keys: _user_texts(conn, keys))
    read, checked = read_words(qwords, df)   # the words' choice is text_page's; the rows are scanned here
    newest = sorted(docs.values(), key=lambda info: info.order[0], reverse=True)
    postings: dict[Doc, tuple[set[str], set[str]]] = {}
    for token in read:
        for in_user in (True, False):
            holders = [info for info in newest if token in (info.user if in_user else info.reply)]
            if df[token] > ranking.READ_BUDGET:
                holders = holders[:ranking.READ_BUDGET]
            for info in holders:
                doc = (info.session[0], info.session[1], info.session[2], info.order[3])
                postings.setdefault(doc, (set(), set()))[0 if in_user else 1].add(token)
    holding = {doc: _DocInfo(docs[doc].session, docs[doc].order, docs[doc].user_chars, docs[doc].reply_chars,
                             user, reply) for doc, (user, reply) in postings.items()}

    def budgeted_sessions(wanted: Sequence[Session]) -> dict[Doc, _DocInfo]:
        chosen, first = set(wanted), set(wanted[:ranking.CHECKED_SESSIONS])
        found: dict[Doc, _DocInfo] = {}
        for doc, info in docs.items():
            if info.session in chosen:
                user, reply = postings.get(doc, (set(), set()))
                if info.session in first:
                    user = user | (info.user & set(checked))
                found[doc] = _DocInfo(info.session, info.order, info.user_chars, info.reply_chars, set(user),
                                      set(reply))
        return found

    return rank_docs(holding, qwords, read, checked, df, stats, query, budgeted_sessions,
                     lambda keys: _page_rows(conn, keys), lambda keys: _user_texts(conn, keys))
