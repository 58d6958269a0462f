"""The quality benchmark's history: generated distractors plus the planted conversations.

    python bench/quality/history.py --out DIR --turns 20000 [--seed 1]

The distractors are bench/generate.py's corpus (English prose, code, paths, CJK sentences, in the
agents' real on-disk formats). The planted and near-miss conversations of conversations.py are
written into the same home directory with the same writers (Claude Code, Codex, Pi files, one session
each), at their place on the generator's timeline. ``DIR/labels.json`` maps each planted conversation
to its session id as pimem stores it (``<source>:<native id>``).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))

from conversations import NEAR_MISSES, PLANTED, Conversation  # noqa: E402

import generate  # noqa: E402

TURN_GAP_MS = 240_000   # between two turns of a planted conversation


def _timestamp(when: float, key: str) -> int:
    span = generate.TIMELINE_END_MS - generate.TIMELINE_START_MS
    jitter = random.Random(key).randrange(0, 3_600_000)
    return generate.TIMELINE_START_MS + int(span * min(max(when, 0.0), 1.0)) + jitter


def write_conversation(home: Path, pool: generate.TextPool, conversation: Conversation, seed: int) -> str:
    """Write one conversation as a session of its agent; returns its session id as pimem stores it."""
    rng = random.Random(f"{seed}:quality:{conversation.key}")
    start = _timestamp(conversation.when, conversation.key)
    spec = generate.SessionSpec(conversation.agent, 0, len(conversation.turns), start, conversation.cwd)
    writer = generate.WRITERS[conversation.agent](pool, rng, spec)
    lines: list[str] = writer.header(start)
    ts = start
    for number, (user, reply) in enumerate(conversation.turns):
        ts += TURN_GAP_MS if number else 30_000
        lines.extend(writer.turn(generate.Turn(user, [reply], [], ts), number == 0))
    lines.extend(writer.footer(ts))
    path = writer.path(home)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(lines), encoding="utf-8")
    os.utime(path, ns=(ts * 1_000_000, ts * 1_000_000))
    return f"{conversation.agent}:{writer.session_id}"


def build(out: Path, turns: int, seed: int = 1, quiet: bool = True) -> dict[str, Any]:
    """Generate the distractors (``turns`` turns) and write the conversations; returns the labels."""
    manifest = generate.generate(out, turns, seed, jobs=0, quiet=quiet)
    home = out / "home"
    pool = generate.TextPool(seed)
    planted = {c.key: write_conversation(home, pool, c, seed) for c in PLANTED}
    near = {c.key: write_conversation(home, pool, c, seed) for c in NEAR_MISSES}
    labels = {"turns": turns, "seed": seed, "distractor_turns": manifest["totals"]["turns"],
              "planted": planted, "near_misses": near,
              "planted_turns": sum(len(c.turns) for c in PLANTED + NEAR_MISSES)}
    (out / "labels.json").write_text(json.dumps(labels, indent=2) + "\n", encoding="utf-8")
    return labels


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", required=True, type=Path)
    parser.add_argument("--turns", type=int, default=20_000, help="generated distractor turns")
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args(argv)
    labels = build(args.out.resolve(), args.turns, args.seed, quiet=False)
    print(f"wrote {labels['distractor_turns']} distractor turns and {len(labels['planted'])} planted + "
          f"{len(labels['near_misses'])} near-miss conversations -> {args.out / 'labels.json'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
