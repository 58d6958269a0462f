"""A call's line diff on hostile edits (issue 23, round q5): CPU time and the pairs difflib's search
visits, for one ``Edit`` whose old and new texts are N lines of K alternating lines (every 7th line
changed, one line of the call's own in the middle), at growing N, so super-linear growth shows as a
ratio between sizes; and the sync of a transcript of such edits (what the import pays).

``--compare PATH`` instead checks that two revisions' ``pimem/editspans.py`` give the same spans on
ordinary edits: random old texts (lines drawn from 40 distinct, 6 common and 5 trivial lines, blank
lines), each edited by 1-6 hunks that delete, insert or replace 1-8 lines; it prints how many differ.

Run it with ``--server PATH`` to measure another revision's ``server/`` (``git archive REV server``),
alternating revisions in one session, as docs/benchmarks.md does::

    .venv/bin/python bench/blame/diff_work.py 125 250 500
    .venv/bin/python bench/blame/diff_work.py --server /tmp/q5/base/server 125 250 500
    .venv/bin/python bench/blame/diff_work.py --compare /tmp/q5/base/server --cases 20000
"""

from __future__ import annotations

import argparse
import difflib
import importlib.util
import random
import sys
import tempfile
import time
from pathlib import Path
from types import ModuleType
from typing import Any

REPO = Path(__file__).resolve().parents[2]


def hostile(size: int, kinds: int) -> tuple[str, str]:
    """The old and new texts of one hostile edit."""
    old = [f"    value_{i % kinds} = compute(item_{i % kinds})" for i in range(size)]
    new = list(old)
    for i in range(0, size - 1, 7):
        new[i] = new[i + 1]
    new.insert(size // 2, "    unique = written(by_the_call)")
    return "\n".join(old) + "\n", "\n".join(new) + "\n"


def _visits(run: Any) -> int:
    """The pairs of equal lines difflib's search visits while ``run()`` runs."""
    count = [0]
    search = difflib.SequenceMatcher.find_longest_match

    def counted(self: Any, alo: int = 0, ahi: int | None = None, blo: int = 0, bhi: int | None = None) -> Any:
        old, copies = self.a, self.b2j
        count[0] += sum(len(copies.get(line, ())) for line in old[alo:len(old) if ahi is None else ahi])
        return search(self, alo, ahi, blo, bhi)

    difflib.SequenceMatcher.find_longest_match = counted  # type: ignore[method-assign]
    try:
        run()
    finally:
        difflib.SequenceMatcher.find_longest_match = search  # type: ignore[method-assign]
    return count[0]


def _module(server: Path, name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, server / "pimem" / "editspans.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def _ordinary(rng: random.Random) -> tuple[str, str]:
    vocabulary = ([f"    result_{k} = transform(value_{k}, option={k})" for k in range(40)]
                  + ["    return result", "import os", "    pass", "    self.value = value", "        continue",
                     "    x = 1"] + ["}", "else:", "end", "    )", ""])
    old = [rng.choice(vocabulary) for _ in range(rng.randint(1, 400))]
    new = list(old)
    for _ in range(rng.randint(1, 6)):
        at = rng.randint(0, len(new))
        span = rng.randint(1, 8)
        written = [rng.choice(vocabulary) if rng.random() < 0.5 else f"    fresh_{rng.random():.6f}()"
                   for _ in range(rng.randint(0, 8))]
        new[at:at + (span if rng.random() < 0.7 else 0)] = written
    return "\n".join(old) + "\n", "\n".join(new) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--server", type=Path, default=REPO / "server", help="the server/ folder measured")
    parser.add_argument("--kinds", type=int, default=2, help="distinct alternating lines")
    parser.add_argument("--calls", type=int, default=20, help="hostile edits in the synced transcript")
    parser.add_argument("--compare", type=Path, help="another server/ folder: compare spans of ordinary edits")
    parser.add_argument("--cases", type=int, default=5000)
    parser.add_argument("sizes", type=int, nargs="*", default=[125, 250, 500])
    args = parser.parse_args()
    if args.compare:
        mine, other = _module(args.server, "editspans_a"), _module(args.compare, "editspans_b")
        rng = random.Random(5)
        differ, most = 0, 0
        for _ in range(args.cases):
            old, new = _ordinary(rng)
            spans = [module.span_of(old, new) for module in (mine, other)]
            differ += len({(tuple(span.added), tuple(span.removed)) for span in spans if span}) != 1
            most = max(most, _visits(lambda: mine.span_of(old, new)))  # noqa: B023 (called at once)
        print(f"{args.cases} ordinary edits: {differ} differ; at most {most:,} pairs visited by one diff")
        return 1 if differ else 0
    sys.path[:0] = [str(args.server), str(REPO / "tests")]
    from pimem import editspans
    from support.edits import write_claude
    from support.sync import sync
    for size in args.sizes:
        old, new = hostile(size, args.kinds)
        start = time.process_time()
        span = editspans.span_of(old, new)
        one = time.process_time() - start
        visits = _visits(lambda: editspans.span_of(old, new))  # noqa: B023 (called at once)
        with tempfile.TemporaryDirectory() as folder:
            project = Path(folder) / "proj"
            project.mkdir()
            path = str(project / "a.py")
            turns: list[tuple[str, list[tuple[str, dict[str, object]]]]] = [
                (f"t{n}", [("Edit", {"file_path": path, "old_string": old, "new_string": new})])
                for n in range(args.calls)]
            write_claude(Path(folder) / "agents", "s1", project, turns)
            start = time.process_time()
            sync(Path(folder) / "agents", Path(folder) / "m.db")
            synced = time.process_time() - start
        assert span is not None
        print(f"{size} x {size} lines of {args.kinds}: one diff {one * 1000:.0f} ms CPU, {visits:,} pairs visited, "
              f"{len(span.added)} added; sync of {args.calls} such edits {synced * 1000:.0f} ms CPU")
    return 0


if __name__ == "__main__":
    sys.exit(main())
