#!/usr/bin/env python3
"""Experiment (issue 21): free-text latency through a real ``pimem serve``, this worktree against a
reference revision served side by side on the same store, as the day-zero protocol asks: per LongMemEval
**dev** question, ``pimem/recall {text, limit: 50, offset}`` pages until 50 distinct conversations (a
conversation's Claude and Codex copies are two sessions) or a short page.

    nice -n 10 .venv/bin/python bench/experiments/serve_latency.py --dir /work/data/r1/real --before main

Both servers start with ``autoSync: false`` (nothing is written to the store) and are asked the same
questions, alternated (which goes first flips per question). Per request and per question: wall time
at the client and CPU time of the server process (its threads' scheduler time: steadier than wall time
on a loaded machine); the first request of each server (cold: a new process, its connections and counts)
is reported apart and left out of the rest. Every page's session ids must be the same from both servers
(exit 1 and the question ids otherwise). The held-out questions (the first 100 non-abstention ones) are
never read: ``data.split`` gives the dev set only.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
sys.path.insert(0, str(HERE.parent / "lme"))
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(REPO / "tests"))

import data  # noqa: E402
import psutil  # noqa: E402

from benchmarks.pinning import archive_pimem  # noqa: E402
from support.jsonrpc import LspProcess  # noqa: E402

PAGE = 50
DEPTH = 50
PAGE_END = 1000


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


class Served:
    def __init__(self, name: str, source: Path, store: Path, log: Path) -> None:
        env = {key: value for key, value in os.environ.items() if not key.startswith(("PI_", "CLAUDE_", "CODEX_"))}
        env.update(MEMORY_DB_PATH=str(store), CLAUDE_CONFIG_DIR="/nonexistent", CODEX_HOME="/nonexistent",
                   PI_CODING_AGENT_DIR="/nonexistent", PYTHONPATH=str(source))
        self.name = name
        self.server = LspProcess(env, log)
        self.server.initialize(options={"autoSync": False})
        self.process = psutil.Process(self.server.process.pid)

    def cpu(self) -> float:
        """CPU ms of the server's threads so far (the scheduler's nanoseconds: /proc's user and system
        times tick by 10 ms)."""
        total = 0
        for task in Path(f"/proc/{self.process.pid}/task").iterdir():
            try:
                total += int((task / "schedstat").read_text().split()[0])
            except (OSError, ValueError, IndexError):   # a thread that ended meanwhile
                continue
        return total / 1e6

    def ask(self, text: str, offset: int) -> tuple[list[str], float, float]:
        cpu, started = self.cpu(), time.perf_counter()
        result = self.server.call("pimem/recall", {"text": text, "limit": PAGE, "offset": offset})
        wall = (time.perf_counter() - started) * 1000
        return [row["sessionId"] for row in result["results"]], wall, self.cpu() - cpu


def question(served: Served, text: str, mapping: dict[str, str]) -> tuple[list[list[str]], list[float], list[float]]:
    """The protocol's pages of one question: their session ids, wall and server CPU ms per request."""
    seen: set[str] = set()
    pages: list[list[str]] = []
    walls: list[float] = []
    cpus: list[float] = []
    offset = 0
    while len(seen) < DEPTH and offset + PAGE <= PAGE_END:
        ids, wall, cpu = served.ask(text, offset)
        pages.append(ids)
        walls.append(wall)
        cpus.append(cpu)
        seen.update(mapping.get(session, session) for session in ids)
        if len(ids) < PAGE:
            break
        offset += PAGE
    return pages, walls, cpus


