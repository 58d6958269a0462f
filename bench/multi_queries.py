"""Multi-entity recall queries drawn from the MEASURED term frequencies of an imported history.

bench/queries.py holds the fixed set built on the planted entities; none of its queries mixes several
moderately common terms, the shape agents and free-text extraction actually send (2–5 entities,
sometimes 8). This module measures how many turns hold each candidate term of the generated history
and builds queries of 2–8 entities from frequency bands (≈0.1 %, 1 %, 5 %, 15 %, 30 % of the turns;
words, identifiers and CJK words), in shapes such as "one rare + several common", "all common" and
"all rare, no joint match", at limits 5/10/20 and with a folder or an agent filter.

The selection is deterministic for a store's content: candidates come from a sample of the turns in
``turn_id`` order (independent of the import order), and the frequency of every term used is then
counted exactly over all turns with the oracle's matching (``str.lower``, substring). The result is
cached in the work folder (``multi-terms.json``) so that runs of other revisions reuse the same set.
"""

from __future__ import annotations

import json
import math
import re
import sqlite3
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from queries import Query
from textpool import CJK_PARTICLES, CJK_WORDS, PLANTS

BANDS: tuple[float, ...] = (0.001, 0.01, 0.05, 0.15, 0.30)
KINDS: tuple[str, ...] = ("word", "ident", "cjk")
SAMPLE_TURNS = 10_000
_FIT = math.log(2.5)          # a term fits a band when its share is within a factor 2.5 of it
SHORTLIST = 10                # candidates per (band, kind) counted exactly
SELECTION_VERSION = 3
_WORD = re.compile(r"[A-Za-z][A-Za-z0-9_]{2,}")
_CAMEL = re.compile(r"[a-z][A-Z]")
_CJK_RUN = re.compile(r"[\u3040-\u30ff\u4e00-\u9fff]+")
# Folder and agent filters used by the filtered variants (both hold about a tenth to a third of the turns).
FOLDER = "/home/dev/src/webshop"
AGENT = ("codex",)


@dataclass(frozen=True)
class Term:
    text: str
    kind: str
    band: float
    turns: int          # exact number of turns holding it (user text or reply)
    share: float        # turns / all turns


def _kind(token: str) -> str:
    """An identifier has an underscore, a digit or an inner capital (``afterNode``); CJK is CJK."""
    if _CJK_RUN.fullmatch(token):
        return "cjk"
    return "ident" if "_" in token or any(ch.isdigit() for ch in token) or _CAMEL.search(token) else "word"


def _candidates(texts: list[tuple[str, str]]) -> dict[str, tuple[str, int]]:
    """Turn frequency (and kind) of each candidate in the sample: the ASCII words and identifiers of
    the text, and the generator's CJK words and particles (n-grams across two words are not terms
    anyone searches for)."""
    frequency: dict[str, tuple[str, int]] = {}
    cjk = {*CJK_WORDS, *CJK_PARTICLES, *(plant.entity for plant in PLANTS if plant.cjk)}
    for user, reply in texts:
        tokens: dict[str, str] = {}
        for text in (user, reply):
            for token in _WORD.findall(text):
                lowered = token.lower()
                if tokens.get(lowered) != "ident":
                    tokens[lowered] = _kind(token)
            for run in _CJK_RUN.findall(text):
                for size in (1, 2, 3):
                    tokens.update((gram, "cjk") for gram in (run[i:i + size] for i in range(len(run) - size + 1))
                                  if gram in cjk)
        for token, kind in tokens.items():
            known, count = frequency.get(token, (kind, 0))
            frequency[token] = ("ident" if "ident" in (known, kind) else kind, count + 1)
    return frequency


def _exact_counts(conn: sqlite3.Connection, terms: list[str]) -> tuple[int, dict[str, int], dict[str, set[int]]]:
    """Over every turn: how many turns hold each term, and (for terms under 0.5 %) which turns."""
    counts = dict.fromkeys(terms, 0)
    holders: dict[str, set[int]] = {term: set() for term in terms}
    total = 0
    for rowid, user, reply in conn.execute("SELECT rowid, user_text, reply_text FROM turns"):
        total += 1
        user_lower, reply_lower = str(user or "").lower(), str(reply or "").lower()
        for term in terms:
            if term in user_lower or term in reply_lower:
                counts[term] += 1
                holders[term].add(int(rowid))
    limit = max(1, int(total * 0.005))
    return total, counts, {term: rows for term, rows in holders.items() if counts[term] <= limit}


def measure_terms(db: Path) -> dict[str, Any]:
    """Choose terms per (band, kind) from the store's own text and count them exactly."""
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        sample = [(str(u or ""), str(r or "")) for u, r in conn.execute(
            f"SELECT user_text, reply_text FROM turns ORDER BY turn_id LIMIT {SAMPLE_TURNS}")]
        frequency = _candidates(sample)
        shortlist: dict[tuple[float, str], list[str]] = {}
        for band in BANDS:
            for kind in KINDS:
                fitting = [(distance, token) for token, (token_kind, count) in frequency.items()
                           if token_kind == kind and (distance := abs(math.log(count / len(sample) / band))) < _FIT]
                shortlist[(band, kind)] = [token for _, token in sorted(fitting)[:SHORTLIST]]
        everything = sorted({token for tokens in shortlist.values() for token in tokens})
        total, counts, holders = _exact_counts(conn, everything)
    finally:
        conn.close()
    chosen: dict[str, list[dict[str, Any]]] = {}
    used: set[str] = set()
    for (band, kind), tokens in shortlist.items():
        ranked = sorted((abs(math.log(max(counts[token], 1) / total / band)), token) for token in tokens)
        picks = []
        for distance, token in ranked:
            if distance >= _FIT:
                continue
            # Keep terms distinct and not contained in one another (a query of "cache" and "cache_key").
            if token in used or any(token in other or other in token for other in used):
                continue
            picks.append({"text": token, "kind": kind, "band": band, "turns": counts[token],
                          "share": counts[token] / total})
            used.add(token)
        chosen[f"{band}:{kind}"] = picks
    disjoint = _disjoint_rare(chosen, holders)
    return {"version": SELECTION_VERSION, "turns": total, "sample": len(sample), "terms": chosen,
            "disjoint_rare": disjoint}


