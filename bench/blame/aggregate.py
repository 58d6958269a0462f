#!/usr/bin/env python3
"""Sum the ``score.py --json`` reports of many histories: the issue's targets on all their lines at once.

    python bench/blame/aggregate.py /tmp/l12/sc-main-s30*.json [--json FILE]

Per history, ``score.py`` says whether every target holds; over a batch of histories (round 12's fresh
seeds, docs/benchmarks.md) the question is also whether the targets hold on the lines of the whole batch:
precision = right / attributed lines, recall = agent lines still as written named right / such lines,
human attributed = human lines attributed / human lines (the counts are recovered from each report's
ratios and line counts; blank lines are in no figure, as in ``score.py``). Prints one row per attribution
(pimem without git, with git) with the histories that meet every target and those that do not.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from score import TARGETS

MODES = ("pimemNoGit", "pimemGit")


def summed(reports: dict[str, dict[str, Any]], mode: str) -> dict[str, Any]:
    n = {"attributed": 0, "right": 0, "agent": 0, "agentRight": 0, "human": 0, "humanAttributed": 0}
    failing = []
    for name, report in reports.items():
        r = report[mode]
        lines = r["lines"]
        n["attributed"] += lines["attributed"]
        n["right"] += round((r["precision"] or 0) * lines["attributed"])
        n["agent"] += lines["agent"]
        n["agentRight"] += round((r["recall"] or 0) * lines["agent"])
        n["human"] += lines["human"]
        n["humanAttributed"] += round((r["humanAttributed"] or 0) * lines["human"])
        if not r["pass"]:
            failing.append(name)
    out: dict[str, Any] = dict(n, histories=len(reports), passing=len(reports) - len(failing), failing=failing)
    out["precision"] = round(n["right"] / n["attributed"], 4) if n["attributed"] else None
    out["recall"] = round(n["agentRight"] / n["agent"], 4) if n["agent"] else None
    out["humanAttributedShare"] = round(n["humanAttributed"] / n["human"], 4) if n["human"] else None
    out["pass"] = bool(out["precision"] is not None and out["precision"] >= TARGETS["precision"]
                       and (out["recall"] or 0) >= TARGETS["recall"]
                       and (out["humanAttributedShare"] or 0) <= TARGETS["humanAttributed"])
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("reports", type=Path, nargs="+", help="score.py --json outputs (run with --service)")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    reports = {p.stem: json.loads(p.read_text()) for p in args.reports}
    rows = ["| attribution | histories meeting every target | lines right / wrong (human) | precision | recall "
            "| human attributed | targets on all lines |", "|---|---|---|---|---|---|---|"]
    result = {}
    for mode in MODES:
        s = result[mode] = summed(reports, mode)
        rows.append(f"| {mode} | {s['passing']} of {s['histories']} | {s['right']:,} / {s['attributed'] - s['right']} "
                    f"({s['humanAttributed']}) | {s['precision']} | {s['recall']} ({s['agentRight']:,} of "
                    f"{s['agent']:,}) | {s['humanAttributedShare']} ({s['humanAttributed']} of {s['human']:,}) "
                    f"| {'pass' if s['pass'] else 'FAIL'} |")
    print("\n".join(rows))
    for mode in MODES:
        print(f"{mode} failing: {' '.join(result[mode]['failing']) or '-'}")
    if args.json:
        args.json.write_text(json.dumps(result, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
