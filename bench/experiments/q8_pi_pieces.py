"""Round q8: random Pi sessions (reads, edits with a patch and a whole or cut display diff, writes, ``bash``
naming the file, person edits between calls) imported once and synced in pieces (3 random cuts): their span
rows must be equal (the context lines of ``edit`` spans left out: a result read in a later sync gives its
call none, a known limit).

    python bench/experiments/q8_pi_pieces.py FIRST_SEED END_SEED    # V=1: the rows that differ
"""

from __future__ import annotations

import difflib
import os
import random
import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tests"))

from support.edits import write_pi
from support.sync import sync
from test_pi_views_hostile import _span_rows

WORDS = ["alpha", "beta", "gamma", "delta", "value", "total", "check", "}", "", "return x", "x = 1"]
Turns = list[tuple[str, list[tuple[str, dict[str, Any]]]]]


def line(rng: random.Random) -> str:
    word = rng.choice(WORDS)
    if word in ("}", "", "return x", "x = 1") and rng.random() < 0.5:
        return word
    return f"    {word}_{rng.randrange(30)} = compute({rng.randrange(9)}, {rng.choice(WORDS)})"


def text(rng: random.Random, count: int) -> str:
    return "".join(line(rng) + "\n" for _ in range(count))


def _display_diff(before: str, after: str) -> str:
    pairs = [(d[:1], d[2:]) for d in difflib.ndiff(before.splitlines(keepends=True), after.splitlines(keepends=True))
             if d[:1] != "?"]
    return "".join(f"{tag}{number + 1} {body.rstrip(chr(10))}\n" for number, (tag, body) in enumerate(pairs))


def _edit(rng: random.Random, files: dict[str, str], name: str) -> tuple[str, dict[str, Any]] | None:
    lines = files[name].splitlines(keepends=True)
    unique = [kept for kept in lines if lines.count(kept) == 1 and kept.strip()]
    if not unique:
        return None
    old = rng.choice(unique)
    new = text(rng, rng.randrange(1, 4))
    after = files[name].replace(old, new)
    patch = "".join(difflib.unified_diff(lines, after.splitlines(keepends=True), name, name, n=4))
    diff = "    ...\n" if rng.random() < 0.5 else _display_diff(files[name], after)
    files[name] = after
    return ("edit", {"path": name, "edits": [{"oldText": old.rstrip("\n"), "newText": new.rstrip("\n")}],
                     "_result": "ok", "_details": {"patch": patch, "diff": diff.rstrip("\n")}})


def session(rng: random.Random) -> Turns:
    files = {"a.py": text(rng, rng.randrange(3, 15)), "b.py": text(rng, rng.randrange(3, 15))}
    turns: Turns = []
    for k in range(rng.randrange(2, 6)):
        calls: list[tuple[str, dict[str, Any]]] = []
        for _ in range(rng.randrange(1, 4)):
            name = rng.choice(list(files))
            op = rng.random()
            if rng.random() < 0.15:   # the person edits the file between calls
                lines = files[name].splitlines(keepends=True)
                lines.insert(rng.randrange(len(lines) + 1), line(rng) + "\n")
                files[name] = "".join(lines)
            if op < 0.3:
                calls.append(("read", {"path": name, "_result": files[name]}))
            elif op < 0.7:
                edit = _edit(rng, files, name)
                if edit is not None:
                    calls.append(edit)
            elif op < 0.93:
                files[name] = text(rng, rng.randrange(3, 15)) if rng.random() < 0.3 else files[name] + text(rng, 3)
                calls.append(("write", {"path": name, "content": files[name], "_result": "ok"}))
            else:
                calls.append(("bash", {"command": f"sed -i s/x/y/ {name}", "_result": "ok"}))
        turns.append((f"turn {k}", calls))
    return turns


def rows(db: Path) -> list[tuple[Any, ...]]:
    """The span rows but the path (a temporary folder), without the context lines of edit spans."""
    return [(*row[1:6], None if row[2] == "edit" else row[6]) for row in _span_rows(db)]


def main(first: int, end: int) -> int:
    differ = 0
    for seed in range(first, end):
        rng = random.Random(seed)
        with tempfile.TemporaryDirectory() as folder:
            tmp = Path(folder)
            project = tmp / "proj"
            project.mkdir()
            base = tmp / "agents"
            write_pi(base, "p1", project, session(rng))
            sync(base, tmp / "whole.db")
            transcript = next((base / "pi").rglob("*.jsonl"))
            lines = transcript.read_text(encoding="utf-8").splitlines(keepends=True)
            cuts = [*sorted(rng.sample(range(1, len(lines)), min(3, len(lines) - 1))), len(lines)]
            for cut in cuts:
                transcript.write_text("".join(lines[:cut]), encoding="utf-8")
                sync(base, tmp / "pieces.db")
            expected, got = rows(tmp / "whole.db"), rows(tmp / "pieces.db")
            if got != expected:
                differ += 1
                print("seed", seed, "differs, cuts", cuts, file=sys.stderr)
                if os.environ.get("V"):
                    for row in sorted(set(got) ^ set(expected), key=str):
                        print("GOT" if row in got else "EXP", row, file=sys.stderr)
    print("differ", differ, "of", end - first)
    return 1 if differ else 0


if __name__ == "__main__":
    raise SystemExit(main(int(sys.argv[1]), int(sys.argv[2])))
