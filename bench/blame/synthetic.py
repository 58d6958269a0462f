#!/usr/bin/env python3
"""Scale the real-agent history (bench/blame/fixtures/real) by copying its transcripts, with the truth.

    python bench/blame/synthetic.py --out /tmp/blame-syn --copies 50 [--stretch 600] [--fixture DIR]

The real fixture's transcripts are the templates: copy ``k`` is every transcript of the fixture, byte
for byte in its agent's format, with the project root moved to ``OUT/projects/cKKKKK`` (the Claude Code
and Pi folder names derived from it too), every UUID replaced by one of its own (sessions, records,
file names), the ``[pimem-edit:...]`` payload dropped from the prompts (the mock's instruction, not
something a person types), and time moved: copy ``k`` starts a day after copy ``k-1``, and the
real run's seconds are stretched ``--stretch`` times (a turn every few minutes, as people work; the
real run took a second per turn, closer than the time window git confirms). ``OUT/script.json``
holds the steps of every copy (paths ``cKKKKK/...``, times moved the same way) and ``OUT/truth.json``
the truth: the fixture's, per copy. ``score.py --fixture OUT`` scores it like the fixture.
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import sys
import time
import uuid
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from history import initial_files

UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
ISO = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d{1,6})?Z")
EPOCH_MS = re.compile(r"(?<![\d.])1[6-9]\d{11}(?!\d)")
EDIT_PAYLOAD = re.compile(r" ?\[pimem-edit:[A-Za-z0-9+/=]*(?:\]|…)?")  # also cut short (Claude lastPrompt)
DAY_MS = 86_400_000


def iso_ms(text: str) -> int:
    head, _, frac = text.rstrip("Z").partition(".")
    return int(time.mktime(time.strptime(head, "%Y-%m-%dT%H:%M:%S")) - time.timezone) * 1000 + int(
        (frac or "0").ljust(3, "0")[:3])


def ms_iso(ms: int) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(ms // 1000)) + f".{ms % 1000:03d}Z"


class Copy:
    """How copy ``k`` moves ids, paths and times."""

    def __init__(self, k: int, root: str, new_root: str, t0: int, base: int, stretch: float) -> None:
        self.k, self.root, self.new_root = k, root, new_root
        self.t0, self.base, self.stretch = t0, base, stretch

    def ms(self, t: int) -> int:
        return self.base + self.k * DAY_MS + int((t - self.t0) * self.stretch)

    def ids(self, m: re.Match[str]) -> str:
        return str(uuid.uuid5(uuid.NAMESPACE_URL, f"pimem-blamebench/{self.k}/{m.group(0)}"))

    def text(self, text: str) -> str:
        text = EDIT_PAYLOAD.sub("", text)
        text = text.replace(self.root, self.new_root)
        text = text.replace(_dashed(self.root), _dashed(self.new_root))
        text = UUID.sub(self.ids, text)
        text = ISO.sub(lambda m: ms_iso(self.ms(iso_ms(m.group(0)))), text)
        return EPOCH_MS.sub(lambda m: str(self.ms(int(m.group(0)))) if abs(int(m.group(0)) - self.t0) < DAY_MS
                            else m.group(0), text)


def _dashed(path: str) -> str:
    return path.replace("/", "-")  # Claude Code's and Pi's session folders name the cwd with dashes


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--fixture", type=Path, default=Path(__file__).resolve().parent / "fixtures" / "real")
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--copies", type=int, default=10)
    parser.add_argument("--stretch", type=float, default=600.0)
    parser.add_argument("--base-ms", type=int, default=1_780_000_000_000, help="when copy 0 starts (2026-05-28)")
    args = parser.parse_args()
    script = json.loads((args.fixture / "script.json").read_text())
    truth = json.loads((args.fixture / "truth.json").read_text())
    root = script["root"]
    t0 = int(min(s["time"] for s in script["steps"]) * 1000)
    if args.out.exists():
        shutil.rmtree(args.out)
    args.out.mkdir(parents=True)
    sources = sorted(args.fixture.rglob("*.jsonl"))
    steps: list[dict[str, Any]] = []
    all_truth: dict[str, Any] = {}
    turns = 0
    for k in range(args.copies):
        copy = Copy(k, root, str(args.out / "projects" / f"c{k:05d}"), t0, args.base_ms, args.stretch)
        for src in sources:
            rel = copy.text(str(src.relative_to(args.fixture)))
            target = args.out / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(copy.text(src.read_text(encoding="utf-8")), encoding="utf-8")
        for step in script["steps"]:
            moved = json.loads(json.dumps(step))
            moved["time"] = copy.ms(int(step["time"] * 1000)) / 1000
            if moved["kind"] == "agent":
                turns += 1
                for e in moved["edits"]:
                    e["path"] = f"c{k:05d}/{e['path']}"
            elif moved["kind"] == "commit":
                moved["scope"] = f"c{k:05d}/"
            elif moved["kind"] == "human":
                moved["files"] = {f"c{k:05d}/{p}": t for p, t in moved["files"].items()}
                moved["path"] = f"c{k:05d}/{moved['path']}"
            steps.append(moved)
        all_truth.update({f"c{k:05d}/{p}": rows for p, rows in truth.items()})
    initial = {f"c{k:05d}/{p}": t for k in range(args.copies) for p, t in initial_files().items()}
    (args.out / "script.json").write_text(json.dumps({"root": str(args.out / "projects"), "seed": script["seed"],
                                                      "copies": args.copies, "repoDepth": 2, "initial": initial,
                                                      "steps": steps}) + "\n")
    (args.out / "truth.json").write_text(json.dumps(all_truth) + "\n")
    print(f"synthetic: {args.copies} copies, {turns} agent turns -> {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
