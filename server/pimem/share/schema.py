"""The shared store's schema in PostgreSQL (15 or newer), its layouts, and the roles that reach it.

Everything lives in the PostgreSQL schema ``pimem`` (docs/share.md has the columns and the policies):

* ``pimem.turns``: one row per pushed turn, keyed by ``(author, machine, doc_key)``; ``doc_key`` is the
  turn's ``turns.turn_id`` in the pushing machine's local store (unique there). Texts are the redacted
  ones (``pimem.share.gate``); ``user_lower``/``reply_lower`` are Python's ``str.lower`` of them, computed
  at the push so that entity recall folds case exactly as local recall does (PostgreSQL's ``lower()``
  differs on some characters); ``user_words``/``reply_words`` are the tokens of the local word index
  (``pimem.words.tokens``), so free text ranks the same way; ``user_chars``/``reply_chars`` their lengths.
  ``ts`` is the local ``turns.ts`` (milliseconds since the epoch) as a timestamptz (microseconds: exact).
* ``pimem.word_docs`` (layout 2): each word's number of rows holding it (in ``user_words`` or
  ``reply_words``), free text's document counts. Kept by statement triggers on ``turns`` (inserted,
  updated and deleted rows, through their transition tables), so every writer keeps it exact: the push,
  ``forget``, an older pimem, an admin's ``DELETE``. The trigger function is ``SECURITY DEFINER`` (the
  admin's): members read the counts and cannot write them.
* ``pimem.turn_words`` (layout 3): free text's postings in a narrow table, one row per turn: its keys,
  ``session_id``, ``source``, ``cwd``, ``ts``, the lengths, and its words as ``word_docs`` ids
  (``user_ids``/``reply_ids``, ``integer[]``, with their own GIN indexes). Free text's first pass reads
  its postings there: a GIN index has no index-only scan, and a visit to this table's row (about a
  quarter of ``turns``' row, no texts) costs less than one to ``turns``' row. ``word_docs`` gives each
  word an ``id`` (layout 3). Kept by the same statement triggers as the counts (``count_words``, in the
  writing statement's transaction): inserted, updated and deleted rows of ``turns``, whoever wrote them.
  Members read it and cannot write it (no grant; the trigger function is the admin's).
* ``pimem.forgotten``: a person's forget tombstones (``pimem share forget``): every machine of that
  person skips what they cover, and the rows they cover are deleted.
* ``pimem.pimem_share_meta``: ``layout``, ``min_reader_layout``, ``layout_written_by``, as in the local
  store (``pimem.store.schema``): older layouts migrate forward by :data:`MIGRATIONS`, a newer one is
  never written.

Access is the database's business, not the client's: a group role (``pimem_team`` by default), one
login role per member, row-level security enabled and forced on both tables. Members read every row
of ``turns`` and write, update and delete only rows whose ``author`` is ``current_user`` (the column's
default; a row naming another author is refused, so the author cannot be forged).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

SCHEMA = "pimem"
LAYOUT = 3                 # the shared layout this pimem writes
MIN_READER_LAYOUT = 1      # the oldest layout whose pimem reads what this one writes
DEFAULT_GROUP = "pimem_team"

# Layout 1. Statements are idempotent, so applying them twice (two admins) changes nothing.
BASE_DDL = f"""
CREATE SCHEMA IF NOT EXISTS {SCHEMA};
CREATE EXTENSION IF NOT EXISTS pg_trgm;
CREATE TABLE IF NOT EXISTS {SCHEMA}.pimem_share_meta (
  key   text PRIMARY KEY,
  value text NOT NULL
);
CREATE TABLE IF NOT EXISTS {SCHEMA}.turns (
  author       text NOT NULL DEFAULT current_user,
  machine      text NOT NULL,
  doc_key      text NOT NULL,
  session_id   text NOT NULL,
  turn_index   integer NOT NULL,
  source       text NOT NULL,
  cwd          text NOT NULL,
  ts           timestamptz NOT NULL,
  user_text    text NOT NULL,
  reply_text   text NOT NULL,
  user_lower   text NOT NULL,
  reply_lower  text NOT NULL,
  user_words   text[] NOT NULL,
  reply_words  text[] NOT NULL,
  user_chars   integer NOT NULL,
  reply_chars  integer NOT NULL,
  tools        text[] NOT NULL DEFAULT '{{}}',
  content_hash text NOT NULL,
  pushed_at    timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (author, machine, doc_key)
);
CREATE INDEX IF NOT EXISTS turns_user_lower_trgm ON {SCHEMA}.turns USING gin (user_lower gin_trgm_ops);
CREATE INDEX IF NOT EXISTS turns_reply_lower_trgm ON {SCHEMA}.turns USING gin (reply_lower gin_trgm_ops);
CREATE INDEX IF NOT EXISTS turns_user_words ON {SCHEMA}.turns USING gin (user_words);
CREATE INDEX IF NOT EXISTS turns_reply_words ON {SCHEMA}.turns USING gin (reply_words);
CREATE INDEX IF NOT EXISTS turns_author_ts ON {SCHEMA}.turns (author, ts DESC);
CREATE INDEX IF NOT EXISTS turns_ts ON {SCHEMA}.turns (ts DESC);
CREATE INDEX IF NOT EXISTS turns_session ON {SCHEMA}.turns (author, session_id);
CREATE TABLE IF NOT EXISTS {SCHEMA}.forgotten (
  author       text NOT NULL DEFAULT current_user,
  scope        text NOT NULL CHECK (scope IN ('session', 'folder')),
  value        text NOT NULL,
  forgotten_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (author, scope, value)
);
"""


def _layout_0_to_1() -> str:
    return BASE_DDL


# One row's words, each once (a word in both texts counts one document, as ranking counts it).
_ROW_WORDS = "SELECT DISTINCT unnest(r.user_words || r.reply_words) AS word"

# The counts of every row, from scratch: layout 2's backfill.
_WORD_DOCS_REBUILD_2 = f"""
DELETE FROM {SCHEMA}.word_docs;
INSERT INTO {SCHEMA}.word_docs (word, docs)
  SELECT w.word, count(*) FROM {SCHEMA}.turns r, LATERAL ({_ROW_WORDS}) w GROUP BY w.word;
