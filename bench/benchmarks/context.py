"""What every benchmark shares: the corpus, the work folder, the report and its failures, and the pimem
commands they time (an import into a fresh store, the seed's import, a check of the stored counts)."""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shlex
import sqlite3
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import generate
from pimem.paths import source_roots
from pimem.sync import SyncRequest, run_sync
from queries import Query

from .measure import ProcessRun, run_measured
from .paths import NODE_FLAGS, SEED_DIR
from .report import Report, describe_corpus, describe_machine, load_average

AGENT_ENV = ("CLAUDE_CONFIG_DIR", "CODEX_HOME", "PI_CODING_AGENT_DIR", "PI_CODING_AGENT_SESSION_DIR", "MEMORY_DB_PATH")


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
    pimem_src: Path | None = None   # --pimem-rev: the server/ folder measured (None: the working tree)
    pimem_sha: str | None = None

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
            parts.append(f"--pimem-rev {self.pimem_sha}")
        if only == "multi" and getattr(self.args, "baseline_rev", None):
            parts.append(f"--baseline-rev {self.args.baseline_rev}")
        if self.args.seed_runs:
            parts.append(f"--seed-runs {self.args.seed_runs}")
        if getattr(self.args, "keep_store", False):
            parts.append("--keep-store")
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

    def agent_env(self, home: Path, db: Path) -> dict[str, str]:
        """A pimem process's environment: the agents' roots under ``home``, the store ``db``."""
        env = {key: value for key, value in os.environ.items() if key not in AGENT_ENV}
        env["HOME"] = str(home)
        env["MEMORY_DB_PATH"] = str(db)
        env["PYTHONUNBUFFERED"] = "1"
        if self.pimem_src is not None:
            env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(self.pimem_src), os.environ.get("PYTHONPATH")]))
        return env

    # -- imports -----------------------------------------------------------------------------------
    def pimem_import(self, db: Path, home: Path | None = None) -> ProcessRun:
        remove_db(db)
        command = [sys.executable, "-m", "pimem", "sync", "--json"]
        run = run_measured(command, self.agent_env(home or self.home, db))
        if run.returncode != 0:
            self.fail("pimem sync", f"exit {run.returncode}: {run.stderr[-2000:]}")
        return run

    def seed_import(self, db: Path) -> ProcessRun | None:
        node = self.node()
        if node is None:
            return None
        remove_db(db)
        command = [str(node), *NODE_FLAGS, str(SEED_DIR / "backfill_driver.ts")]
        run = run_measured(command, self.agent_env(self.home, db))
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
        stored = json.loads(marker.read_text()) if self.db.exists() and marker.exists() else None
        if (stored is not None and getattr(self.args, "keep_store", False)
                and {**stored, "pimem": None} == {**key, "pimem": None}):
            # As it is: an older revision may not write a store a newer one migrated.
            self.report.say(f"(reusing {self.db} as it is, imported by pimem {stored['pimem']}; --keep-store)")
            self.report.say()
            return
        if stored == key:
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

    def compare(self, what: str, query: Query, got: list[dict[str, Any]], expected: list[dict[str, Any]]) -> None:
        if got != expected:
            first = next((i for i, (a, b) in enumerate(zip(got, expected, strict=False)) if a != b),
                         min(len(got), len(expected)))
            self.fail(f"{what} differs from the oracle for {query.name} {query.params()}",
                      f"{len(got)} rows vs {len(expected)}; first difference at row {first}: "
                      f"{_row_brief(got, first)} vs oracle {_row_brief(expected, first)}")


def _row_brief(rows: list[dict[str, Any]], index: int) -> str:
    if index >= len(rows):
        return "(none)"
    row = rows[index]
    return f"{row.get('turnId')} hits={row.get('hits')} ts={row.get('ts')}"


def json_or_empty(text: str) -> dict[str, Any]:
    try:
        value = json.loads(text)
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}