def figures(values: list[float]) -> dict[str, float]:
    return {"n": len(values), "p50": round(statistics.median(values), 1), "p95": round(pct(values, 0.95), 1),
            "max": round(max(values), 1)}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The data, the store and the two revisions (this and serve_identity.py)."""
    parser.add_argument("--data", type=Path, default=Path("/work/data/lme/longmemeval_s_cleaned.json"))
    parser.add_argument("--dir", type=Path, required=True, help="a corpus built by bench/lme/run.py build")
    parser.add_argument("--before", default="main", help="the reference revision (served from a git archive)")
    parser.add_argument("--sample", type=int, default=0, help="only this many dev questions, evenly spaced")


def sampled_dev(args: argparse.Namespace) -> list[dict[str, Any]]:
    """The dev questions (never the held-out ones), ``--sample`` of them evenly spaced when asked."""
    dev, _ = data.split(data.load_questions(args.data))
    if 0 < args.sample < len(dev):
        dev = [dev[position * len(dev) // args.sample] for position in range(args.sample)]
    return dev


def before_and_after(args: argparse.Namespace, log_prefix: str) -> dict[str, Served]:
    """Two real servers on the same store: ``--before``'s code (a git archive) and this checkout's."""
    store = args.dir / "memory.db"
    logs = Path(os.environ.get("TMPDIR", "/tmp"))
    return {"before": Served("before", archive_pimem(args.before)[0], store, logs / f"{log_prefix}-before.log"),
            "after": Served("after", REPO / "server", store, logs / f"{log_prefix}-after.log")}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add_arguments(parser)
    parser.add_argument("--results", type=Path, help="write every figure as JSON here")
    args = parser.parse_args()
    dev = sampled_dev(args)
    mapping: dict[str, str] = json.loads((args.dir / "mapping.json").read_text(encoding="utf-8"))
    servers = before_and_after(args, "serve")
    cold: dict[str, dict[str, float]] = {}
    for name, served in servers.items():   # the first request of a new server, apart
        _ids, wall, cpu = served.ask(dev[0]["question"], 0)
        cold[name] = {"wall_ms": round(wall, 1), "cpu_ms": round(cpu, 1)}
    per_request: dict[str, dict[str, list[float]]] = {name: {"wall": [], "cpu": [], "first_wall": [], "first_cpu": []}
                                                      for name in servers}
    per_question: dict[str, dict[str, list[float]]] = {name: {"wall": [], "cpu": []} for name in servers}
    differ: list[str] = []
    pages_asked = 0
    for number, item in enumerate(dev):
        order = ["before", "after"] if number % 2 == 0 else ["after", "before"]
        answers: dict[str, list[list[str]]] = {}
        for name in order:
            pages, walls, cpus = question(servers[name], item["question"], mapping)
            answers[name] = pages
            per_request[name]["wall"].extend(walls)
            per_request[name]["cpu"].extend(cpus)
            per_request[name]["first_wall"].append(walls[0])
            per_request[name]["first_cpu"].append(cpus[0])
            per_question[name]["wall"].append(sum(walls))
            per_question[name]["cpu"].append(sum(cpus))
        pages_asked += len(answers["after"])
        if answers["before"] != answers["after"]:
            differ.append(item["question_id"])
    rss = {name: round(served.process.memory_info().rss / 1e6) for name, served in servers.items()}
    for served in servers.values():
        served.server.close()
    report: dict[str, Any] = {
        "questions": len(dev), "pages": pages_asked, "differ": differ, "cold_first_request": cold, "rss_mb": rss,
        "load_average": [round(x, 2) for x in os.getloadavg()],
        **{name: {"request_wall": figures(values["wall"]), "request_cpu": figures(values["cpu"]),
                  "first_page_wall": figures(values["first_wall"]), "first_page_cpu": figures(values["first_cpu"]),
                  "question_wall": figures(per_question[name]["wall"]),
                  "question_cpu": figures(per_question[name]["cpu"])} for name, values in per_request.items()},
        "question_cpu_p50_ratio": round(statistics.median(per_question["after"]["cpu"])
                                        / statistics.median(per_question["before"]["cpu"]), 3),
        "question_wall_p50_ratio": round(statistics.median(per_question["after"]["wall"])
                                         / statistics.median(per_question["before"]["wall"]), 3),
    }
    print(json.dumps(report, indent=1))
    if args.results:
        args.results.write_text(json.dumps(report, indent=1) + "\n", encoding="utf-8")
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
