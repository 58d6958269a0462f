"""The seed's recall (pi-session-memory 0.1.0), run on pimem's store for the recall comparison."""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from typing import Any

# The seed's recall SQL (pi-session-memory 0.1.0 src/retriever.ts recallTurns, verbatim modulo the
# JavaScript template: one score term and one WHERE term per entity).
SEED_SCORE_TERM = """(
    CASE WHEN LOWER(turns.user_text) LIKE ? ESCAPE '\\' THEN 2 ELSE 0 END +
    CASE WHEN LOWER(turns.reply_text) LIKE ? ESCAPE '\\' THEN 1 ELSE 0 END
  )"""
SEED_WHERE_TERM = """(
    LOWER(turns.user_text) LIKE ? ESCAPE '\\' OR
    LOWER(turns.reply_text) LIKE ? ESCAPE '\\'
  )"""
SEED_SQL = """
    SELECT
      turns.turn_id,
      sessions.source,
      turns.ts,
      turns.user_text,
      turns.reply_text,
      ({score}) AS hits
    FROM turns
    JOIN sessions ON sessions.session_id = turns.session_id
    WHERE {where}
    ORDER BY hits DESC, turns.ts DESC
    LIMIT ?
  """


def seed_like_pattern(entity: str) -> str:
    """retriever.ts ``_likePattern``."""
    return "%" + entity.lower().replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"


def seed_recall(conn: sqlite3.Connection, entities: Sequence[str], top_k: int) -> list[tuple[Any, ...]]:
    sql = SEED_SQL.format(score=" + ".join([SEED_SCORE_TERM] * len(entities)),
                          where=" OR ".join([SEED_WHERE_TERM] * len(entities)))
    patterns = [pattern for entity in entities for pattern in (seed_like_pattern(entity),) * 2]
    return conn.execute(sql, [*patterns, *patterns, top_k]).fetchall()
