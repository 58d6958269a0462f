#!/usr/bin/env python3
"""Synthetic transcript history in the agents' real on-disk formats, at realistic sizes.

    python bench/generate.py --out DIR --turns 100000 --seed 1 [--huge-mb 100] [--tiny-files 150000]

Writes ``DIR/home`` laid out like a user's home directory:

* ``.claude/projects/<project-dir>/<uuid>.jsonl`` — Claude Code 2.1.x records: one content block per
  assistant line, tool_use / tool_result lines with ``toolUseResult``, and the bookkeeping records that
  make up most of a real file's bytes (``attachment``: environment, skill_listing, prompt_snapshot…;
  ``api-request``, ``api-request-blob``, ``api-request-shape``, ``file-history-snapshot``,
  ``queue-operation``, ``last-prompt``, ``system`` turn_duration, ``cost-state``…);
* ``.codex/sessions/YYYY/MM/DD/rollout-….jsonl`` — Codex 0.171 (G3) envelopes with ``ordinal``: a
  ``session_meta`` with ~21 KB of ``base_instructions``, the developer message, the injected
  AGENTS.md/environment_context user message, ``world_state``, ``turn_context``, reasoning, function
  calls and outputs, ``token_usage_record`` and the ``event_msg`` duplicates (``task_started``,
  ``item_completed``, ``token_count``, ``task_complete``…);
* ``.pi/agent/sessions/--<cwd>--/<ts>_<id>.jsonl`` — Pi 1.x v3 trees: header, model_change,
  thinking_level_change, the ``system`` message, user / assistant (thinking, text, toolCall) /
  toolResult messages, an occasional model_change mid-session.

Sessions have 1..60 turns; user text is 20..600 characters, replies 100..4000, a mix of English prose,
code blocks, paths and CJK sentences. The entities of bench/textpool.py ``PLANTS`` are planted into an
exact, seed-determined set of turns; ``DIR/manifest.json`` records those counts together with turns,
files, bytes and turn-text bytes per agent. Output is byte-identical for the same ``--seed`` and
``--turns`` (whatever ``--jobs``).

``--huge-mb N`` adds one ~N MB session per agent (the newest sessions, unplanted text, 3 to 8 tool calls
per turn; used by the append benchmark). ``--tiny-files N`` writes N minimal one-turn sessions into a separate tree,
``DIR/tiny/home`` (used by the 150k-files no-change sync benchmark), so they do not change the main
corpus.
"""

from __future__ import annotations

import argparse
import bisect
import itertools
import json
import multiprocessing
import os
import random
import shutil
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from textpool import CWDS, NO_MATCH, PLANTS, TextPool
from writers import WRITERS
from writers.common import SessionSpec, Turn

GENERATOR_VERSION = 2
AGENTS = ("claude", "codex", "pi")
SHARES = {"claude": 0.40, "codex": 0.35, "pi": 0.25}
TIMELINE_START_MS = 1_717_200_000_000   # 2024-06-01
TIMELINE_END_MS = 1_795_000_000_000     # 2026-11-18
CJK_SHARE = 0.10
TOOL_CALLS = (0, 0, 0, 0, 1, 1, 1, 2, 2, 3, 4, 6)   # per turn, uniform pick


@dataclass
class SessionResult:
    agent: str
    path: str
    bytes: int
    turns: int
    text_bytes: int
    session_id: str
    cwd: str
    end_ms: int
    huge: bool = False


# ---------------------------------------------------------------------------------------------
# Turn content
# ---------------------------------------------------------------------------------------------

def make_turn(pool: TextPool, rng: random.Random, ts: int, plants: list[tuple[str, str, bool]],
              tool_names: tuple[str, ...], calls: int | None = None) -> Turn:
    user = pool.text(rng, 20, 600, CJK_SHARE)
    final = pool.text(rng, 100, 4000, CJK_SHARE)
    if calls is None:
        calls = rng.choice(TOOL_CALLS)
    tools = []
    replies = []
    for _ in range(calls):
        name = rng.choice(tool_names)
        command = rng.choice(pool.commands) if name.lower() == "bash" else rng.choice(pool.paths)
        tools.append((name, command, rng.randrange(len(pool.outputs))))
        replies.append(f"Let me run `{command}`." if name.lower() == "bash" else f"Let me look at `{command}`.")
    for spelling, where, cjk in plants:
        if where in ("user", "both"):
            user = pool.plant(rng, user, spelling, cjk)
        if where in ("reply", "both"):
            final = pool.plant(rng, final, spelling, cjk)
    replies.append(final)
    thinking = rng.randrange(len(pool.thinking)) if rng.random() < 0.4 else -1
    return Turn(user, replies, tools, ts, thinking)


