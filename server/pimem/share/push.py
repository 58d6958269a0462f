"""``pimem share push``: copies of the chosen turns, through the gate, into the shared store.

* **Scope**: only turns of sessions whose cwd is in a chosen folder, or of a chosen agent (nothing by
  default), and not forgotten (``pimem share forget``, by this machine or another of the person's).
* **Incremental**: the first push (and one after the scope, the gate's rules, the local store or the
  target changed) compares every turn in scope; later ones read only the docs the local index wrote
  since the last push (``pimem_index_log``, where new and grown turns appear) and the pending ones.
  A turn whose fingerprint (its local content, whether it is allowed, the gate's rules) equals the one
  pushed is skipped, so a no-change push reads no text.
* **Idempotent, bounded**: rows go in transactions of at most ``batch_rows`` (COPY into a temporary
  table, then ``INSERT … ON CONFLICT (author, machine, doc_key) DO UPDATE`` only where the content
  hash differs). The local state records a batch right after its COMMIT; a kill in between makes the
  next push send the batch again, which changes nothing. A connection lost mid-push (the server
  restarted) is opened again and the batch sent again, for up to ``retry_s``.
* **The gate** (:mod:`pimem.share.gate`): the texts pushed are the redacted ones; a turn with
  something secret-looking but unclassified is held back until allowed. Tool names are pushed, never
  tool arguments, results or file contents (the local store does not keep them with the turn either).
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
import time
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import psycopg

from pimem import index
from pimem.paths import in_folder, normalize_folder
from pimem.share import gate
from pimem.share.db import ShareError, check_writable, connect, one_line, read_layout
from pimem.share.schema import row_grams
from pimem.share.state import ShareConfig, get_meta, open_state, set_meta
from pimem.store import connect as store_connect
from pimem.store import parse_tool_names
from pimem.store.batches import chunks, placeholders
from pimem.store.meta import has_object
from pimem.store.text import holds_undecodable, tolerating
from pimem.textutil import clamp_ms
from pimem.words import tokens_many

GATE_VERSION = 1          # raised when what the gate lets through changes: every turn is compared again
BATCH_ROWS = 2_000
RETRY_S = 30.0

ProgressCallback = Callable[[int, int], None]     # (turns examined, turns to examine)

_COLUMNS = ("machine", "doc_key", "session_id", "turn_index", "source", "cwd", "ts", "user_text", "reply_text",
            "user_lower", "reply_lower", "user_words", "reply_words", "user_chars", "reply_chars", "tools",
            "content_hash", "grams")
_TYPES = ("text", "text", "text", "int4", "text", "text", "timestamptz", "text", "text", "text", "text", "text[]",
          "text[]", "int4", "int4", "text[]", "text", "text[]")
_STAGE = "pimem_push_stage"
_UPSERT = (f"INSERT INTO pimem.turns ({', '.join(_COLUMNS)}) SELECT {', '.join(_COLUMNS)} FROM {_STAGE} "
           "ON CONFLICT (author, machine, doc_key) DO UPDATE SET "
           + ", ".join(f"{c} = excluded.{c}" for c in _COLUMNS if c not in ("machine", "doc_key"))
           + ", pushed_at = now() WHERE pimem.turns.content_hash IS DISTINCT FROM excluded.content_hash")

# Binary: half the client's CPU of the text format (no quoting of texts and word arrays) and a little
# less of the server's (bench/share_push.py --levers). Into a staging table, not pimem.turns itself:
# COPY FROM refuses a table with row-level security, and the upsert must skip unchanged rows.
_COPY = f"COPY {_STAGE} ({', '.join(_COLUMNS)}) FROM STDIN (FORMAT BINARY)"

_ROWS_SQL = ("SELECT t.turn_id, t.session_id, t.turn_index, t.ts, t.user_text, t.reply_text, t.tool_names, "
             "s.source, s.cwd FROM turns t JOIN sessions s ON s.session_id = t.session_id WHERE t.turn_id IN ({})")


@dataclass
class PushStats:
    examined: int = 0        # turns looked at
    sent: int = 0            # rows sent (new or changed)
    unchanged: int = 0       # in scope, already pushed as they are
    held: int = 0            # held back by the gate (listed by pimem share status)
    out_of_scope: int = 0
    batches: int = 0
    retries: int = 0
    full: bool = False       # every turn in scope was compared (first push, new scope, new store)
    masked: dict[str, int] = field(default_factory=dict)   # kinds of secrets masked in what was sent
    duration_ms: int = 0

    def as_dict(self) -> dict[str, object]:
        return {"examined": self.examined, "sent": self.sent, "unchanged": self.unchanged, "held": self.held,
                "outOfScope": self.out_of_scope, "batches": self.batches, "retries": self.retries,
                "full": self.full, "masked": self.masked, "durationMs": self.duration_ms}


@dataclass(frozen=True)
class _Local:
    turn_id: str
    session_id: str
    turn_index: int
    ts: int
    user_text: str
    reply_text: str
    tools: list[str]
    source: str
    cwd: str


class Scope:
    """Which turns are shared: the chosen folders and agents, minus what was forgotten."""

    def __init__(self, config: ShareConfig, forgotten: Iterable[tuple[str, str]]) -> None:
        self.folders = tuple(normalize_folder(f) for f in config.folders)
        self.sources = frozenset(config.sources)
        self.forgotten_sessions = {value for scope, value in forgotten if scope == "session"}
        self.forgotten_folders = tuple(normalize_folder(value) for scope, value in forgotten if scope == "folder")

    def session_in(self, session_id: str, source: str, cwd: str) -> bool:
        if session_id in self.forgotten_sessions or any(in_folder(cwd, f) for f in self.forgotten_folders):
            return False
        return source in self.sources or any(in_folder(cwd, f) for f in self.folders)


def _content_key(turn: _Local) -> str:
    """The turn's local content alone: what an allowance is for."""
    return _fingerprint(turn, False, "")


