#!/usr/bin/env python3
"""Experiment (issue 21): where a free-text question's CPU goes in a real ``pimem serve``, by thread:
the event loop (the main thread: reading the request, its params, encoding and writing the answer) and
the rest (the read pool's thread that ranks, builds the rows, the Markdown). ``serve_latency.py``'s
protocol and servers (this worktree against ``--before``, alternated per question, pages of 50 until 50
conversations), per question the CPU of each thread from ``/proc``; prints p50 and mean per server.

    nice -n 10 .venv/bin/python bench/experiments/serve_threads.py --dir COPY_OF_STORE --before main --sample 120

Only dev questions are read (``data.split``)."""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path

import serve_latency


def thread_cpu(served: serve_latency.Served) -> dict[int, float]:
    """CPU ms of each of the server's threads so far, by thread id."""
    result: dict[int, float] = {}
    for task in Path(f"/proc/{served.process.pid}/task").iterdir():
        try:
            result[int(task.name)] = int((task / "schedstat").read_text().split()[0]) / 1e6
        except (OSError, ValueError, IndexError):   # a thread that ended meanwhile
            continue
    return result


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    serve_latency.add_arguments(parser)
    args = parser.parse_args()
    dev = serve_latency.sampled_dev(args)
    mapping: dict[str, str] = json.loads((args.dir / "mapping.json").read_text(encoding="utf-8"))
    servers = serve_latency.before_and_after(args, "serve-threads")
    for served in servers.values():   # the cold first request, left out
        served.ask(dev[0]["question"], 0)
    spent: dict[str, dict[str, list[float]]] = {name: {"loop": [], "rest": [], "total": []} for name in servers}
    for number, item in enumerate(dev):
        for name in (["before", "after"] if number % 2 == 0 else ["after", "before"]):
            served = servers[name]
            start = thread_cpu(served)
            serve_latency.question(served, item["question"], mapping)
            end = thread_cpu(served)
            loop = end.get(served.process.pid, 0.0) - start.get(served.process.pid, 0.0)
            total = sum(value - start.get(tid, 0.0) for tid, value in end.items())
            spent[name]["loop"].append(loop)
            spent[name]["rest"].append(total - loop)
            spent[name]["total"].append(total)
    for served in servers.values():
        served.server.close()
    print(json.dumps({name: {part: {"p50": round(statistics.median(values), 2),
                                    "mean": round(statistics.mean(values), 2)} for part, values in parts.items()}
                      for name, parts in spent.items()}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
