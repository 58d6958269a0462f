#!/usr/bin/env python3
"""Experiment (issue 21, round q4): free text through a running ``pimem serve`` (the word index's docs kept
per process, pimem.recall.docmap) while another process writes the store, against the same question
ranked anew from the table in this process. The writer: turns added and grown, turns deleted then
reconciled (their docs forgotten, doc keys re-used), turns moved to another day (another key), rebuilds.
Four threads ask the server all the while; then every question is asked once more and compared.

    nice -n 10 .venv/bin/python bench/experiments/docmap_serve.py --seed 13 --steps 400
    nice -n 10 .venv/bin/python bench/experiments/docmap_serve.py --seed 13 --steps 400 --exact-stats

``--exact-stats`` turns off, in the server, the two per-process approximations free text has by design (a
common word's count and the texts' average lengths, read again only when the index grew by a twentieth,
``ranking._doc_count``/``ranking._totals``): without it a long-running server's answers can differ from a
fresh process's, with or without the kept docs (``--no-docmap``), after writes that do not grow the store.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import random
import sqlite3
import subprocess
import sys
import tempfile
import threading
from pathlib import Path
from typing import Any

from pimem import index
from pimem.recall import make_query, ranking
from pimem.recall.freetext import parse_text, recall_conversations
from pimem.store import SessionRow, connect, transaction, upsert_session

WORDS = ["application", "help", "live", "kernel", "sister", "garden", "cache", "ledger", "portland", "dog"]
QUESTIONS = ["application", "help live", "sister garden", "kernel", "dog cache ledger", "portland"]
DAY, BASE = 86_400_000, 1_700_000_000_000


def _turn(conn: sqlite3.Connection, session: str, number: int, ts: int, user: str, reply: str) -> None:
    upsert_session(conn, SessionRow(session, "pi", "/w", BASE, None, f"/{session}.jsonl"))
    turn_id = f"{session}:{number}"
    old = conn.execute("SELECT ts, user_text, reply_text FROM turns WHERE turn_id = ?", (turn_id,)).fetchone()
    conn.execute("INSERT INTO turns (turn_id, session_id, turn_index, ts, user_text, reply_text, tool_names, "
                 "user_message_id) VALUES (?, ?, ?, ?, ?, ?, NULL, ?) ON CONFLICT(turn_id) DO UPDATE SET "
                 "ts = excluded.ts, user_text = excluded.user_text, reply_text = excluded.reply_text",
                 (turn_id, session, number, ts, user, reply, turn_id))
    index.put(conn, turn_id, ts, user, reply, None, tuple(old) if old else None, fts=True)


def write(path: str, seed: int, steps: int) -> None:
    rng = random.Random(seed)
    conn = connect(path)
    for _ in range(steps):
        op = rng.random()
        with transaction(conn):
            if op < 0.5:
                session = f"s{rng.randrange(12)}"
                for _ in range(rng.randrange(1, 6)):
                    _turn(conn, session, rng.randrange(8), BASE + rng.randrange(3) * DAY + rng.randrange(1000),
                          " ".join(rng.sample(WORDS, 3)), " ".join(rng.sample(WORDS, rng.randrange(1, 4))))
            elif op < 0.75:
                gone = [row[0] for row in conn.execute("SELECT turn_id FROM turns ORDER BY random() LIMIT 3")]
                conn.executemany("DELETE FROM turns WHERE turn_id = ?", [(turn_id,) for turn_id in gone])
                index.reconcile(conn)
            elif op < 0.95:
                row = conn.execute("SELECT session_id, turn_index FROM turns ORDER BY random() LIMIT 1").fetchone()
                if row:
                    moved = BASE + rng.randrange(3) * DAY + 5000
                    _turn(conn, row[0], row[1], moved, " ".join(rng.sample(WORDS, 2)), "x")
            else:
                index.rebuild(conn)
        index.build_pending(conn)
    conn.close()


class Client:
    """A bare LSP client over the server's stdio (requests from several threads)."""

    def __init__(self, env: dict[str, str], prelude: str) -> None:
        code = prelude + "import sys; sys.argv = ['pimem', 'serve']; from pimem.cli import main; sys.exit(main())"
        self.process = subprocess.Popen([sys.executable, "-c", code], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                        stderr=subprocess.DEVNULL, env=env)
        self.lock = threading.Lock()
        self.number = 0
        self.waiting: dict[int, threading.Event] = {}
        self.replies: dict[int, Any] = {}
        threading.Thread(target=self._pump, daemon=True).start()
        self.call("initialize", {"processId": None, "rootUri": None, "capabilities": {}})
        self.send({"jsonrpc": "2.0", "method": "initialized", "params": {}})

    def _pump(self) -> None:
        out = self.process.stdout
        assert out is not None
        while True:
            header = b""
            while not header.endswith(b"\r\n\r\n"):
                byte = out.read(1)
                if not byte:
                    return
                header += byte
            length = next(int(line.split(b":")[1]) for line in header.split(b"\r\n")
                          if line.lower().startswith(b"content-length"))
            message = json.loads(out.read(length))
            if "method" in message and "id" in message:
                self.send({"jsonrpc": "2.0", "id": message["id"], "result": None})
            elif "id" in message:
                self.replies[message["id"]] = message
                self.waiting.pop(message["id"]).set()

    def send(self, message: dict[str, Any]) -> None:
        data = json.dumps(message).encode()
        assert self.process.stdin is not None
        with self.lock:
            self.process.stdin.write(b"Content-Length: %d\r\n\r\n" % len(data) + data)
            self.process.stdin.flush()

    def call(self, method: str, params: dict[str, Any]) -> Any:
        with self.lock:
            self.number += 1
            number = self.number
            done = self.waiting[number] = threading.Event()
        self.send({"jsonrpc": "2.0", "id": number, "method": method, "params": params})
        done.wait(60)
        return self.replies.pop(number)

    def ask(self, text: str) -> list[tuple[str, str]]:
        rows = self.call("pimem/recall", {"text": text, "limit": 20})["result"]["results"]
        return [(row["sessionId"], row["turnId"]) for row in rows]

    def close(self) -> None:
        assert self.process.stdin is not None
        self.process.stdin.close()
        self.process.wait(10)


