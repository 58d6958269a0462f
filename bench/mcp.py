#!/usr/bin/env python3
"""What agents wait for: `pimem mcp` start-up, a recall_memory call over stdio, and redaction.

    .venv/bin/python bench/mcp.py [--runs 10] [--db PATH]

* start-up: from spawning `pimem mcp` to the answer of `tools/list` (after `initialize`), which is
  when Codex lists the tools; and the whole process with stdin closed right after (the figure
  `farm-bench` measures from outside, see docs/benchmarks.md);
* recall_memory: a warm call over the open connection (`tools/call`), on the store given with --db
  (default: the bundled sample history synced into a temporary store);
* redaction (pimem.redact.redact) of a long reply: realistic generated text (bench/textpool.py:
  prose, code, paths, CJK) with secrets planted every ~10 KB, per MB; and of a typical 20-row result
  (CPU time of the process).

Medians of --runs runs, on whatever machine runs it (quote the machine with the figures).
``--redaction-only --reference OLD.py`` measures only the redaction, this one and the ``redact``
of OLD.py (another revision's ``server/pimem/redact.py``: ``git show REV:server/pimem/redact.py``)
alternately in one run, and prints their ratio.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "bench"))
sys.path.insert(0, str(REPO / "server"))

from pimem.redact import redact  # noqa: E402
from textpool import TextPool  # noqa: E402

PIMEM = Path(sys.executable).with_name("pimem")
INITIALIZE = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
              "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "bench",
                                                                                              "version": "0"}}}
INITIALIZED = {"jsonrpc": "2.0", "method": "notifications/initialized"}
TOOLS_LIST = {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}


def _send(process: subprocess.Popen[bytes], message: dict[str, object]) -> None:
    assert process.stdin is not None
    process.stdin.write(json.dumps(message).encode() + b"\n")
    process.stdin.flush()


def _answer(process: subprocess.Popen[bytes], request_id: int) -> dict[str, object]:
    assert process.stdout is not None
    while True:
        line = process.stdout.readline()
        if not line:
            raise RuntimeError("pimem mcp closed its output")
        message: dict[str, object] = json.loads(line)
        if message.get("id") == request_id:
            return message


def start_up(db: Path, runs: int) -> dict[str, float]:
    to_tools, whole, recall_ms = [], [], []
    for run in range(runs + 1):  # the first run warms the disk cache and is not counted
        started = time.perf_counter()
        process = subprocess.Popen([str(PIMEM), "mcp", "--db", str(db)], stdin=subprocess.PIPE,
                                   stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        _send(process, INITIALIZE)
        _answer(process, 1)
        _send(process, INITIALIZED)
        _send(process, TOOLS_LIST)
        _answer(process, 2)
        listed = time.perf_counter()
        call_times = []
        for number in range(5):
            request_id = 10 + number
            call_started = time.perf_counter()
            _send(process, {"jsonrpc": "2.0", "id": request_id, "method": "tools/call",
                            "params": {"name": "recall_memory", "arguments": {"entities": ["flamingo", "cache"]}}})
            answer = _answer(process, request_id)
            assert "result" in answer and not answer["result"].get("isError"), answer  # type: ignore[union-attr]
            call_times.append(time.perf_counter() - call_started)
        assert process.stdin is not None
        process.stdin.close()
        process.wait(30)
        if run:
            to_tools.append(listed - started)
            whole.append(time.perf_counter() - started)
            recall_ms.append(statistics.median(call_times[1:]) * 1000)  # the first call opens the store
    return {"tools_listed_s": statistics.median(to_tools), "tools_listed_max_s": max(to_tools),
            "whole_process_s": statistics.median(whole), "recall_call_ms": statistics.median(recall_ms)}


SECRETS = ("AKIA" + "Q" * 16, "ghp" + "_" + "a1B2c3D4" * 4 + "e5F6", "password=" + "Tr0ub4dor&3x",
           "postgres://u:" + "s3cret" + "@db/x")


def long_reply(megabytes: float, seed: int = 1) -> str:
    pool, rng = TextPool(seed), random.Random(seed)
    pieces, size = [], 0
    while size < megabytes * 1_000_000:
        piece = pool.text(rng, 4000, 12000, 0.1)
        piece += f" then {SECRETS[len(pieces) % len(SECRETS)]} was used.\n"
        pieces.append(piece)
        size += len(piece)
    return "".join(pieces)


def redaction(runs: int) -> dict[str, float]:
    """CPU time of this process (redaction is single-threaded): steadier than wall time on a busy machine."""
    text = long_reply(1.0)
    times = []
    for _ in range(runs):
        started = time.process_time()
        masked = redact(text)
        times.append(time.process_time() - started)
    assert all(secret not in masked for secret in SECRETS)
    return {"redact_ms_per_mb": statistics.median(times) * 1000 / (len(text) / 1_000_000),
            **_row_redaction(runs)}


def redaction_against(reference: Path, runs: int) -> dict[str, float]:
    """This redact and the reference file's, alternately on the same text (CPU time), and their ratio."""
    spec = importlib.util.spec_from_file_location("reference_redact", reference)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module   # dataclasses look their module up
    spec.loader.exec_module(module)
    text = long_reply(1.0)
    times: dict[str, list[float]] = {"this": [], "reference": []}
    for _ in range(runs):
        for name, function in (("this", redact), ("reference", module.redact)):
            started = time.process_time()
            function(text)
            times[name].append(time.process_time() - started)
    this, other = statistics.median(times["this"]), statistics.median(times["reference"])
    megabytes = len(text) / 1_000_000
    return {"redact_ms_per_mb": this * 1000 / megabytes, "reference_ms_per_mb": other * 1000 / megabytes,
            "ratio": this / other}


