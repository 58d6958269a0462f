"""Random stores for recall tests: turns whose texts mix English, code, wildcards and CJK."""

from __future__ import annotations

import random
import sqlite3

from pimem import index
from pimem.store import SessionRow, encode_tool_names, transaction, upsert_session

WORDS = [
    "flamingo", "cache", "payroll", "zeta_ratelimit", "100%", "a_b", "acb", "100x", "C:\\path\\file",
    "c:\\PATH\\File", "slugify", "Slugify(title)", "LIKE", "escape", "Ärger", "ÄRGER", "ärger", "ÜBERSCHREIBEN",
    "ΟΔΟΣ", "οδος", "İstanbul", "straße", "STRASSE", "缓存", "锁", "加锁", "中文项目", "你好", "世界", "的",
    "def", "return", "x.y()", "{}", "=>", "\\", "%", "_", "go", "Go", "a", "e", "the", "bug", "ß", "ǅ", "K",
]
SOURCES = ("pi", "claude", "codex")
CWDS = ("/tmp/p/webshop", "/tmp/p/webshop/sub", "/tmp/p/payroll", "/tmp/p/中文项目", "/tmp/p/web")


def random_text(rng: random.Random, low: int, high: int) -> str:
    parts = []
    for _ in range(rng.randint(low, high)):
        word = rng.choice(WORDS)
        if rng.random() < 0.15:
            word = word.upper() if rng.random() < 0.5 else word.capitalize()
        parts.append(word)
    separator = rng.choice([" ", "", "\n", " ", ", "])
    return separator.join(parts)


def build_store(conn: sqlite3.Connection, rng: random.Random, turns: int, *, copies: int = 0,
                unindexed: int = 0) -> None:
    """Write ``turns`` random turns the way the sync engine does (row + doc; 90% with their index
    postings built, the last 10% still pending), plus ``copies`` exact copies of earlier exchanges in
    other sessions, plus ``unindexed`` rows written like the Pi extension does (no doc at all)."""
    fts = index.fts_enabled(conn)
    made: list[tuple[int, str, str]] = []
    with transaction(conn):
        for session in range(max(1, turns // 5)):
            source = SOURCES[session % 3]
            upsert_session(conn, SessionRow(f"{source}:s{session}", source, rng.choice(CWDS), 0, None, f"/x/{session}"))
        for number in range(turns + copies):
            session = rng.randrange(max(1, turns // 5))
            source = SOURCES[session % 3]
            if number >= turns and made:
                ts, user, reply = rng.choice(made)
            else:
                # Many equal timestamps (ties matter) spread over days (the index is bucketed by day).
                ts = 1_700_000_000_000 + rng.randrange(0, 50) * rng.choice((1000, 28_800_000))
                user, reply = random_text(rng, 0, 6), random_text(rng, 0, 12)
                made.append((ts, user, reply))
            turn_id = f"{source}:s{session}:m{number:05d}"
            conn.execute(
                "INSERT INTO turns (turn_id, session_id, turn_index, ts, user_text, reply_text, tool_names, "
                "user_message_id) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                (turn_id, f"{source}:s{session}", number, ts, user, reply, encode_tool_names(["bash"]), f"m{number}"),
            )
            index.put(conn, turn_id, ts, user, reply, number + 1, None, fts=fts)
            if number == (turns + copies) * 9 // 10:
                conn.execute("COMMIT")
                index.build_pending(conn)   # the rest stays pending (not in the FTS tables yet)
                conn.execute("BEGIN IMMEDIATE")
        index.catch_up(conn)
    # Rows the extension inserts on its own, after pimem's last write: not indexed.
    for number in range(unindexed):
        session = rng.randrange(max(1, turns // 5))
        source = SOURCES[session % 3]
        conn.execute(
            "INSERT OR IGNORE INTO turns (turn_id, session_id, turn_index, ts, user_text, reply_text, tool_names, "
            "user_message_id) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            (f"{source}:s{session}:ext{number}", f"{source}:s{session}", 0, 1_700_000_000_000 + number,
             random_text(rng, 1, 5), random_text(rng, 0, 8), None, f"ext{number}"),
        )


def random_entities(rng: random.Random, conn: sqlite3.Connection) -> list[str]:
    """Entities that often hit: dictionary words, substrings of stored texts, odd characters."""
    rows = conn.execute("SELECT user_text, reply_text FROM turns ORDER BY random() LIMIT 3").fetchall()
    entities = []
    for _ in range(rng.randint(1, 4)):
        kind = rng.random()
        if kind < 0.4:
            entities.append(rng.choice(WORDS))
        elif kind < 0.75 and rows:
            text = rng.choice(rows)[rng.randrange(2)] or "x"
            start = rng.randrange(len(text))
            entities.append(text[start:start + rng.randint(1, 6)])
        else:
            entities.append("".join(rng.choice("aAbß缓存锁%_\\ǅK.(") for _ in range(rng.randint(1, 3))))
    return [entity if entity.strip() else "x" for entity in entities]
