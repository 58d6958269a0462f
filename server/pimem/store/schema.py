"""The store's schema: the extension's tables verbatim, pimem's ``pimem_*`` tables, and their layouts.

Compatibility with the Pi extension *pi-session-memory* (see ARCHITECTURE.md): ``sessions``,
``turns`` and ``source_files`` keep the extension's names, columns, types and keys. The DDL below is
the extension's own (0.1.0 ``db.ts`` and the 0.1.4 ``source_files`` table), so the extension's
``CREATE TABLE IF NOT EXISTS`` statements are no-ops on a store pimem created. pimem only adds tables
whose names start with ``pimem_`` and nullable columns, and never a trigger on ``turns``.

Layouts (the shape of the ``pimem_*`` tables), in ``pimem_meta``:

* ``layout``: an integer; ``layout_written_by``: the pimem version that gave the store that layout;
  ``min_reader_layout``: the oldest layout whose pimem still reads the store right.
* An older layout is migrated forward in place, in one transaction, by the steps in
  :data:`MIGRATIONS` (N → N+1): nothing is dropped, nothing re-parsed. A new store is created at
  :data:`BASE_LAYOUT` and goes through the same steps, so new and upgraded stores cannot differ.
* A newer layout is never written: a writer gets a StoreError asking for an upgrade (also when a
  newer pimem migrates the store while a sync is under way: ``store.transaction`` re-checks). A
  reader still answers: normally if ``min_reader_layout`` allows, else from the extension's tables
  alone (recall scans them, as the oracle does; see :func:`hide_pimem_tables`).
* To change the layout: write a step ``_layout_N_to_N1(conn)``, register it as ``MIGRATIONS[N]``,
  set ``LAYOUT = N + 1``, and raise ``MIN_READER_LAYOUT`` only if an older pimem would misread the
  new layout (a new table does not; a changed meaning of ``pimem_docs`` does).
* ``schema_version`` is the key pimem 0.1.0 reads: it drops every ``pimem_*`` table unless it finds
  "3" there. It stays "3" for ever, so 0.1.0 never drops a newer layout (it does write into it as
  if it were layout 3: a step that cannot live with that must say so).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from dataclasses import dataclass

from pimem import __version__
from pimem.store.edits import EDITS_BY_HASH_SCHEMA, EDITS_CONTEXT_SCHEMA, EDITS_SCHEMA
from pimem.store.failures import StoreError
from pimem.store.meta import STORE_ID, get_meta, has_object, new_store_id, set_meta
from pimem.store.touches import TOUCHES_SCHEMA

BASE_LAYOUT = 3            # the tables below; what pimem 0.1.0 called schema_version "3"
LAYOUT = 9                 # the layout this pimem writes
MIN_READER_LAYOUT = 3      # the oldest layout whose pimem can read what this one writes
LEGACY_SCHEMA_VERSION = "3"

# The extension's schema, verbatim (pi-session-memory 0.1.0 src/db.ts).
SEED_SCHEMA = """
CREATE TABLE IF NOT EXISTS sessions (
  session_id  TEXT PRIMARY KEY,
  source      TEXT NOT NULL DEFAULT 'pi',
  cwd         TEXT NOT NULL,
  started_at  INTEGER NOT NULL,
  model_id    TEXT,
  jsonl_path  TEXT NOT NULL
);

CREATE INDEX IF NOT EXISTS idx_sessions_time ON sessions(started_at DESC);

CREATE TABLE IF NOT EXISTS turns (
  turn_id     TEXT PRIMARY KEY,
  session_id  TEXT NOT NULL REFERENCES sessions(session_id),
  turn_index  INTEGER NOT NULL,
  ts          INTEGER NOT NULL,
  user_text   TEXT NOT NULL,
  reply_text  TEXT NOT NULL,
  tool_names  TEXT,
  user_message_id TEXT
);

