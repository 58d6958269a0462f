#!/usr/bin/env python3
"""Request size limits (issue 10, item 6): time, memory and answer size of oversized recall requests.

    .venv/bin/python bench/limits.py [--pimem-rev REV] [--filler-copies 20] [--work DIR]

Builds a history (the bundled samples, ``--filler-copies`` copies of them with fresh ids, and 20 Pi
sessions whose single turn has a 100 KB prompt and a 5 MB reply mentioning ``zebrafinch``), imports
it, then runs each case against a fresh ``pimem serve`` (so each peak is that case's own):

* ``text 200 MB``: ``pimem/recall {"text": <200 MB of words>}``;
* ``entity 1 MB``: ``pimem/recall {"entities": [<1 MB word>]}``;
* ``20 long turns``: ``pimem/recall {"entities": ["zebrafinch"], "limit": 20}``;
* ``service``: the 200 MB text given to the params decoding in a plain process (no JSON-RPC transport,
  which reads and parses the whole message before any handler runs).

For each: the outcome (result or error), the request's wall time, the server's peak RSS (VmHWM) and
the size of the JSON answer. ``--pimem-rev`` measures pimem as committed at that revision (``git
archive`` of server/ into bench/out/), to compare before and after a change.
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.append(str(REPO / "tests"))   # tests/support

from support.env import history_env  # noqa: E402
from support.history import copy_samples, grow_history  # noqa: E402
from support.jsonrpc import LspError, LspProcess  # noqa: E402

LONG_TURNS = 20
LONG_USER_CHARS = 100_000
LONG_REPLY_CHARS = 5_000_000
WORD = "zebrafinch"


def pimem_source(rev: str | None) -> Path:
    if rev is None:
        return REPO / "server"
    sha = subprocess.run(["git", "-C", str(REPO), "rev-parse", "--verify", f"{rev}^{{commit}}"],
                         capture_output=True, text=True, check=True).stdout.strip()
    target = REPO / "bench" / "out" / f"src-{sha[:12]}"
    if not (target / "server" / "pimem" / "__init__.py").exists():
        target.mkdir(parents=True, exist_ok=True)
        archive = subprocess.run(["git", "-C", str(REPO), "archive", sha, "server"], capture_output=True, check=True)
        subprocess.run(["tar", "-x", "-C", str(target)], input=archive.stdout, check=True)
    return target / "server"


def environment(base: Path, source: Path) -> dict[str, str]:
    return {**history_env(base), "PYTHONPATH": str(source)}


def build_history(base: Path, copies: int) -> None:
    copy_samples(base)
    grow_history(base, copies)
    rng = random.Random(1)
    words = ["cache", "lock", "retry", "payload", "schema", "index", "worker", "queue", "token", "branch"]
    folder = base / "pi" / "agent" / "sessions" / "--tmp-pimem-bench-long--"
    folder.mkdir(parents=True, exist_ok=True)
    for number in range(LONG_TURNS):
        session_id = f"019a0000-0000-7000-8000-{number:012d}"
        user = f"{WORD} " + " ".join(rng.choice(words) for _ in range(LONG_USER_CHARS // 6))
        reply = f"{WORD} " + " ".join(rng.choice(words) for _ in range(LONG_REPLY_CHARS // 6))
        stamp = f"2026-01-{number + 1:02d}T10:00:00.000Z"
        lines = [
            {"type": "session", "version": 3, "id": session_id, "timestamp": stamp, "cwd": "/tmp/pimem-bench/long"},
            {"type": "message", "id": "a0000001", "parentId": None, "timestamp": stamp,
             "message": {"role": "user", "content": [{"type": "text", "text": user}], "timestamp": 1767261600000}},
            {"type": "message", "id": "a0000002", "parentId": "a0000001", "timestamp": stamp,
             "message": {"role": "assistant", "content": [{"type": "text", "text": reply}],
                         "timestamp": 1767261600000 + 1000, "model": "m", "provider": "p"}},
        ]
        name = f"{stamp.replace(':', '-').replace('.', '-')}_{session_id}.jsonl"
        (folder / name).write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")


def vm_hwm(pid: int) -> int:
    with open(f"/proc/{pid}/status", encoding="ascii") as handle:
        for line in handle:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    return 0


def run_case(env: dict[str, str], params: dict[str, Any], timeout: float) -> dict[str, Any]:
    client = LspProcess(env, cwd=str(REPO), ensure_ascii=False)
    try:
        client.initialize(options={"autoSync": False}, capabilities={})
        client.call("pimem/status", {})
        before = vm_hwm(client.pid)
        started = time.perf_counter()
        try:
            result = client.call("pimem/recall", params, timeout=timeout)
            outcome = f"{len(result['results'])} results"
            answer = len(json.dumps(result, ensure_ascii=False).encode())
        except LspError as error:
            outcome = str(error)[:150]
            answer = len(str(error).encode())
        seconds = time.perf_counter() - started
        peak = vm_hwm(client.pid) if client.process.poll() is None else -1
    finally:
        client.close()
    return {"outcome": outcome, "seconds": round(seconds, 2), "rssBeforeMiB": round(before / 2**20, 1),
            "peakRssMiB": round(peak / 2**20, 1), "answerBytes": answer}


SERVICE_ONLY = """
import resource, sys, time
text = ("lorem ipsum dolor sit amet " * (200_000_000 // 27 + 1))[:200_000_000]
base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
from pimem.lsp.params import ParamsError, recall_params
started = time.perf_counter()
try:
    outcome = f"{len(recall_params({'text': text}).query.entities)} entities"
except ParamsError as error:
    outcome = str(error)
seconds = time.perf_counter() - started
extra = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - base) / 1024
print(f"| text 200 MB, params decoding only (no transport) | {outcome[:100]} | {seconds:.2f} s | "
      f"+{extra:.1f} MiB over the 200 MB string | – |")
"""


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pimem-rev", help="measure pimem as committed at this revision (default: the working tree)")
    parser.add_argument("--filler-copies", type=int, default=20, help="copies of the samples beside the long turns")
    parser.add_argument("--work", type=Path, help="history and store here (default: a temporary directory)")
    parser.add_argument("--cases", default="text,entity,turns,service",
                        help="comma-separated subset of text,entity,turns,service")
    parser.add_argument("--timeout", type=float, default=900, help="seconds to wait for one answer")
    args = parser.parse_args()
    source = pimem_source(args.pimem_rev)
    base = args.work or Path(tempfile.mkdtemp(prefix="pimem-limits-"))
    env = environment(base, source)
    if not (base / "memory.db").exists():
        build_history(base, args.filler_copies)
        subprocess.run([sys.executable, "-m", "pimem", "sync"], env=env, check=True, cwd=str(REPO),
                       stdout=subprocess.DEVNULL)
    rng = random.Random(2)
    # Mostly distinct trigrams (what the index is asked about): 36 ASCII and 264 CJK characters.
    alphabet = "abcdefghijklmnopqrstuvwxyz0123456789" + "".join(chr(0x4E00 + i) for i in range(264))
    wanted = set(args.cases.split(","))
    cases: dict[str, dict[str, Any]] = {}
    if "text" in wanted:
        cases["text 200 MB"] = {"text": ("lorem ipsum dolor sit amet " * (200_000_000 // 27 + 1))[:200_000_000]}
    if "entity" in wanted:
        cases["entity 1 MB"] = {"entities": ["".join(rng.choice(alphabet) for _ in range(1_000_000))]}
    if "turns" in wanted:
        cases["20 long turns"] = {"entities": [WORD], "limit": LONG_TURNS}
    print(f"pimem from {source} ({args.pimem_rev or 'working tree'}); history in {base}")
    print("| case | outcome | time | server RSS before → peak | answer |")
    print("|---|---|---|---|---|")
    for name, params in cases.items():
        figures = run_case(env, params, args.timeout)
        print(f"| {name} | {figures['outcome']} | {figures['seconds']} s | {figures['rssBeforeMiB']} → "
              f"{figures['peakRssMiB']} MiB | {figures['answerBytes']:,} bytes |", flush=True)
    if "service" in wanted:
        subprocess.run([sys.executable, "-c", SERVICE_ONLY], env=env, check=True, cwd=str(REPO))
    if args.work is None:
        shutil.rmtree(base, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
