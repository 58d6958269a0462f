"""The same words said together in one message and strewn apart in another: the passage ranking's case
(pimem.recall.ranking.passage_bonus), for local and shared recall alike."""

from __future__ import annotations

import re

QUESTION = "What did I study at Oregon State, marine biology?"


def said_and_scattered() -> tuple[str, str]:
    """(said, scattered): two messages of the same words and length, the fact said in passing in the first,
    its words far apart in the second."""
    trip = "we planned the trip to the coast with the kids and booked the hotel near the station"
    fact = ["by", "the", "way", "I", "studied", "marine", "biology", "at", "Oregon", "State"]
    scattered = (f"{' '.join(fact[:5])} {trip}, {trip}. {' '.join(fact[5:8])}. {trip}, {trip} "
                 f"{' '.join(fact[8:])}")
    said = f"{trip}, {trip}. {' '.join(fact)}. {trip}, {trip}"
    assert sorted(re.findall(r"\w+", said)) == sorted(re.findall(r"\w+", scattered)) and len(said) == len(scattered)
    return said, scattered