# ---------------------------------------------------------------------------------------------


# ---------------------------------------------------------------------------------------------
# Sessions
# ---------------------------------------------------------------------------------------------

_POOL: TextPool | None = None
_SEED = 0


def _init_worker(seed: int) -> None:
    global _POOL, _SEED
    _SEED = seed
    if _POOL is None:
        _POOL = TextPool(seed)


def write_session(args: tuple[SessionSpec, str]) -> SessionResult:
    spec, home_dir = args
    pool = _POOL
    assert pool is not None
    home = Path(home_dir)
    rng = random.Random(f"{_SEED}:{spec.agent}:{'tiny' if spec.tiny else 'main'}:{spec.index}")
    writer = WRITERS[spec.agent](pool, rng, spec)
    tool_names = writer.tools
    path = writer.path(home)
    path.parent.mkdir(parents=True, exist_ok=True)
    ts = spec.start_ms
    turns = 0
    text_bytes = 0
    written = 0
    with open(path, "wb", buffering=0) as handle:
        if spec.tiny:
            turn = make_turn(pool, rng, ts, [], tool_names, calls=0)
            turn.user, turn.replies = turn.user[:200].strip() or "ok", [turn.replies[-1][:400].strip() or "ok"]
            lines = writer.header(ts, tiny=True) if spec.agent != "claude" else []
            lines += writer.tiny(turn)
            data = "".join(lines).encode()
            handle.write(data)
            written = len(data)
            turns, text_bytes = 1, turn.text_bytes
        else:
            buffer: list[str] = writer.header(ts)
            size = 0
            while True:
                if spec.huge_bytes:
                    if written + size >= spec.huge_bytes:
                        break
                elif turns >= spec.turns:
                    break
                ts += rng.randint(20_000, 60_000) + int(rng.expovariate(1 / 240_000))
                # Huge sessions are long agentic runs: more tool calls (and output) per turn.
                calls = rng.randint(3, 8) if spec.huge_bytes else None
                turn = make_turn(pool, rng, ts, spec.plants.get(turns, []), tool_names, calls)
                lines = writer.turn(turn, turns == 0)
                buffer.extend(lines)
                size += sum(map(len, lines))
                turns += 1
                text_bytes += turn.text_bytes
                ts = turn.ts + 60_000
                if size >= 4 << 20:
                    data = "".join(buffer).encode()
                    handle.write(data)
                    written += len(data)
                    buffer, size = [], 0
            buffer.extend(writer.footer(ts))
            data = "".join(buffer).encode()
            handle.write(data)
            written += len(data)
    os.utime(path, ns=(ts * 1_000_000, ts * 1_000_000))
    return SessionResult(spec.agent, str(path), written, turns, text_bytes, writer.session_id, spec.cwd, ts,
                         bool(spec.huge_bytes))


def _last_record(path: Path, key: str) -> dict[str, Any]:
    """The last record of a transcript that has ``key`` (read from the end, a window at a time)."""
    with open(path, "rb") as handle:
        end = handle.seek(0, os.SEEK_END)
        window = 1 << 16
        while True:
            start = max(0, end - window)
            handle.seek(start)
            lines = handle.read(end - start).split(b"\n")
            for line in reversed(lines[1:] if start else lines):
                if line.strip():
                    try:
                        record = json.loads(line)
                    except ValueError:
                        continue
                    if isinstance(record, dict) and key in record:
                        return record
            if start == 0:
                raise ValueError(f"no record with {key!r} in {path}")
            window *= 4