def _fingerprint(turn: _Local, allowed: bool, scope: str) -> str:
    digest = hashlib.blake2b(digest_size=16)
    for value in (scope, turn.session_id, str(turn.turn_index), str(turn.ts), turn.source, turn.cwd, turn.user_text,
                  turn.reply_text, "\x1f".join(turn.tools), f"{GATE_VERSION}:{int(allowed)}"):
        digest.update(value.encode("utf-8", "surrogatepass"))
        digest.update(b"\x00")
    return digest.hexdigest()


def _content_hash(values: Sequence[object]) -> str:
    """A hash of the pushed values (texts, words, ids): each value's text and a separator, no JSON (which
    cost more than the rest of a row's preparation)."""
    digest = hashlib.blake2b(digest_size=16)
    for value in values:
        text = "\x1f".join(value) if isinstance(value, list) else str(value)
        digest.update(text.encode("utf-8", "surrogatepass"))
        digest.update(b"\x00")
    return digest.hexdigest()


def _clean(text: str) -> str:
    return text.replace("\x00", "\ufffd") if "\x00" in text else text


class _Pusher:
    def __init__(self, config: ShareConfig, state: sqlite3.Connection, retry_s: float) -> None:
        self.config = config
        self.state = state
        self.retry_s = retry_s
        self.pg: psycopg.Connection[tuple[object, ...]] | None = None
        self.stats = PushStats()

    # -- the shared store --------------------------------------------------------------------------
    def open(self) -> psycopg.Connection[tuple[object, ...]]:
        if self.pg is None or self.pg.closed:
            self.pg = connect(self.config.conninfo)
            # A batch is recorded as pushed once its COMMIT returns: that must mean durable, whatever the
            # server's default (with synchronous_commit off, a server crash loses the last commits).
            self.pg.execute("SET synchronous_commit = on")
            # lz4 rather than pglz for the long texts (TOAST): ~5 % less of the server's CPU per turn
            # (bench/share_push.py --levers), and faster to read back for recall. Only where the server
            # was built with it (the setting's allowed values say so); anything reads both.
            self.pg.execute("SELECT set_config('default_toast_compression', 'lz4', false) FROM pg_settings "
                            "WHERE name = 'default_toast_compression' AND 'lz4' = ANY (enumvals)")
            check_writable(read_layout(self.pg))
            self.pg.execute(f"CREATE TEMP TABLE IF NOT EXISTS {_STAGE} (LIKE pimem.turns INCLUDING DEFAULTS) "
                            "ON COMMIT DELETE ROWS")
            self.pg.commit()
        return self.pg

    def close(self) -> None:
        if self.pg is not None:
            self.pg.close()
            self.pg = None

    def _retrying(self, work: Callable[[psycopg.Connection[tuple[object, ...]]], None]) -> None:
        """``work`` in one transaction; on a lost connection (server restarted, network), again on a new one."""
        deadline = time.monotonic() + self.retry_s
        delay = 0.2
        while True:
            try:
                conn = self.open()
                with conn.transaction():
                    work(conn)
                return
            except psycopg.OperationalError as exc:
                self.close()
                if time.monotonic() + delay > deadline:
                    raise ShareError(f"the shared store went away during the push: {one_line(exc)} (what was "
                                     "committed stays; the next push continues)") from None
                self.stats.retries += 1
                time.sleep(delay)
                delay = min(delay * 2, 2.0)
            except ShareError as exc:
                self.close()
                if "cannot reach" not in str(exc) or time.monotonic() + delay > deadline:
                    raise
                self.stats.retries += 1
                time.sleep(delay)
                delay = min(delay * 2, 2.0)
            except psycopg.Error as exc:
                self.close()
                raise ShareError(f"the shared store refused the push: {one_line(exc)}") from None

    def send(self, rows: list[tuple[object, ...]]) -> None:
        def work(conn: psycopg.Connection[tuple[object, ...]]) -> None:
            with conn.cursor() as cur:
                with cur.copy(_COPY) as copy:
                    copy.set_types(list(_TYPES))
                    for row in rows:
                        copy.write_row(row)
                cur.execute(_UPSERT)
        self._retrying(work)
        self.stats.batches += 1

    def sync_forgotten(self) -> None:
        """Forget requests not yet applied remotely are applied; the person's tombstones written by other
        machines are learnt."""
        pending = self.state.execute("SELECT scope, value FROM forgotten WHERE remote_done = 0").fetchall()

        def work(conn: psycopg.Connection[tuple[object, ...]]) -> None:
            for scope, value in pending:
                apply_forget(conn, str(scope), str(value))
        if pending:
            self._retrying(work)
        remote = self.open().execute("SELECT scope, value FROM pimem.forgotten").fetchall()
        self.open().commit()
        with self.state:
            self.state.executemany("UPDATE forgotten SET remote_done = 1 WHERE scope = ? AND value = ?", pending)
            self.state.executemany("INSERT OR IGNORE INTO forgotten(scope, value, remote_done) VALUES (?, ?, 1)",
                                   remote)


