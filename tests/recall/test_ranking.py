"""Free text ranks conversations through the word index (pimem/words.py, pimem/recall/ranking.py)."""

from __future__ import annotations

import itertools
import re
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from pimem import index, words
from pimem.recall import answers, make_query, ranking
from pimem.recall.freetext import STOPWORDS, parse_text, prose_stop_words, recall_conversations
from pimem.store import SessionRow, connect, get_meta, set_meta, transaction, upsert_session
from pimem.store.schema import LAYOUT
from support.passages import QUESTION, said_and_scattered

START = 1_700_000_000_000


def _session(conn: sqlite3.Connection, session_id: str, turns: list[tuple[str, str]], *, source: str = "pi",
             cwd: str = "/w", start: int = START, build: bool = True) -> None:
    """``turns`` written to the session (new, or grown as a sync of its longer transcript writes them) and indexed."""
    with transaction(conn):
        upsert_session(conn, SessionRow(session_id, source, cwd, start, None, f"/{session_id}.jsonl"))
        first = int(conn.execute("SELECT count(*) FROM turns WHERE session_id = ?", (session_id,)).fetchone()[0])
        for number, (user, reply) in enumerate(turns, start=first):
            turn_id, ts = f"{session_id}:{number}", start + number * 60_000
            conn.execute(
                "INSERT INTO turns (turn_id, session_id, turn_index, ts, user_text, reply_text, tool_names, "
                "user_message_id) VALUES (?, ?, ?, ?, ?, ?, NULL, ?)",
                (turn_id, session_id, number, ts, user, reply, turn_id))
            index.put(conn, turn_id, ts, user, reply, None, None, fts=True)
        index.catch_up(conn)
    if build:
        index.build_pending(conn)


def _ordinary_sessions(conn: sqlite3.Connection, first_hour: int) -> None:
    """Twenty one-turn sessions of ordinary turns (a user text of some 50 characters), an hour apart from
    ``first_hour`` hours after START: what gives the index its average length and the words their idf."""
    for number in range(20):
        _session(conn, f"pi:noise{number}", [(f"the weather was fine on day {number} of the trip", "Good.")],
                 start=START + (number + first_hour) * 3_600_000)


def ask(conn: sqlite3.Connection, text: str, limit: int = 10, offset: int = 0, **filters: object) -> list[str]:
    found = parse_text(text)
    base = make_query([c.term for c in found[:8]], limit, filters.get("sources"), filters.get("cwd"), offset)
    return [row.session_id for row in recall_conversations(conn, found, base).rows]


@pytest.fixture
def conn(db_path: Path) -> sqlite3.Connection:
    return connect(db_path)


def _history(conn: sqlite3.Connection) -> None:
    _session(conn, "pi:emily", [("My sister Emily just moved to Portland, she loves it there", "How nice!"),
                                ("What should I get her as a housewarming gift?", "A plant, maybe.")])
    _session(conn, "pi:dog", [("What breed is best for apartments? I have a golden retriever", "Retrievers..."),
                              ("my dog keeps barking at night", "Try a routine.")])
    _session(conn, "pi:cat", [("The application crashes when I change location settings", "Check the stack.")],
             source="claude", cwd="/w/app")
    for number in range(30):   # distractors that share the common words
        _session(conn, f"pi:noise{number}", [(f"where do people live in city {number}", "In houses."),
                                             ("help me with my application", "Sure, the application...")],
                 start=START + (number + 1) * 3_600_000)


def test_a_question_finds_its_conversation_first(conn: sqlite3.Connection) -> None:
    _history(conn)
    assert ask(conn, "Where does my sister Emily live?")[0] == "pi:emily"
    assert ask(conn, "What breed is my dog?")[0] == "pi:dog"


def test_words_not_substrings_and_stems(conn: sqlite3.Connection) -> None:
    _history(conn)
    assert "pi:cat" not in ask(conn, "cat")                 # not inside *application* or *location*
    assert ask(conn, "crashed")[0] == "pi:cat"               # crashes ~ crashed
    assert ask(conn, "barks")[0] == "pi:dog"


