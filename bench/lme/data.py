"""LongMemEval-S (cleaned) for the day-zero benchmark: the questions in the file's order, the dev/holdout
split and the unique haystack sessions (docs/benchmarks.md, "LongMemEval day-zero").

The official file is ``longmemeval_s_cleaned.json`` (MIT, huggingface ``xiaowu0162/longmemeval-cleaned``);
without network it is rebuilt by :func:`rebuild` from a public split copy (one file per question) and a
log that lists the question ids in the file's order.

**Holdout:** questions 1-100 of the non-abstention questions (``question_id`` not ending in ``_abs``),
in the file's order, are kept for acceptance; every other non-abstention question is the dev set.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

HOLDOUT_SIZE = 100
DATE_FORMAT = "%Y/%m/%d (%a) %H:%M"


@dataclass(frozen=True)
class Session:
    """One haystack session, as first met in the file's order (the day-zero protocol's dedupe)."""

    lme_id: str
    date: datetime
    turns: list[dict[str, str]]   # {"role": "user"|"assistant", "content": ...}


def load_questions(path: Path) -> list[dict[str, Any]]:
    questions = json.loads(path.read_text(encoding="utf-8"))
    if not isinstance(questions, list) or not all(isinstance(q, dict) and "question_id" in q for q in questions):
        raise SystemExit(f"{path}: not a LongMemEval file (a list of questions with question_id)")
    return questions


def answerable(questions: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    return [q for q in questions if not str(q["question_id"]).endswith("_abs")]


def split(questions: Sequence[dict[str, Any]]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(dev, holdout): the holdout is the first HOLDOUT_SIZE non-abstention questions in file order."""
    ordered = answerable(questions)
    return ordered[HOLDOUT_SIZE:], ordered[:HOLDOUT_SIZE]


def parse_date(text: str) -> datetime:
    """A haystack date ``2023/05/21 (Sun) 19:50``, read as UTC (as day0bench does)."""
    return datetime.strptime(text, DATE_FORMAT).replace(tzinfo=UTC)


def unique_sessions(questions: Sequence[dict[str, Any]]) -> Iterator[Session]:
    """Every haystack session once, by session id, with the date and turns of its first occurrence."""
    seen: set[str] = set()
    for question in questions:
        for lme_id, date, turns in zip(question["haystack_session_ids"], question["haystack_dates"],
                                       question["haystack_sessions"], strict=True):
            if lme_id in seen:
                continue
            seen.add(lme_id)
            yield Session(lme_id, parse_date(date), [{"role": t["role"], "content": t["content"]} for t in turns])


def rebuild(split_dir: Path, order_log: Path, extra: Sequence[Path], out: Path) -> dict[str, Any]:
    """Rebuild ``longmemeval_s_cleaned.json`` from a split copy: files ``<n>_<question_id>.json`` where ``n``
    is the question's number of haystack sessions (10 <= n < 100 for LME-S; smaller n are the oracle set,
    larger ones LME-M), ordered by ``order_log`` (JSON lines with ``question_id``, one per question in the
    file's order). ``extra`` files fill questions the split copy lacks; a question still missing falls
    back to its oracle file (its answer sessions only) and is counted in the returned report."""
    by_id: dict[str, dict[str, Any]] = {}
    oracle: dict[str, dict[str, Any]] = {}
    for path in sorted(split_dir.glob("*_*.json")):
        size = int(path.name.split("_", 1)[0])
        target = oracle if size < 10 else by_id if size < 100 else None
        if target is not None:
            question = json.loads(path.read_text(encoding="utf-8"))
            target[question["question_id"]] = question
    for path in extra:
        question = json.loads(path.read_text(encoding="utf-8"))
        question.pop("model_annotations", None)
        by_id.setdefault(question["question_id"], question)
    order = [json.loads(line)["question_id"] for line in order_log.read_text(encoding="utf-8").splitlines()
             if line.strip()]
    if len(order) != len(set(order)):
        raise SystemExit(f"{order_log}: a question id occurs twice")
    questions: list[dict[str, Any]] = []
    from_oracle: list[str] = []
    for question_id in order:
        question = by_id.get(question_id)
        if question is None:
            question = oracle[question_id]
            from_oracle.append(question_id)
        questions.append(question)
    out.write_text(json.dumps(questions, ensure_ascii=False), encoding="utf-8")
    return {"questions": len(questions), "fromOracle": from_oracle, **describe(questions)}


def describe(questions: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Counts to check a data file against the published ones (500 questions, 30 abstention, ~19,195
    unique sessions); the holdout's ids are not printed, only its size."""
    dev, holdout = split(questions)
    sessions = 0
    turns = 0
    for session in unique_sessions(questions):
        sessions += 1
        turns += len(session.turns)
    types: dict[str, int] = {}
    for question in dev:
        types[question["question_type"]] = types.get(question["question_type"], 0) + 1
    return {"total": len(questions), "abstention": len(questions) - len(answerable(questions)),
            "dev": len(dev), "holdout": len(holdout), "uniqueSessions": sessions, "messages": turns,
            "devTypes": dict(sorted(types.items()))}