def apply_forget(conn: psycopg.Connection[tuple[object, ...]], scope: str, value: str) -> int:
    """Delete the person's rows of a session or folder (every machine's) and keep a tombstone."""
    conn.execute("INSERT INTO pimem.forgotten(scope, value) VALUES (%s, %s) ON CONFLICT DO NOTHING", (scope, value))
    if scope == "session":
        cur = conn.execute("DELETE FROM pimem.turns WHERE author = current_user AND session_id = %s", (value,))
    else:
        pattern = value.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_").rstrip("/") + "/%"
        cur = conn.execute("DELETE FROM pimem.turns WHERE author = current_user AND (cwd = %s OR cwd LIKE %s)",
                           (value, pattern))
    return cur.rowcount


def _read_turns(local: sqlite3.Connection, turn_ids: Sequence[str]) -> list[_Local]:
    found: list[_Local] = []
    def read(part: Sequence[str]) -> list[tuple[Any, ...]]:
        return tolerating(local, lambda: local.execute(_ROWS_SQL.format(placeholders(len(part))),
                                                       list(part)).fetchall())

    for part in chunks(turn_ids):
        for row in read(part):
            if holds_undecodable(row):
                continue
            found.append(_Local(str(row[0]), str(row[1]), int(row[2] or 0), int(row[3] or 0), str(row[4] or ""),
                                str(row[5] or ""), parse_tool_names(row[6]), str(row[7] or ""), str(row[8] or "")))
    return found


def _candidates(local: sqlite3.Connection, state: sqlite3.Connection, scope: Scope, full: bool,
                since: int) -> list[str]:
    """The turn ids to look at, in scope (by session), oldest first."""
    sessions = [str(sid) for sid, source, cwd in local.execute("SELECT session_id, source, cwd FROM sessions")
                if scope.session_in(str(sid), str(source or ""), str(cwd or ""))]
    wanted = set(sessions)
    ids: list[str] = []
    if full:
        for part in chunks(sessions):
            ids.extend(str(tid) for (tid,) in local.execute(
                f"SELECT turn_id FROM turns WHERE session_id IN ({placeholders(len(part))})", list(part)))
        return ids
    keys = index.logged_since(local, since)
    keys.extend(int(k) for (k,) in local.execute("SELECT doc_key FROM pimem_pending"))
    for keys_part in chunks(sorted(set(keys))):
        ids.extend(str(tid) for tid, sid in local.execute(
            f"SELECT d.turn_id, t.session_id FROM pimem_docs d JOIN turns t ON t.turn_id = d.turn_id "
            f"WHERE d.doc_key IN ({placeholders(len(keys_part))})", list(keys_part)) if sid in wanted)
    # held turns the person allowed since
    ids.extend(str(tid) for tid, sid in state.execute(
        "SELECT h.turn_id, h.session_id FROM held h JOIN allowed a ON a.turn_id = h.turn_id AND a.content = h.content")
        if sid in wanted)
    return list(dict.fromkeys(ids))


