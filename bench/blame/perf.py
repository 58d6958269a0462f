#!/usr/bin/env python3
"""Line memory (issue 23): current-line and whole-file latency through the service, and the store's
growth from edit spans, on a generated history.

    python bench/generate.py --out /tmp/corpus --turns 100000 --seed 1
    python bench/blame/synthetic.py --out /tmp/blame-syn --copies 100
    python bench/blame/perf.py --corpus /tmp/corpus --edits /tmp/blame-syn --work /tmp/blame-perf \\
        [--lines 5000] [--touching 2000] [--runs 500]

The store is one sync of: the ``bench/generate.py`` corpus (``--corpus``: realistic turns, no edit
text), the copies of the real-agent edit history (``--edits``: every turn an edit turn) and a hot file,
``WORK/hot/big.py``: ``--lines`` lines written by one Pi turn and then edited by ``--touching`` Pi turns
(in Pi's format, as the fixture's Pi sessions are; 10 turns per session). Then, in this process, on a
reader connection, warm (a long-lived server):

- latency: ``pimem.lineblame.line_history`` of one line of ``big.py`` at a random place (what the
  current-line annotation asks on a cursor move; ``--runs`` times, git off: the file is outside git),
  p50/p95; the whole file (20 times); the reference in the same run: ``filehistory.file_history`` of the
  same path (the File History lookup, already held to 10 ms), p50/p95, and the ratios;
- growth: the bytes of the edit-span tables and their indexes (``dbstat``) over the rest of the store,
  and the file size of the store after VACUUM with and without those tables (a copy, dropped).
Prints Markdown; ``--json FILE`` writes the figures.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import sqlite3
import statistics
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "server"))

from pimem.filehistory import file_history, normalize_file_path  # noqa: E402
from pimem.lineblame import line_history  # noqa: E402
from pimem.store import connect  # noqa: E402

SPAN_TABLES = ("pimem_edit_files", "pimem_edit_spans", "pimem_edit_lines", "pimem_edit_context")
CONTEXT_TABLE = "pimem_edit_context"   # layout 9: the lines a call kept next to its added ones
USAGE = {"input": 710, "output": 5, "cacheRead": 0, "cacheWrite": 0, "reasoning": 0, "totalTokens": 715,
         "cost": {"input": 0.00071, "output": 0.00001, "cacheRead": 0, "cacheWrite": 0, "total": 0.00072}}


def iso(ms: int) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(ms // 1000)) + f".{ms % 1000:03d}Z"


class PiSession:
    """Records in Pi's v3 format, shaped like the fixture's (bench/blame/fixtures/real/pi)."""

    def __init__(self, cwd: str, ms: int, rng: random.Random) -> None:
        self.id = str(uuid.UUID(int=rng.getrandbits(128)))
        self.cwd, self.rng, self.ms = cwd, rng, ms
        self.start = ms
        self.lines = [{"type": "session", "version": 3, "id": self.id, "timestamp": iso(ms), "cwd": cwd}]
        self.parent: str | None = None
        self.entry({"type": "model_change", "provider": "mock-openai", "modelId": "mock-gpt"})

    def entry(self, record: dict[str, Any]) -> None:
        self.ms += self.rng.randint(50, 2000)
        eid = f"{self.rng.getrandbits(32):08x}"
        self.lines.append({**record, "id": eid, "parentId": self.parent, "timestamp": iso(self.ms)})
        self.parent = eid

    def turn(self, prompt: str, tool: str, args: dict[str, Any]) -> None:
        self.ms += self.rng.randint(60_000, 600_000)  # people take minutes between prompts
        self.entry({"type": "message", "message": {"role": "user", "content": [{"type": "text", "text": prompt}],
                                                   "timestamp": self.ms}})
        call = f"call_{self.rng.getrandbits(96):024x}"
        self.entry({"type": "message", "message": {
            "role": "assistant", "content": [{"type": "text", "text": "I'll make that change."},
                                             {"type": "toolCall", "id": call, "name": tool, "arguments": args}],
            "api": "openai-completions", "provider": "mock-openai", "model": "mock-gpt", "usage": USAGE,
            "stopReason": "toolUse", "timestamp": self.ms}})
        self.entry({"type": "message", "message": {
            "role": "toolResult", "toolCallId": call, "toolName": tool,
            "content": [{"type": "text", "text": f"Successfully wrote {args['path']}."}], "isError": False,
            "timestamp": self.ms}})
        self.entry({"type": "message", "message": {
            "role": "assistant", "content": [{"type": "text", "text": "Done: 1 edit(s) made."}],
            "api": "openai-completions", "provider": "mock-openai", "model": "mock-gpt", "usage": USAGE,
            "stopReason": "stop", "timestamp": self.ms}})

    def write(self, root: Path) -> None:
        folder = root / ("--" + self.cwd.strip("/").replace("/", "-") + "--")
        folder.mkdir(parents=True, exist_ok=True)
        name = iso(self.start).replace(":", "-").replace(".", "-") + "_" + self.id + ".jsonl"
        (folder / name).write_text("".join(json.dumps(r) + "\n" for r in self.lines), encoding="utf-8")


def hot_file(work: Path, sessions_root: Path, lines: int, touching: int, seed: int) -> Path:
    """``big.py`` of ``lines`` lines, written by one turn and edited by ``touching`` turns."""
    rng = random.Random(seed)
    cwd = work / "hot"
    cwd.mkdir(parents=True, exist_ok=True)
    counter = 0

    def fresh(n: int) -> list[str]:
        nonlocal counter
        out = []
        for _ in range(n):
            counter += 1
            out.append(f"    value_{counter} = compute_{counter}(rows, limit={rng.randint(1, 999)})")
        return out

    text = fresh(lines)
    truth = ["H0000"] * len(text)  # the tag of the turn that wrote each line
    ms = 1_780_000_000_000
    session = PiSession(str(cwd), ms, rng)
    session.turn("H0000: write big.py", "write", {"path": "big.py", "content": "".join(t + "\n" for t in text)})
    for n in range(1, touching + 1):
        if n % 10 == 0:
            session.write(sessions_root)
            session = PiSession(str(cwd), session.ms + 3_600_000, rng)
        start = rng.randrange(len(text))
        end = min(len(text), start + rng.randint(1, 3))
        new = fresh(rng.randint(1, 3))
        old = "".join(t + "\n" for t in text[start:end])
        session.turn(f"H{n:04d}: edit big.py", "edit", {"path": "big.py", "edits": [
            {"oldText": old, "newText": "".join(t + "\n" for t in new)}]})
        text[start:end] = new
        truth[start:end] = [f"H{n:04d}"] * len(new)
    session.write(sessions_root)
    (cwd / "big.py").write_text("".join(t + "\n" for t in text), encoding="utf-8")
    (cwd / "truth.json").write_text(json.dumps(truth) + "\n")
    return cwd / "big.py"


def timed(function: Any, runs: int) -> tuple[float, float, float]:
    """p50 and p95 of the wall time (ms), and the mean CPU time of this process (ms): on a machine other
    processes load, the CPU time is what the work itself costs."""
    samples = []
    cpu = 0.0
    for _ in range(runs):
        started, started_cpu = time.perf_counter(), time.process_time()
        function()
        samples.append((time.perf_counter() - started) * 1000)
        cpu += time.process_time() - started_cpu
    samples.sort()
    return (round(statistics.median(samples), 3), round(samples[max(0, int(len(samples) * 0.95) - 1)], 3),
            round(cpu * 1000 / runs, 2))


def link_tree(src: Path, dst: Path) -> None:
    """Hard-link the transcripts of ``src`` into ``dst`` (cp -al): no copy of gigabytes."""
    if src.exists():
        dst.mkdir(parents=True, exist_ok=True)
        subprocess.run(["cp", "-al", f"{src}/.", str(dst)], check=True)


def growth(db: Path, work: Path) -> dict[str, Any]:
    conn = sqlite3.connect(db)
    names = {r[0]: r[1] for r in conn.execute("SELECT name, tbl_name FROM sqlite_master")}
    sizes = dict(conn.execute("SELECT name, SUM(pgsize) FROM dbstat GROUP BY name").fetchall())
    conn.close()
    spans = sum(v for k, v in sizes.items() if names.get(k) in SPAN_TABLES)
    context = sum(v for k, v in sizes.items() if names.get(k) == CONTEXT_TABLE)
    rest = sum(sizes.values()) - spans
    with_spans, without, no_context = work / "with-spans.db", work / "without-spans.db", work / "without-context.db"
    for target in (with_spans, without, no_context):
        shutil.copyfile(db, target)
    for target, dropped in ((without, SPAN_TABLES), (no_context, (CONTEXT_TABLE,))):
        conn = sqlite3.connect(target)
        for table in dropped:
            conn.execute(f"DROP TABLE IF EXISTS {table}")
        conn.commit()
        conn.execute("VACUUM")
        conn.close()
    conn = sqlite3.connect(with_spans)
    conn.execute("VACUUM")
    conn.close()
    a, b, c = with_spans.stat().st_size, without.stat().st_size, no_context.stat().st_size
    for target in (with_spans, without, no_context):
        target.unlink()
    return {"spanBytes": spans, "otherBytes": rest, "spanShare": round(spans / rest, 4),
            "vacuumedWith": a, "vacuumedWithout": b, "growth": round(a / b - 1, 4),
            # the context table alone (layout 9): bytes, and the vacuumed store with it over without it
            "contextBytes": context, "vacuumedWithoutContext": c, "contextGrowth": round(a / c - 1, 4)}


def scaled_copy(db: Path, work: Path, hot: str, scale: int) -> Path:
    """A copy of the store whose edit spans of every file but the hot one are copied ``scale - 1`` times
    under new paths and span ids: the span tables of a history ``scale`` times larger (the hot file's
    rows, what a lookup of it reads, stay as they are)."""
    target = work / f"scaled-{scale}.db"
    shutil.copyfile(db, target)
    conn = sqlite3.connect(target)
    hot_id = conn.execute("SELECT path_id FROM pimem_edit_files WHERE path = ?",
                          (normalize_file_path(hot),)).fetchone()[0]
    max_path = conn.execute("SELECT MAX(path_id) FROM pimem_edit_files").fetchone()[0]
    max_span = conn.execute("SELECT MAX(span_id) FROM pimem_edit_spans").fetchone()[0]
    # every column copied as it is but the ids (the tables' columns are read, not assumed)
    def columns(table: str, moved: dict[str, str]) -> str:
        names = [r[1] for r in conn.execute(f"PRAGMA table_info({table})")]
        return ", ".join(moved.get(n, n) for n in names)

    for k in range(1, scale):
        p, s = k * max_path, k * max_span
        ids = {"path_id": f"path_id + {p}", "span_id": f"span_id + {s}", "path": f"path || '#{k}'"}
        for table in SPAN_TABLES:
            conn.execute(f"INSERT INTO {table} SELECT {columns(table, ids)} FROM {table} "
                         f"WHERE path_id <= {max_path} AND path_id != {hot_id}")
        conn.commit()
    conn.close()
    return target


def bulk_copy(db: Path, work: Path, hot: str, turns: int, files: int, seed: int) -> tuple[Path, dict[str, int]]:
    """A copy of the store grown to ``turns`` turns by rows inserted directly (a sync of a million turns
    takes hours here): sessions of 10 turns of the three agents, each turn with a prompt and a reply of
    realistic length and one edit call of 1-5 added, 0-3 replaced and 4 kept lines (random line hashes) in one
    of ``files`` other files, with its file touch: the ``turns``, ``sessions``, ``pimem_touches`` and
    ``pimem_edit_*`` rows of a history where every turn edits. No word index or transcript rows (the
    line lookup reads neither). The hot file's rows stay as synced. Kept in WORK for ``--reuse``."""
    target = work / f"bulk-{turns}.db"
    if target.exists():
        conn = sqlite3.connect(target)
        counts = table_counts(conn)
        conn.close()
        return target, counts
    partial = target.with_suffix(".partial")
    shutil.copyfile(db, partial)
    rng = random.Random(seed)
    conn = sqlite3.connect(partial)
    conn.execute("PRAGMA journal_mode = OFF")
    conn.execute("PRAGMA synchronous = OFF")
    have = conn.execute("SELECT COUNT(*) FROM turns").fetchone()[0]
    if conn.execute("SELECT 1 FROM pimem_edit_files WHERE path = ?", (normalize_file_path(hot),)).fetchone() is None:
        raise SystemExit(f"perf: {hot} has no edit spans in {db}")
    first_path = conn.execute("SELECT MAX(path_id) FROM pimem_edit_files").fetchone()[0] + 1
    paths = [f"/home/dev/proj{k % 40:02d}/src/module_{k}.py" for k in range(files)]
    conn.executemany("INSERT INTO pimem_edit_files (path_id, path) VALUES (?, ?)",
                     [(first_path + k, path) for k, path in enumerate(paths)])
    span_id = conn.execute("SELECT MAX(span_id) FROM pimem_edit_spans").fetchone()[0] + 1
    words = [f"word{k}" for k in range(5000)]
    ms = 1_700_000_000_000
    sources = ("claude", "pi", "codex")
    tools = {"claude": "Edit", "pi": "edit", "codex": "apply_patch"}
    new = turns - have
    for start in range(0, new, 50_000):
        sessions, turn_rows, spans, lines, touches, kept = [], [], [], [], [], []
        for n in range(start, min(new, start + 50_000)):
            if n % 10 == 0:
                source = sources[n // 10 % 3]
                session = f"{source}:bulk-{n // 10:07d}"
                sessions.append((session, source, f"/home/dev/proj{n // 10 % 40:02d}", ms, "m",
                                 f"/bulk/{n // 10}.jsonl"))
            ms += rng.randint(1_000, 120_000)
            turn = f"{session}:{n % 10}"
            prompt = " ".join(rng.choice(words) for _ in range(rng.randint(5, 40)))
            reply = " ".join(rng.choice(words) for _ in range(rng.randint(20, 120)))
            turn_rows.append((turn, session, n % 10, ms, prompt, reply, '["edit"]', None))
            path = rng.randrange(files)
            spans.append((span_id, first_path + path, turn, ms, tools[source], f"call_{n}", 0))
            for pos in range(rng.randint(1, 5)):
                lines.append((first_path + path, rng.getrandbits(63) - (1 << 62), span_id, pos * 2))
            for k in range(rng.randint(0, 3)):
                lines.append((first_path + path, rng.getrandbits(63) - (1 << 62), span_id, -1 - k))
            # the lines the call kept on each side of its block (layout 9: at most CONTEXT_LINES, 2, a side)
            for pos in (-2, -1, 5, 6):
                kept.append((first_path + path, rng.getrandbits(63) - (1 << 62), span_id, pos))
            touches.append((paths[path], turn, "edit", session, ms))
            span_id += 1
        conn.executemany("INSERT INTO sessions (session_id, source, cwd, started_at, model_id, jsonl_path) "
                         "VALUES (?, ?, ?, ?, ?, ?)", sessions)
        conn.executemany("INSERT INTO turns (turn_id, session_id, turn_index, ts, user_text, reply_text, tool_names, "
                         "user_message_id) VALUES (?, ?, ?, ?, ?, ?, ?, ?)", turn_rows)
        conn.executemany("INSERT INTO pimem_edit_spans (span_id, path_id, turn_id, ts, tool, call_id, whole) "
                         "VALUES (?, ?, ?, ?, ?, ?, ?)", spans)
        conn.executemany("INSERT OR IGNORE INTO pimem_edit_lines (path_id, hash, span_id, pos) VALUES (?, ?, ?, ?)",
                         sorted(lines))
        conn.executemany("INSERT OR IGNORE INTO pimem_touches (path, turn_id, action, session_id, ts) "
                         "VALUES (?, ?, ?, ?, ?)", touches)
        conn.executemany(f"INSERT OR IGNORE INTO {CONTEXT_TABLE} (path_id, hash, span_id, pos) VALUES (?, ?, ?, ?)",
                         sorted(kept))
        conn.commit()
    conn.execute("ANALYZE")
    conn.commit()
    counts = table_counts(conn)
    conn.close()
    partial.rename(target)
    return target, counts


def table_counts(conn: sqlite3.Connection) -> dict[str, int]:
    return {table: conn.execute(f"SELECT COUNT(*) FROM {table}").fetchone()[0]
            for table in ("turns", "sessions", "pimem_touches", *SPAN_TABLES)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--corpus", type=Path, help="a bench/generate.py output (its home/ is synced)")
    parser.add_argument("--edits", type=Path, help="a bench/blame/synthetic.py output")
    parser.add_argument("--work", type=Path, required=True)
    parser.add_argument("--lines", type=int, default=5000)
    parser.add_argument("--touching", type=int, default=2000)
    parser.add_argument("--runs", type=int, default=500)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--scale", type=int, default=0,
                        help="also time the lookups on a copy whose other files' edit spans are copied SCALE-1 times")
    parser.add_argument("--bulk", type=int, default=0,
                        help="also time the lookups on a copy grown to BULK turns by rows inserted directly")
    parser.add_argument("--bulk-files", type=int, default=50_000, help="the other files the bulk turns edit")
    parser.add_argument("--reuse", action="store_true", help="keep WORK (its store and hot file) from an earlier run")
    parser.add_argument("--no-growth", action="store_true", help="skip the growth figures (copies and VACUUMs)")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    if args.reuse:
        return measure(args, args.work / "memory.db", args.work / "hot" / "big.py", None)
    if args.work.exists():
        shutil.rmtree(args.work)
    home = args.work / "home"
    roots = {"claude": home / ".claude" / "projects", "codex": home / ".codex" / "sessions",
             "pi": home / ".pi" / "agent" / "sessions"}
    for root in roots.values():
        root.mkdir(parents=True)
    if args.corpus:
        for root in roots.values():
            link_tree(args.corpus / "home" / root.relative_to(home), root)
    if args.edits:
        link_tree(args.edits / "claude" / "projects", roots["claude"])
        link_tree(args.edits / "codex" / "sessions", roots["codex"])
        link_tree(args.edits / "pi" / "agent" / "sessions", roots["pi"])
    big = hot_file(args.work, roots["pi"], args.lines, args.touching, args.seed)
    env = {k: v for k, v in os.environ.items() if not k.endswith(("_HOME", "_DIR")) and k != "MEMORY_DB_PATH"}
    db = args.work / "memory.db"
    env.update(HOME=str(home), MEMORY_DB_PATH=str(db), PYTHONPATH=str(REPO / "server"))
    started = time.perf_counter()
    subprocess.run([sys.executable, "-m", "pimem", "sync"], env=env, check=True, stdout=subprocess.DEVNULL)
    sync_s = round(time.perf_counter() - started, 1)
    return measure(args, db, big, sync_s)


def latency(db: Path, big: Path, runs: int, seed: int) -> dict[str, Any]:
    conn = connect(db, create=False, for_writing=False)
    text = big.read_text(encoding="utf-8")
    count = text.count("\n")
    rng = random.Random(seed)
    whole = line_history(conn, str(big), text, git=False)
    cur = timed(lambda: (lambda n: line_history(conn, str(big), text, n, n + 1, git=False))(rng.randrange(count)), runs)
    file = timed(lambda: line_history(conn, str(big), text, git=False), 20)
    ref = timed(lambda: file_history(conn, str(big)), runs)
    rows = conn.execute("SELECT COUNT(*) FROM pimem_edit_lines").fetchone()[0]
    turns = conn.execute("SELECT COUNT(*) FROM turns").fetchone()[0]
    conn.close()
    # the hot file's own truth: its first write is past the bound rule (2,000 lines), so only the lines
    # the edits wrote can be attributed; every attributed line must name its edit
    truth = json.loads((big.parent / "truth.json").read_text())
    by_edit = sum(tag != "H0000" for tag in truth)
    right = [a.line for a in whole.lines if a.prompt.startswith(truth[a.line] + ":")]
    right_edit = sum(truth[line] != "H0000" for line in right)
    return {"turns": turns, "lines": count, "attributed": len(whole.lines), "spanLineRows": rows,
            "hotPrecision": round(len(right) / max(1, len(whole.lines)), 4),
            "hotRecallOfEditLines": round(right_edit / max(1, by_edit), 4),
            "currentLine": {"p50": cur[0], "p95": cur[1], "cpu": cur[2]},
            "wholeFile": {"p50": file[0], "p95": file[1], "cpu": file[2]},
            "fileHistory": {"p50": ref[0], "p95": ref[1], "cpu": ref[2]},
            "loadAverage": os.getloadavg()[0],
            "ratios": {"currentLineP95/fileHistoryP95": round(cur[1] / ref[1], 2),
                       "wholeFileP95/fileHistoryP95": round(file[1] / ref[1], 2)}}


def measure(args: argparse.Namespace, db: Path, big: Path, sync_s: float | None) -> int:
    conn = connect(db, create=False, for_writing=False)
    turns = conn.execute("SELECT COUNT(*) FROM turns").fetchone()[0]
    conn.close()
    report: dict[str, Any] = {"turns": turns, "syncSeconds": sync_s, "touching": args.touching,
                              "latency": latency(db, big, args.runs, args.seed)}
    if not args.no_growth:
        report["growth"] = growth(db, args.work)
    rows = [("measured", report["latency"])]
    if args.scale > 1:
        scaled = scaled_copy(db, args.work, str(big), args.scale)
        report["scaled"] = {"scale": args.scale, "latency": latency(scaled, big, args.runs, args.seed)}
        rows.append((f"edit spans x{args.scale}", report["scaled"]["latency"]))
        scaled.unlink()
    if args.bulk:
        bulk, counts = bulk_copy(db, args.work, str(big), args.bulk, args.bulk_files, args.seed)
        report["bulk"] = {"rows": counts, "bytes": bulk.stat().st_size,
                          "latency": latency(bulk, big, args.runs, args.seed)}
        rows.append((f"bulk, {counts['turns']:,} turns", report["bulk"]["latency"]))
    print("| store | turns | hot file | span line rows | current line p50 / p95 (CPU) | whole file p50 / p95 (CPU) "
          "| fileHistory p50 / p95 (CPU; reference) | load average |\n|---|---|---|---|---|---|---|---|")
    for name, lat in rows:
        print(f"| {name} | {lat['turns']:,} | {lat['lines']:,} lines, {args.touching:,} touching turns, "
              f"{lat['attributed']:,} attributed | {lat['spanLineRows']:,} | {lat['currentLine']['p50']} / "
              f"{lat['currentLine']['p95']} ms ({lat['currentLine']['cpu']}) | {lat['wholeFile']['p50']} / "
              f"{lat['wholeFile']['p95']} ms ({lat['wholeFile']['cpu']}) | {lat['fileHistory']['p50']} / "
              f"{lat['fileHistory']['p95']} ms ({lat['fileHistory']['cpu']}) | {lat['loadAverage']:.1f} |")
    if "bulk" in report:
        print("\nbulk store rows: " + ", ".join(f"{k} {v:,}" for k, v in report["bulk"]["rows"].items())
              + f"; {report['bulk']['bytes']:,} bytes")
    print(f"\nhot file: {report['latency']['hotPrecision']} of the attributed lines name their edit; "
          f"{report['latency']['hotRecallOfEditLines']} of the lines edits wrote are attributed")
    if "growth" in report:
        g = report["growth"]
        print(f"\ngrowth: edit-span tables {g['spanBytes']:,} bytes over the rest {g['otherBytes']:,} "
              f"({g['spanShare']:.1%}); vacuumed store {g['vacuumedWith']:,} with, {g['vacuumedWithout']:,} "
              f"without (+{g['growth']:.1%}); of which the context lines (layout 9) {g['contextBytes']:,} bytes, "
              f"vacuumed store without them {g['vacuumedWithoutContext']:,} (+{g['contextGrowth']:.1%})")
    if args.json:
        args.json.write_text(json.dumps(report, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
