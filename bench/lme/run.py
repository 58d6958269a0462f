#!/usr/bin/env python3
"""LongMemEval day-zero benchmark (deja-vu's protocol on LongMemEval-S cleaned): every unique haystack
session written once as a Claude Code transcript and once as a Codex rollout, imported by ``pimem
sync``, then every dev question asked verbatim. See docs/benchmarks.md, "LongMemEval day-zero".

    python bench/lme/run.py prepare --split-dir RAW/lme_jsons --order-log LOG.jsonl --extra F.json --out DATA.json
    python bench/lme/run.py build --data DATA.json --shape real --dir /work/data/lme/real   # write + sync
    python bench/lme/run.py evaluate --data DATA.json --dir /work/data/lme/real --ranker pimem --ranker bm25
    python bench/lme/run.py synthetic --out SLICE.json    # the CI slice's data (tests/test_bench_lme.py)

``evaluate`` reads the dev set (every non-abstention question but the first 100) unless
``--holdout`` is given, which is for acceptance only.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
sys.path.insert(0, str(HERE))

import data  # noqa: E402
import evaluate  # noqa: E402
import proxy  # noqa: E402
import synthetic  # noqa: E402
import writer  # noqa: E402


def _pimem() -> str:
    beside = Path(sys.executable).parent / "pimem"
    return str(beside) if beside.exists() else "pimem"


def build(questions: Sequence[dict[str, Any]], directory: Path, shape: writer.Shape) -> dict[str, Any]:
    """Write the corpus (replacing an older one) and import it with ``pimem sync --json``."""
    for part in ("claude", "codex", "memory.db", "memory.db-wal", "memory.db-shm", "mapping.json"):
        path = directory / part
        if path.is_dir():
            shutil.rmtree(path)
        elif path.exists():
            path.unlink()
    directory.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    mapping = writer.write_corpus(data.unique_sessions(questions), directory, shape)
    written_s = time.perf_counter() - started
    started = time.perf_counter()
    completed = subprocess.run([_pimem(), "sync", "--json"], env=writer.agent_env(directory, dict(os.environ)),
                               capture_output=True, text=True, check=False)
    sync_s = time.perf_counter() - started
    if completed.returncode != 0:
        raise SystemExit(f"pimem sync failed ({completed.returncode}): {completed.stderr.strip()[-2000:]}")
    stats = json.loads(completed.stdout)
    report = {"shape": shape, "sessions": len(mapping) // 2, "transcripts": len(mapping),
              "writeSeconds": round(written_s, 1), "syncSeconds": round(sync_s, 1), "sync": stats}
    (directory / "build.json").write_text(json.dumps(report, indent=1), encoding="utf-8")
    return report


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    prepare = commands.add_parser("prepare", help="rebuild longmemeval_s_cleaned.json from a split copy")
    prepare.add_argument("--split-dir", type=Path, required=True, help="files <n>_<question_id>.json")
    prepare.add_argument("--order-log", type=Path, required=True, help="JSON lines, question_id in file order")
    prepare.add_argument("--extra", type=Path, action="append", default=[], help="a question file to fill a gap")
    prepare.add_argument("--out", type=Path, required=True)
    fake = commands.add_parser("synthetic", help="write the CI slice's synthetic file (answers known by construction)")
    fake.add_argument("--out", type=Path, required=True)
    describe = commands.add_parser("describe", help="counts of a data file (questions, split, sessions)")
    describe.add_argument("--data", type=Path, required=True)
    build_cmd = commands.add_parser("build", help="write the transcripts of one shape and pimem sync them")
    build_cmd.add_argument("--data", type=Path, required=True)
    build_cmd.add_argument("--shape", choices=writer.SHAPES, required=True)
    build_cmd.add_argument("--dir", type=Path, required=True, help="claude/, codex/, mapping.json, memory.db")
    turns = commands.add_parser("proxy-turns", help="print dev evidence turns to write proxy questions from "
                                "(bench/lme/proxy.py; held-out sessions refused)")
    turns.add_argument("--data", type=Path, required=True)
    turns.add_argument("--count", type=int, default=50)
    turns.add_argument("--skip", type=int, default=0)
    turns.add_argument("--source", choices=("dev", proxy.HAYSTACK), default="dev",
                       help="dev: the dev answer sessions' user evidence turns; haystack: every user turn of the "
                       "sessions that answer no question (proxy.others)")
    turns.add_argument("--chars", type=int, default=proxy.MAX_SHOWN, help="characters of a turn printed")
    evaluate.add_arguments(commands.add_parser("evaluate", help="ask the questions, report the metrics"))
    args = parser.parse_args(argv)
    if args.command == "prepare":
        print(json.dumps(data.rebuild(args.split_dir, args.order_log, args.extra, args.out), indent=1))
    elif args.command == "synthetic":
        args.out.write_text(json.dumps(synthetic.build(), ensure_ascii=False), encoding="utf-8")
    elif args.command == "describe":
        print(json.dumps(data.describe(data.load_questions(args.data)), indent=1))
    elif args.command == "proxy-turns":
        proxy.print_turns(data.load_questions(args.data), args.count, args.skip, args.source, args.chars)
    elif args.command == "build":
        print(json.dumps(build(data.load_questions(args.data), args.dir, args.shape), indent=1))
    else:
        return evaluate.main(args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