def test_one_row_per_conversation_paged_by_conversation(conn: sqlite3.Connection) -> None:
    _history(conn)
    first = ask(conn, "application help live", limit=10)
    second = ask(conn, "application help live", limit=10, offset=10)
    assert len(first) == 10 and len(set(first)) == 10
    assert not set(first) & set(second)
    everything = ask(conn, "application help live", limit=50)
    assert everything[:20] == first + second and len(set(everything)) == len(everything)


def test_filters_apply_to_conversations(conn: sqlite3.Connection) -> None:
    _history(conn)
    assert ask(conn, "application crashes", sources=["claude"]) == ["pi:cat"]
    assert ask(conn, "application crashes", cwd="/w/app") == ["pi:cat"]
    assert "pi:cat" not in ask(conn, "application crashes", sources=["pi"])


def test_a_result_says_which_words_matched(conn: sqlite3.Connection) -> None:
    _history(conn)
    found = parse_text("Where does my sister Emily live?")
    answer = recall_conversations(conn, found, make_query(["x"], 3))
    assert answer.rows[0].session_id == "pi:emily"
    assert {"sister", "Emily"} <= set(answer.rows[0].matched)


def test_cjk_and_identifiers(conn: sqlite3.Connection) -> None:
    _session(conn, "pi:zh", [("数据库连接池满了怎么办", "增加连接池大小")])
    _session(conn, "pi:id", [("getSignedUrl returns 403 for zeta_ratelimit", "Check the bucket policy")])
    _session(conn, "pi:other", [("unrelated text about cooking pasta", "Boil water")])
    assert ask(conn, "连接池")[0] == "pi:zh"
    assert ask(conn, "signed url")[0] == "pi:id"
    assert ask(conn, "getSignedUrl")[0] == "pi:id"
    assert ask(conn, "ratelimit")[0] == "pi:id"


def test_a_turn_not_in_the_word_index_yet_is_found(conn: sqlite3.Connection) -> None:
    _history(conn)
    _session(conn, "pi:new", [("the flamingo deployment failed on friday", "Roll back.")], build=False)
    assert conn.execute("SELECT count(*) FROM pimem_pending").fetchone()[0] > 0
    assert ask(conn, "flamingo deployment")[0] == "pi:new"
    index.build_pending(conn)
    assert conn.execute("SELECT count(*) FROM pimem_pending").fetchone()[0] == 0
    assert ask(conn, "flamingo deployment")[0] == "pi:new"


def test_a_reply_that_grew_is_indexed_again(conn: sqlite3.Connection) -> None:
    _session(conn, "pi:grow", [("deploy the service", "Working on it")])
    _session(conn, "pi:other", [("cook pasta", "Boil water")])
    assert "pi:grow" not in ask(conn, "kubernetes")
    with transaction(conn):
        previous = conn.execute("SELECT ts, user_text, reply_text FROM turns WHERE turn_id = 'pi:grow:0'").fetchone()
        conn.execute("UPDATE turns SET reply_text = 'Working on it: kubernetes rollout done' "
                     "WHERE turn_id = 'pi:grow:0'")
        index.put(conn, "pi:grow:0", previous[0], previous[1], "Working on it: kubernetes rollout done", None,
                  tuple(previous), fts=True)
    index.build_pending(conn)
    assert ask(conn, "kubernetes") == ["pi:grow"]


def test_a_store_of_the_previous_layout_gets_its_word_index(conn: sqlite3.Connection, db_path: Path) -> None:
    _history(conn)
    with transaction(conn):   # what layout 5 had: no word index
        for table in ("pimem_words", "pimem_word_docs", "pimem_words_pending"):
            conn.execute(f"DROP TABLE {table}")
        set_meta(conn, "layout", "5")
    conn.close()
    upgraded = connect(db_path)
    assert get_meta(upgraded, "layout") == str(LAYOUT)
    assert upgraded.execute("SELECT count(*) FROM pimem_words_pending").fetchone()[0] > 60
    # before the words are built: the trigram index answers, one row per conversation
    assert ask(upgraded, "Where does my sister Emily live?")[0] == "pi:emily"
    index.build_pending(upgraded)
    assert upgraded.execute("SELECT count(*) FROM pimem_words_pending").fetchone()[0] == 0
    assert upgraded.execute("SELECT count(*) FROM pimem_word_docs").fetchone()[0] == \
        upgraded.execute("SELECT count(*) FROM turns").fetchone()[0]
    assert ask(upgraded, "Where does my sister Emily live?")[0] == "pi:emily"