CREATE INDEX IF NOT EXISTS idx_turns_session ON turns(session_id, turn_index);
CREATE INDEX IF NOT EXISTS idx_turns_ts      ON turns(ts DESC);
"""

# The 0.1.4 table of per-file sync state (spec: jsonl_path PK, source, size, mtime_ms, sha256).
# pimem creates it so the extension finds it, but keeps its own richer state in pimem_files.
SEED_SOURCE_FILES_SCHEMA = """
CREATE TABLE IF NOT EXISTS source_files (
  jsonl_path TEXT PRIMARY KEY,
  source     TEXT NOT NULL,
  size       INTEGER NOT NULL,
  mtime_ms   REAL NOT NULL,
  sha256     TEXT NOT NULL
);
"""

PIMEM_SCHEMA = """
CREATE TABLE IF NOT EXISTS pimem_meta (
  key   TEXT PRIMARY KEY,
  value TEXT NOT NULL
);

-- Per transcript file: how far pimem has parsed it and the parser state needed to continue.
CREATE TABLE IF NOT EXISTS pimem_files (
  file_id      INTEGER PRIMARY KEY,
  jsonl_path   TEXT NOT NULL UNIQUE,
  source       TEXT NOT NULL,
  size         INTEGER NOT NULL,
  mtime_ns     INTEGER NOT NULL,
  inode        INTEGER NOT NULL,
  parsed_bytes INTEGER NOT NULL,
  parsed_lines INTEGER NOT NULL,
  fingerprint  TEXT NOT NULL,
  session_id   TEXT,
  state        TEXT NOT NULL,
  revision     INTEGER NOT NULL DEFAULT 0  -- bumped by every commit; a sync that finds it moved stops
);

-- Pi session trees: for every entry, the id of its nearest user-message ancestor (NULL if none),
-- so that an appended reply on any branch finds its turn without re-reading the file.
CREATE TABLE IF NOT EXISTS pimem_pi_nodes (
  file_id  INTEGER NOT NULL,
  entry_id TEXT NOT NULL,
  anchor   TEXT,
  PRIMARY KEY (file_id, entry_id)
) WITHOUT ROWID;

-- One row per indexed turn. doc_key is the recall index's rowid: (UTC day << 20) | n, so that index
-- lists run newest day first; ts orders turns within a day; line is where the user message sits in
-- its transcript.
CREATE TABLE IF NOT EXISTS pimem_docs (
  doc_key INTEGER PRIMARY KEY,
  turn_id TEXT NOT NULL UNIQUE,
  line    INTEGER,
  ts      INTEGER NOT NULL
);

