"""Hostile texts for the line memory (issue 23, round q3): the CPU time of one whole-file attribution and
one current-line request, at growing sizes, so that super-linear growth shows as a ratio between sizes.

Shapes (``--shape``):
  short-runs   a call wrote ``}`` + a line of its own, N times (several calls); the buffer has each pair
               with a person's line after it: every pair is a short run whose first line has N copies
               (rule 2's copied-run question; quadratic before round q3)
  repeated     one line N times; the call wrote it 1,500 times and a later call removed 1,000 of them
               (each line has MAX_CANDIDATES live and as many removed writes: rule 2's revival)
  blocks       N calls, each added 50 copies of one line after a marker line of its own (round q9): every
               call's run goes through every block; the lines given to a call other than their block's
               are counted ("wrong"; the most recent call took them all before round q9)
  copied       a Write of ``def original():`` and N distinct lines (N <= 1,800: the bound rule), and the buffer
               holds a person's copy of those N lines after ``def copy():`` (round q10): the copy's lines
               attributed are counted ("wrong"; all N before round q10, runs past RUN_CAP being trusted)

Run it with ``--server PATH`` to measure another revision's ``server/`` (e.g. ``git archive REV server``),
alternating revisions in one session, as docs/benchmarks.md does::

    .venv/bin/python bench/blame/hostile.py --shape short-runs 900 1800 3600
    .venv/bin/python bench/blame/hostile.py --server /tmp/q3/base/server --shape short-runs 900 1800 3600
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def _store(shape: str, size: int, work: Path) -> tuple[Path, Path, str]:
    from support.edits import write_claude
    from support.sync import sync

    project = work / "proj"
    project.mkdir()
    path = project / "a.js"
    turns: list[tuple[str, list[tuple[str, dict[str, object]]]]] = []
    if shape == "short-runs":
        previous = None
        for first in range(0, size, 900):   # a call's new text stays under the bound rule's 2,000 lines
            block = "".join(f"}}\nvalue_{k} = compute({k});\n" for k in range(first, min(size, first + 900)))
            if previous is None:
                turns.append((f"t{first}", [("Write", {"file_path": str(path), "content": block})]))
            else:
                turns.append((f"t{first}", [("Edit", {"file_path": str(path), "old_string": previous,
                                                       "new_string": previous + block})]))
            last = min(size, first + 900) - 1
            previous = f"value_{last} = compute({last});\n"
        text = "".join(f"}}\nvalue_{k} = compute({k});\nperson_{k}();\n" for k in range(size))
    elif shape == "blocks":
        markers = [f"marker_{k}();\n" for k in range(size)]
        text = "".join(markers)
        for k, marker in enumerate(markers):
            new = marker + "x = compute(value);\n" * 50
            turns.append((f"call {k}", [("Edit", {"file_path": str(path), "old_string": marker, "new_string": new,
                                                  "_originalFile": text})]))
            text = text.replace(marker, new, 1)
    elif shape == "copied":
        body = "".join(f"    value_{k} = compute({k})\n" for k in range(size))
        content = "def original():\n" + body
        turns = [("write", [("Write", {"file_path": str(path), "content": content})])]
        text = content + "\n\ndef copy():\n" + body
    else:
        content = "function f(x) {\n  const y = compute(x);\n  return y;\n" + "x = compute(value);\n" * 1500
        turns = [("write", [("Write", {"file_path": str(path), "content": content})]),
                 ("shorten", [("Edit", {"file_path": str(path), "old_string": "x = compute(value);\n" * 1000,
                                        "new_string": "z = 1;\n"})])]
        text = "x = compute(value);\n" * size
    base = work / "agents"
    write_claude(base, "s1", project, turns)
    db = work / "m.db"
    sync(base, db)
    return db, path, text


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--server", type=Path, default=REPO / "server", help="the server/ folder measured")
    parser.add_argument("--shape", choices=("short-runs", "repeated", "blocks", "copied"), default="short-runs")
    parser.add_argument("sizes", type=int, nargs="+")
    args = parser.parse_args()
    sys.path[:0] = [str(args.server.resolve()), str(REPO / "tests")]
    from pimem.lineblame import line_history
    from pimem.store import connect

    for size in args.sizes:
        with tempfile.TemporaryDirectory() as folder:
            db, path, text = _store(args.shape, size, Path(folder))
            conn = connect(db, create=False, for_writing=False)
            started = time.process_time()
            whole = line_history(conn, str(path), text, git=False)
            whole_s = time.process_time() - started
            middle = len(text.splitlines()) // 2
            started = time.process_time()
            line_history(conn, str(path), text, middle, middle + 1, git=False)
            one_s = time.process_time() - started
            conn.close()
        wrong = ""
        if args.shape == "blocks":   # a copy is its block's call's: the last marker line above it names it
            owner = [int(line.split("_")[1].split("(")[0]) if line.startswith("marker_") else -1
                     for line in text.splitlines()]
            for at in range(1, len(owner)):
                owner[at] = owner[at] if owner[at] >= 0 else owner[at - 1]
            wrong = f", {sum(1 for a in whole.lines if a.prompt != f'call {owner[a.line]}')} wrong"
        if args.shape == "copied":   # the person's copy starts after its "def copy():"
            start = text.splitlines().index("def copy():")
            wrong = f", {sum(1 for a in whole.lines if a.line > start)} wrong"
        print(f"{args.shape} {size}: {len(text.splitlines())} lines, whole file {whole_s * 1000:.0f} ms CPU "
              f"({len(whole.lines)} attributed{wrong}), one line {one_s * 1000:.1f} ms CPU", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