def _row_redaction(runs: int) -> dict[str, float]:
    rows = [long_reply(0.005, seed) for seed in range(20)]  # a 20-row result, 5 KB per text
    row_times = []
    for _ in range(runs):
        started = time.process_time()
        for row in rows:
            redact(row)
        row_times.append(time.process_time() - started)
    return {"redact_20_rows_ms": statistics.median(row_times) * 1000}


def sample_store(folder: Path) -> Path:
    db = folder / "memory.db"
    samples = REPO / "samples" / "history"
    env = {**os.environ, "CLAUDE_CONFIG_DIR": str(samples / "claude"), "CODEX_HOME": str(samples / "codex"),
           "PI_CODING_AGENT_DIR": str(samples / "pi" / "agent"), "MEMORY_DB_PATH": str(db)}
    subprocess.run([str(PIMEM), "sync"], env=env, check=True, capture_output=True)
    return db


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--db", type=Path, help="store for the recall calls (default: the sample history)")
    parser.add_argument("--redaction-only", action="store_true", help="measure the redaction only")
    parser.add_argument("--reference", type=Path, help="with --redaction-only: another revision's redact.py")
    args = parser.parse_args()
    if args.redaction_only:
        figures = redaction_against(args.reference, args.runs) if args.reference else redaction(args.runs)
        print(json.dumps({key: round(value, 4) for key, value in figures.items()}))
        return 0
    folder = Path(tempfile.mkdtemp(prefix="pimem-bench-mcp-"))
    try:
        db = args.db or sample_store(folder)
        figures = {**start_up(db, args.runs), **redaction(args.runs)}
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    print(f"pimem mcp, {args.runs} runs, {os.cpu_count()} cores, store {db if args.db else 'sample history'}")
    print(f"  start-up to tools/list answered: median {figures['tools_listed_s']:.2f} s "
          f"(max {figures['tools_listed_max_s']:.2f} s); whole process {figures['whole_process_s']:.2f} s")
    print(f"  recall_memory call, warm: median {figures['recall_call_ms']:.1f} ms")
    print(f"  redaction (CPU): {figures['redact_ms_per_mb']:.0f} ms per MB of reply text; "
          f"a 20-row result of 5 KB texts: {figures['redact_20_rows_ms']:.1f} ms")
    print(json.dumps({key: round(value, 4) for key, value in figures.items()}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
