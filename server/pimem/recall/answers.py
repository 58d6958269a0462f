"""What kind of answer a question asks for, and the words of a text that are such an answer.

A question about a fact said in passing often asks for a number or a time ("How many tomato plants did I put
in?", "When did I rearrange my living room furniture?"), and the sentence that answers it holds one beside the
question's words ("I just planted 12 new tomato saplings today"), where the other conversations about the same
topic hold none. The passage step of the conversation ranking (:func:`pimem.recall.ranking.passage_bonus`)
counts such a word near the question's words as one more of them. Measured on LongMemEval dev and a
hand-written proxy of its single-session-user questions: docs/benchmarks.md, "Round 14".

* **number**: *how many / much / long / often / old / far*; its answers are words with a digit and number
  words (*twelve*, *dozen*, *twice*);
* **time**: *when*, *what time / date / day / year / month*, *which day ...*, and *how many days / weeks ...*
  (an elapsed time is reckoned from the time that was said: "I went today"); its answers are a number's and
  months, days of the week and the day words (*today*, *yesterday*, *ago*, *weekend*, *morning*, ...).
"""

from __future__ import annotations

import re

NUMBER = "number"
TIME = "time"

NUMBER_WORDS = frozenset((
    "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven", "twelve",
    "thirteen", "fourteen", "fifteen", "sixteen", "seventeen", "eighteen", "nineteen", "twenty", "thirty",
    "forty", "fifty", "sixty", "seventy", "eighty", "ninety", "hundred", "thousand", "million", "dozen", "once",
    "twice", "half", "couple",
))
TIME_WORDS = frozenset((
    "january", "february", "march", "april", "may", "june", "july", "august", "september", "october",
    "november", "december", "jan", "feb", "mar", "apr", "jun", "jul", "aug", "sep", "sept", "oct", "nov", "dec",
    "monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday", "mondays", "tuesdays",
    "wednesdays", "thursdays", "fridays", "saturdays", "sundays", "today", "yesterday", "tonight", "ago",
    "last", "weekend", "morning", "evening", "afternoon", "night",
))
_ASKS_TIME = re.compile(r"^\W*when\b|\bwhat (?:time|date|day|year|month)\b|\bwhich (?:day|date|year|month)s?\b"
                        r"|\bhow (?:many|much) (?:days|weeks|months|years|hours|minutes)\b", re.IGNORECASE)
_ASKS_NUMBER = re.compile(r"\bhow (?:many|much|long|often|old|far)\b", re.IGNORECASE)
_DIGIT = re.compile(r"\d")


def asked(text: str) -> str:
    """The kind of answer ``text`` (a question) asks for: :data:`TIME`, :data:`NUMBER`, or ``""``."""
    if _ASKS_TIME.search(text):
        return TIME
    if _ASKS_NUMBER.search(text):
        return NUMBER
    return ""


def is_answer(kind: str, word: str) -> bool:
    """Whether ``word`` (lower case, as written) is an answer of that kind."""
    if not kind:
        return False
    if _DIGIT.search(word) or word in NUMBER_WORDS:
        return True
    return kind == TIME and word in TIME_WORDS
