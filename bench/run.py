#!/usr/bin/env python3
"""pimem benchmarks: import, sync latency, recall (warm server, cold CLI, the seed's LIKE scan), and the
oracle check. See docs/benchmarks.md.

    python bench/run.py --turns 100000                   # generate a corpus, run everything
    python bench/run.py --corpus DIR --only recall       # reuse a corpus (and its imported store)
    python bench/run.py --check-only --turns 20000       # CI: results must equal the oracle; no timing
    python bench/run.py --summarize RESULTS.json         # the Targets table of a run saved with --results

Every section prints the command that reproduces it, the corpus, the machine and the medians of
``--runs`` runs. Tables are Markdown, so the output can be pasted into docs/benchmarks.md as is.

This file is the command line; each benchmark is a module of bench/benchmarks/ (see its __init__).
"""

from __future__ import annotations

import argparse
import json
import shlex
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "bench"))
sys.path.append(str(REPO / "tests"))   # tests/support: the JSON-RPC client

from benchmarks.pinning import pin_pimem  # noqa: E402 - imports no pimem

PIMEM_SRC, PIMEM_SHA = pin_pimem(sys.argv)   # before anything imports pimem

import generate  # noqa: E402
from benchmarks import check, full_import, multi, recall, sync, targets  # noqa: E402
from benchmarks.context import Bench  # noqa: E402
from benchmarks.paths import NODE_DEFAULT  # noqa: E402
from benchmarks.report import machine_info  # noqa: E402

BENCHMARKS = ("import", "recall", "multi", "sync")
RUNS: dict[str, Callable[[Bench], None]] = {"import": full_import.run, "recall": recall.run, "multi": multi.run,
                                            "sync": sync.run}


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
    parser.add_argument("--baseline-rev", help="multi: also serve pimem as committed at this revision, on the same "
                                               "store, requests interleaved with the measured one")
    parser.add_argument("--keep-store", action="store_true",
                        help="reuse the imported store of this corpus as it is, whichever pimem revision imported "
                             "it (no sync; for recall-only changes; the importing revision is reported)")
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
    targets.run(bench)
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
    bench = Bench(args, corpus, work, manifest, machine_info(PIMEM_SRC, PIMEM_SHA), pimem_src=PIMEM_SRC,
                  pimem_sha=PIMEM_SHA)
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
            check.run(bench)
        else:
            wanted = args.only.split(",")
            for name in BENCHMARKS:
                if name in wanted:
                    section_started = time.monotonic()
                    RUNS[name](bench)
                    bench.footer(name, section_started)
            targets.run(bench)
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
