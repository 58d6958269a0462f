"""Recall over a scope: the local store, the shared store, or both (``recall --scope``, ``pimem/recall``'s
``scope``, ``recall_memory``'s ``scope``). The service every adapter calls; psycopg is reached only
through :mod:`pimem.share.recall`, imported when a scope needs the shared store.

* ``local`` (the default): the local store only, as before;
* ``mine``: the local store + my rows on the shared store pushed from my other machines;
* ``team``: every member's shared rows (mine from this machine included: the shared copies);
* ``all``: the local store + every shared row but this machine's own (they are copies of local turns).

One copy of an exchange: this member's rows from this machine are left out of a scope merged with the
local store, since the push made them from the local store's turns (``(author, machine, doc_key)`` is
``(me, this machine, turn_id)``); copies otherwise (same texts and time) are collapsed as locally.
Entity rows merge in recall's order (score, time, id); free-text conversations, ranked by each store
with its own statistics, are merged by reciprocal rank (alternately, the local one first).

The shared part runs on its own thread under a deadline (``timeout_s``, 1.5 s by default,
``$PIMEM_SHARE_TIMEOUT_S``) with the same statement timeout on the server: a store that is down or slow
never holds the local rows back. :class:`SharedReport` says what happened (``ok``, ``timeout``,
``unreachable``, ``unconfigured``, ``error``), never a traceback.
"""

from __future__ import annotations

import math
import os
import sqlite3
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

from pimem.recall import RecallError, RecallPage, RecallQuery, RecallRow, recall_page
from pimem.recall.semantics import page_of, ranked_limit, with_matches

if TYPE_CHECKING:
    from pimem.recall.freetext import Candidate, TextRecall

SCOPES = ("local", "mine", "team", "all")
DEFAULT_TIMEOUT_S = 1.5
TIMEOUT_ENV = "PIMEM_SHARE_TIMEOUT_S"

T = TypeVar("T")


def check_scope(value: object) -> str:
    """A scope as requested (None: ``local``), or RecallError naming ``scope``."""
    if value is None:
        return "local"
    if not isinstance(value, str) or value not in SCOPES:
        raise RecallError("scope", f"scope must be one of {', '.join(SCOPES)}")
    return value


def timeout_s(env: dict[str, str] | None = None) -> float:
    raw = (os.environ if env is None else env).get(TIMEOUT_ENV, "")
    try:
        value = float(raw) if raw else DEFAULT_TIMEOUT_S
    except ValueError:
        return DEFAULT_TIMEOUT_S
    return value if 0 < value <= 60 else DEFAULT_TIMEOUT_S


@dataclass
class SharedReport:
    """What the shared store gave: ``state`` ok | timeout | unreachable | unconfigured | error, the rows
    it contributed to the answer, how long it took, and a one-line reason when not ok."""

    state: str
    rows: int = 0
    ms: int = 0
    message: str | None = None


@dataclass(frozen=True)
class _Target:
    conninfo: str
    machine: str


def _target(db_path: Path) -> _Target | str:
    from pimem.share.state import ShareConfigError, load_config

    try:
        config = load_config(db_path)
    except ShareConfigError as exc:
        return str(exc)
    if config is None or not config.conninfo:
        return "no shared store configured (pimem share config --conninfo ...)"
    return _Target(config.conninfo, config.machine)


def _driver_installed() -> bool:
    try:
        import psycopg  # noqa: F401 - the editor's bundled server leaves the driver out
    except ImportError:
        return False
    return True


def _run_shared(db_path: Path, scope: str, timeout: float,
                work: Callable[[object, object, str], T]) -> Callable[[], tuple[T | None, SharedReport]]:
    """Start ``work(conn, who, stats_key)`` on the shared store on a daemon thread now; the returned
    function waits for it until the deadline and reports."""
    started = time.monotonic()
    target = _target(db_path)
    if isinstance(target, _Target) and not _driver_installed():
        def no_driver() -> tuple[T | None, SharedReport]:
            return None, SharedReport("error", message="the shared store needs the PostgreSQL driver, which this "
                                                       "pimem lacks (pip install 'pimem[share]')")
        return no_driver
    if isinstance(target, str):
        message = target

        def unconfigured() -> tuple[T | None, SharedReport]:
            return None, SharedReport("unconfigured", message=message)
        return unconfigured
    outcome: dict[str, object] = {}
    done = threading.Event()

    def run() -> None:
        try:
            import psycopg

            from pimem.share import recall as shared
            from pimem.share.db import one_line

            who = {"mine": shared.Who(mine=True, skip_machine=target.machine), "team": shared.Who(),
                   "all": shared.Who(skip_machine=target.machine)}[scope]
            try:
                conn = psycopg.connect(target.conninfo, autocommit=True, application_name="pimem",
                                       connect_timeout=max(2, math.ceil(timeout)),
                                       options=f"-c statement_timeout={int(timeout * 1000)}")
            except psycopg.Error as exc:
                outcome["report"] = SharedReport("unreachable", message=f"cannot reach the shared store: "
                                                                        f"{one_line(exc)}")
                return
            try:
                with conn:
                    outcome["value"] = work(conn, who, target.conninfo)
            except psycopg.errors.QueryCanceled:
                outcome["report"] = SharedReport("timeout", message=f"the shared store took longer than {timeout} s")
            except psycopg.OperationalError as exc:
                outcome["report"] = SharedReport("unreachable", message=f"the shared store went away: "
                                                                        f"{one_line(exc)}")
            except psycopg.Error as exc:
                outcome["report"] = SharedReport("error", message=f"the shared store refused: {one_line(exc)}")
        except Exception as exc:   # never the caller's failure: reported, the local rows stand
            outcome["report"] = SharedReport("error", message=f"shared recall failed: {type(exc).__name__}")
        finally:
            done.set()

    threading.Thread(target=run, name="pimem-shared-recall", daemon=True).start()

    def wait() -> tuple[T | None, SharedReport]:
        finished = done.wait(max(0.0, started + timeout - time.monotonic()))
        ms = int((time.monotonic() - started) * 1000)
        if not finished:
            return None, SharedReport("timeout", ms=ms, message=f"the shared store did not answer within {timeout} s")
        report = outcome.get("report")
        if isinstance(report, SharedReport):
            report.ms = ms
            return None, report
        return outcome.get("value"), SharedReport("ok", ms=ms)   # type: ignore[return-value]
    return wait


