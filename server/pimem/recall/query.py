"""A recall request: :class:`RecallQuery`, its validation (:func:`make_query`) and every limit.

Limits (docs/lsp-extensions.md, "Limits"; the CLI, the language server and the agent tools share them
because they are checked here): a query has 1 to ``MAX_ENTITIES`` entities of at most
``MAX_ENTITY_CHARS`` characters, a free ``text`` at most ``MAX_TEXT_CHARS``, a ``cwd`` at most
``MAX_PATH_CHARS``; an answer holds at most ``limit`` rows whose long fields are cut to the answer
limits below (:func:`pimem.wire.recall_row`; ``truncated`` says so), and
:func:`pimem.recall.get_turn` gives one turn in full.
"""

from __future__ import annotations

from dataclasses import dataclass

from pimem.models import SOURCES, Source, is_source
from pimem.paths import normalize_folder
from pimem.textutil import quoted

MAX_ENTITIES = 8
MAX_LIMIT = 50
DEFAULT_LIMIT = 5
# Paging (an editor's sidebar): rows from ``offset`` on, ``offset + limit`` at most MAX_PAGE_END; the
# matching turns are counted exactly up to TOTAL_CAP (``totalCapped`` says there are more).
MAX_PAGE_END = 1_000
TOTAL_CAP = 1_000
# Request limits. An entity costs a lowercase and a substring search per candidate turn, a text is
# split into words: both stay in milliseconds at these sizes (bench/limits.py has the figures).
MAX_ENTITY_CHARS = 1_000
MAX_TEXT_CHARS = 100_000
MAX_PATH_CHARS = 4_096           # PATH_MAX: the longest cwd a request may give or an answer may hold
MAX_TURN_ID_CHARS = 1_024        # the longest turn id an answer holds uncut and pimem/turn accepts
# Answer limits: what one row of a recall answer holds at most (the whole turn: get_turn).
TEXT_CUT_CHARS = 4_000           # userText, replyText
TOOL_NAMES_CUT = 64              # toolNames: at most this many names ...
TOOL_NAME_CUT_CHARS = 128        # ... of at most this many characters (the model APIs allow 64)


class RecallError(ValueError):
    """Invalid recall parameters; ``field`` names the offending parameter."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(message)
        self.field = field


@dataclass(frozen=True)
class RecallQuery:
    entities: tuple[str, ...]
    limit: int = DEFAULT_LIMIT
    sources: frozenset[Source] | None = None
    cwd: str | None = None
    weights: tuple[int, ...] | None = None    # one positive integer per entity; None: all 1
    offset: int = 0               # the rows from this one on (0: the best)
    with_total: bool = False      # also count the matching turns (up to TOTAL_CAP)


def make_query(entities: object, limit: object = None, sources: object = None,
               cwd: object = None, offset: object = None, with_total: object = None) -> RecallQuery:
    """Validate raw parameters (from the CLI or a JSON request) into a query, or raise RecallError."""
    if not isinstance(entities, list | tuple) or not entities:
        raise RecallError("entities", f"entities must be a list of 1 to {MAX_ENTITIES} strings")
    if len(entities) > MAX_ENTITIES:
        raise RecallError("entities", f"at most {MAX_ENTITIES} entities, got {len(entities)}")
    for position, entity in enumerate(entities):
        if not isinstance(entity, str):
            raise RecallError("entities", f"entities[{position}] must be a string")
        if not entity.strip():
            raise RecallError("entities", f"entities[{position}] is blank")
        if len(entity) > MAX_ENTITY_CHARS:
            raise RecallError("entities", f"entities[{position}] is longer than {MAX_ENTITY_CHARS} characters "
                                          f"({len(entity)})")
    if limit is None:
        limit = DEFAULT_LIMIT
    if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= MAX_LIMIT:
        raise RecallError("limit", f"limit must be an integer between 1 and {MAX_LIMIT}")
    source_set: frozenset[Source] | None = None
    if sources is not None:
        if not isinstance(sources, list | tuple | set | frozenset):
            raise RecallError("sources", f"sources must be a list of {', '.join(map(repr, SOURCES))}")
        for source in sources:
            if not is_source(source):
                raise RecallError("sources", f"unknown source {quoted(source)} (expected one of {', '.join(SOURCES)})")
        source_set = frozenset(sources) or None
    folder: str | None = None
    if cwd is not None:
        if not isinstance(cwd, str) or not cwd.strip():
            raise RecallError("cwd", "cwd must be a non-empty path")
        if len(cwd) > MAX_PATH_CHARS:
            raise RecallError("cwd", f"cwd is longer than {MAX_PATH_CHARS} characters ({len(cwd)})")
        folder = normalize_folder(cwd)
    if offset is None:
        offset = 0
    if isinstance(offset, bool) or not isinstance(offset, int) or offset < 0:
        raise RecallError("offset", "offset must be an integer of at least 0")
    if offset + limit > MAX_PAGE_END:
        raise RecallError("offset", f"offset + limit must be at most {MAX_PAGE_END} (got {offset + limit})")
    if with_total is None:
        with_total = False
    if not isinstance(with_total, bool):
        raise RecallError("withTotal", "withTotal must be true or false")
    return RecallQuery(tuple(entities), limit, source_set, folder, offset=offset, with_total=with_total)


def check_turn_id(turn_id: object) -> str:
    """A turn id as :func:`pimem.recall.get_turn` takes it, or RecallError naming ``turnId``."""
    if not isinstance(turn_id, str) or not turn_id.strip():
        raise RecallError("turnId", "turnId must be a non-empty string")
    if len(turn_id) > MAX_TURN_ID_CHARS:
        raise RecallError("turnId", f"turnId is longer than {MAX_TURN_ID_CHARS} characters ({len(turn_id)})")
    return turn_id