"""

# A row of turn_words from a row ``r`` of turns (or a transition table): its words as word_docs ids.
_TURN_WORDS_COLUMNS = ("author, machine, doc_key, session_id, source, cwd, ts, user_chars, reply_chars, "
                       "user_ids, reply_ids")
_TURN_WORDS_ROW = (
    "r.author, r.machine, r.doc_key, r.session_id, r.source, r.cwd, r.ts, r.user_chars, r.reply_chars, "
    f"ARRAY(SELECT d.id FROM {SCHEMA}.word_docs d WHERE d.word = ANY(r.user_words) ORDER BY d.id), "
    f"ARRAY(SELECT d.id FROM {SCHEMA}.word_docs d WHERE d.word = ANY(r.reply_words) ORDER BY d.id)")

# The counts and the narrow postings of every row, from scratch: layout 3's backfill, and a bulk load's
# (triggers off) rebuild.
WORD_DOCS_REBUILD = _WORD_DOCS_REBUILD_2 + f"""
DELETE FROM {SCHEMA}.turn_words;
INSERT INTO {SCHEMA}.turn_words ({_TURN_WORDS_COLUMNS}) SELECT {_TURN_WORDS_ROW} FROM {SCHEMA}.turns r;
"""


# The counts' upsert of a delta (a SELECT of (word, n) rows, put in at ``{}``): words in their order, so that
# concurrent pushes take the counts' row locks in one order (no deadlock between two inserts).
_WORD_DOCS_UPSERT = (f"INSERT INTO {SCHEMA}.word_docs AS d (word, docs) SELECT word, sum(n) FROM ({{}}) delta "
                     "GROUP BY word HAVING sum(n) <> 0 ORDER BY word "
                     "ON CONFLICT (word) DO UPDATE SET docs = d.docs + excluded.docs")


def _word_delta(table: str, sign: str) -> str:
    return f"SELECT w.word, {sign}1 AS n FROM {table} r, LATERAL ({_ROW_WORDS}) w"


def _layout_1_to_2() -> str:
    # One statement per writing statement, whatever its size.
    upsert = _WORD_DOCS_UPSERT
    added = _word_delta("new_rows", "")
    removed = _word_delta("old_rows", "-")
    return _count_words_sql(upsert.format(added), upsert.format(added + " UNION ALL " + removed),
                            upsert.format(removed), f"DELETE FROM {SCHEMA}.word_docs;") + _WORD_DOCS_REBUILD_2


def _count_words_sql(on_insert: str, on_update: str, on_delete: str, on_truncate: str) -> str:
    t = f"{SCHEMA}.turns"
    return f"""
CREATE TABLE IF NOT EXISTS {SCHEMA}.word_docs (
  word text PRIMARY KEY,
  docs bigint NOT NULL
);
CREATE OR REPLACE FUNCTION {SCHEMA}.count_words() RETURNS trigger LANGUAGE plpgsql SECURITY DEFINER
  SET search_path = pg_catalog, pg_temp AS $fn$
