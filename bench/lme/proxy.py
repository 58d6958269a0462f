"""A hand-written dev proxy for LongMemEval's single-session-user questions (issue 21, round 14).

LongMemEval-S's single-session-user questions ("What degree did I graduate with?") are all in the held-out
set (the first 100 non-abstention questions). This module builds the material for a proxy of that kind from
**dev questions only**: the evidence turns (``has_answer: true``, role ``user``) of the dev questions' answer
sessions, one candidate session each, in a fixed order (by a hash of the session id, so the sample is spread
over every question type and not chosen by a ranking). A person then writes, by hand, one short question per
chosen turn, as the person who typed it would ask days later (``proxy_ssu.json``, ``proxy_ssu2.json`` and
``proxy_ssu3.json`` beside this file: candidates 0-199, 200-399 and 400-608, rounds 14, 17 and 24); the harness
asks those questions with the session as the answer (``run.py evaluate --questions FILE``).

Refusals (:func:`check`): a proxy question whose source question is held out, or whose answer session is an
answer session of a held-out question, is refused; the held-out questions' ids and answer sessions are used as
that filter only, never printed. :func:`rules` refuses a hand-written file that breaks its own writing rules
(checked without the data by ``tests/test_bench_lme.py``).

    python bench/lme/run.py proxy-turns --data DATA.json --count 200 [--skip 0]   # print the turns to read

A second source (round 29, ``proxy_ssu4.json``): the haystack sessions that answer **no** question (dev, held-out
or abstention) and whose user text is not an answer session's (a copy under another id): LongMemEval-S's haystacks
hold thousands of simulated personal sessions of other "users" beside ShareGPT / UltraChat filler. Each is its own
answer (``"source": "haystack"``); :func:`others` lists them, in the same sha1 order, with all their user turns:

    python bench/lme/run.py proxy-turns --source haystack --data DATA.json --count 400 [--skip 0]
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NoReturn

import data

MAX_SHOWN = 2000          # characters of a turn printed (the median evidence turn is ~280)
HAYSTACK = "haystack"     # the source of a proxy question asked of a session that answers no question


@dataclass(frozen=True)
class Evidence:
    session: str           # the LME answer session id
    source: str            # the dev question whose answer session it is
    source_type: str
    turns: list[tuple[int, str]]   # (turn index in the session, text) of its user evidence turns


def _held_out(questions: Sequence[dict[str, Any]]) -> tuple[set[str], set[str]]:
    _, holdout = data.split(questions)
    return ({q["question_id"] for q in holdout},
            {session for q in holdout for session in q["answer_session_ids"]})


def evidence(questions: Sequence[dict[str, Any]]) -> Iterator[Evidence]:
    """Every dev answer session holding a user evidence turn, once (its first dev question), in a fixed
    pseudo-random order (sha1 of the session id); sessions that answer a held-out question are left out."""
    dev, _ = data.split(questions)
    _, held_sessions = _held_out(questions)
    found: dict[str, Evidence] = {}
    for question in dev:
        answers = set(question["answer_session_ids"])
        for session, turns in zip(question["haystack_session_ids"], question["haystack_sessions"], strict=True):
            if session not in answers or session in found or session in held_sessions:
                continue
            typed = [(i, t["content"]) for i, t in enumerate(turns) if t.get("has_answer") and t["role"] == "user"]
            if typed:
                found[session] = Evidence(session, question["question_id"], question["question_type"], typed)
    yield from sorted(found.values(), key=lambda e: hashlib.sha1(e.session.encode()).hexdigest())


def _user_text(turns: Sequence[dict[str, str]]) -> str:
    """A session's user text, spaces collapsed: two sessions with the same one are copies of one conversation
    (LongMemEval-S stores answer sessions again under another id, some with other assistant replies)."""
    return hashlib.sha1(json.dumps([" ".join(t["content"].split()) for t in turns if t["role"] == "user"]).encode()
                        ).hexdigest()


def others(questions: Sequence[dict[str, Any]]) -> Iterator[Evidence]:
    """Every haystack session with a user turn that is no question's answer session (dev, held-out or
    abstention) and has not the user text of one, once, in a fixed pseudo-random order (sha1 of the session
    id), with all its user turns: the candidates of a proxy whose answer is the session itself. The answer
    sessions (the held-out ones among them) are used as that filter only."""
    answers = {session for question in questions for session in question["answer_session_ids"]}
    sessions = list(data.unique_sessions(questions))
    answer_texts = {_user_text(s.turns) for s in sessions if s.lme_id in answers}
    found = [Evidence(s.lme_id, HAYSTACK, HAYSTACK,
                      [(i, t["content"]) for i, t in enumerate(s.turns) if t["role"] == "user"])
             for s in sessions if s.lme_id not in answers and _user_text(s.turns) not in answer_texts]
    yield from sorted((e for e in found if e.turns), key=lambda e: hashlib.sha1(e.session.encode()).hexdigest())


def print_turns(questions: Sequence[dict[str, Any]], count: int, skip: int, source: str = "dev",
                shown: int = MAX_SHOWN) -> None:
    for number, item in enumerate(others(questions) if source == HAYSTACK else evidence(questions)):
        if number < skip:
            continue
        if number >= skip + count:
            break
        print(f"=== #{number} session {item.session} source {item.source} [{item.source_type}]")
        for index, text in item.turns:
            part = text if len(text) <= shown else text[:shown] + " [...]"
            print(f"--- turn {index}: {part}")
        print()


def check(questions: Sequence[dict[str, Any]], proxy: Sequence[dict[str, Any]]) -> None:
    """Refuse a proxy file that touches the held-out set or breaks its own rules (one question per session,
    the source a dev question whose answer sessions hold that session; or, ``"source": "haystack"``, a
    candidate of :func:`others`: no question's answer session nor a copy of one)."""
    held_ids, held_sessions = _held_out(questions)
    dev, _ = data.split(questions)
    by_id = {q["question_id"]: q for q in dev}
    seen: set[str] = set()
    candidates = {e.session for e in others(questions)} if any(i.get("source") == HAYSTACK for i in proxy) else set()
    for item in proxy:
        if item.get("source_question_id") in held_ids or item["answer_session_id"] in held_sessions:
            raise SystemExit(f"proxy question {item['id']}: refers to the held-out set, refused")
        if item.get("source") == HAYSTACK:
            if item["answer_session_id"] not in candidates:
                raise SystemExit(f"proxy question {item['id']}: its session answers a question or copies an answer")
        elif (source := by_id.get(item["source_question_id"])) is None or (
                item["answer_session_id"] not in source["answer_session_ids"]):
            raise SystemExit(f"proxy question {item['id']}: its session is not an answer of a dev question")
        if item["answer_session_id"] in seen:
            raise SystemExit(f"proxy question {item['id']}: a second question on session {item['answer_session_id']}")
        seen.add(item["answer_session_id"])


WORDS = (5, 12)            # a hand-written question's length in words (round 14's rule)


def rules(document: dict[str, Any], earlier: Sequence[dict[str, Any]] = ()) -> None:
    """Refuse a hand-written proxy file (``proxy_ssu*.json``) that breaks the rules it was written under, without
    the LME data: each question 5-12 words and a question (first person is the writer's rule, not checked:
    round 14 has one without); one question per session, and no session
    both asked and skipped; each skip a candidate of the file's range (``first_candidate``, ``candidates``) with
    its reason, and every candidate either asked or skipped; no session or candidate of an ``earlier`` file again
    (candidates of the same ``source``: ``dev`` evidence sessions, or ``haystack`` sessions of :func:`others`,
    whose questions carry ``"source": "haystack"`` in place of a source question)."""
    first, count = document.get("first_candidate", 0), document["candidates"]

    def refuse(why: str) -> NoReturn:
        raise SystemExit(f"proxy file from candidate {first}: {why}")

    questions, skipped = document["questions"], document["skipped"]
    if len({item["id"] for item in questions}) != len(questions):
        refuse("two questions with one id")
    source = document.get("source", "dev")
    fields = ({"id", "question", "answer_session_id", "source", "evidence_turn"} if source == HAYSTACK
              else {"id", "question", "answer_session_id", "source_question_id", "source_type", "evidence_turn"})
    for item in questions:
        if fields - set(item) or (source == HAYSTACK) != (item.get("source") == HAYSTACK):
            refuse(f"question {item['id']} lacks a field or is not of the file's source")
        text = item["question"]
        if not WORDS[0] <= len(text.split()) <= WORDS[1] or not text.endswith("?"):
            refuse(f"question {item['id']} is not a question of {WORDS[0]}-{WORDS[1]} words")
    asked = [item["answer_session_id"] for item in questions]
    if len(set(asked)) != len(asked) or set(asked) & {skip["session"] for skip in skipped}:
        refuse("a session asked twice, or asked and skipped")
    numbers = [skip["candidate"] for skip in skipped]
    if (len(set(numbers)) != len(numbers) or any(not first <= n < first + count for n in numbers)
            or any(not skip["why"].strip() for skip in skipped)):
        refuse("a skip outside the candidates, twice, or without its reason")
    if len(questions) + len(skipped) != count:
        refuse(f"{len(questions)} questions and {len(skipped)} skips for {count} candidates")
    for other in earlier:
        start = other.get("first_candidate", 0)
        if (other.get("source", "dev") == source and first < start + other["candidates"]
                and start < first + count):
            refuse("its candidates overlap an earlier file's")
        if set(asked) & {item["answer_session_id"] for item in other["questions"]}:
            refuse("a session an earlier file already asks about")


def copies(questions: Sequence[dict[str, Any]], sessions: Iterable[str]) -> dict[str, list[str]]:
    """Per session, the other haystack sessions with the very same turns (LongMemEval-S holds many answer
    sessions twice, under another id and date: which copy a ranker puts first is a coin toss)."""
    def key(turns: Sequence[dict[str, str]]) -> str:
        return hashlib.sha1(json.dumps([(t["role"], t["content"]) for t in turns]).encode()).hexdigest()

    by_key: dict[str, list[str]] = {}
    of_session: dict[str, str] = {}
    for session in data.unique_sessions(questions):
        digest = key(session.turns)
        by_key.setdefault(digest, []).append(session.lme_id)
        of_session[session.lme_id] = digest
    return {s: [other for other in by_key[of_session[s]] if other != s] for s in sessions}


def load(path: Path, questions: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """The proxy file's questions in the harness's shape (``question_id``, ``question``, ``question_type``,
    ``answer_session_ids``; ``answer_copies``: sessions identical to the answer), checked by :func:`check`."""
    document = json.loads(path.read_text(encoding="utf-8"))
    proxy = document["questions"]
    check(questions, proxy)
    same = copies(questions, [item["answer_session_id"] for item in proxy])
    return [{"question_id": item["id"], "question": item["question"],
             "question_type": f"from {item.get('source_type', item.get('source', 'dev'))}",
             "answer_session_ids": [item["answer_session_id"]], "answer_copies": same[item["answer_session_id"]]}
            for item in proxy]