def test_a_rebuild_empties_and_refills_the_word_index(conn: sqlite3.Connection) -> None:
    _history(conn)
    with transaction(conn):
        index.rebuild(conn)
    assert conn.execute("SELECT count(*) FROM pimem_word_docs").fetchone()[0] == 0
    index.build_pending(conn)
    assert ask(conn, "What breed is my dog?")[0] == "pi:dog"


def test_tokens_are_the_index_words() -> None:
    assert words.tokens("Crashed crashes CRASHING") == ["crash"]
    assert words.tokens("Café") == ["cafe"]
    assert "get" in words.tokens("getSignedUrl") and "getsignedurl" in words.tokens("getSignedUrl")
    assert words.tokens("数据库") == ["数据", "据库"]


def test_a_word_whose_stem_stems_again_is_found(conn: sqlite3.Connection) -> None:
    # FTS5 stems the MATCH expression too, and Porter's stemmer is not idempotent: *coffee* is held as
    # ``coffe``, which searched again becomes ``coff``; freetext's own stem() made *courses* ``cours``.
    _history(conn)
    _session(conn, "pi:coffee", [("I drink coffee every morning before my online courses", "Nice routine.")])
    assert ask(conn, "coffee")[0] == "pi:coffee"
    assert ask(conn, "How many online courses have I completed?")[0] == "pi:coffee"
    assert words.query_forms("Coffee courses") == [("coffe", "coffee"), ("cours", "courses")]


def test_word_weights_count_turns_not_doc_keys(conn: sqlite3.Connection, monkeypatch: pytest.MonkeyPatch) -> None:
    # A large store's doc count is estimated; the doc keys ((UTC day << 20) | n) are no count: taken as
    # one, every word weighed about the same (a word in 1 turn of 200,000: 22 instead of 10.6; in half of
    # them: 13 instead of 1.1), so common question words outweighed the rare ones.
    monkeypatch.setattr(ranking, "TOTALS_SAMPLE", 10)
    ranking._TOTALS.clear()
    _history(conn)
    turns = conn.execute("SELECT count(*) FROM turns").fetchone()[0]
    docs, _user, _reply = ranking._totals(conn, ranking._store_key(conn))
    assert docs == turns
    found = parse_text("my dog in the application")
    page = ranking.rank(conn, ranking.query_words(found), make_query(["x"], 5))
    idf = {word.surface: value for word, _count, value in page.searched}
    assert idf["dog"] > 3 * idf["application"]


def test_words_the_stemmer_makes_stop_words_are_left_out() -> None:
    # *one* is held as ``on`` and *useful* as ``us``: searched, they match every "on" and "us".
    from pimem.recall.freetext import candidates, stop_words
    assert [w.token for w in ranking.query_words(candidates("one useful Tokyo tip"), stop_words())] == ["tokyo", "tip"]
    assert [w.token for w in ranking.query_words(candidates("one"), stop_words())] == ["on"]   # nothing else left
    assert [c.term for c in candidates("I’m in Tokyo, it’s great")] == ["Tokyo", "great"]   # typographic apostrophe
    assert [c.term for c in candidates("I've been to Tokyo")] == ["Tokyo"]


def test_the_turn_that_holds_the_whole_question_beats_a_short_one_with_one_word(conn: sqlite3.Connection) -> None:
    # BM25 adds the words up and favours short texts: a two-word turn holding only "Emily" outscored the
    # long message in which the person said everything the question asks (sister, Emily, Portland,
    # bakery). A turn's score is multiplied by the share of the query's weight it holds (COVERAGE).
    filler = " ".join(["we talked about the weather and the traffic on the way home"] * 3)
    _session(conn, "pi:answer", [(f"{filler}. My sister Emily opened a bakery in Portland last spring, {filler}",
                                  "That is great news.")])
    _session(conn, "pi:short", [("Emily, hi", "Hello!")])
    _ordinary_sessions(conn, first_hour=1)
    assert ask(conn, "Where does my sister Emily run her bakery in Portland?")[0] == "pi:answer"


