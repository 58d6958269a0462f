"""A small synthetic LongMemEval-shaped file whose answers are known by construction: the CI slice of the
day-zero harness (tests/test_bench_lme.py), no network and no LME data.

Thirty sessions of everyday chat share filler sentences; the first ``len(FACTS)`` each hold one fact in
a user message, with a word found nowhere else (the needle). The last fact is said by the assistant in
the message that **opens** its session (the shape pimem lost before it kept opening assistant text).
Questions, in file order: :data:`data.HOLDOUT_SIZE` held-out questions (the filler ones), one
abstention question, then one dev question per fact, phrased as a user asks, needle verbatim. The fact's
turn is marked ``has_answer`` as LongMemEval marks evidence turns (bench/lme/proxy.py reads the mark).
"""

from __future__ import annotations

import random
from typing import Any

import data

SESSIONS = 30
# (question type, the fact's sentence, the question), the needle is the capitalised rare word.
FACTS: tuple[tuple[str, str, str], ...] = (
    ("single-session-user", "My sister Emily just moved to Qorvenna, a small town by the sea.",
     "Where did I say my sister Emily moved? Qorvenna rings a bell."),
    ("knowledge-update", "I switched my running shoes to the Zephyrix trail model last week.",
     "Which running shoes did I switch to, the Zephyrix ones?"),
    ("multi-session", "Our book club is reading Malvoreth this month, it is long.",
     "How long is the book Malvoreth my book club reads?"),
    ("temporal-reasoning", "I adopted a cat named Tibblewick three weeks before my birthday.",
     "When did I adopt Tibblewick, my cat?"),
    ("single-session-preference", "For dinner parties I always cook with Brannoch cheese.",
     "What cheese did I say I use for dinner parties, Brannoch?"),
    ("single-session-assistant", "I recommended the Ostravelle hostel near the old harbour to you.",
     "What was the hostel near the old harbour you recommended, Ostravelle?"),
)
FILLER = (
    "Can you help me plan a weekly budget for groceries and rent?",
    "I have been trying to sleep better, any tips for a calmer evening routine?",
    "What are good stretches after a long day at the desk?",
    "Could you suggest a few easy recipes with lentils and rice?",
    "I want to learn a new language this year, where should I start?",
    "How do I keep houseplants alive in a dark apartment?",
)
REPLIES = (
    "Sure, let's break that down into a few simple steps you can follow.",
    "Here are some ideas that many people find helpful in that situation.",
    "Good question: it depends on your goals, but a gentle start works best.",
)


def session_id(index: int) -> str:
    return f"answer_synth_{index:02d}" if index < len(FACTS) else f"synth_{index:02d}"


def build(seed: int = 7) -> list[dict[str, Any]]:
    """The synthetic questions, in file order (holdout block, an abstention question, then dev)."""
    rng = random.Random(seed)
    ids: list[str] = []
    dates: list[str] = []
    sessions: list[list[dict[str, str]]] = []
    for index in range(SESSIONS):
        turns: list[dict[str, str]] = []
        for _ in range(3):
            turns.append({"role": "user", "content": rng.choice(FILLER)})
            turns.append({"role": "assistant", "content": rng.choice(REPLIES)})
        if index < len(FACTS):
            kind, fact, _question = FACTS[index]
            if kind == "single-session-assistant":
                # the session opens with it
                turns.insert(0, {"role": "assistant", "content": fact, "has_answer": True})
            else:
                turns.insert(2, {"role": "user", "content": fact, "has_answer": True})
                turns.insert(3, {"role": "assistant", "content": rng.choice(REPLIES)})
        ids.append(session_id(index))
        dates.append(f"2023/05/{1 + index % 28:02d} (Mon) {8 + index % 12:02d}:{index % 60:02d}")
        sessions.append(turns)
    haystack = {"haystack_session_ids": ids, "haystack_dates": dates, "haystack_sessions": sessions}
    questions: list[dict[str, Any]] = []
    for number in range(data.HOLDOUT_SIZE):
        questions.append({"question_id": f"hold_{number:03d}", "question_type": "single-session-user",
                          "question": FILLER[number % len(FILLER)], "question_date": "2023/06/01 (Thu) 10:00",
                          "answer": "", "answer_session_ids": [session_id(SESSIONS - 1)], **haystack})
    questions.append({"question_id": "synth_none_abs", "question_type": "single-session-user",
                      "question": "What is my neighbour's parrot called?", "question_date": "2023/06/01 (Thu) 10:00",
                      "answer": "", "answer_session_ids": [], **haystack})
    for index, (kind, _fact, question) in enumerate(FACTS):
        questions.append({"question_id": f"synth_{index}", "question_type": kind, "question": question,
                          "question_date": "2023/06/01 (Thu) 10:00", "answer": "",
                          "answer_session_ids": [session_id(index)], **haystack})
    return questions