def from_table(conn: sqlite3.Connection, text: str) -> list[tuple[str, str]]:
    ranking._RANKED.clear()
    found = parse_text(text)
    rows = recall_conversations(conn, found, make_query([term.term for term in found[:8]], 20)).rows
    return [(row.session_id, row.turn_id) for row in rows]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seed", type=int, default=13)
    parser.add_argument("--steps", type=int, default=400)
    parser.add_argument("--exact-stats", action="store_true")
    parser.add_argument("--no-docmap", action="store_true")
    args = parser.parse_args()
    prelude = ""
    if args.exact_stats:
        prelude += ("from pimem.recall import ranking; ranking.CACHED_DF = 10**12; "
                    "ranking._TOTALS = type('Unkept', (dict,), {'get': lambda self, key: None})(); ")
    if args.no_docmap:
        prelude += "from pimem.recall import docmap; docmap.enable = lambda: None; "
    with tempfile.TemporaryDirectory() as home:
        db = str(Path(home) / "memory.db")
        connect(db).close()
        write(db, args.seed * 7, 30)
        server = Client(dict(os.environ, HOME=home, MEMORY_DB_PATH=db), prelude)
        stop, errors, asked = threading.Event(), [], [0]

        def asker(number: int) -> None:
            rng = random.Random(number)
            while not stop.is_set():
                reply = server.call("pimem/recall", {"text": rng.choice(QUESTIONS), "limit": 20})
                asked[0] += 1
                if "error" in reply:
                    errors.append(reply["error"])
        askers = [threading.Thread(target=asker, args=(number,)) for number in range(4)]
        for thread in askers:
            thread.start()
        writer = multiprocessing.get_context("spawn").Process(target=write, args=(db, args.seed, args.steps))
        writer.start()
        writer.join()
        stop.set()
        for thread in askers:
            thread.join()
        conn = connect(db)
        differ = [text for text in QUESTIONS if server.ask(text) != from_table(conn, text)]
        server.close()
        print(f"questions asked while writing: {asked[0]}, errors: {len(errors)}, writer exit: {writer.exitcode}; "
              f"answers unlike the table's afterwards: {len(differ)} of {len(QUESTIONS)} {differ}")


if __name__ == "__main__":
    main()