def test_coverage_by_a_reply_counts_less_than_what_the_person_typed(conn: sqlite3.Connection,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    # The person typed two of the question's words in one conversation; in the other they typed one and the
    # reply holds the rest. Coverage that counted the reply's words whole put the reply first; what the
    # person typed identifies the turn, so a word only the reply holds counts REPLY_WEIGHT of its weight.
    # That is the turn score's coverage, and the order before the passage head's (FUSED_HEAD off). The head's
    # order adds the best turn's coverage of every word it matched, the reply's whole (round 15's candidate as
    # frozen and kept in round 17), which puts the reply first here.
    _session(conn, "pi:typed", [("we saw a flamingo near the zeppelin at the fair", "Sounds fun.")])
    _session(conn, "pi:replied", [("we saw a flamingo at the fair", "A zeppelin? A quasar!")])
    _ordinary_sessions(conn, first_hour=1)
    monkeypatch.setattr(ranking, "FUSED_HEAD", False)
    assert ask(conn, "flamingo zeppelin quasar")[:2] == ["pi:typed", "pi:replied"]
    monkeypatch.setattr(ranking, "FUSED_HEAD", True)
    assert ask(conn, "flamingo zeppelin quasar")[:2] == ["pi:replied", "pi:typed"]


def test_the_words_said_together_beat_the_same_words_scattered(conn: sqlite3.Connection,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    # A fact said in passing sits in one sentence of a long message about something else. Word presence
    # and length cannot tell that message from one holding the same words apart (here: the same words,
    # reordered, and a reply that mentions one of them, which puts it first without the passage ranking).
    # The best passage of what the person typed (the question's words near one another) decides.
    said, scattered = said_and_scattered()
    _session(conn, "pi:scattered", [(scattered, "Oregon is lovely in spring.")])
    _session(conn, "pi:said", [(said, "Noted.")], start=START + 3_600_000)
    _ordinary_sessions(conn, first_hour=2)
    question = QUESTION
    assert ask(conn, question)[:2] == ["pi:said", "pi:scattered"]
    monkeypatch.setattr(ranking, "PASSAGE_SHARE", 0.0)   # the ranking without the passages
    ranking._RANKED.clear()
    assert ask(conn, question)[:2] == ["pi:scattered", "pi:said"]


def test_a_fact_said_in_passing_in_a_long_message_beats_a_short_text_with_one_word(
        conn: sqlite3.Connection, monkeypatch: pytest.MonkeyPatch) -> None:
    # The person said the fact in one sentence of a long message about something else; a two-word text holds
    # one of the question's words. With b 0.75 on what the person typed, length buried the message under the
    # short text (turn and session alike); USER_B 0.5 normalises a user text by its length less. (Checked on the
    # order before the passage head's, FUSED_HEAD off: the head's order weighs coverage directly, and the message
    # holding both words then comes first whatever USER_B is.)
    monkeypatch.setattr(ranking, "FUSED_HEAD", False)
    filler = " ".join(["we talked about the weather and the traffic on the way home"] * 2)
    _session(conn, "pi:said", [(f"{filler}. By the way, I graduated with a degree in Business Administration. "
                                f"{filler}", "Noted.")])
    _session(conn, "pi:short", [("graduation gifts?", "A watch, maybe.")])
    _session(conn, "pi:other", [("which degree is best", "Depends.")], start=START + 1_000)
    _ordinary_sessions(conn, first_hour=2)
    question = "What degree did I graduate with?"
    assert ask(conn, question)[:2] == ["pi:said", "pi:short"]
    monkeypatch.setattr(ranking, "USER_B", ranking.B)   # what the person typed normalised as a reply is
    ranking._RANKED.clear()
    assert ask(conn, question)[:2] == ["pi:short", "pi:said"]


def test_passage_positions_are_the_word_index_tokens() -> None:
    # Offsets count the index's tokens (stemmed, case folded; _ joins a word), in ASCII and other text.
    text = "I graduated with a Business Administration degree; my_var and Graduates, résumé"
    found = words.positions([text, "Degrees", "東京大学 graduated"], frozenset({"graduat", "degre", "my_var", "resum"}))
    assert found == [{"graduat": [1, 9], "degre": [6], "my_var": [7], "resum": [10]}, {"degre": [0]},
                     {"graduat": [3]}]   # the CJK run is its three two-character pieces (word_text)
    assert ranking.passage_score({"a": [0], "b": [1]}, {"a": 1.0, "b": 1.0}, 10.0) > 1.9
    assert ranking.passage_score({"a": [0], "b": [100]}, {"a": 1.0, "b": 1.0}, 10.0) == pytest.approx(1.0)


def test_a_code_keyword_in_a_question_is_one_of_its_words(conn: sqlite3.Connection) -> None:
    # "class" was a stop word everywhere (code's keywords: stopwords/code.txt), so the question searched
    # "pottery" alone and a short text holding it came first. In a sentence it is a word of the question.
    _session(conn, "pi:short", [("pottery wheel prices?", "About 300 dollars.")])
    _session(conn, "pi:said", [("I signed up for an evening pottery class with my neighbour, it starts soon, "
                                "what should I bring along on the first day?", "An apron and a towel.")],
             start=START + 1_000)
    _ordinary_sessions(conn, first_hour=2)
    assert ask(conn, "Which day of the week is my pottery class?")[:2] == ["pi:said", "pi:short"]


def test_a_time_the_person_said_is_searched_and_a_time_of_the_question_is_not(conn: sqlite3.Connection) -> None:
    # "on Saturday mornings" is what the person said; it was a stop word (en.txt's times), so the question
    # searched "wake" alone and the shortest text holding it came first.
    _session(conn, "pi:short", [("wake up tips?", "Keep the alarm across the room.")])
    _session(conn, "pi:said", [("On Saturday mornings I wake up at six and drive to the farmers market before it "
                                "gets crowded, what should I buy for a soup?", "Leeks and potatoes.")],
             start=START + 1_000)
    _ordinary_sessions(conn, first_hour=2)
    assert ask(conn, "What time do I wake up on Saturday mornings?")[:2] == ["pi:said", "pi:short"]
    # "last Saturday" is when the question's now was: not searched, so the short text holding "wake" stays first.
    assert ask(conn, "Did I wake up early last Saturday?")[:2] == ["pi:short", "pi:said"]


def test_a_number_beside_the_question_words_answers_how_many(conn: sqlite3.Connection,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    # Two conversations about the person's tomato plants; the question asks how many, and one of them says it
    # ("I planted 12 ..."). Both best passages hold *tomato plants* side by side, so without the asked kind the
    # other conversation, whose best turn holds the words in a shorter text, stays first; the number near them
    # now counts as one more word of the question.
    _session(conn, "pi:said", [("This spring I finally planted 12 tomato plants along the fence, what should I "
                                "feed them in the first weeks?", "A balanced fertiliser."),
                               ("tomato leaves curl", "Ok."), ("plants by the door", "Ok."),
                               ("tomato soup recipe?", "Ok.")])
    _session(conn, "pi:other", [("I keep my tomato plants on the balcony, do they need a bigger pot by now?",
                                 "Too little sun.")], start=START + 1_000)
    _ordinary_sessions(conn, first_hour=2)
    question = "How many tomato plants did I put in?"
    assert ask(conn, question)[:2] == ["pi:said", "pi:other"]
    monkeypatch.setattr(ranking, "ANSWER_WEIGHT", 0.0)   # the asked kind not counted: the order of before
    ranking._RANKED.clear()
    assert ask(conn, question)[:2] == ["pi:other", "pi:said"]


def test_the_words_that_answer_a_question_are_placed_in_its_passages() -> None:
    # What a question asks for (pimem.recall.answers), and where such words are in a text, ASCII or not.
    assert [answers.asked(q) for q in ("How many tomato plants did I put in?", "When did I get my smoker?",
                                       "How many days ago did I attend the gala?", "What time do I wake up?",
                                       "What is the name of my cat?")] == ["number", "time", "time", "time", ""]
    time_word = lambda word: answers.is_answer("time", word)   # noqa: E731
    found = words.positions(["On March 3rd I planted twelve seeds", "Le 3 mars j’ai semé douze graines today"],
                            frozenset({"seed"}), time_word)
    assert found == [{"seed": [6], words.ANSWER: [1, 2, 5]}, {words.ANSWER: [1, 8]}]
    assert words.positions(["I planted twelve seeds"], frozenset({"seed"})) == [{"seed": [3]}]
    assert not answers.is_answer("number", "march") and answers.is_answer("number", "twice")


def test_the_texts_read_for_the_answers_word_alone_are_bounded_per_conversation() -> None:
    # Round q8: a question that asks for a number, whose one word is in 500 user texts of each conversation
    # and no number near it: every such text was read (×300 the reference's CPU where they are long). Of a
    # conversation's texts with one query word, only the ANSWER_TEXTS of the best bound are read; texts
    # holding two query words are read as before.
    head = ["a", "b"]
    held_docs = {c: [((c, k), [2.0]) for k in range(500)] + [((c, "both"), [2.0, 1.0])] for c in head}
    asked_for: list[tuple[str, Any]] = []

    def user_texts(docs: list[tuple[str, Any]]) -> dict[tuple[str, Any], str]:
        asked_for.extend(docs)
        return {doc: "tomato seeds" if doc[1] == "both" else "my tomato is red" for doc in docs}

    ranking.passage_bonus(head, held_docs.__getitem__, {"tomato": 2.0, "seed": 1.0}, user_texts, "number")
    assert len(asked_for) == len(head) * (ranking.ANSWER_TEXTS + 1)
    assert {doc for doc in asked_for if doc[1] == "both"} == {("a", "both"), ("b", "both")}


def test_the_fused_head_weighs_coverage_and_the_three_ranks() -> None:
    # Round 17's candidate (FUSED_HEAD, off): the head of three conversations, in the order before the passage
    # step. The first leads the best-turn and session ranks; the third has the best passage and covers the
    # question whole (coverage × 5.75 decides); the first covers more than the second, which the ranks alone
    # would put ahead (below).
    order = ranking.fused_head_order(turn=[3.0, 2.0, 1.0], session=[3.0, 2.0, 1.0], passage=[1.0, 2.0, 3.0],
                                     coverage=[0.2, 0.1, 1.0])
    assert order == [2, 0, 1]
    # Without the coverage the ranks alone decide: the passage's weight (5.75) against turn and session's (4.15).
    assert ranking.fused_head_order([3.0, 2.0, 1.0], [3.0, 2.0, 1.0], [1.0, 2.0, 3.0], [0.0, 0.0, 0.0]) == [2, 1, 0]
    # Ties keep the head's order.
    assert ranking.fused_head_order([1.0, 1.0], [1.0, 1.0], [1.0, 1.0], [0.5, 0.5]) == [0, 1]


def test_the_conversation_that_holds_the_whole_question_leads_the_passage_head(conn: sqlite3.Connection,
                                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    # The person said the whole question in one sentence of a long message; another conversation is a short text
    # with two of its three words. The short one leads by best turn and by session (length), the long one by
    # passage; fused by reciprocal rank, the short one stayed first. The head's order (FUSED_HEAD) adds the best
    # turn's coverage of the question (5.75 × its share of the idf), and the message that holds it all leads.
    filler = " ".join(["we talked about the weather and the traffic on the way home"] * 3)
    _session(conn, "pi:whole", [(f"{filler}. By the way, the flamingo rode the zeppelin past a quasar. {filler}",
                                 "Noted.")])
    _session(conn, "pi:part", [("flamingo zeppelin", "Sure.")], start=START + 1_000)
    _ordinary_sessions(conn, first_hour=2)
    question = "flamingo zeppelin quasar"
    assert ask(conn, question)[:2] == ["pi:whole", "pi:part"]
    monkeypatch.setattr(ranking, "FUSED_HEAD", False)   # the passage rank fused in by PASSAGE_SHARE
    assert ask(conn, question)[:2] == ["pi:part", "pi:whole"]


def test_a_verb_asked_in_the_present_finds_its_irregular_past(conn: sqlite3.Connection) -> None:
    # "Where did I meet Alex?": the person wrote "I met Alex"; Porter holds *meet* as ``meet`` and *met* as
    # ``met``. The word is searched as any form of its verb (words.IRREGULAR_VERBS), so the turn holding both
    # question words leads, above a shorter, newer one holding *Alex* alone and one asking to *meet*.
    _session(conn, "pi:met", [("I met Alex at the climbing gym last spring, we go every week now", "Nice!")])
    _session(conn, "pi:alex", [("Alex is coming over", "Great.")], start=START + 2_000)
    _session(conn, "pi:meet", [("can we meet tomorrow about the budget", "Sure.")], start=START + 1_000)
    _ordinary_sessions(conn, first_hour=2)
    assert ask(conn, "Where did I meet Alex?")[0] == "pi:met"
    # ... and a past asked finds the present as well; the result says the word as the person asked it.
    _session(conn, "pi:buy", [("I want to buy a kayak for the lake", "Look at inflatables.")], start=START + 3_000)
    found = parse_text("bought kayak")
    answer = recall_conversations(conn, found, make_query(["x"], 3))
    assert answer.rows[0].session_id == "pi:buy"
    assert set(answer.rows[0].matched) == {"bought", "kayak"}


def test_a_verbs_other_forms_count_in_a_turn_not_indexed_yet(conn: sqlite3.Connection) -> None:
    _ordinary_sessions(conn, first_hour=2)
    _session(conn, "pi:new", [("we finally bought the red canoe", "Enjoy it.")], build=False)
    _session(conn, "pi:other", [("the red canoe is on sale", "Nice.")], build=False, start=START + 1_000)
    assert conn.execute("SELECT count(*) FROM pimem_pending").fetchone()[0] > 0
    assert ask(conn, "When did I buy the red canoe?")[0] == "pi:new"


def test_irregular_verb_forms_are_one_word() -> None:
    assert words.verb_forms("bui") == words.verb_forms("bought") == ("buy", "bought")   # *buy*, *buying*, *bought*
    assert words.verb_tokens("bui") == ("bought",)
    assert set(words.verb_tokens("taken")) == {"take", "took"}
    assert words.verb_forms("coffe") == () and words.verb_tokens("coffe") == ()
    word = next(w for w in ranking.query_words(parse_text("Where did I buy it?")) if w.token == "bui")
    assert word.match == '("buy" OR "bought")'
    # In a passage, a verb's other forms stand where the asked word would (its own place kept too).
    placed = ranking._positions(["so I bought it and then I buy more"], frozenset({"bui"}), None,
                                {"bui": ("bought",)})
    assert placed == [{"bui": [2, 7]}]
    both = ranking._positions(["so I bought it and then I buy more"], frozenset({"bui", "bought"}), None,
                              {"bui": ("bought",), "bought": ("bui",)})
    assert both == [{"bui": [2, 7], "bought": [2, 7]}]


def test_two_forms_of_one_irregular_verb_in_a_question_are_one_word() -> None:
    # Round q10: *written* and *writing* are each searched as any form of *write* (words.IRREGULAR_VERBS), so they
    # are one word, counted once in a turn's score and in the query's weight, as *write* and *writing* are (one
    # token); before, both were query words with the same postings, and the verb weighed twice.
    asked = ranking.query_words(parse_text("How many short stories have I written since I started writing?"))
    assert [w.token for w in asked if w.forms] == ["written"]
    assert ranking.query_words(parse_text("buy bought buying kayak"))[0].match == '("buy" OR "bought")'
    assert [w.token for w in ranking.query_words(parse_text("buy bought buying kayak"))] == ["bui", "kayak"]
    # forms of two verbs stay two words
    assert [w.token for w in ranking.query_words(parse_text("bought sold"))] == ["bought", "sold"]


HOSTILE_QUESTIONS = [
    " ".join(form for group in words.IRREGULAR_VERBS for form in group.split()) * 3,
    "bought " * 500, 'did I "buy" the "kayak" bought" "', "buy* bought* NEAR(buy bought) NEAR kayak",
    "-buy -bought ^took ^",
    "user: bought reply : buy {user reply}: took", "buy AND bought OR took NOT given ((buy) OR (bought)",
    "我买了 bought 東京 buy", "buy\x00bought\x00kayak", "buy \ud800 bought \udfff kayak", "buy-bought took-taken-take",
]


def test_hostile_questions_of_verb_forms_reach_fts5_only_as_quoted_phrases(conn: sqlite3.Connection) -> None:
    """Round q10: questions made of every irregular verb form, one form hundreds of times, forms beside FTS5's
    syntax (quotes, ``*``, ``NEAR``, ``-``, ``^``, column filters, parentheses), CJK, NUL and lone surrogates:
    at most MAX_QUERY_WORDS words, each MATCH a quoted phrase or a parenthesized OR of quoted phrases (nothing
    of the question reaches FTS5 unquoted), and recall answers each."""
    phrase = r'"(?:[^"]|"")*"'
    quoted = re.compile(rf"{phrase}|\({phrase}(?: OR {phrase})*\)")
    _session(conn, "pi:buy", [("we bought the red kayak at the lake", "Nice.")])
    _ordinary_sessions(conn, first_hour=2)
    for question in HOSTILE_QUESTIONS:
        asked = ranking.query_words(parse_text(question))
        assert 0 < len(asked) <= ranking.MAX_QUERY_WORDS
        assert all(quoted.fullmatch(w.match) for w in asked), [w.match for w in asked]
        assert len({w.forms for w in asked if w.forms}) == len([w for w in asked if w.forms])
        recall_conversations(conn, parse_text(question), make_query(["x"], 5))


def test_no_verb_form_is_searched_as_a_word_of_most_turns(conn: sqlite3.Connection) -> None:
    # Round q10: *ate* is held as ``at`` (Porter) and *won* is also what unicode61 leaves of every *won't*: as forms
    # of *eat* and *win* they made those words turns' prepositions and contractions ("UberEats" was searched as
    # ``("eat" OR "ate" OR "eaten")``, which FTS5 stems to ``at``). A form's index token is a stop word only when the
    # form is that very word (*made*, *told*), never a contraction's leftover.
    stop = prose_stop_words()
    lines = (STOPWORDS / "en.txt").read_text(encoding="utf-8").splitlines()
    start = next(n for n, line in enumerate(lines) if line.startswith("# what is left of a contraction"))
    leftovers = set(itertools.takewhile(lambda line: not line.startswith("#"), lines[start + 1:]))
    assert "won" in leftovers and "don" in leftovers
    groups: dict[str, str] = {}
    for group in words.IRREGULAR_VERBS:
        for form in group.split():
            token = words.tokens(form)[0]
            assert (token not in stop or form in stop) and token not in leftovers, (form, token)
            assert groups.setdefault(token, group) == group, (form, groups[token])   # no token in two verbs
    assert "at" not in words.verb_tokens("eat") and words.verb_forms("win") == ()
    eats = next(w for w in ranking.query_words(parse_text("my UberEats order")) if w.token == "eat")
    assert eats.match == '("eat" OR "eaten")'
    # a turn holding *at* and *won't* holds no form of *eat* or *win*
    _session(conn, "pi:at", [("we met at the station at noon, it won't rain", "Good.")])
    _session(conn, "pi:ate", [("we have eaten the cake", "Yum.")], start=START + 1_000)
    _ordinary_sessions(conn, first_hour=2)
    assert ask(conn, "What did I eat?") == ["pi:ate"]
    assert ask(conn, "What did I win?") == []
