"""The LongMemEval day-zero harness (bench/lme/) end to end on its synthetic slice: no network, no LME
data. The slice's answers are known by construction (bench/lme/synthetic.py), so the figures are
asserted: writer (both shapes) -> pimem sync -> evaluate (pimem, the BM25 reference, a plugged ranker)
-> metrics, and the dev/holdout split."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parent.parent
LME = REPO / "bench" / "lme"
RUN = LME / "run.py"

# A plugged ranker (``--ranker module:function``): for each question, a distractor session first and
# then both copies of the session whose user text holds the question's needle word (its capitalised
# rare word). Distinct conversations: [distractor, answer], so the answer's rank is 2 by construction.
PLUGGED = '''
import re
import sqlite3


def rank(store_path, question):
    needle = [w for w in re.findall(r"[A-Z][a-z]{5,}", question) if w not in ("Where", "Which", "What", "Emily")][-1]
    conn = sqlite3.connect(f"file:{store_path}?mode=ro", uri=True)
    hits = [row[0] for row in conn.execute(
        "SELECT DISTINCT session_id FROM turns WHERE user_text LIKE ? OR reply_text LIKE ? ORDER BY session_id",
        (f"%{needle}%", f"%{needle}%"))]
    other = conn.execute("SELECT t.session_id FROM turns t WHERE t.session_id NOT IN (SELECT session_id FROM "
                         "turns WHERE user_text LIKE ? OR reply_text LIKE ?) ORDER BY t.session_id LIMIT 1",
                         (f"%{needle}%", f"%{needle}%")).fetchone()[0]
    return [other, *hits]
'''


def run(*args: str, cwd: Path = REPO) -> subprocess.CompletedProcess[str]:
    completed = subprocess.run([sys.executable, str(RUN), *args], capture_output=True, text=True, timeout=600,
                               cwd=cwd, check=False)
    assert completed.returncode == 0, completed.stdout[-3000:] + completed.stderr[-3000:]
    return completed


@pytest.fixture(scope="module")
def slice_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("lme") / "slice.json"
    run("synthetic", "--out", str(path))
    return path


def test_the_split_keeps_the_first_hundred_answerable_questions_out(slice_file: Path) -> None:
    sys.path.insert(0, str(LME))
    try:
        import data
    finally:
        sys.path.remove(str(LME))
    questions = data.load_questions(slice_file)
    dev, holdout = data.split(questions)
    assert [q["question_id"] for q in holdout] == [f"hold_{n:03d}" for n in range(100)]
    assert [q["question_id"] for q in dev] == [f"synth_{n}" for n in range(6)]   # no abstention question
    described = json.loads(run("describe", "--data", str(slice_file)).stdout)
    assert (described["total"], described["abstention"], described["dev"], described["holdout"],
            described["uniqueSessions"]) == (107, 1, 6, 100, 30)


@pytest.mark.slow
@pytest.mark.parametrize("shape", ["day0", "real"])
def test_the_harness_end_to_end_on_the_synthetic_slice(shape: str, slice_file: Path, tmp_path: Path) -> None:
    corpus = tmp_path / shape
    built = json.loads(run("build", "--data", str(slice_file), "--shape", shape, "--dir", str(corpus)).stdout)
    # Every session reaches the store through both agents (day0's Codex files gave 0 turns before).
    assert (built["sessions"], built["sync"]["claude"], built["sync"]["codex"]) == (30, 30, 30)
    assert built["sync"]["issues"] == []
    (tmp_path / "plugged_rank.py").write_text(PLUGGED, encoding="utf-8")
    results = tmp_path / "results.json"
    run("evaluate", "--data", str(slice_file), "--dir", str(corpus), "--ranker", "pimem", "--ranker", "bm25",
        "--ranker", "plugged_rank:rank", "--results", str(results), cwd=tmp_path)
    report: dict[str, Any] = json.loads(results.read_text(encoding="utf-8"))
    assert report["set"] == "dev" and report["questions"] == 6
    figures = report["results"]
    # pimem finds every needle first, the one said only by the assistant that opens its session included.
    assert {key: figures["pimem"]["all"][key] for key in ("n", "hit1", "hit5", "found50", "mrr")} == {
        "n": 6, "hit1": 6, "hit5": 6, "found50": 6, "mrr": 1.0}
    assert figures["pimem"]["single-session-assistant"]["hit1"] == 1
    # The reference reads user turns only: it finds the five facts the user said, not the assistant's.
    assert figures["bm25"]["all"]["hit1"] == 5
    assert figures["bm25"]["single-session-assistant"]["found50"] == 0
    # Both copies of a conversation count once: the plugged ranker's answer is always second.
    assert {key: figures["plugged_rank:rank"]["all"][key] for key in ("hit1", "hit5", "found50", "mrr")} == {
        "hit1": 0, "hit5": 6, "found50": 6, "mrr": 0.5}
    ranks = {entry["id"]: entry["rank"] for entry in report["perQuestion"]["plugged_rank:rank"]}
    assert ranks == {f"synth_{n}": 2 for n in range(6)}
    # A proxy question file (bench/lme/proxy.py): each question's answer is its one session; halves reported.
    proxy_file = tmp_path / "proxy.json"
    proxy_file.write_text(json.dumps({"questions": [
        {"id": "p0", "question": "Where does my sister Emily live now, Qorvenna?",
         "answer_session_id": "answer_synth_00",
         "source_question_id": "synth_0", "source_type": "single-session-user"},
        {"id": "p1", "question": "What is the long book we read in the club, Malvoreth?",
         "answer_session_id": "answer_synth_02", "source_question_id": "synth_2", "source_type": "multi-session"}]}))
    run("evaluate", "--data", str(slice_file), "--dir", str(corpus), "--ranker", "pimem", "--ranker", "bm25",
        "--ranker", "pimem-rrf", "--questions", str(proxy_file), "--results", str(results), cwd=tmp_path)
    report = json.loads(results.read_text(encoding="utf-8"))
    assert report["questions"] == 2 and report["set"] == str(proxy_file)
    for ranker in ("pimem", "bm25", "pimem-rrf"):   # pimem-rrf: the passage head as before round 17
        assert [report["results"][ranker][part]["hit1"] for part in ("all", "even half", "odd half")] == [2, 1, 1]
    assert report["results"]["pimem"]["from multi-session"]["n"] == 1


def _proxy_modules() -> tuple[Any, Any]:
    sys.path.insert(0, str(LME))
    try:
        import data
        import proxy
    finally:
        sys.path.remove(str(LME))
    return data, proxy


def test_the_proxy_reads_dev_evidence_turns_and_never_a_held_out_session(slice_file: Path) -> None:
    data, proxy = _proxy_modules()
    questions = data.load_questions(slice_file)
    # The user evidence turns of the dev answer sessions; the assistant's fact is not a user turn.
    assert sorted(item.session for item in proxy.evidence(questions)) == [f"answer_synth_{n:02d}" for n in range(5)]
    # A session that also answers a held-out question is left out.
    questions[0]["answer_session_ids"] = ["answer_synth_01"]
    assert "answer_synth_01" not in {item.session for item in proxy.evidence(questions)}


def test_a_proxy_file_touching_the_held_out_set_or_a_session_twice_is_refused(slice_file: Path) -> None:
    data, proxy = _proxy_modules()
    questions = data.load_questions(slice_file)
    good = {"id": "p0", "question": "Where did Emily move?", "answer_session_id": "answer_synth_00",
            "source_question_id": "synth_0"}
    proxy.check(questions, [good])
    for bad in ({**good, "source_question_id": "hold_000"},              # a held-out source question
                {**good, "answer_session_id": "synth_29"},               # a held-out answer session
                {**good, "answer_session_id": "answer_synth_01"}):       # not an answer of its source
        with pytest.raises(SystemExit):
            proxy.check(questions, [bad])
    with pytest.raises(SystemExit):
        proxy.check(questions, [good, {**good, "id": "p1"}])             # two questions on one session


def test_the_copies_of_an_answer_session_are_the_sessions_with_the_very_same_turns() -> None:
    _, proxy = _proxy_modules()
    said = [{"role": "user", "content": "I adopted a cat named Tibblewick."}, {"role": "assistant", "content": "Nice."}]
    other = [{"role": "user", "content": "I adopted a cat named Tibblewick."}, {"role": "assistant", "content": "Ok."}]
    question = {"haystack_session_ids": ["answer_a", "a", "b"],
                "haystack_dates": ["2023/05/01 (Mon) 08:00", "2023/05/09 (Tue) 09:00", "2023/05/02 (Tue) 08:00"],
                "haystack_sessions": [said, [dict(t) for t in said], other]}
    # The same turns under another id and date are a copy; one reply apart is not.
    assert proxy.copies([question], ["answer_a", "b"]) == {"answer_a": ["a"], "b": []}


def test_the_haystack_candidates_answer_no_question_and_copy_no_answer(slice_file: Path) -> None:
    data, proxy = _proxy_modules()
    questions = data.load_questions(slice_file)
    haystack = questions[0]     # the first occurrence of every session: the one data.unique_sessions keeps
    ids = haystack["haystack_session_ids"]
    # synth_10 repeats the held-out answer synth_29's user text (spaces aside) with other replies: a copy.
    copied = [dict(t) if t["role"] == "user" else {"role": "assistant", "content": "Another reply."}
              for t in haystack["haystack_sessions"][ids.index("synth_29")]]
    copied[0]["content"] = "  " + copied[0]["content"].replace(" ", "  ") + " "
    haystack["haystack_sessions"][ids.index("synth_10")] = copied
    # synth_11 keeps a sentence of synth_29 but not all its user text: not a copy.
    haystack["haystack_sessions"][ids.index("synth_11")][0]["content"] = "I moved my desk to the window."
    items = list(proxy.others(questions))
    found = [item.session for item in items]
    assert "synth_29" not in found and "synth_10" not in found and "synth_11" in found
    assert not any(session.startswith("answer_") for session in found)      # dev answer sessions left out
    assert len(found) == len(set(found)) and set(found) <= {f"synth_{n:02d}" for n in range(6, 29)}
    assert found == sorted(found, key=lambda s: hashlib.sha1(s.encode()).hexdigest())
    turns = haystack["haystack_sessions"][ids.index(found[0])]
    assert items[0].turns == [(i, t["content"]) for i, t in enumerate(turns) if t["role"] == "user"]
    assert items[0].source == proxy.HAYSTACK
    # check: a haystack question is accepted on a candidate only.
    good = {"id": "h0", "question": "Where did I move my desk to?", "answer_session_id": "synth_11",
            "source": proxy.HAYSTACK, "evidence_turn": 0}
    proxy.check(questions, [good])
    for session in ("synth_29", "synth_10", "answer_synth_00"):   # held out, a copy of it, a dev answer
        with pytest.raises(SystemExit):
            proxy.check(questions, [{**good, "answer_session_id": session}])
    with pytest.raises(SystemExit):
        proxy.check(questions, [good, {**good, "id": "h1"}])


PROXY_FILES = ("proxy_ssu.json", "proxy_ssu2.json", "proxy_ssu3.json",   # rounds 14, 17, 24, in candidate order
               "proxy_ssu4.json")                                         # round 29: haystack sessions


def test_the_hand_written_proxy_files_keep_their_rules() -> None:
    _, proxy = _proxy_modules()
    documents = [json.loads((LME / name).read_text(encoding="utf-8")) for name in PROXY_FILES]
    for number, document in enumerate(documents):
        proxy.rules(document, documents[:number])
    # The first three cover the 609 candidates of `run.py proxy-turns` once, one after the other; the fourth the
    # first 615 of `run.py proxy-turns --source haystack`.
    assert [(d.get("source", "dev"), d.get("first_candidate", 0), d["candidates"]) for d in documents] == [
        ("dev", 0, 200), ("dev", 200, 200), ("dev", 400, 209), ("haystack", 0, 615)]


def test_a_haystack_proxy_file_breaking_its_rules_is_refused() -> None:
    _, proxy = _proxy_modules()
    earlier = [json.loads((LME / name).read_text(encoding="utf-8")) for name in PROXY_FILES[:3]]
    good = json.loads((LME / "proxy_ssu4.json").read_text(encoding="utf-8"))
    proxy.rules(good, earlier)          # its candidates 0-614 are another list's: no overlap with round 14's
    first, rest = good["questions"][0], good["questions"][1:]
    dev_item = {**earlier[2]["questions"][0]}
    broken = [
        {**good, "questions": [{k: v for k, v in first.items() if k != "source"}, *rest]},      # no source
        {**good, "questions": [{**first, "source": "dev"}, *rest]},                             # another source
        {**good, "questions": [{k: v for k, v in first.items() if k != "evidence_turn"}, *rest]},
        {**good, "questions": [dev_item, *rest]},                          # a dev question in a haystack file
        {**good, "questions": rest},                                       # a candidate lost
    ]
    for document in broken:
        with pytest.raises(SystemExit):
            proxy.rules(document, earlier)
    other = {"source": "haystack", "first_candidate": 600, "candidates": 100, "questions": [], "skipped": []}
    proxy.rules(good, [*earlier, {**other, "source": "dev"}])      # dev candidates 600-699: another list
    with pytest.raises(SystemExit):                                 # haystack candidates 600-699 overlap its own
        proxy.rules(good, [*earlier, other])


def test_a_proxy_file_breaking_its_writing_rules_is_refused() -> None:
    _, proxy = _proxy_modules()
    earlier = [json.loads((LME / name).read_text(encoding="utf-8")) for name in PROXY_FILES[:2]]
    good = json.loads((LME / "proxy_ssu3.json").read_text(encoding="utf-8"))
    proxy.rules(good, earlier)
    first, second = good["questions"][0], good["questions"][1]
    skip = good["skipped"][0]

    def changed(questions: list[dict[str, Any]] | None = None, skipped: list[dict[str, Any]] | None = None,
                **fields: Any) -> dict[str, Any]:
        return {**good, "questions": good["questions"] if questions is None else questions,
                "skipped": good["skipped"] if skipped is None else skipped, **fields}

    rest, skips = good["questions"][1:], good["skipped"][1:]
    broken = [
        changed([{**first, "question": "Which LinkedIn group?"}, *rest]),                  # under 5 words
        changed([{**first, "question": "Which LinkedIn group did I join yesterday, the one for the marketing people?"},
                 *rest]),                                                                # over 12 words
        changed([{**first, "question": "Which LinkedIn group did I join for marketing people."}, *rest]),
        changed([first, {**second, "answer_session_id": first["answer_session_id"]}, *rest[1:]]),
        changed([first, {**second, "id": first["id"]}, *rest[1:]]),
        changed([{key: value for key, value in first.items() if key != "evidence_turn"}, *rest]),
        changed(skipped=[{**skip, "session": first["answer_session_id"]}, *skips]),       # asked and skipped
        changed(skipped=[{**skip, "candidate": 399}, *skips]),                            # outside its range
        changed(skipped=[{**skip, "why": " "}, *skips]),                                  # no reason
        changed(skipped=skips),                                                           # a candidate lost
        changed(skipped=[{**s, "candidate": s["candidate"] - 100} for s in good["skipped"]],
                first_candidate=300),                                                     # overlaps round 17's
        changed([{**first, "answer_session_id": earlier[0]["questions"][0]["answer_session_id"]}, *rest]),
    ]
    for document in broken:
        with pytest.raises(SystemExit):
            proxy.rules(document, earlier)


@pytest.mark.skipif(not os.environ.get("PIMEM_LME_DATA"), reason="needs longmemeval_s_cleaned.json in PIMEM_LME_DATA")
def test_the_proxy_files_load_on_the_real_data_and_touch_no_held_out_question() -> None:
    data, proxy = _proxy_modules()
    questions = data.load_questions(Path(os.environ["PIMEM_LME_DATA"]))
    for name in PROXY_FILES:           # proxy.load runs proxy.check: a held-out source or session is refused
        document = json.loads((LME / name).read_text(encoding="utf-8"))
        assert len(proxy.load(LME / name, questions)) == len(document["questions"])