def _merge_key(row: RecallRow) -> tuple[int, int, str, str, str]:
    return (-row.hits, -row.ts, row.turn_id, row.author or "", row.machine or "")


def recall_scoped(conn: sqlite3.Connection | None, db_path: Path, query: RecallQuery, scope: str,
                  timeout: float | None = None) -> tuple[RecallPage, SharedReport | None]:
    """Entity recall over ``scope``: the page and its count as :func:`pimem.recall.recall_page` gives
    them, over the merged rows, and the shared store's report (None for ``local``). ``conn`` (the local
    store) may be None when there is none yet; ``team`` does not read it."""
    if scope == "local":
        if conn is None:
            return RecallPage([], 0 if query.with_total else None, False if query.with_total else None), None
        return recall_page(conn, query), None
    wanted = ranked_limit(query)

    def shared(pg: object, who: object, _key: str) -> list[RecallRow]:
        from pimem.share import recall as shared_recall
        return shared_recall.entity_rows(pg, query, who, wanted)   # type: ignore[arg-type]

    wait = _run_shared(db_path, scope, timeout or timeout_s(), shared)
    local: list[RecallRow] = []
    if scope != "team" and conn is not None:
        local = recall_page(conn, replace(query, limit=wanted, offset=0, with_total=False)).rows
    remote, report = wait()
    merged: list[RecallRow] = []
    seen: set[tuple[str, str, int]] = set()
    for row in sorted([*local, *(remote or [])], key=_merge_key):
        if row.copy_key not in seen:
            seen.add(row.copy_key)
            merged.append(row)
    page = page_of(merged[:wanted], query)
    with_matches(page.rows, query)
    report.rows = sum(1 for row in page.rows if row.author is not None)
    return page, report


def recall_scoped_text(conn: sqlite3.Connection | None, db_path: Path, found: Sequence[Candidate],
                       base: RecallQuery, scope: str, timeout: float | None = None
                       ) -> tuple[TextRecall, SharedReport | None]:
    """Free-text recall over ``scope`` (:func:`pimem.recall.freetext.recall_conversations` for the local
    store): conversations, one row each, the two stores' rankings merged by reciprocal rank."""
    from pimem.recall import ranking
    from pimem.recall.freetext import Term, TextRecall, _shortlist, recall_conversations

    if scope == "local":
        if conn is None:
            return TextRecall([], base, [], 0 if base.with_total else None), None
        return recall_conversations(conn, found, base), None
    wide = replace(base, offset=0, limit=base.offset + base.limit)
    qwords = ranking.query_words(_shortlist(list(found)))

    def shared(pg: object, who: object, key: str) -> object:
        from pimem.share import recall as shared_recall
        return shared_recall.text_page(pg, qwords, wide, who, key)   # type: ignore[arg-type]

    wait = _run_shared(db_path, scope, timeout or timeout_s(), shared)
    local = recall_conversations(conn, found, wide) if scope != "team" and conn is not None else None
    remote, report = wait()
    remote_rows: list[RecallRow] = list(getattr(remote, "rows", []))
    local_rows = local.rows if local is not None else []
    merged: list[RecallRow] = []
    for position in range(max(len(local_rows), len(remote_rows))):
        merged.extend(rows[position] for rows in (local_rows, remote_rows) if position < len(rows))
    rows = merged[base.offset:base.offset + base.limit]
    if local is not None:
        terms, query = local.terms, replace(local.query, limit=base.limit, offset=base.offset)
    else:
        searched = list(getattr(remote, "searched", []))
        terms = [Term(word.surface, count, max(1, round(idf))) for word, count, idf in searched]
        surfaces = list(dict.fromkeys(term.text for term in terms))[:8]
        query = replace(base, entities=tuple(surfaces) or base.entities)
    total = None
    if base.with_total:
        total = (local.total or 0 if local is not None else 0) + int(getattr(remote, "total", 0))
    report.rows = sum(1 for row in rows if row.author is not None)
    return TextRecall(terms, query, rows, total, False if base.with_total else None), report