-- Docs whose index postings are not written yet (recall scans them); see pimem/index.py.
CREATE TABLE IF NOT EXISTS pimem_pending (
  doc_key INTEGER PRIMARY KEY
);
"""

# Contentless trigram indexes over the lowercased texts (see pimem/index.py). Lowercasing is done in
# Python (str.lower), so the tokenizer must not fold case itself. columnsize=0: no per-row size table,
# so a doc can be indexed again (after an update) without removing its old postings first.
FTS_SCHEMA = """
CREATE VIRTUAL TABLE IF NOT EXISTS pimem_fts_user USING fts5(
  text, tokenize = 'trigram case_sensitive 1', detail = none, content = '', columnsize = 0
);
CREATE VIRTUAL TABLE IF NOT EXISTS pimem_fts_reply USING fts5(
  text, tokenize = 'trigram case_sensitive 1', detail = none, content = '', columnsize = 0
);
"""



def _layout_3_to_4(conn: sqlite3.Connection) -> None:
    """``pimem_touches`` (the files each turn's tool calls touched; pimem.store.touches). It is filled
    by parsing the transcripts again: a store of layout 3 has no importer rules versions in
    ``pimem_meta`` (pimem.sync.rules), so its next sync parses every file once. Older readers ignore
    the table (MIN_READER_LAYOUT stays 3); pimem 0.1.0, which writes into any layout-3-like store, leaves
    the turns it adds without touches until this pimem parses them again."""
    for statement in _split_sql(TOUCHES_SCHEMA):
        conn.execute(statement)


# Every doc whose postings were written, in the order they were written (pimem.index.build_pending):
# a process that keeps index lists in memory (pimem.recall.dense) learns from it which docs changed
# since it read them, instead of dropping everything whenever the index grows.
INDEX_LOG_SCHEMA = """
CREATE TABLE IF NOT EXISTS pimem_index_log (
  seq     INTEGER PRIMARY KEY,
  doc_key INTEGER NOT NULL
);
"""


def _layout_4_to_5(conn: sqlite3.Connection) -> None:
    """``pimem_index_log``. Older readers ignore it (MIN_READER_LAYOUT stays 3), and older writers
    refuse a newer layout, so every index write from now on is logged."""
    for statement in _split_sql(INDEX_LOG_SCHEMA):
        conn.execute(statement)


# The word index of free-text recall (pimem.words owns what goes in: words, CJK pieces, identifier
# parts). Contentless, per-column postings without positions; columnsize=0 as above; the docs' sessions
# and text lengths beside it, for ranking without reading the texts.
WORD_TOKENIZER = "porter unicode61 remove_diacritics 2 tokenchars ''_''"
WORDS_SCHEMA = f"""
CREATE VIRTUAL TABLE IF NOT EXISTS pimem_words USING fts5(
  user, reply, tokenize = '{WORD_TOKENIZER}', detail = column, content = '', columnsize = 0
);
CREATE TABLE IF NOT EXISTS pimem_word_docs (
  doc_key     INTEGER PRIMARY KEY,
  session     INTEGER NOT NULL,
  user_chars  INTEGER NOT NULL,
  reply_chars INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS pimem_word_docs_session ON pimem_word_docs(session, doc_key);
-- Docs to write into the word index only (docs indexed before the word index existed).
CREATE TABLE IF NOT EXISTS pimem_words_pending (
  doc_key INTEGER PRIMARY KEY
);
"""


def _layout_5_to_6(conn: sqlite3.Connection) -> None:
    """The word index of free-text recall (pimem.words). Every doc already indexed is listed in
    ``pimem_words_pending``, whose words the next index build writes (pimem.index.build_pending), in
    batches, resumably; until then free text falls back to the trigram index. Older readers ignore the
    new tables (MIN_READER_LAYOUT stays 3); older writers refuse a newer layout, so no turn is indexed
    into one index without the other. A store without FTS5 gets no word index either."""
    if get_meta(conn, "index") != "trigram":
        return
    for statement in _split_sql(WORDS_SCHEMA):
        conn.execute(statement)
    conn.execute("INSERT OR IGNORE INTO pimem_words_pending(doc_key) SELECT d.doc_key FROM pimem_docs d "
                 "WHERE NOT EXISTS (SELECT 1 FROM pimem_pending p WHERE p.doc_key = d.doc_key)")


def _layout_6_to_7(conn: sqlite3.Connection) -> None:
    """The edit spans (pimem.store.edits): the lines each edit call wrote, for the attribution of a
    file's lines (pimem.lineblame). Filled by parsing the transcripts again: the importers' rules
    versions rose with it (pimem.sync.rules), so the next sync parses every file of those sources once.
    Older readers ignore the tables (MIN_READER_LAYOUT stays 3); older writers refuse a newer layout, so
    no turn is written without its spans."""
    for statement in _split_sql(EDITS_SCHEMA):
        conn.execute(statement)


def _layout_7_to_8(conn: sqlite3.Connection) -> None:
    """An index of the edit spans' added lines by hash across files (pimem.store.edits
    ``written_elsewhere``): a line some call also wrote in another file is attributed only inside a
    block (pimem.lineblame, rule 3). Nothing is parsed again; older readers ignore the index and read
    the same tables (MIN_READER_LAYOUT stays 3)."""
    for statement in _split_sql(EDITS_BY_HASH_SCHEMA):
        conn.execute(statement)


def _layout_8_to_9(conn: sqlite3.Connection) -> None:
    """The lines each edit call kept next to the lines it added (pimem.store.edits ``pimem_edit_context``):
    they place a call's line between its neighbours (pimem.lineblame rule 2). Filled by parsing the
    transcripts again: the importers' rules versions rose with it (pimem.sync.rules). Older readers
    ignore the table (MIN_READER_LAYOUT stays 3); older writers refuse a newer layout, so no span is
    written without its context."""
    for statement in _split_sql(EDITS_CONTEXT_SCHEMA):
        conn.execute(statement)


# MIGRATIONS[n] brings a store from layout n to n + 1, inside the caller's transaction.
MIGRATIONS: dict[int, Callable[[sqlite3.Connection], None]] = {3: _layout_3_to_4, 4: _layout_4_to_5,
                                                                5: _layout_5_to_6, 6: _layout_6_to_7,
                                                                7: _layout_7_to_8, 8: _layout_8_to_9}


@dataclass(frozen=True)
class StoreLayout:
    layout: int | None          # None: no pimem tables yet (a new store, or one only the extension wrote)
    min_reader_layout: int
    written_by: str | None

    @property
    def newer(self) -> bool:
        return self.layout is not None and self.layout > LAYOUT

    @property
    def readable(self) -> bool:
        """Whether this pimem may read the pimem_* tables (else only the extension's)."""
        return self.min_reader_layout <= LAYOUT


def read_layout(conn: sqlite3.Connection) -> StoreLayout:
    if not has_object(conn, "pimem_meta"):
        return StoreLayout(None, 0, None)
    meta = dict(conn.execute("SELECT key, value FROM pimem_meta WHERE key IN "
                             "('layout', 'min_reader_layout', 'layout_written_by', 'schema_version')").fetchall())
    raw = meta.get("layout", meta.get("schema_version"))   # pimem 0.1.0 wrote only schema_version
    if raw is None:
        return StoreLayout(None, 0, None)
    try:
        layout = int(raw)
        min_reader = int(meta.get("min_reader_layout", layout))
    except ValueError:
        raise StoreError(f"the layout recorded in this store is unreadable ({raw!r}): pimem leaves it as it is; "
                         "a newer pimem may understand it") from None
    return StoreLayout(layout, min_reader, meta.get("layout_written_by"))


def newer_layout_message(layout: StoreLayout, path: object) -> str:
    by = f"pimem {layout.written_by}" if layout.written_by else "a newer pimem"
    return (f"this store ({path}) was written by {by} (layout {layout.layout}); this pimem ({__version__}) "
            f"understands up to layout {LAYOUT}: please upgrade")


def table_columns(conn: sqlite3.Connection, table: str) -> set[str]:
    return {str(row[1]) for row in conn.execute(f"PRAGMA table_info({table})")}


def _upgrade_seed_layout(conn: sqlite3.Connection) -> None:
    """Bring a store written by any pi-session-memory release up to the current layout, in place.

    Unlike the extension's own migration, rows are never deleted: a turn without a
    ``user_message_id`` is kept (it simply stays NULL).
    """
    if "source" not in table_columns(conn, "sessions"):
        conn.execute("ALTER TABLE sessions ADD COLUMN source TEXT NOT NULL DEFAULT 'pi'")
    if "user_message_id" not in table_columns(conn, "turns"):
        conn.execute("ALTER TABLE turns ADD COLUMN user_message_id TEXT")


def fts_available(conn: sqlite3.Connection) -> bool:
    try:
        conn.execute("CREATE VIRTUAL TABLE temp.pimem_probe USING fts5(x, tokenize = 'trigram')")
        conn.execute("DROP TABLE temp.pimem_probe")
        return True
    except sqlite3.Error:
        return False


def _drop_pimem_tables(conn: sqlite3.Connection) -> None:
    """Only for the layouts before the migration scheme (1 and 2, never released): everything pimem
    adds is derived from the transcripts and the turn rows, so it is built again."""
    names = [row[0] for row in conn.execute(
        "SELECT name FROM sqlite_master WHERE type = 'table' AND name LIKE 'pimem!_%' ESCAPE '!' "
        "AND sql LIKE 'CREATE VIRTUAL TABLE%'")]
    for name in names:
        conn.execute(f'DROP TABLE IF EXISTS "{name}"')  # also drops the FTS5 shadow tables
    names = [row[0] for row in conn.execute(
        "SELECT name FROM sqlite_master WHERE type = 'table' AND name LIKE 'pimem!_%' ESCAPE '!'")]
    for name in names:
        conn.execute(f'DROP TABLE IF EXISTS "{name}"')


def _create_base_layout(conn: sqlite3.Connection) -> None:
    """The extension's tables (kept as they are if present) and pimem's tables of BASE_LAYOUT."""
    for statement in _split_sql(SEED_SCHEMA + SEED_SOURCE_FILES_SCHEMA + PIMEM_SCHEMA):
        conn.execute(statement)
    _upgrade_seed_layout(conn)
    index_state = "trigram" if fts_available(conn) else "unavailable"
    if index_state == "trigram":
        for statement in _split_sql(FTS_SCHEMA):
            conn.execute(statement)
    set_meta(conn, "index", index_state)
    set_meta(conn, "schema_version", LEGACY_SCHEMA_VERSION)


def migrate(conn: sqlite3.Connection, *, for_writing: bool, path: object) -> StoreLayout:
    """Bring the store to LAYOUT, inside the caller's write transaction (a no-op if another process
    just did). The layout is read again here, under the write lock."""
    found = read_layout(conn)
    if found.newer:             # a newer pimem got there first
        if for_writing:
            raise StoreError(newer_layout_message(found, path))
        return found
    if found.layout == LAYOUT:
        return found
    start = found.layout
    if start is None or start < BASE_LAYOUT:
        if start is not None:
            _drop_pimem_tables(conn)
        _create_base_layout(conn)
        start = BASE_LAYOUT
    for layout in range(start, LAYOUT):
        MIGRATIONS[layout](conn)
    if get_meta(conn, STORE_ID) is None:     # a new store (or one an older pimem made): its identity
        new_store_id(conn)
    set_meta(conn, "layout", str(LAYOUT))
    set_meta(conn, "min_reader_layout", str(MIN_READER_LAYOUT))
    set_meta(conn, "layout_written_by", __version__)
    return StoreLayout(LAYOUT, MIN_READER_LAYOUT, __version__)


def hide_pimem_tables(conn: sqlite3.Connection) -> None:
    """Make this connection see a store without pimem's tables, for a layout it cannot read.

    SQLite resolves an unqualified name in the connection's temp schema first, so these empty
    stand-ins (never written to the file) hide the unknown ``pimem_*`` tables from every reader:
    recall finds no index and scans ``turns`` and ``sessions``, the extension's tables, which every
    layout keeps; status counts them. Any reader of a new ``pimem_*`` table needs a stand-in here.
    """
    conn.execute("CREATE TEMP TABLE pimem_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
    conn.execute("CREATE TEMP VIEW pimem_docs AS SELECT NULL AS doc_key, NULL AS turn_id, NULL AS line, "
                 "NULL AS ts WHERE 0")
    conn.execute("CREATE TEMP VIEW pimem_pending AS SELECT NULL AS doc_key WHERE 0")
    conn.execute("CREATE TEMP VIEW pimem_touches AS SELECT NULL AS path, NULL AS turn_id, NULL AS action, "
                 "NULL AS session_id, NULL AS ts WHERE 0")
    conn.execute("CREATE TEMP VIEW pimem_edit_files AS SELECT NULL AS path_id, NULL AS path WHERE 0")
    conn.execute("CREATE TEMP VIEW pimem_edit_spans AS SELECT NULL AS span_id, NULL AS path_id, NULL AS turn_id, "
                 "NULL AS ts, NULL AS tool, NULL AS call_id, NULL AS whole WHERE 0")
    conn.execute("CREATE TEMP VIEW pimem_edit_lines AS SELECT NULL AS path_id, NULL AS hash, NULL AS span_id, "
                 "NULL AS pos WHERE 0")
    conn.execute("CREATE TEMP VIEW pimem_edit_context AS SELECT NULL AS path_id, NULL AS hash, NULL AS span_id, "
                 "NULL AS pos WHERE 0")


def _split_sql(script: str) -> list[str]:
    statements: list[str] = []
    buffer: list[str] = []
    for line in script.splitlines():
        if line.strip().startswith("--"):
            continue
        buffer.append(line)
        if line.rstrip().endswith(";"):
            statement = "\n".join(buffer).strip()
            if statement:
                statements.append(statement)
            buffer = []
    tail = "\n".join(buffer).strip()
    if tail:
        statements.append(tail)
    return statements
