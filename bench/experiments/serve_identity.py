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
import sys

import serve_latency


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    serve_latency.add_arguments(parser)
    args = parser.parse_args()
    dev = serve_latency.sampled_dev(args)
    servers = serve_latency.before_and_after(args, "serve-identity")
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