def _reset_if_other(state: sqlite3.Connection, store_id: str | None, config: ShareConfig) -> None:
    """Another local store (replaced, rebuilt) or another target: forget what was pushed and compare again."""
    if get_meta(state, "store_id") == (store_id or "") and get_meta(state, "target") == config.target():
        return
    with state:
        state.execute("DELETE FROM pushed")
        state.execute("DELETE FROM held")
        state.execute("DELETE FROM meta WHERE key = 'log_seq'")
        set_meta(state, "store_id", store_id or "")
        set_meta(state, "target", config.target())


def _has_index_log(local: sqlite3.Connection) -> bool:
    return has_object(local, "pimem_index_log")


def push(db_path: Path, config: ShareConfig, *, progress: ProgressCallback | None = None,
         batch_rows: int = BATCH_ROWS, retry_s: float = RETRY_S) -> PushStats:
    """Push what changed in scope since the last push (see the module docstring). Raises ShareError
    (one line) when the shared store cannot be used; what was committed before stays."""
    if not config.configured:
        raise ShareError("sharing is not configured: pimem share config --conninfo … --folder DIR (or --agent NAME)")
    started = time.monotonic()
    local = store_connect(db_path, create=False, for_writing=False)
    state = open_state(db_path)
    pusher = _Pusher(config, state, retry_s)
    try:
        _reset_if_other(state, index.store_id(local), config)
        fingerprint = f"{config.scope_fingerprint()}|gate {GATE_VERSION}"
        if get_meta(state, "scope") != fingerprint:
            with state:
                state.execute("DELETE FROM meta WHERE key = 'log_seq'")
                state.execute("DELETE FROM held")
                set_meta(state, "scope", fingerprint)
        pusher.open()
        pusher.sync_forgotten()
        scope = Scope(config, state.execute("SELECT scope, value FROM forgotten").fetchall())
        # without FTS5 the index (and its log) is never written: every push compares every turn
        has_log = _has_index_log(local) and index.fts_enabled(local)
        low, high = index.log_position(local) if has_log else (0, 0)
        saved = get_meta(state, "log_seq")
        since = int(saved) if saved is not None else -1
        full = not has_log or since < 0 or (low > since + 1 and high > since)
        pusher.stats.full = full
        turn_ids = _candidates(local, state, scope, full, since)
        _push_all(pusher, local, scope, turn_ids, batch_rows, progress)
        pusher.stats.duration_ms = int((time.monotonic() - started) * 1000)
        with state:
            if has_log:
                set_meta(state, "log_seq", str(high))
            set_meta(state, "last_push", json.dumps({"at": datetime.now(UTC).isoformat(timespec="seconds"),
                                                     **pusher.stats.as_dict()}))
        return pusher.stats
    finally:
        pusher.close()
        state.close()
        local.close()


@dataclass
class _Prepared:
    rows: list[tuple[object, ...]]
    pushed: list[tuple[str, str]]              # (turn id, fingerprint) of the rows
    held: list[tuple[str, str, str, int, str]]      # (turn id, session id, reasons, ts, content key)