def append_turn(path: Path, agent: str, session_id: str, cwd: str, user: str, reply: str, ts: int,
                pool: TextPool) -> int:
    """Append one complete turn (the user's message, the reply, the agent's bookkeeping for it) to an
    existing session file, as the agent would. Returns the number of bytes written."""
    rng = random.Random(f"append:{path}:{ts}")
    writer = WRITERS[agent](pool, rng, SessionSpec(agent, 0, 1, ts, cwd))
    if agent == "claude":
        writer.set_session(session_id)
        writer.parent = f'"{_last_record(path, "uuid")["uuid"]}"'
    elif agent == "codex":
        writer.thread = session_id
        writer.ordinal = int(_last_record(path, "ordinal")["ordinal"]) + 1
    else:
        writer.session_id = session_id
        writer.parent = f'"{_last_record(path, "parentId")["id"]}"'
    data = "".join(writer.turn(Turn(user, [reply], [], ts), False)).encode()
    with open(path, "ab") as handle:
        handle.write(data)
    return len(data)


def plan_sessions(turns: int, seed: int) -> list[SessionSpec]:
    rng = random.Random(f"{seed}:plan")
    specs: list[SessionSpec] = []
    per_agent = {agent: round(turns * SHARES[agent]) for agent in AGENTS}
    per_agent["pi"] = turns - per_agent["claude"] - per_agent["codex"]
    for agent in AGENTS:
        left = per_agent[agent]
        index = 0
        while left > 0:
            count = min(left, 60, 1 + int(rng.expovariate(1 / 13)))
            start = rng.randrange(TIMELINE_START_MS, TIMELINE_END_MS)
            specs.append(SessionSpec(agent, index, count, start, rng.choice(CWDS)))
            left -= count
            index += 1
    # Planted entities: an exact set of turns each, chosen over the whole corpus.
    starts = list(itertools.accumulate((spec.turns for spec in specs), initial=0))
    for plant in PLANTS:
        count = plant.count or max(1, round(plant.rate * turns))
        variants = plant.variants or (plant.entity,)
        for position in sorted(rng.sample(range(starts[-1]), min(count, starts[-1]))):
            number = bisect.bisect_right(starts, position) - 1
            local = position - starts[number]
            where = rng.choices(("user", "reply", "both"), weights=(4, 5, 1))[0]
            specs[number].plants.setdefault(local, []).append((rng.choice(variants), where, plant.cjk))
    return specs


def planted_counts(specs: list[SessionSpec]) -> dict[str, dict[str, int]]:
    counts: dict[str, dict[str, int]] = {plant.entity: {"turns": 0, "user": 0, "reply": 0, "both": 0}
                                         for plant in PLANTS}
    by_variant = {}
    for plant in PLANTS:
        for variant in plant.variants or (plant.entity,):
            by_variant[variant] = plant.entity
    for spec in specs:
        for plants in spec.plants.values():
            for spelling, where, _cjk in plants:
                entry = counts[by_variant[spelling]]
                entry["turns"] += 1
                entry[where] += 1
    return counts


def _run(tasks: list[tuple[SessionSpec, str]], jobs: int, seed: int) -> Iterator[SessionResult]:
    if jobs <= 1 or len(tasks) < 64:
        _init_worker(seed)
        yield from map(write_session, tasks)
        return
    context = multiprocessing.get_context("fork")
    with context.Pool(jobs, initializer=_init_worker, initargs=(seed,)) as workers:
        yield from workers.imap_unordered(write_session, tasks, chunksize=16)


