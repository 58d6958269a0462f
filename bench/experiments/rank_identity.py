#!/usr/bin/env python3
"""Experiment (issue 21): a faster ``ranking.rank`` must give IDENTICAL answers. Runs the ranking of a
reference revision (``--before``, its ``server/pimem/recall/ranking.py`` loaded beside this one) and of
this worktree on the LongMemEval-S **dev** questions, alternated per question (which goes first flips),
asserts that each question's top-50 conversations (session, best turn, score and best-turn score to 1e-9,
the words matched) are the same, and prints the paired p50 / p95 per question of both. With ``--pages 2``
each question asks the pages at offset 0 and 50, as the day-zero protocol does (every page compared;
the time of a question is both pages', the first page's is given apart).

    nice -n 10 .venv/bin/python bench/experiments/rank_identity.py --dir /work/data/r1/real --before 7e1169c
    nice -n 10 .venv/bin/python bench/experiments/rank_identity.py --dir /work/data/r1/real --before main --pages 2
    nice -n 10 .venv/bin/python bench/experiments/rank_identity.py --dir /work/data/r2/store-1m --texts generated
    nice -n 10 .venv/bin/python bench/experiments/rank_identity.py --dir STORE-1M --texts generated --warm

The held-out questions (the first 100 non-abstention ones) are never read: ``data.split`` gives the dev
set only here.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from types import ModuleType
from typing import Any

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
sys.path.insert(0, str(HERE.parent / "lme"))

import data  # noqa: E402

from pimem.recall import docmap, make_query, ranking  # noqa: E402
from pimem.recall.freetext import _shortlist, parse_text, stop_words  # noqa: E402
from pimem.store import connect  # noqa: E402

TOP = 50


def load_revision(revision: str, folder: Path) -> ModuleType:
    source = subprocess.run(["git", "-C", str(REPO), "show", f"{revision}:server/pimem/recall/ranking.py"],
                            check=True, capture_output=True, text=True).stdout
    path = folder / "ranking_before.py"
    path.write_text(source, encoding="utf-8")
    spec = importlib.util.spec_from_file_location("pimem.recall._ranking_before", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module   # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


def recorder(module: ModuleType) -> list[list[tuple[int, int, float, float, tuple[str, ...]]]]:
    """Keeps what each ``rank`` call put on its page (before rows are read), by wrapping ``_rows``."""
    pages: list[list[tuple[int, int, float, float, tuple[str, ...]]]] = []
    original: Callable[..., Any] = module._rows

    def rows(conn: Any, page: Sequence[Any], surface: dict[str, str]) -> Any:
        pages.append([(c.session, c.best_doc, c.score, c.best_turn_score, tuple(sorted(c.matched_tokens)))
                      for c in page])
        return original(conn, page, surface)

    module._rows = rows
    return pages


def same(a: list[tuple[int, int, float, float, tuple[str, ...]]],
         b: list[tuple[int, int, float, float, tuple[str, ...]]]) -> bool:
    return len(a) == len(b) and all(
        x[0] == y[0] and x[1] == y[1] and abs(x[2] - y[2]) <= 1e-9 and abs(x[3] - y[3]) <= 1e-9 and x[4] == y[4]
        for x, y in zip(a, b, strict=True))


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=Path("/work/data/lme/longmemeval_s_cleaned.json"))
    parser.add_argument("--dir", type=Path, required=True)
    parser.add_argument("--before", default="main")
    parser.add_argument("--limit", type=int, default=0)
    parser.add_argument("--pages", type=int, default=1, help="pages of 50 conversations asked per question")
    parser.add_argument("--texts", choices=("lme", "generated"), default="lme",
                        help="generated: bench/freetext_perf.py's 100 questions (for a generated corpus)")
    parser.add_argument("--keep-docs", action=argparse.BooleanOptionalAction, default=True,
                        help="this worktree's ranking keeps the word index's docs, as pimem serve does "
                             "(pimem.recall.docmap; the reference revision reads them per query)")
    parser.add_argument("--warm", action="store_true",
                        help="ask every question once first by both revisions, untimed (as bench/freetext_perf.py "
                             "latency does: what a process keeps per word is then warm); each question's ranked "
                             "lists are forgotten before it is asked again")
    args = parser.parse_args()
    if args.keep_docs:
        docmap.enable()
    dev, _ = data.split(data.load_questions(args.data))
    if args.texts == "generated":   # a generated corpus (bench/generate.py): LongMemEval's words are not in it
        sys.path.insert(0, str(HERE.parent))
        from freetext_perf import questions
        dev = [{"question_id": f"q{number}", "question": text} for number, text in enumerate(questions())]
    if args.limit:
        dev = dev[:args.limit]
    conn = connect(args.dir / "memory.db", create=False, for_writing=False)
    with tempfile.TemporaryDirectory() as folder:
        before = load_revision(args.before, Path(folder))
        modules = {"before": before, "after": ranking}
        pages = {name: recorder(module) for name, module in modules.items()}

        def ask(module: ModuleType, text: str) -> list[float]:
            """Per page the wall time (ms), then per page this thread's CPU time (SQLite runs in it:
            steadier than wall time when the machine is loaded)."""
            found = parse_text(text)
            qwords = module.query_words(_shortlist(list(found)), stop_words())
            wall: list[float] = []
            cpu: list[float] = []
            if args.warm:
                module._RANKED.clear()
            for page in range(args.pages):
                query = make_query([c.term for c in found[:8]], TOP, None, None, page * TOP)
                started, started_cpu = time.perf_counter(), time.thread_time()
                module.rank(conn, qwords, query)
                wall.append((time.perf_counter() - started) * 1000)
                cpu.append((time.thread_time() - started_cpu) * 1000)
            return wall + cpu

        for module in modules.values():   # warm: the per-process counts and the page cache
            for question in dev if args.warm else dev[:1]:
                ask(module, question["question"])
        ranking._RANKED.clear()   # but not that question's ranked list (it is asked again below)
        for recorded in pages.values():
            recorded.clear()
        times: dict[str, list[float]] = {name: [] for name in modules}
        first: dict[str, list[float]] = {name: [] for name in modules}
        cpu: dict[str, list[float]] = {name: [] for name in modules}
        cpu_first: dict[str, list[float]] = {name: [] for name in modules}
        differ: list[str] = []
        for number, question in enumerate(dev):
            order = ["before", "after"] if number % 2 == 0 else ["after", "before"]
            for name in order:
                spent = ask(modules[name], question["question"])
                times[name].append(sum(spent[:args.pages]))
                first[name].append(spent[0])
                cpu[name].append(sum(spent[args.pages:]))
                cpu_first[name].append(spent[args.pages])
            # A page with no conversation is recorded by one revision and not the other (main returns
            # before reading rows): compare the non-empty pages of this question.
            asked = {name: [page for page in recorded if page] for name, recorded in pages.items()}
            if len(asked["before"]) != len(asked["after"]) or not all(
                    same(a, b) for a, b in zip(asked["before"], asked["after"], strict=True)):
                differ.append(question["question_id"])
            for recorded in pages.values():
                recorded.clear()
    print(json.dumps({"questions": len(dev), "pages": args.pages, "differ": differ,
                      **{f"{name}_first_page_p50_ms": round(statistics.median(t), 1) for name, t in first.items()},
                      **{f"{name}_first_page_p95_ms": round(pct(t, 0.95), 1) for name, t in first.items()},
                      **{f"{name}_p50_ms": round(statistics.median(t), 1) for name, t in times.items()},
                      **{f"{name}_p95_ms": round(pct(t, 0.95), 1) for name, t in times.items()},
                      "p50_ratio": round(statistics.median(times["after"]) / statistics.median(times["before"]), 3),
                      "paired_ratio_median": round(statistics.median(
                          a / b for a, b in zip(times["after"], times["before"], strict=True)), 3),
                      **{f"{name}_cpu_first_page_p50_ms": round(statistics.median(t), 1)
                         for name, t in cpu_first.items()},
                      **{f"{name}_cpu_p50_ms": round(statistics.median(t), 1) for name, t in cpu.items()},
                      **{f"{name}_cpu_p95_ms": round(pct(t, 0.95), 1) for name, t in cpu.items()},
                      "cpu_p50_ratio": round(statistics.median(cpu["after"]) / statistics.median(cpu["before"]), 3),
                      "cpu_first_page_p50_ratio": round(
                          statistics.median(cpu_first["after"]) / statistics.median(cpu_first["before"]), 3),
                      "load_average": [round(x, 2) for x in os.getloadavg()]}, indent=1))
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