BEGIN
  IF TG_OP = 'INSERT' THEN
    {on_insert};
  ELSIF TG_OP = 'UPDATE' THEN
    {on_update};
  ELSIF TG_OP = 'DELETE' THEN
    {on_delete};
  ELSE
    {on_truncate}
  END IF;
  RETURN NULL;
END
$fn$;
REVOKE ALL ON FUNCTION {SCHEMA}.count_words() FROM PUBLIC;
DROP TRIGGER IF EXISTS turns_words_insert ON {t};
DROP TRIGGER IF EXISTS turns_words_update ON {t};
DROP TRIGGER IF EXISTS turns_words_delete ON {t};
DROP TRIGGER IF EXISTS turns_words_truncate ON {t};
CREATE TRIGGER turns_words_insert AFTER INSERT ON {t} REFERENCING NEW TABLE AS new_rows
  FOR EACH STATEMENT EXECUTE FUNCTION {SCHEMA}.count_words();
CREATE TRIGGER turns_words_update AFTER UPDATE ON {t} REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
  FOR EACH STATEMENT EXECUTE FUNCTION {SCHEMA}.count_words();
CREATE TRIGGER turns_words_delete AFTER DELETE ON {t} REFERENCING OLD TABLE AS old_rows
  FOR EACH STATEMENT EXECUTE FUNCTION {SCHEMA}.count_words();
CREATE TRIGGER turns_words_truncate AFTER TRUNCATE ON {t}
  FOR EACH STATEMENT EXECUTE FUNCTION {SCHEMA}.count_words();
"""


def _layout_2_to_3() -> str:
    # The counts first (a new word gets its row, hence its id), then the rows' postings, in the same
    # trigger call: one statement's rows, whatever their number. An updated row's postings are replaced.
    upsert = _WORD_DOCS_UPSERT
    added = _word_delta("new_rows", "")
    removed = _word_delta("old_rows", "-")
    tw = f"{SCHEMA}.turn_words"
    insert = f"INSERT INTO {tw} ({_TURN_WORDS_COLUMNS}) SELECT {_TURN_WORDS_ROW} FROM new_rows r"
    delete = (f"DELETE FROM {tw} w USING old_rows r WHERE w.author = r.author AND w.machine = r.machine "
              "AND w.doc_key = r.doc_key")
    return f"""
ALTER TABLE {SCHEMA}.word_docs ADD COLUMN IF NOT EXISTS id integer GENERATED ALWAYS AS IDENTITY;
CREATE TABLE IF NOT EXISTS {tw} (
  author      text NOT NULL,
  machine     text NOT NULL,
  doc_key     text NOT NULL,
  session_id  text NOT NULL,
  source      text NOT NULL,
  cwd         text NOT NULL,
  ts          timestamptz NOT NULL,
  user_chars  integer NOT NULL,
  reply_chars integer NOT NULL,
  user_ids    integer[] NOT NULL,
  reply_ids   integer[] NOT NULL,
  PRIMARY KEY (author, machine, doc_key)
);
""" + _count_words_sql(f"{upsert.format(added)};\n    {insert}",
                        f"{upsert.format(added + ' UNION ALL ' + removed)};\n    {delete};\n    {insert}",
                        f"{upsert.format(removed)};\n    {delete}",
                        f"DELETE FROM {SCHEMA}.word_docs;\n    DELETE FROM {tw};") + WORD_DOCS_REBUILD + f"""
