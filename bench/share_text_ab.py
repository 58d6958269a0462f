"""Shared free-text recall, this tree's ``text_page`` against an older commit's, in one run on one loaded
server (the store ``bench/share_recall.py --data DIR`` loaded and kept), every answer checked.

    .venv/bin/python bench/share_text_ab.py --data DIR --base COMMIT [--repeat 5] [--json out.json]

The older ``server/pimem/share/recall.py`` is read from git (``git show COMMIT:...``) and imported beside
this one (the rest of ``pimem`` is this tree's). The questions are bench/share_recall.py's; each is run
``--repeat`` times by both, alternately (new first on odd rounds), on one connection as member
``reader``, after one warm-up round. Reported per side: wall p50/p95, and the CPU time per query of the
client (this process) and of the server (its processes' CPU from /proc, parallel workers included:
the server runs on this machine), which a loaded machine changes less than the wall time. Both answers must equal the
budgeted oracle (``text_oracle(budgeted=True)``); mismatches are counted.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
import json
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))
sys.path.insert(0, str(ROOT / "tests"))

import psycopg  # noqa: E402

from pimem.recall import make_query  # noqa: E402
from pimem.recall.freetext import _shortlist, candidates  # noqa: E402
from pimem.recall.ranking import query_words  # noqa: E402
from pimem.share import recall as shared  # noqa: E402
from share_recall import QUESTIONS, pct  # noqa: E402


def base_module(commit: str) -> ModuleType:
    source = subprocess.run(["git", "-C", str(ROOT), "show", f"{commit}:server/pimem/share/recall.py"],
                            capture_output=True, text=True, check=True).stdout
    path = Path(f"/tmp/pimem_share_recall_{commit}.py")
    path.write_text(source, encoding="utf-8")
    spec = importlib.util.spec_from_file_location(f"pimem_share_recall_{commit}", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module        # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


def server_cpu(postmaster: int) -> float:
    """User + system CPU seconds of the server's processes (the postmaster's children: the backend and
    any parallel workers; /proc/PID/stat fields 14 and 15)."""
    total = 0
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue                       # gone meanwhile
        if int(fields[1]) == postmaster:
            total += int(fields[11]) + int(fields[12])
    return total / os.sysconf("SC_CLK_TCK")


@contextlib.contextmanager
def loaded_server(data: Path) -> Iterator[tuple[Any, dict[str, Any]]]:
    """The server of the store ``bench/share_recall.py --data DATA`` loaded and kept (a ``PgServer``) and its
    ``loaded.json``; the server started if it was not running, and stopped again after."""
    from share.pgserver import PgServer, _run_as, find_bindir

    bindir = find_bindir()
    if bindir is None:
        sys.exit("PostgreSQL server binaries not found: scripts/setup-postgres.sh")
    base = data.resolve()
    loaded = json.loads((base / "loaded.json").read_text(encoding="utf-8"))
    server = PgServer(bindir, base / "pg", _run_as())
    started = not server.running()
    if started:
        server.start()
    try:
        yield server, loaded
    finally:
        if started:
            server.stop("fast")


@contextlib.contextmanager
def reader_session(data: Path) -> Iterator[tuple[psycopg.Connection[Any], int, dict[str, Any]]]:
    """A connection as member ``reader`` to the store ``bench/share_recall.py --data DATA`` loaded and kept,
    the server's postmaster pid (for server_cpu) and its ``loaded.json`` (the server as :func:`loaded_server`)."""
    with loaded_server(data) as (server, loaded), \
            psycopg.connect(server.conninfo(user="reader", dbname=loaded["dbname"]), autocommit=True) as pg:
        yield pg, int((server.datadir / "postmaster.pid").read_text().split()[0]), loaded


