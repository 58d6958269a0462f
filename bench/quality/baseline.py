"""The text path's extraction before free-text recall, the benchmark's baseline: ``entities_from_text``
of server/pimem/entities.py at commit 52fbd4f (the module free-text recall replaced), verbatim; the
text path sent its result to the entity recall unchanged.

Rules: split on whitespace and on bracketing/quoting punctuation; trim sentence punctuation at the
ends of a word but keep it inside (``C:\\path\\file``, ``100%``, ``a_b``, ``x.y`` stay whole); a run of
CJK characters is one entity of its own; drop duplicates (case-insensitively) and single ASCII
characters (unless nothing else is left); keep the first eight.
"""

from __future__ import annotations

import re

MAX_ENTITIES = 8

_CJK = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uac00-\ud7af\U00020000-\U0002fa1f"
_PIECES = re.compile(f"[{_CJK}]+|[^{_CJK}]+")
_CJK_RUN = re.compile(f"[{_CJK}]+")
# Delimiters: whitespace, brackets, quotes, and CJK/fullwidth punctuation.
_SPLIT = re.compile(r"[\s()\[\]{}<>\"'`,;!?\u3000-\u303f\uff01-\uff0f\uff1a-\uff20\uff3b-\uff40\uff5b-\uff65]+")
_EDGE = ".:-/\\|=*#~^+&@$"


def entities_from_text(text: str, limit: int = MAX_ENTITIES) -> list[str]:
    words: list[str] = []
    for chunk in _SPLIT.split(text):
        for piece in _PIECES.findall(chunk):
            word = piece if _CJK_RUN.fullmatch(piece) else piece.strip(_EDGE)
            if word and any(char.isalnum() or char in "%_" for char in word):
                words.append(word)
    distinct: list[str] = []
    seen: set[str] = set()
    for word in words:
        key = word.lower()
        if key not in seen:
            seen.add(key)
            distinct.append(word)
    meaningful = [word for word in distinct if not (len(word) == 1 and word.isascii())]
    return (meaningful or distinct)[:limit]