CREATE INDEX IF NOT EXISTS turn_words_user ON {tw} USING gin (user_ids);
CREATE INDEX IF NOT EXISTS turn_words_reply ON {tw} USING gin (reply_ids);
CREATE INDEX IF NOT EXISTS turn_words_session ON {tw} (author, machine, session_id);
ANALYZE {tw};
"""


# MIGRATIONS[n] gives the SQL that brings the shared store from layout n to n + 1 (0: nothing yet),
# run by the admin's ``pimem share init --apply`` in one transaction. To change the layout: add a step,
# register it, raise LAYOUT (and MIN_READER_LAYOUT only if an older pimem would misread the new one).
# Layout 2 (word_docs) only adds: a layout-1 pimem still reads it right, so MIN_READER_LAYOUT stays 1.
# Layout 3 (turn_words, word ids) only adds too.
MIGRATIONS: dict[int, Callable[[], str]] = {0: _layout_0_to_1, 1: _layout_1_to_2, 2: _layout_2_to_3}

_ROLE_NAME = re.compile(r"[a-z_][a-z0-9_.-]{0,62}")


class ShareSchemaError(ValueError):
    """A name that cannot be a role, or a layout this pimem cannot write."""


def check_role_name(name: str, what: str = "member") -> str:
    """Role names are kept to lower-case letters, digits, ``_ . -`` (up to 63): they are quoted anyway,
    but a name that needs quoting to mean what it says is a typo waiting to happen."""
    if not _ROLE_NAME.fullmatch(name):
        raise ShareSchemaError(f"{what} name {name!r}: use 1-63 lower-case letters, digits, '_', '.' or '-', "
                               "starting with a letter or '_'")
    return name


def quote_ident(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def migration_sql(from_layout: int) -> str:
    """The SQL from ``from_layout`` to :data:`LAYOUT`, meta rows included."""
    if from_layout > LAYOUT:
        raise ShareSchemaError(f"the shared store has layout {from_layout}; this pimem writes up to {LAYOUT}: "
                               "please upgrade")
    parts = [MIGRATIONS[layout]() for layout in range(from_layout, LAYOUT)]
    parts.append(_meta_sql())
    return "\n".join(parts)


def _meta_sql() -> str:
    from pimem import __version__

    rows = {"layout": str(LAYOUT), "min_reader_layout": str(MIN_READER_LAYOUT), "layout_written_by": __version__}
    values = ", ".join(f"('{key}', '{value}')" for key, value in rows.items())
    return (f"INSERT INTO {SCHEMA}.pimem_share_meta(key, value) VALUES {values}\n"
            "  ON CONFLICT (key) DO UPDATE SET value = excluded.value;\n")


def roles_sql(group: str = DEFAULT_GROUP, members: tuple[str, ...] = ()) -> str:
    """The group role, its grants, row-level security (enabled and forced) and the members' login roles.
    Idempotent. Passwords are never part of it: each member's is set by the admin (``\\password NAME`` in
    psql) or replaced by certificate authentication, as the database's ``pg_hba.conf`` says."""
    g = quote_ident(check_role_name(group, "group"))
    t = f"{SCHEMA}.turns"
    f = f"{SCHEMA}.forgotten"
    lines = [
        f"DO $$ BEGIN CREATE ROLE {g} NOLOGIN; EXCEPTION WHEN duplicate_object THEN NULL; END $$;",
        f"GRANT USAGE ON SCHEMA {SCHEMA} TO {g};",
        f"GRANT SELECT ON {SCHEMA}.pimem_share_meta TO {g};",
        f"GRANT SELECT ON {SCHEMA}.word_docs TO {g};",
        f"GRANT SELECT ON {SCHEMA}.turn_words TO {g};",
        f"GRANT SELECT, INSERT, UPDATE, DELETE ON {t} TO {g};",
        f"GRANT SELECT, INSERT, DELETE ON {f} TO {g};",
        f"ALTER TABLE {t} ENABLE ROW LEVEL SECURITY;",
        f"ALTER TABLE {t} FORCE ROW LEVEL SECURITY;",
        f"ALTER TABLE {f} ENABLE ROW LEVEL SECURITY;",
        f"ALTER TABLE {f} FORCE ROW LEVEL SECURITY;",
    ]
    policies = [
        ("turns_team_read", t, "SELECT", "USING (true)"),
        ("turns_own_insert", t, "INSERT", "WITH CHECK (author = current_user)"),
        ("turns_own_update", t, "UPDATE", "USING (author = current_user) WITH CHECK (author = current_user)"),
        ("turns_own_delete", t, "DELETE", "USING (author = current_user)"),
        ("forgotten_own_read", f, "SELECT", "USING (author = current_user)"),
        ("forgotten_own_insert", f, "INSERT", "WITH CHECK (author = current_user)"),
        ("forgotten_own_delete", f, "DELETE", "USING (author = current_user)"),
    ]
    for name, table, command, clause in policies:
        lines.append(f"DROP POLICY IF EXISTS {name} ON {table};")
        lines.append(f"CREATE POLICY {name} ON {table} FOR {command} TO {g} {clause};")
    for member in members:
        m = quote_ident(check_role_name(member))
        lines.append(f"DO $$ BEGIN CREATE ROLE {m} LOGIN; EXCEPTION WHEN duplicate_object THEN NULL; END $$;")
        lines.append(f"GRANT {g} TO {m};")
    return "\n".join(lines) + "\n"


@dataclass(frozen=True)
class ShareLayout:
    layout: int                 # 0: no shared schema yet
    min_reader_layout: int
    written_by: str | None

    @property
    def newer(self) -> bool:
        return self.layout > LAYOUT

    @property
    def readable(self) -> bool:
        return self.min_reader_layout <= LAYOUT


def init_sql(group: str = DEFAULT_GROUP, members: tuple[str, ...] = (), from_layout: int = 0) -> str:
    """What ``pimem share init`` prints (or applies, in one transaction): the schema from ``from_layout``
    to the current layout, then the roles and policies."""
    return ("BEGIN;\n" + migration_sql(from_layout) + roles_sql(group, members) + "COMMIT;\n")