def generate(out: Path, turns: int, seed: int, huge_mb: int = 0, tiny_files: int = 0, jobs: int = 0,
             quiet: bool = False) -> dict[str, Any]:
    started = time.monotonic()
    jobs = jobs or (os.cpu_count() or 1)
    home = out / "home"
    if home.exists():
        shutil.rmtree(home)
    for root in (home / ".claude" / "projects", home / ".codex" / "sessions", home / ".pi" / "agent" / "sessions"):
        root.mkdir(parents=True, exist_ok=True)
    specs = plan_sessions(turns, seed)
    # Huge sessions: the newest of each agent.
    huge_specs = [SessionSpec(agent, 1_000_000 + number, 0, TIMELINE_END_MS + 3_600_000 * number, CWDS[number],
                              huge_bytes=huge_mb << 20) for number, agent in enumerate(AGENTS)] if huge_mb else []
    _init_worker(seed)   # build the pool before forking
    results: list[SessionResult] = []
    tasks = [(spec, str(home)) for spec in specs + huge_specs]
    # Big sessions first so that the workers finish together.
    tasks.sort(key=lambda task: -(task[0].huge_bytes or task[0].turns * 20_000))
    last_report = time.monotonic()
    for result in _run(tasks, jobs, seed):
        results.append(result)
        if not quiet and time.monotonic() - last_report > 10:
            last_report = time.monotonic()
            done = sum(r.bytes for r in results)
            print(f"generate: {len(results)}/{len(tasks)} files, {done / 1e9:.2f} GB, "
                  f"{time.monotonic() - started:.0f} s", file=sys.stderr)
    agents: dict[str, dict[str, int]] = {agent: {"files": 0, "turns": 0, "bytes": 0, "text_bytes": 0}
                                         for agent in AGENTS}
    for result in results:
        entry = agents[result.agent]
        entry["files"] += 1
        entry["turns"] += result.turns
        entry["bytes"] += result.bytes
        entry["text_bytes"] += result.text_bytes
    totals = {key: sum(entry[key] for entry in agents.values()) for key in ("files", "turns", "bytes", "text_bytes")}
    huge = [{"agent": r.agent, "path": os.path.relpath(r.path, out), "bytes": r.bytes, "turns": r.turns,
             "session_id": r.session_id, "cwd": r.cwd, "end_ms": r.end_ms}
            for r in sorted(results, key=lambda r: r.agent) if r.huge]
    manifest: dict[str, Any] = {
        "generator": "bench/generate.py", "generator_version": GENERATOR_VERSION, "seed": seed,
        "turns_requested": turns, "huge_mb": huge_mb, "home": "home", "agents": agents, "totals": totals,
        "sessions": len(specs), "huge": huge, "planted": planted_counts(specs), "no_match": NO_MATCH,
        "cwds": list(CWDS),
    }
    if tiny_files:
        manifest["tiny"] = generate_tiny(out, tiny_files, seed, jobs)
    manifest["seconds"] = round(time.monotonic() - started, 1)
    manifest["command"] = " ".join(["python", "bench/generate.py", "--out", str(out), "--turns", str(turns), "--seed",
                                    str(seed)] + (["--huge-mb", str(huge_mb)] if huge_mb else [])
                                   + (["--tiny-files", str(tiny_files)] if tiny_files else []))
    (out / "manifest.json").write_text(json.dumps(manifest, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    return manifest


def generate_tiny(out: Path, files: int, seed: int, jobs: int) -> dict[str, Any]:
    home = out / "tiny" / "home"
    if home.exists():
        shutil.rmtree(home)
    for root in (home / ".claude" / "projects", home / ".codex" / "sessions", home / ".pi" / "agent" / "sessions"):
        root.mkdir(parents=True, exist_ok=True)
    rng = random.Random(f"{seed}:tiny")
    specs = []
    for number in range(files):
        agent = AGENTS[number % 3]
        # 300 folders per agent, so that no directory holds more than a few hundred sessions
        cwd = f"/home/dev/tiny/p{number % 300:03d}"
        specs.append(SessionSpec(agent, number, 1, rng.randrange(TIMELINE_START_MS, TIMELINE_END_MS), cwd, tiny=True))
    total_bytes = turns = text = 0
    for result in _run([(spec, str(home)) for spec in specs], jobs, seed):
        total_bytes += result.bytes
        turns += result.turns
        text += result.text_bytes
    return {"home": "tiny/home", "files": files, "turns": turns, "bytes": total_bytes, "text_bytes": text}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", required=True, type=Path, help="output directory (DIR/home, DIR/manifest.json)")
    parser.add_argument("--turns", required=True, type=int, help="turns in the main corpus (before --huge-mb)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--huge-mb", type=int, default=0, help="add one session of about this many MB per agent")
    parser.add_argument("--tiny-files", type=int, default=0, help="also write N one-turn sessions in DIR/tiny/home")
    parser.add_argument("--jobs", type=int, default=0, help="writer processes (default: all cores)")
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    manifest = generate(args.out.resolve(), args.turns, args.seed, args.huge_mb, args.tiny_files, args.jobs)
    totals = manifest["totals"]
    print(f"wrote {totals['turns']} turns in {totals['files']} files, {totals['bytes'] / 1e9:.2f} GB "
          f"({totals['bytes'] / max(1, totals['turns']) / 1024:.1f} KiB/turn, turn text "
          f"{totals['text_bytes'] / 1e6:.1f} MB) in {manifest['seconds']} s -> {args.out / 'manifest.json'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
