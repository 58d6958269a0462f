#!/usr/bin/env python3
"""Experiment (issue 21): every field of every free-text answer of a real ``pimem serve``, this worktree
against a reference revision served side by side on the same store (``serve_latency.py`` compares the
session ids only). Per LongMemEval **dev** question, ``pimem/recall {text, limit: 50, offset}`` at offset
0 and 50 (the day-zero protocol's two pages), from both servers; the whole results (rows, terms,
Markdown) must be equal (exit 1 and the question ids otherwise). Prints a SHA-256 of the answers.

    nice -n 5 .venv/bin/python bench/experiments/serve_identity.py --dir /work/data/r1/real --before 2a997e9

The held-out questions (the first 100 non-abstention ones) are never read: ``data.split`` gives the dev
set only.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import sys
from pathlib import Path

import serve_latency


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=Path("/work/data/lme/longmemeval_s_cleaned.json"))
    parser.add_argument("--dir", type=Path, required=True, help="a corpus built by bench/lme/run.py build")
    parser.add_argument("--before", default="main", help="the reference revision (served from a git archive)")
    parser.add_argument("--sample", type=int, default=0, help="only this many dev questions, evenly spaced")
    args = parser.parse_args()
    dev, _ = serve_latency.data.split(serve_latency.data.load_questions(args.data))
    if 0 < args.sample < len(dev):
        dev = [dev[position * len(dev) // args.sample] for position in range(args.sample)]
    store = args.dir / "memory.db"
    logs = Path(os.environ.get("TMPDIR", "/tmp"))
    servers = {"before": serve_latency.Served("before", serve_latency.archive_pimem(args.before)[0], store,
                                              logs / "serve-identity-before.log"),
               "after": serve_latency.Served("after", serve_latency.REPO / "server", store,
                                             logs / "serve-identity-after.log")}
    differ: list[str] = []
    digest = hashlib.sha256()
    for item in dev:
        for offset in (0, serve_latency.PAGE):
            answers = {name: served.server.call("pimem/recall", {"text": item["question"], "limit": serve_latency.PAGE,
                                                                 "offset": offset})
                       for name, served in servers.items()}
            if answers["before"] != answers["after"]:
                differ.append(f"{item['question_id']}@{offset}")
            digest.update(json.dumps(answers["after"], sort_keys=True).encode("utf-8"))
    for served in servers.values():
        served.server.close()
    print(json.dumps({"questions": len(dev), "pages": 2 * len(dev), "differ": differ,
                      "sha256_after": digest.hexdigest()}, indent=1))
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
