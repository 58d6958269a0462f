"""Hostile tool results for the context lines of edits (issue 23, round q7): the CPU time the importers
spend on edit results, at growing sizes, so that super-linear growth shows as a ratio between sizes.

Shapes (``--shape``):
  results     one turn of N edits, each followed by its result (a Claude Code ``Edit`` with ``originalFile``
              and a Pi ``edit`` with ``details.patch``), synced into a fresh store: CPU of the sync
              (this process and its workers); each result looked at every edit of its turn before round q7
  head-line   one Claude line of N KiB repeating the head of an Edit result (no ``originalFile``): CPU of
              deciding whether to parse it (ClaudeParser.wants); quadratic before round q7
  brace-calls N calls each added a block ending in ``}`` to one file: CPU of one current-line request on a
              ``}`` (rule 2 followed a trivial line through every call's rows of it from round 8: it grew
              with the calls; since round 10, past TRIVIAL_FOLLOWED rows, its near calls' rows only)
  pi-patch    a Pi patch of N lines of ``}`` and a replaced text of 2,000 ``}``: CPU of finding the text's
              neighbours in the patch (kept_in_patch); N × 2,000 comparisons before round q7

Run it with ``--server PATH`` to measure another revision's ``server/`` (e.g. ``git archive REV server``),
alternating revisions in one session, as docs/benchmarks.md does::

    .venv/bin/python bench/blame/results.py --shape results 500 1000 2000
    .venv/bin/python bench/blame/results.py --server /tmp/q7/base/server --shape results 500 1000 2000
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def _cpu() -> float:
    """CPU seconds of this process and its finished workers."""
    times = os.times()
    return times.user + times.system + times.children_user + times.children_system


def _results(size: int, work: Path) -> None:
    from support.edits import write_claude, write_pi
    from support.sync import sync

    project = work / "proj"
    project.mkdir()
    claude_calls: list[tuple[str, dict[str, object]]] = []
    pi_calls: list[tuple[str, dict[str, object]]] = []
    for k in range(size):
        old, new = f"stale_{k}()\n", f"value_{k} = parse(data)\n"
        claude_calls.append(("Edit", {"file_path": str(project / "a.py"), "old_string": old, "new_string": new,
                                      "_originalFile": f"setup_{k}()\n{old}shutdown_{k}()\n"}))
        pi_calls.append(("edit", {"path": "b.py", "edits": [{"oldText": old, "newText": new}], "_result": "ok",
                                  "_details": {"patch": f"@@ -1,3 +1,3 @@\n setup_{k}()\n-{old}+{new}"
                                                        f" shutdown_{k}()\n"}}))
    write_claude(work / "agents", "s1", project, [("many edits", claude_calls)])
    write_pi(work / "agents", "p1", project, [("many edits", pi_calls)])
    sync(work / "agents", work / "m.db")


def _brace_calls(size: int, work: Path) -> float:
    """The least CPU of five current-line requests, each on another ``}`` (the text's hashes read first)."""
    from pimem.lineblame import attribute_lines
    from pimem.store import connect
    from support.edits import brace_block_edits, write_claude
    from support.sync import sync

    project = work / "proj"
    project.mkdir()
    path = project / "a.go"
    calls, text = brace_block_edits(path, size)
    write_claude(work / "agents", "s1", project, [("write them", calls)])
    sync(work / "agents", work / "m.db")
    conn = connect(work / "m.db", create=False, for_writing=False)
    lines = text.splitlines()
    at = lines.index("}", len(lines) // 2)
    attribute_lines(conn, str(path), text, start_line=at, end_line=at + 1, git=False)
    best = float("inf")
    for k in range(5):
        started = time.process_time()
        attribute_lines(conn, str(path), text, start_line=at + 6 * k, end_line=at + 6 * k + 1, git=False)
        best = min(best, time.process_time() - started)
    conn.close()
    return best


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--server", type=Path, default=REPO / "server", help="the server/ folder measured")
    parser.add_argument("--shape", choices=("results", "head-line", "pi-patch", "brace-calls"), default="results")
    parser.add_argument("sizes", type=int, nargs="+")
    args = parser.parse_args()
    sys.path[:0] = [str(args.server.resolve()), str(REPO / "tests")]

    for size in args.sizes:
        if args.shape == "results":
            with tempfile.TemporaryDirectory() as folder:
                started = _cpu()
                _results(size, Path(folder))
                spent = _cpu() - started
        elif args.shape == "head-line":
            from pimem.importers.claude import ClaudeParser
            from pimem.jsonl import Line

            head = b'{"type":"user","toolUseResult":{"filePath":'
            data = head * (size * 1024 // len(head))
            parser_ = ClaudeParser.__new__(ClaudeParser)
            started = time.process_time()
            parser_.wants(Line(1, 0, len(data) + 1, data, data[:64]))
            spent = time.process_time() - started
        elif args.shape == "brace-calls":
            with tempfile.TemporaryDirectory() as folder:
                spent = _brace_calls(size, Path(folder))
        else:
            from pimem.importers.pi import kept_in_patch

            patch = f"@@ -1,{size} +1,{size} @@\n" + " }\n" * size
            started = time.process_time()
            kept_in_patch(patch, "}\n" * 2000)
            spent = time.process_time() - started
        print(f"{args.shape} {size}: {spent * 1000:.1f} ms CPU", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
