"""Round q8: whole-file against current-line answers on random Pi sessions (bench/experiments/q8_pi_pieces.py's:
round 11's split spans of a write over an earlier view), the final file one of the written texts with random
person edits (lines deleted, added, copied).

    python bench/experiments/q8_pi_consistency.py FIRST_SEED END_SEED
"""

from __future__ import annotations

import random
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tests"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from q8_pi_pieces import line, session

from pimem.lineblame import attribute_lines
from pimem.store import connect
from support.edits import write_pi
from support.sync import sync


def run(seed: int) -> tuple[int, int]:
    """(lines whose answers differ, lines the whole file attributes)."""
    rng = random.Random(seed)
    with tempfile.TemporaryDirectory() as folder:
        tmp = Path(folder)
        project = tmp / "proj"
        project.mkdir()
        turns = session(rng)
        written = [str(arguments["content"]) for _, calls in turns for name, arguments in calls if name == "write"]
        if not written:
            return 0, 0
        lines = rng.choice(written).splitlines()
        for _ in range(rng.randint(0, 6)):
            choice = rng.random()
            if choice < 0.3 and lines:
                del lines[rng.randrange(len(lines))]
            elif choice < 0.6:
                lines.insert(rng.randrange(len(lines) + 1), line(rng))
            elif lines:
                lines.insert(rng.randrange(len(lines) + 1), lines[rng.randrange(len(lines))])
        base = tmp / "agents"
        write_pi(base, "p1", project, turns)
        sync(base, tmp / "m.db")
        text = "\n".join(lines) + "\n"
        conn = connect(tmp / "m.db", create=False, for_writing=False)
        differ = attributed = 0
        try:
            for name in ("a.py", "b.py"):
                path = str(project / name)
                whole = {f.line: (f.confidence, f.prompt) for f in attribute_lines(conn, path, text, git=False)}
                attributed += len(whole)
                for number in range(len(lines)):
                    one = {f.line: (f.confidence, f.prompt)
                           for f in attribute_lines(conn, path, text, number, number + 1, git=False)}
                    if one.get(number) != whole.get(number):
                        differ += 1
                        print(seed, name, number, whole.get(number), one.get(number), file=sys.stderr)
        finally:
            conn.close()
        return differ, attributed


def main(first: int, end: int) -> int:
    seeds = attributed = 0
    for seed in range(first, end):
        differ, found = run(seed)
        seeds += bool(differ)
        attributed += found
    print("seeds that differ", seeds, "of", end - first, "; attributed lines", attributed)
    return 1 if seeds else 0


if __name__ == "__main__":
    raise SystemExit(main(int(sys.argv[1]), int(sys.argv[2])))
