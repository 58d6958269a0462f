#!/usr/bin/env python3
"""Experiment (issue 21, r18-import): where the index build's CPU goes, statement by statement.

Copies an imported store, drops its postings (``index.rebuild``: every doc pending), turns bulk mode on
as a first import does (``index.set_bulk``) and writes the pending docs as ``index.build_pending`` does
without a word helper process (batches of ``index.BUILD_BATCH`` docs, one transaction each, the same
statements in the same order), timing each step's CPU in this process: the batch's ``SELECT``, the
trigram texts (``index.index_text``), each FTS5 insert, the index log, the word texts
(``words.word_texts``), ``pimem_word_docs``, the deletes, the commit, and each table's ``optimize``.

FTS5 writes a table's pending postings to disk at the commit, or earlier when a statement of the
transaction opens a statement journal (SQLite then calls every written FTS5 table's ``xSavepoint``,
which flushes): ``INSERT OR REPLACE INTO pimem_word_docs`` does (its ``NOT NULL`` columns make it
abortable), so after the FTS5 inserts its first row carries the flush of all three tables.
``--word-docs first`` writes that table at the start of each transaction instead, to see the flush in
the commit.

    .venv/bin/python bench/experiments/index_parts.py STORE/memory.db [--word-docs first] [--runs 2]

Results are in docs/benchmarks.md (r18-import).
"""

from __future__ import annotations

import argparse
import os
import sqlite3
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

from pimem import index, words
from pimem.store import connect, transaction
from pimem.store.batches import placeholders

WORD_DOCS = ("INSERT OR REPLACE INTO pimem_word_docs(doc_key, session, user_chars, reply_chars) "
             "VALUES (?, ?, ?, ?)")


class Clock:
    """CPU seconds of this process per step."""

    def __init__(self) -> None:
        self.spent: dict[str, float] = defaultdict(float)
        self.last = time.process_time()

    def tick(self, step: str) -> None:
        now = time.process_time()
        self.spent[step] += now - self.last
        self.last = now


def build(store: Path, copy: Path, word_docs_first: bool) -> dict[str, float]:
    for suffix in ("", "-wal", "-shm"):
        Path(f"{copy}{suffix}").unlink(missing_ok=True)
    with sqlite3.connect(f"file:{store}?mode=ro", uri=True) as original, sqlite3.connect(copy) as target:
        original.backup(target)
    conn = connect(copy)
    with transaction(conn):
        index.rebuild(conn)
        index.set_bulk(conn, True)
    clock = Clock()
    while True:
        with transaction(conn):
            rows = conn.execute(
                "SELECT p.doc_key, t.user_text, t.reply_text, s.rowid FROM pimem_pending p "
                "LEFT JOIN pimem_docs d ON d.doc_key = p.doc_key LEFT JOIN turns t ON t.turn_id = d.turn_id "
                "LEFT JOIN sessions s ON s.session_id = t.session_id "
                f"ORDER BY p.doc_key LIMIT {index.BUILD_BATCH}").fetchall()
            clock.tick("select")
            if not rows:
                break
            docs = [words.WordDoc(key, int(session or 0), user, reply or "")
                    for key, user, reply, session in rows if user is not None]
            if word_docs_first:
                conn.executemany(WORD_DOCS, [(doc.doc_key, doc.session, len(doc.user_text), len(doc.reply_text))
                                             for doc in docs])
                clock.tick("pimem_word_docs")
            user = [(doc.doc_key, index.index_text(doc.user_text)) for doc in docs]
            reply = [(doc.doc_key, index.index_text(doc.reply_text)) for doc in docs]
            clock.tick("trigram texts (lower)")
            conn.executemany("INSERT INTO pimem_fts_user(rowid, text) VALUES (?, ?)", user)
            clock.tick("FTS5 insert: pimem_fts_user")
            conn.executemany("INSERT INTO pimem_fts_reply(rowid, text) VALUES (?, ?)", reply)
            clock.tick("FTS5 insert: pimem_fts_reply")
            conn.executemany("INSERT INTO pimem_index_log(doc_key) VALUES (?)", [(doc.doc_key,) for doc in docs])
            clock.tick("pimem_index_log")
            made = words.word_texts([text for doc in docs for text in (doc.user_text, doc.reply_text)])
            clock.tick("word texts (words.word_texts)")
            conn.executemany(f"INSERT INTO {words.WORDS_TABLE}(rowid, user, reply) VALUES (?, ?, ?)",
                             [(doc.doc_key, made[2 * number], made[2 * number + 1]) for number, doc in enumerate(docs)])
            clock.tick("FTS5 insert: pimem_words")
            if not word_docs_first:
                conn.executemany(WORD_DOCS, [(doc.doc_key, doc.session, len(doc.user_text), len(doc.reply_text))
                                             for doc in docs])
                clock.tick("pimem_word_docs")
            keys = [row[0] for row in rows]
            conn.execute(f"DELETE FROM pimem_words_pending WHERE doc_key IN ({placeholders(len(keys))})", keys)
            conn.execute(f"DELETE FROM pimem_pending WHERE doc_key IN ({placeholders(len(keys))})", keys)
            clock.tick("deletes")
        clock.tick("commit")
    for table in (*index.FTS_TABLES, words.WORDS_TABLE):
        with transaction(conn):
            conn.execute(f"INSERT INTO {table}({table}) VALUES ('optimize')")
        clock.tick(f"optimize: {table}")
    conn.close()
    for suffix in ("", "-wal", "-shm"):
        Path(f"{copy}{suffix}").unlink(missing_ok=True)
    return dict(clock.spent)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("store", type=Path, help="an imported memory.db (read, not changed)")
    parser.add_argument("--word-docs", choices=("last", "first"), default="last",
                        help="where pimem_word_docs is written in each transaction (pimem: last)")
    parser.add_argument("--runs", type=int, default=1)
    args = parser.parse_args()
    runs = []
    with tempfile.TemporaryDirectory(prefix="pimem-parts-") as directory:
        for _ in range(args.runs):
            runs.append(build(args.store, Path(directory) / "copy.db", args.word_docs == "first"))
    print(f"- {args.store}, pimem_word_docs {args.word_docs}, {args.runs} run(s), load average "
          f"{' / '.join(f'{value:.2f}' for value in os.getloadavg())}")
    print("| step | CPU s per run |\n|---|---|")
    for step in runs[0]:
        print(f"| {step} | {', '.join(f'{run.get(step, 0.0):.2f}' for run in runs)} |")
    print(f"| total | {', '.join(f'{sum(run.values()):.2f}' for run in runs)} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