def key(page: Any) -> list[tuple[Any, ...]]:
    return [(r.author, r.machine, r.turn_id, r.hits, tuple(r.matched)) for r in page.rows]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, required=True, help="a folder bench/share_recall.py --data loaded")
    parser.add_argument("--base", required=True, help="the commit whose text_page is measured against this tree's")
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--json", type=Path)
    parser.add_argument("--expected", type=Path,
                        help="the budgeted oracle's pages, read from this file when it exists, else written to it "
                             "(the oracle scans every row: minutes at 2M rows; its pages depend on the rows only)")
    args = parser.parse_args(argv)

    sides: dict[str, Any] = {"new": shared, "old": base_module(args.base)}
    wall: dict[str, list[float]] = {"new": [], "old": []}
    client: dict[str, list[float]] = {"new": [], "old": []}
    backend: dict[str, list[float]] = {"new": [], "old": []}
    mismatches = {"new": 0, "old": 0}
    by_question: dict[str, dict[str, list[float]]] = {q: {"new": [], "old": []} for q in QUESTIONS}
    with reader_session(args.data) as (pg, postmaster, loaded):
        who = shared.Who()
        query = make_query(["x"], 5)
        questions = [query_words(_shortlist(list(candidates(q)))) for q in QUESTIONS]
        for module in sides.values():
            module.store_stats(pg, "ab")      # read once per process, as in use (a minute's cache)
        if args.expected is not None and args.expected.exists():
            expected = [[tuple(tuple(x) if isinstance(x, list) else x for x in row) for row in page]
                        for page in json.loads(args.expected.read_text(encoding="utf-8"))]
        else:
            expected = [key(shared.text_oracle(pg, qwords, query, who, "ab", budgeted=True)) for qwords in questions]
            if args.expected is not None:
                args.expected.write_text(json.dumps(expected) + "\n", encoding="utf-8")
        for qwords in questions:              # warm-up: both once
            for module in sides.values():
                module.text_page(pg, qwords, query, module.Who(), "ab")
        for round_ in range(args.repeat):
            order = ("new", "old") if round_ % 2 == 0 else ("old", "new")
            for text, qwords, want in zip(QUESTIONS, questions, expected, strict=True):
                for side in order:
                    server0 = server_cpu(postmaster)
                    cpu0, t0 = time.process_time(), time.perf_counter()
                    page = sides[side].text_page(pg, qwords, query, sides[side].Who(), "ab")
                    elapsed, cpu = time.perf_counter() - t0, time.process_time() - cpu0
                    wall[side].append(elapsed * 1000)
                    by_question[text][side].append(elapsed * 1000)
                    client[side].append(cpu * 1000)
                    backend[side].append((server_cpu(postmaster) - server0) * 1000)
                    mismatches[side] += key(page) != want
        load = os.getloadavg()
    report: dict[str, Any] = {"rows": loaded["rows"], "base": args.base, "queries": len(wall["new"]),
                              "loadAverage": [round(x, 1) for x in load]}
    for side in ("old", "new"):
        report[side] = {"p50Ms": round(statistics.median(wall[side]), 1), "p95Ms": round(pct(wall[side], 0.95), 1),
                        "clientCpuMsPerQuery": round(statistics.mean(client[side]), 1),
                        "serverCpuMsPerQuery": round(statistics.mean(backend[side]), 1),
                        "oracleMismatches": mismatches[side]}
    report["byQuestionP50Ms"] = {q: {side: round(statistics.median(times[side]), 1) for side in ("old", "new")}
                                 for q, times in by_question.items()}
    report["ratios"] = {
        "p50": round(report["old"]["p50Ms"] / max(report["new"]["p50Ms"], 1e-6), 1),
        "p95": round(report["old"]["p95Ms"] / max(report["new"]["p95Ms"], 1e-6), 1),
        "cpu": round((report["old"]["clientCpuMsPerQuery"] + report["old"]["serverCpuMsPerQuery"])
                     / max(report["new"]["clientCpuMsPerQuery"] + report["new"]["serverCpuMsPerQuery"], 1e-6), 1)}
    print(json.dumps(report, indent=2))
    if args.json:
        args.json.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