def _disjoint_rare(chosen: dict[str, list[dict[str, Any]]], holders: dict[str, set[int]]) -> list[str]:
    """The largest set (greedy, up to 4) of rare terms of which no two share a turn."""
    rare = [pick["text"] for key, picks in chosen.items() if key.startswith(f"{BANDS[0]}:") for pick in picks
            if pick["text"] in holders and pick["turns"] > 0]
    picked: list[str] = []
    seen: set[int] = set()
    for term in rare:
        if not holders[term] & seen:
            picked.append(term)
            seen |= holders[term]
        if len(picked) == 4:
            break
    return picked


def load_terms(db: Path, cache: Path) -> dict[str, Any]:
    """The measured terms of ``db``, from ``cache`` when it was measured on the same store content."""
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        turns = int(conn.execute("SELECT count(*) FROM turns").fetchone()[0])
    finally:
        conn.close()
    if cache.exists():
        saved = json.loads(cache.read_text(encoding="utf-8"))
        if saved.get("version") == SELECTION_VERSION and saved.get("turns") == turns:
            return dict(saved)
    measured = measure_terms(db)
    cache.write_text(json.dumps(measured, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
    return measured


class _Picker:
    def __init__(self, terms: dict[str, Any]) -> None:
        self.terms = terms["terms"]

    def get(self, band: float, kind: str, number: int = 0) -> Term | None:
        picks = self.terms.get(f"{band}:{kind}", [])
        if number >= len(picks):
            return None
        pick = picks[number]
        return Term(pick["text"], pick["kind"], pick["band"], pick["turns"], pick["share"])


# A shape: its name and its slots (band, kind, index within that band and kind).
SHAPES: tuple[tuple[str, tuple[tuple[float, str, int], ...]], ...] = (
    ("2 identifiers (1 % + 5 %)", ((0.01, "ident", 0), (0.05, "ident", 0))),
    ("2 common words (15 % + 30 %)", ((0.15, "word", 0), (0.30, "word", 0))),
    ("3 words (5 %, 15 %, 30 %)", ((0.05, "word", 0), (0.15, "word", 1), (0.30, "word", 1))),
    ("3 moderate (1 % each)", ((0.01, "word", 0), (0.01, "ident", 1), (0.01, "cjk", 0))),
    ("one rare + 3 common", ((0.001, "ident", 0), (0.05, "word", 1), (0.15, "word", 2), (0.30, "word", 2))),
    ("one rare + 7 common", ((0.001, "ident", 1), (0.05, "word", 2), (0.05, "ident", 0), (0.15, "word", 3),
                             (0.15, "ident", 0), (0.30, "word", 3), (0.30, "ident", 0), (0.15, "cjk", 0))),
    ("all common (5 × 5–30 %)", ((0.05, "word", 3), (0.15, "word", 4), (0.15, "ident", 1), (0.30, "word", 4),
                                 (0.30, "cjk", 0))),
    ("5 identifiers (0.1–15 %)", ((0.001, "ident", 2), (0.01, "ident", 3), (0.05, "ident", 1),
                                  (0.05, "ident", 2), (0.15, "ident", 2))),
    ("8 mixed bands and kinds", ((0.001, "ident", 3), (0.01, "ident", 4), (0.01, "cjk", 0), (0.05, "word", 4),
                                 (0.05, "cjk", 0), (0.15, "ident", 3), (0.30, "word", 5), (0.30, "cjk", 1))),
    ("CJK (1 %, 5 %, 15 %)", ((0.01, "cjk", 1), (0.05, "cjk", 1), (0.15, "cjk", 1))),
)
LIMITS = (5, 10, 20)


def multi_queries(terms: dict[str, Any]) -> list[tuple[str, Query, tuple[Term, ...]]]:
    """(shape, query, its terms) for every shape at every limit, plus a folder- and an agent-filtered
    variant at limit 10. A slot without a measured term is left out (small corpora)."""
    picker = _Picker(terms)
    out: list[tuple[str, Query, tuple[Term, ...]]] = []
    shapes: list[tuple[str, tuple[Term, ...]]] = []
    for name, slots in SHAPES:
        chosen = tuple(term for term in (picker.get(*slot) for slot in slots) if term is not None)
        if len(chosen) >= 2:
            shapes.append((name, chosen))
    disjoint = tuple(Term(text, "rare", BANDS[0], 0, 0.0) for text in terms.get("disjoint_rare", []))
    if len(disjoint) >= 2:
        shapes.append(("all rare, no joint match", disjoint))
    for name, chosen in shapes:
        entities = tuple(term.text for term in chosen)
        for limit in LIMITS:
            out.append((name, Query(f"{name}, limit {limit}", entities, limit=limit), chosen))
        out.append((name, Query(f"{name}, folder", entities, limit=10, cwd=FOLDER), chosen))
        out.append((name, Query(f"{name}, agent", entities, limit=10, sources=AGENT), chosen))
    return out


def describe(term: Term) -> str:
    return f"`{term.text}` {100 * term.share:.2f} %" if term.turns else f"`{term.text}`"
