"""Free text -> terms (pimem/recall/freetext.py, pimem/recall/termstats.py): what a question, a hovered line or a pasted
error searches, and that the rarest terms of this store are chosen, not the first words."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from pimem import index
from pimem.recall import RecallError, freetext, termstats
from pimem.recall.freetext import candidates, choose_terms, recall_text, stem
from pimem.store import SessionRow, connect, transaction, upsert_session


def terms(text: str) -> list[str]:
    return [candidate.term for candidate in candidates(text)]


def _store(conn: sqlite3.Connection, turns: list[tuple[str, str]], start_ts: int = 1_700_000_000_000) -> None:
    with transaction(conn):
        upsert_session(conn, SessionRow("pi:s", "pi", "/w", 0, None, "/x.jsonl"))
        for number, (user, reply) in enumerate(turns):
            turn_id, ts = f"pi:s:{start_ts}:{number}", start_ts + number * 60_000
            conn.execute(
                "INSERT INTO turns (turn_id, session_id, turn_index, ts, user_text, reply_text, tool_names, "
                "user_message_id) VALUES (?, 'pi:s', ?, ?, ?, ?, NULL, ?)", (turn_id, number, ts, user, reply, turn_id))
            index.put(conn, turn_id, ts, user, reply, None, None, fts=True)
        index.catch_up(conn)
    index.build_pending(conn)


@pytest.fixture
def conn(db_path: Path) -> sqlite3.Connection:
    return connect(db_path)


def test_stop_words_of_every_language_and_code_keywords_are_dropped() -> None:
    assert terms("how did we fix the flaky timezone test last spring?") == ["flaky", "timezone", "test"]
    assert terms("Wie haben wir das Problem mit der Zeitzone gelöst?") == ["Problem", "Zeitzone", "gelöst"]
    assert terms("comment avons-nous corrigé le fuseau horaire ?") == ["corrigé", "fuseau", "horaire"]
    assert terms("¿cómo arreglamos la zona horaria del servidor?") == ["arreglamo", "zona", "horaria", "servidor"]
    assert terms("def parse(self, value: str) -> None:") == ["parse", "value"]
    assert terms("SELECT id FROM orders WHERE status = 'pending'") == ["id", "order", "status", "pending"]
    # nothing else left: the stop words are searched after all (single ASCII letters never)
    assert terms("the of and") == ["the", "of", "and"]
    assert terms("a") == ["a"]


def test_code_keywords_are_words_in_a_sentence() -> None:
    # In a hovered line or a pasted snippet ``class``, ``raise`` and ``return`` say nothing; in a question they
    # are what it is about. The keywords that are how a question asks (how long, what type of, the number of,
    # go, use, new) stay stop words there too (stopwords/asking.txt).
    assert terms("Which day do I take a cocktail-making class?")[-1] == "class"
    assert terms("How much money did I raise for the shelter?") == ["money", "raise", "shelter"]
    assert terms("How long have I had the new type of racket?") == ["racket"]
    assert terms("What is the total number of books I read?") == ["total", "book", "read"]
    assert terms("    raise ValueError('no such class')") == ["ValueError", "Value", "Error"]


def test_a_time_the_person_said_is_a_word_of_the_question() -> None:
    # Times of the day, week and year are stop words (en.txt): after a deictic word ("last Saturday",
    # "this weekend", "last Saturday morning") they say when the question's now was. Said without one
    # they are what the person said, and searched (in a sentence; plurals too).
    assert terms("What time do I wake up on Saturday mornings?") == ["wake", "Saturday", "morning"]
    assert terms("What time do I wake up on Tuesdays and Thursdays?") == ["wake", "Tuesday", "Thursday"]
    assert terms("Who did I go with to the music event last Saturday?") == ["music", "event"]
    assert terms("What did I cook last Saturday morning?") == ["cook"]
    assert terms("Any tips for a picnic this weekend?") == ["tips", "picnic"]
    assert terms("When did I go to the 'Summer Nights' festival?")[:2] == ["Summer", "Night"]
    assert terms("Saturday morning") == ["Saturday", "morning"]   # nothing else left: the stop words
    assert "evening" not in terms("    run_backup()  # every evening")   # not a sentence: code's rules


def test_identifiers_stay_whole_and_offer_their_parts() -> None:
    assert terms("zeta_ratelimit") == ["zeta_ratelimit", "zeta", "ratelimit"]
    assert terms("const url = await s3.getSignedUrl(params)")[:4] == ["url", "s3.getSignedUrl", "getSignedUrl",
                                                                      "Signed"]
    found = terms('java -XX:MaxRAMPercentage=70.0 -jar app.jar')
    assert "-XX:MaxRAMPercentage=70.0" in found and "MaxRAMPercentage" in found and "Percentage" in found
    assert terms("error TS2345: Argument of type 'string'")[:2] == ["error", "TS2345"]
    assert "users_email_key" in terms('violates unique constraint "users_email_key"')


def test_cjk_runs_become_words() -> None:
    chinese = terms("之前秒杀服务的分布式锁过期导致超卖，是怎么解决的？")
    # cut at 之前 / 的 / 导致 / 是 / 怎么 / 解决: the pieces, and their two-character pieces
    assert chinese[:5] == ["秒杀服务", "秒杀", "杀服", "服务", "分布式锁过期"]
    assert "超卖" in chinese and "分布" in chinese and "怎么" not in chinese and "解决" not in chinese
    japanese = terms("タイムゾーンのテストが失敗した件、どうやって直しましたか")
    assert japanese == ["タイムゾーン", "テスト", "失敗"]   # katakana whole, hiragana and 件/直 dropped


def test_stem_keeps_what_the_substring_match_needs() -> None:
    assert [stem(word) for word in ("crashed", "limited", "queries", "skipped", "settings", "processes")] == [
        "crash", "limit", "query", "skip", "setting", "process"]
    assert [stem(word) for word in ("moved", "nothing", "status", "getSignedUrl", "TS2345")] == [
        "moved", "nothing", "status", "getSignedUrl", "TS2345"]


def test_rarest_terms_are_chosen_not_the_first_ones(conn: sqlite3.Connection) -> None:
    filler = [(f"the build step {n} keeps the cache warm", "done, the cache is warm again") for n in range(60)]
    _store(conn, [*filler, ("the build step fails with ENOSPC", "the disk was full")])
    text = "the cache of the build step keeps warm, done again, then it says ENOSPC"
    chosen = choose_terms(conn, candidates(text))
    assert chosen[0].text == "ENOSPC" and chosen[0].turns == 1
    assert "cache" not in [term.text for term in chosen]   # in every turn: weight 1, left out
    assert all(term.weight * freetext.MIN_WEIGHT_SHARE_INVERSE >= chosen[0].weight for term in chosen)
    answer = recall_text(conn, text, limit=1)
    assert answer.rows[0].user_text == "the build step fails with ENOSPC" and "ENOSPC" in answer.rows[0].matched


def test_terms_no_turn_holds_are_not_searched(conn: sqlite3.Connection) -> None:
    _store(conn, [("flamingo migration", "ok"), ("another turn", "nothing here")])
    chosen = choose_terms(conn, candidates("flamingo xylophonequartz"))
    assert [term.text for term in chosen] == ["flamingo"]
    # all absent: the candidates are still reported (weight 1), so a client can say what was searched
    assert [t.text for t in choose_terms(conn, candidates("xylophonequartz zzyzx"))] == ["xylophonequartz", "zzyzx"]


def test_estimates_are_exact_on_few_candidates_and_check_common_trigrams(conn: sqlite3.Connection,
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(termstats, "SAMPLE", 4)  # fewer than the 41 candidates
    # 'stock' is made of trigrams every turn has ('sto', 'toc', 'ock' in 'store', 'toco', 'clock'), but one
    # turn only holds the word itself.
    _store(conn, [*[(f"the store at toco clock {n}", "") for n in range(30)], ("UPDATE stock SET count", "")],
           start_ts=1_600_000_000_000)
    _store(conn, [(f"newer store toco clock {n}", "") for n in range(10)])
    estimate = termstats.estimate(conn, ["stock", "store", "absent"])
    assert estimate.turns == {"stock": 1, "store": 40, "absent": 0}
    assert estimate.candidates["stock"] == 41 and estimate.total == 41


def test_parse_text_errors_name_the_field() -> None:
    with pytest.raises(RecallError) as error:
        freetext.parse_text(" ,, ")
    assert error.value.field == "text"
    with pytest.raises(RecallError):
        freetext.parse_text(5)


@pytest.mark.parametrize(("line", "column", "word"), [
    ("the flamingo cache bug", 7, "flamingo"),
    ("the flamingo cache bug", 4, "flamingo"),            # touching the start
    ("the flamingo cache bug", 12, "flamingo"),           # touching the end
    ("run -XX:MaxRAMPercentage=70 now", 6, "-XX:MaxRAMPercentage"),
    ("see C:\\Users\\me\\a.txt", 8, "C:\\Users\\me\\a.txt"),
    ("东京タワー 见", 2, "东京タワー"),
    ("a \U00020001\U00020002 b", 3, "\U00020001\U00020002"),   # a supplementary-plane Han run
    ("ab  cd", 3, None),                                  # between words
    ("", 0, None),
])
def test_word_at_is_the_word_under_the_cursor(line: str, column: int, word: str | None) -> None:
    assert freetext.word_at(line, column) == word


@pytest.mark.parametrize("text", [
    "How many days did I spend participating in faith-related activities in December?",
    "What is my preferred coffee-to-water ratio for the French press?",
    "How much cashback did I earn at SaveMart last Thursday?",
    "What is the total number of views on my most popular videos on YouTube and TikTok?",
    "how many days before I bought the iPhone did we go to the market",
])
def test_a_question_with_compounds_or_names_is_prose(text: str) -> None:
    """Hyphenated compounds and names in a sentence are words, ranked by the word index; the substring
    path would find ``art-related`` inside *start-related* (and is the slow tail)."""
    assert not freetext.looks_like_code(candidates(text))


@pytest.mark.parametrize("text", [
    "  const total = formatCartId(cartId);",
    "KeyError: 'iban'",
    "StripeSignatureVerificationError: No signatures found matching the expected signature for payload",
    "Last State: Terminated  Reason: OOMKilled  Exit Code: 137",
    "case resultCh <- res:",
    "startupProbe:\n  failureThreshold: 30",
    "why does period_end come back empty in the report?",   # an identifier with `_` stays code in a question
    "getSignedUrl",
])
def test_code_lines_and_errors_keep_their_identifiers(text: str) -> None:
    assert freetext.looks_like_code(candidates(text))