def _prepare(pusher: _Pusher, local: sqlite3.Connection, scope: Scope, turn_ids: Sequence[str]) -> _Prepared:
    """One batch's rows: read, scoped, compared with what was pushed, gated, lowered, tokenized."""
    state, stats, config = pusher.state, pusher.stats, pusher.config
    turns = _read_turns(local, turn_ids)
    stats.examined += len(turns)
    known: dict[str, str] = {}
    for part in chunks(turn_ids):     # SQLite's limit on the variables of one statement
        known.update(state.execute(f"SELECT turn_id, fingerprint FROM pushed WHERE turn_id IN "
                                   f"({placeholders(len(part))})", list(part)).fetchall())
    allowances: dict[str, str] = {}
    for part in chunks(turn_ids):
        allowances.update(state.execute(f"SELECT turn_id, content FROM allowed WHERE turn_id IN "
                                        f"({placeholders(len(part))})", list(part)).fetchall())
    gated: list[tuple[_Local, str, gate.GatedText, gate.GatedText]] = []
    held: list[tuple[str, str, str, int, str]] = []
    scope_key = config.scope_fingerprint()     # the folders decide which paths are masked
    for turn in turns:
        if not scope.session_in(turn.session_id, turn.source, turn.cwd):
            stats.out_of_scope += 1
            continue
        content = _content_key(turn) if turn.turn_id in allowances else ""
        allowed = bool(content) and allowances[turn.turn_id] == content    # as it was when allowed, only
        fingerprint = _fingerprint(turn, allowed, scope_key)
        if known.get(turn.turn_id) == fingerprint:
            stats.unchanged += 1
            continue
        # a turn shared for its folder: home paths outside the shared folders are masked; for its agent: none
        folders = None if turn.source in scope.sources else scope.folders
        user, reply = gate.gate_text(turn.user_text, folders), gate.gate_text(turn.reply_text, folders)
        suspicious = user.suspicious + reply.suspicious
        if suspicious and not allowed:
            held.append((turn.turn_id, turn.session_id, ",".join(sorted(suspicious)), turn.ts,
                         content or _content_key(turn)))
            continue
        gated.append((turn, fingerprint, user, reply))
    words = tokens_many([g[2].text for g in gated] + [g[3].text for g in gated])
    rows: list[tuple[object, ...]] = []
    for position, (turn, _fp, user, reply) in enumerate(gated):
        for kind, count in (user.masked + reply.masked).items():
            stats.masked[kind] = stats.masked.get(kind, 0) + count
        when = datetime.fromtimestamp(clamp_ms(turn.ts) / 1000, UTC)
        index_int4 = max(-2**31, min(turn.turn_index, 2**31 - 1))     # any integer another program wrote
        user_lower, reply_lower = user.text.lower(), reply.text.lower()
        values: list[object] = [config.machine, _clean(turn.turn_id), _clean(turn.session_id), index_int4,
                                _clean(turn.source), _clean(turn.cwd), when,
                                user.text, reply.text, user_lower, reply_lower, words[position],
                                words[len(gated) + position], len(user.text), len(reply.text),
                                [_clean(name) for name in turn.tools]]
        values.append(_content_hash(values))
        values.append(row_grams(user_lower, reply_lower))    # from the hashed texts: not hashed again
        rows.append(tuple(values))
    return _Prepared(rows, [(turn.turn_id, fp) for turn, fp, _u, _r in gated], held)


def _record(pusher: _Pusher, prepared: _Prepared) -> None:
    """After the batch's COMMIT (a kill before this: the next push sends the batch again, which changes nothing)."""
    pusher.stats.sent += len(prepared.rows)
    pusher.stats.held += len(prepared.held)
    with pusher.state as state:
        state.executemany("INSERT OR REPLACE INTO pushed(turn_id, fingerprint) VALUES (?, ?)", prepared.pushed)
        state.executemany("DELETE FROM held WHERE turn_id = ?", [(turn_id,) for turn_id, _fp in prepared.pushed])
        state.executemany("INSERT OR REPLACE INTO held(turn_id, session_id, reasons, ts, content) "
                          "VALUES (?, ?, ?, ?, ?)", prepared.held)


def _push_all(pusher: _Pusher, local: sqlite3.Connection, scope: Scope, turn_ids: list[str], batch_rows: int,
              progress: ProgressCallback | None) -> None:
    """Batches in order; one is sent (by one sender thread, the connection's only user meanwhile) while the
    next is prepared, so that pimem's CPU work and the server's overlap."""
    inflight: tuple[Future[None] | None, _Prepared] | None = None

    def settle(item: tuple[Future[None] | None, _Prepared]) -> None:
        if item[0] is not None:
            item[0].result()
        _record(pusher, item[1])

    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="pimem-share-send") as sender:
        for number, part in enumerate(chunks(turn_ids, batch_rows)):
            prepared = _prepare(pusher, local, scope, part)
            if inflight is not None:
                settle(inflight)
            inflight = (sender.submit(pusher.send, prepared.rows) if prepared.rows else None, prepared)
            if progress is not None:
                progress(min(number * batch_rows, len(turn_ids)), len(turn_ids))
        if inflight is not None:
            settle(inflight)
    if progress is not None:
        progress(len(turn_ids), len(turn_ids))
