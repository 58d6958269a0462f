"""The oracle's answers (``recall_scan``) to a benchmark's queries, kept in the work folder: the scan takes
seconds per query at 100k turns and up to a minute at 1M, and its answers only change with the store."""

from __future__ import annotations

import json
import sqlite3
import time
from pathlib import Path
from typing import Any

from pimem.recall import RecallQuery, recall_scan

from .context import Bench
from .rows import recall_row


def oracle_answers(bench: Bench, conn: sqlite3.Connection, name: str,
                   queries: list[tuple[dict[str, Any], RecallQuery]]) -> tuple[list[list[dict[str, Any]]], list[float]]:
    """The rows and scan seconds of each (params, query), from ``<work>/<name>-oracle.json`` when it
    was written on this very store, else scanned now (and written as they come)."""
    path = bench.work / f"{name}-oracle.json"
    state = _store_state(bench, conn)
    cache = _load(path, state)
    rows: list[list[dict[str, Any]]] = []
    seconds: list[float] = []
    for params, query in queries:
        key = json.dumps(params, sort_keys=True)
        cached = cache.get(key)
        if cached is None:
            started = time.perf_counter()
            found = [recall_row(row) for row in recall_scan(conn, query)]
            cached = cache[key] = {"rows": found, "seconds": time.perf_counter() - started}
            path.write_text(json.dumps({"store": state, "queries": cache}))
        rows.append(cached["rows"])
        seconds.append(cached["seconds"])
    return rows, seconds


def _store_state(bench: Bench, conn: sqlite3.Connection) -> dict[str, Any]:
    """What the answers depend on: the imported store (its marker) and its turns."""
    marker = bench.work / "pimem.db.corpus.json"
    count, top = conn.execute("SELECT count(*), max(rowid) FROM turns").fetchone()
    parsed, revisions = conn.execute("SELECT total(parsed_bytes), total(revision) FROM pimem_files").fetchone()
    return {"marker": marker.read_text() if marker.exists() else None, "turns": count, "max_rowid": top,
            "parsed_bytes": parsed, "file_revisions": revisions}


def _load(path: Path, state: dict[str, Any]) -> dict[str, Any]:
    try:
        cached = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
    return dict(cached["queries"]) if cached.get("store") == state else {}
