"""Memory of each line: which conversation's edit wrote the lines of a file as it is now (issue 23).

One service for every surface (``pimem blame``, ``pimem/lineHistory``, the ``line_history`` agent
tool). Input: a file's path and its current text (the editor sends its unsaved buffer), a range of
lines. The evidence is the edit spans (pimem.store.edits, pimem.editspans): per file, the normalized
lines each edit call added and removed, looked up by hash.

**The matching rule**, per line of the current text:

1. *Live writes*: of every call that added this normalized line to this file, the ones still live:
   in time order (turn time, then call order), a call that removed the line (the lines it replaced)
   cancels the most recent live write of it, and a call that added it adds one. A whole-file write
   whose transcript gives what the file held before (Claude Code's ``Write`` result, a created file,
   a Pi ``write`` after a read of the whole file in its turn: pimem.importers.pi) is stored as the line
   diff of the two, an edit like any other. A Pi ``write`` over a file its session saw in an earlier turn
   is stored as two spans of the call: the runs of lines it added to that view (its own: an edit after
   the write; pimem.editspans.span_since) and the rest as a write over unknown content. A whole-file write over content
   the transcript does not give (Pi ``write``, a ``Write`` whose result was not seen) keeps the
   earlier live writes of the lines it repeats (up to as many copies as it wrote: it kept them),
   forgets the earlier writes of every other line, and claims the lines no earlier call wrote only
   as *unconfirmed*: they are its own, or a person's it kept; such a line is not attributed unless
   git confirms it (4.). Except when the write *created* the file: Pi's ``write`` result does not say
   so ("Successfully wrote to PATH"), so a write is taken as the file's creation when no call of any
   agent touched the path before it (no read, write, edit or delete in the file touches of an earlier
   turn, and no read, delete or earlier edit call of it in its own turn): then every line it wrote is
   its own, a write like any other. A person's file that no conversation read before an agent wrote it
   whole (the agent copied it from a prompt, a shell ``cat``) is where this is wrong; git still removes
   its lines committed before the write (4.).
2. *Exact*: the line and the next or previous non-blank line are consecutive lines of one live call
   (a run of ≥ 2, whitespace-insensitive, so reindentation and moving the whole block keep it). The
   longest run wins (runs are compared up to :data:`RUN_CAP` lines), then the most recent call; but when
   the line has copies in the file and another call's run through it is as long over the same lines (as far
   back and as far ahead), no call (round q9: blocks of one repeated line that several calls wrote: each
   call's run goes through every block), unless the winner's run alone reaches a line its call kept right
   next to it (the anchor of round 11, below). And before any of that, for a line with copies in the file: a
   call's run through it does not count when the call's lines around
   that write sit at another copy of the line as far back and as far ahead and further on one side, by
   their text, whole length (round q10: the call wrote the line once, at that copy; a person's copy of a
   block a ``Write`` added stops at the person's ``def g`` where the call's reaches its ``def f``; a later
   call's block like an earlier call's goes through the earlier one's lines too, shorter); no run left:
   no call. Made when the line's runs × its other copies are at most :data:`WHOLE_RUNS_COMPARED`.
   *Placed* (layout 9), when no run says it: the line sits right after (before) a line its live call kept
   right before (after) the lines it added: its context (pimem.editspans ``context_of``: the call's own
   unchanged lines, or the file's lines next to the replaced text where the call's result shows them);
   a non-trivial kept line places, a trivial one (``}``) only with the non-trivial kept line beyond it;
   the most recent such call wins (and wins over the runs of older calls whose other lines name no
   write alone, a ``return result;`` with copies, a ``}``: round 11, the line written again; and, when the
   line itself has copies in the file, over any older call's run: that call wrote one of the copies, which
   one is not known, while the more recent call put its copy between the lines it kept: round 12); not by a
   call that also kept a copy of the line further than
   ``CONTEXT_LINES`` from it when a neighbour of the line is a line the call kept next to that copy
   (the line may be that kept copy, its lines moved away: seed 25; a line away from the copy's kept
   neighbours is the call's: docs/benchmarks.md round 9), not when
   the line is placed on one side only, a copy of it is on the other and the call wrote one copy (which
   of the two it added is the diff's convention), and not when the line and its placing neighbours occur
   in the same order elsewhere in the file (which copy is not known). This is what tells which of
   several copies of a line, or which ``}``, a call wrote.
   Trivial lines (``}``, ``else:``, lone brackets, very short lines: pimem.editspans.is_trivial) are
   attributed only these ways (their writes followed through every call's rows of them, their candidates
   the calls that wrote the nearest non-trivial lines or kept them next to lines they added, and of the
   lines next to them that placed it, so that a
   window answers as the whole file does; past :data:`TRIVIAL_FOLLOWED` rows of the line in the file,
   through those near calls' rows only, in a window and in the whole file alike: a far later call's
   removal of a ``}`` is then not seen, round 7's way). A blank line goes with the next non-blank line
   when that line is exact and the call wrote blank lines right before it; else it is never attributed. Two refinements,
   order-aware: a run of at most :data:`RUN_CAP` lines whose lines occur in the same order at another
   place of the file too (``return result;`` + ``}``: a person's identical block, or the call's own copy
   in a longer run there) names no write, since which copy the call wrote is not known (decided on the
   whole text, so a current-line request answers as the whole file does), unless the run with the
   non-trivial line its call kept right before (after) it, sitting there, occurs once (round 11: ``}`` +
   ``}`` before the line the call kept after them is the call's, a ``}`` + ``}`` elsewhere is not); and
   a write that a later
   call's removal cancelled (the store says that call removed one copy of the line, not which one: the
   most recent write is taken, 1.) is *revived* where the line sits at its place in a run of the call
   that wrote it, when that run reaches, within :data:`RUN_CAP` lines, a line of that call still live
   (for a trivial line, a live line that names a write alone: not trivial, one copy in the file, no
   idiom; a person's ``}`` + ``return result;`` matches any call that wrote those two), or is itself
   :data:`REVIVED_RUN` lines long with such a line in it, or is at least two lines long with such a line of the
   call one line beyond its end, where the call's order puts it (round 11: the line between, the call's,
   rewritten by a person since): the line is back next to the call's own
   lines, in its order (a person's revert, ``git checkout``; or the later call removed another copy, a
   ``}`` of the same call); or, for a non-trivial line, when a non-trivial line the call kept right
   before (after) the lines it added is right before (after) it (its context, as *placed* above: the
   later call removed another copy; round 9). Which removed writes are back is decided before any line
   is matched, so no line is made exact by one that is not. Alone such a line stays unattributed (a
   line typed back).
3. *Line* / *moved*: otherwise a non-trivial line is attributed to its most recent live write, but
   only when the file holds one copy of the line (of two copies outside any block, which one is a
   person's is not known, even when the call wrote two: a person may have deleted one of the agent's
   and kept their own) and no other call ever wrote the
   line (a common line such as ``return result``, alone, says nothing of which call wrote this copy;
   whole-file writes over unknown content do not count, they repeat what they kept), **nor any call in
   another file** (an *idiom*: ``return result;``, ``import os``; layout 8's index of added lines by
   hash, pimem.store.edits ``written_elsewhere``). A person's copy of an idiom is as likely as the
   call's: the case this rule removes is an agent writing an idiom the file already held (a person's
   older copy), then a person deleting or rewriting the agent's copy and keeping their own; one copy
   is left, one call wrote it, and nothing in the store says whose it is. Its cost: an idiom an agent
   wrote alone, still as written, is not attributed either (3 right lines of 15 histories in
   docs/benchmarks.md, against 2 human lines no longer attributed); in a block it still is. Code an
   agent copied from one file to another loses its lone lines the same way. ``moved`` when that call also
   wrote a neighbouring line (within :data:`RUN_CAP` non-blank lines) on the other side of it than in
   the call (the order is broken); ``line`` otherwise.
4. *Git* (optional): when the file is in a git repository, ``git blame --porcelain`` of the text
   sent names each line's commit; a line committed more than :data:`GIT_SLACK_MS` before the call's
   turn existed before it, so that call did not write it and the line is not attributed; but not a
   trivial line or one with copies in the file when git dates no copy of it at or after the call (round
   11: git's diff matched the call's copy to an older identical line, by its own convention). Lines not
   committed yet, and files outside git, are kept as matched; but an unconfirmed line (1.) is
   attributed only when its commit is more than :data:`GIT_SLACK_MS` after the write (precision
   first: nothing says a line committed later was not there before the write), and so is its commit
   in a second blame that ignores whitespace and follows lines moved within the file
   (:data:`GIT_BLAME_MATCH`, run only when some line is to be confirmed): a person's line the write
   kept, moved or reindented by the person since, is dated by plain blame at the commit of the move,
   after the write, but by that blame at its first commit, before it. Used only to confirm: as the
   test of lines committed before the call, it dated agent lines too early (recall 0.91 → 0.78 on
   seed 11, docs/benchmarks.md).

What it cannot see (said in docs): a person who retypes a line exactly as the agent wrote it (or had
an identical copy of an idiom, rule 3, before the agent wrote its own); an
agent edit later undone outside any conversation but written again by hand; calls the user denied
(recorded as made); lines a call wrote through a shell command (``sed``, ``cat >``).

Cost: one lookup of the requested lines' hashes (plus 2 × :data:`RUN_CAP` + 1 non-blank lines around them)
in the file's rows and in its context rows, and two index seeks for each line attributed alone (rule 3's
idioms), and for a trivial line the rows of it (at most :data:`TRIVIAL_FOLLOWED`, else its near calls'
only), and for a line with copies that a call's run goes through that call's added lines (one seek of
``pimem_edit_lines_by_span`` a call, rule 2's whole-length test), so a current-line request reads a handful
of rows whatever the history's size (0.35 ms of CPU at 1M turns: docs/benchmarks.md); the text's hashes are
kept per process for the last texts seen (:func:`_text_info`), and so is the index of its lines that rule
2's copied runs are looked up in (built the first time an exact line with copies in the file is met: ~1 ms
for 5,000 lines). A whole file reads the file's rows in one range, and its per-line Python work is only for
the lines some live call wrote, with short paths for a line one call wrote once (~27–35 ms of CPU for 5,046
lines and 2,000 edits, ~1 ms of it the idiom lookup).
"""

from __future__ import annotations

import hashlib
import os
import sqlite3
import stat
import subprocess
import time
from bisect import bisect_left, bisect_right
from collections import Counter, OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

from pimem import editspans
from pimem.filehistory import normalize_file_path
from pimem.store.batches import chunks, placeholders
from pimem.store.edits import (
    SpanInfo,
    context_rows,
    created_file,
    file_rows,
    line_rows,
    more_rows_than,
    path_id,
    span_infos,
    span_lines,
    whole_spans,
    written_elsewhere,
)
from pimem.store.text import shown_text, tolerating

Confidence = Literal["exact", "line", "moved"]

RUN_CAP = 4                       # runs are compared up to this many lines (and looked for this far)
REVIVED_RUN = 3                   # removed lines back in their call's order, none of its lines live: this many
MAX_CANDIDATES = 64               # the most recent live writes of one line that runs are looked for in
# rule 2's whole-length test (round q10) is made for a line when its runs × its other copies are at most this
# (a person's copy of a block: 1 × 1; a line repeated 64 times that one call wrote 64 times would be 64 × 63)
WHOLE_RUNS_COMPARED = 64
WHOLE_FILE_READ = 400             # more distinct lines than this: the file's rows are read in one range
# a trivial line ("}") with more rows than this in the file (writes and removals of it by all calls) is
# followed through its near calls' rows only, not through every call's: a current-line request stays bounded
TRIVIAL_FOLLOWED = 256
MAX_TEXT_BYTES = 8 * 1024 * 1024  # the largest text attributed
MAX_RANGE_LINES = 20_000          # the most lines of one request
PROMPT_CHARS = 200
GIT_SLACK_MS = 120_000            # clock skew between the agent's machine and the commit's
GIT_TIMEOUT_S = 5.0
# how the blame that confirms a line (rule 4) matches lines: whitespace ignored and lines moved within the
# file followed, as the rule matches them (-M4: a line of 4 letters or digits, what is_trivial needs)
GIT_BLAME_MATCH: tuple[str, ...] = ("-w", "-M4")
GIT_PAGE = 256
_TEXT_CACHE = 8
_GIT_CACHE = 32
GIT_TTL_S = 10.0                  # a page's blame is reused this long (a commit since changes its answer)


@dataclass(slots=True)   # not frozen: a whole file makes thousands, and frozen init costs twice as much
class LineAttribution:
    line: int                     # 0-based, in the text given
    confidence: Confidence
    session_id: str
    turn_id: str
    source: str
    ts: int                       # the turn's time (ms)
    prompt: str                   # the turn's user text: its first line, at most PROMPT_CHARS
    tool: str
    tool_call_id: str | None
    edit_start_line: int | None   # where the run of lines this call wrote starts (exact only)


@dataclass(frozen=True)
class LineHistory:
    path: str
    lines: list[LineAttribution]   # attributed lines only, in line order
    git_used: bool                 # git blame confirmed the time windows


class TextTooLarge(ValueError):
    pass


def read_text(path: str) -> str:
    """A file's text as attributed (the file on disk when the client sends none): a regular file of at
    most MAX_TEXT_BYTES, decoded as UTF-8 (bytes that are not are replaced). OSError when unreadable."""
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    with os.fdopen(fd, "rb") as handle:
        if not stat.S_ISREG(os.fstat(handle.fileno()).st_mode):
            raise OSError(f"{path} is not a regular file")
        data = handle.read(MAX_TEXT_BYTES + 1)
    if len(data) > MAX_TEXT_BYTES:
        raise TextTooLarge(f"the file is larger than {MAX_TEXT_BYTES >> 20} MiB")
    return data.decode("utf-8", "replace")


class _TextInfo:
    """A text's lines, normalized once; their hashes and triviality worked out when first asked for (a
    current-line request looks at a few lines of a large file)."""

    def __init__(self, text: str) -> None:
        self.lines = editspans.split_lines(text)
        # "" for a blank line, and for one too long to be code a person reads (never looked up)
        self.normalized = [editspans.normalize(line) if len(line) <= editspans.MAX_LINE_CHARS else ""
                           for line in self.lines]
        self.counts = Counter(self.normalized)
        self._hashes: dict[int, int] = {}
        self._trivial: dict[int, bool] = {}
        self._non_blank: list[int] | None = None        # the non-blank lines, in order
        # per run length: hash of a run of that many consecutive non-blank lines -> where such runs start
        # (built the first time a run of that length is asked for: each question is then a lookup, not
        # a walk over every copy of its first line, which made a whole file of many short runs
        # quadratic)
        self._runs: dict[int, dict[int, list[int]]] = {}
        self._where: dict[str, list[int]] | None = None   # a line with copies -> where they are (when asked)

    @property
    def non_blank(self) -> list[int]:
        """The non-blank lines, in order (a line's rank among them: :meth:`rank`)."""
        if self._non_blank is None:
            self._non_blank = [i for i, line in enumerate(self.normalized) if line]
        return self._non_blank

    def rank(self, line: int) -> int:
        """The non-blank line ``line``'s index among the non-blank lines (as a call's positions count them)."""
        return bisect_left(self.non_blank, line)

    def elsewhere(self, lines: list[int]) -> bool:
        """Whether the non-blank lines ``lines`` (consecutive among the non-blank lines) occur, in the same
        order and whitespace aside, at another place of the text too."""
        non_blank, normalized, size = self.non_blank, self.normalized, len(lines)
        runs = self._runs.get(size)
        if runs is None:
            runs = self._runs[size] = {}
            for rank in range(len(non_blank) - size + 1):
                key = hash(tuple(normalized[non_blank[rank + k]] for k in range(size)))
                runs.setdefault(key, []).append(rank)
        wanted = [normalized[i] for i in lines]
        first = bisect_left(non_blank, lines[0])
        # (the starts under one hash are those of this run but for a collision: two looks find another)
        return any(rank != first and [normalized[non_blank[rank + k]] for k in range(size)] == wanted
                   for rank in runs.get(hash(tuple(wanted)), ()))

    def copies(self, line: int) -> list[int]:
        """The other lines of the text whose normalized line is ``line``'s, in order."""
        if self.counts[self.normalized[line]] < 2:
            return []
        if self._where is None:
            self._where = {}
            for at, normalized in enumerate(self.normalized):
                if normalized and self.counts[normalized] > 1:
                    self._where.setdefault(normalized, []).append(at)
        return [at for at in self._where.get(self.normalized[line], ()) if at != line]

    def hash(self, line: int) -> int:
        found = self._hashes.get(line)
        if found is None:
            found = self._hashes[line] = editspans.line_hash(self.normalized[line])
        return found

    def trivial(self, line: int) -> bool:
        found = self._trivial.get(line)
        if found is None:
            found = self._trivial[line] = editspans.is_trivial(self.normalized[line])
        return found


_texts: OrderedDict[tuple[str, bytes], _TextInfo] = OrderedDict()
# (path, text digest, first, last, blame options) -> (when blamed, monotonic s; the lines' commit times)
_GitKey = tuple[str, bytes, int, int, tuple[str, ...]]
_git: OrderedDict[_GitKey, tuple[float, dict[int, int | None] | None]] = OrderedDict()


def _digest(text: str) -> bytes:
    return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).digest()


def _text_info(path: str, text: str, digest: bytes) -> _TextInfo:
    """The text's lines, kept for the last texts seen: a cursor moving in one buffer splits it once."""
    key = (path, digest)
    found = _texts.get(key)
    if found is not None:
        _texts.move_to_end(key)
        return found
    info = _TextInfo(text)
    _texts[key] = info
    while len(_texts) > _TEXT_CACHE:
        _texts.popitem(last=False)
    return info


def _window(normalized: list[str], start: int, end: int) -> tuple[int, int]:
    """The range extended by 2 × RUN_CAP + 1 non-blank lines on each side (a neighbour's removed write is
    back when a run reaches a live line within RUN_CAP of it, and that run may start RUN_CAP lines
    away: rule 2)."""
    low, seen = start, 0
    while low > 0 and seen <= 2 * RUN_CAP:
        low -= 1
        seen += normalized[low] != ""
    high, seen = end, 0
    while high < len(normalized) and seen <= 2 * RUN_CAP:
        seen += normalized[high] != ""
        high += 1
    return low, high


Order = tuple[int, int]   # (turn time, span id): the order calls happened in


def line_history(conn: sqlite3.Connection, path: str, text: str, start_line: int = 0, end_line: int | None = None,
                 *, git: bool = True) -> LineHistory:
    """The conversations whose edits wrote lines ``start_line`` to ``end_line`` (0-based, end exclusive;
    None: to the end) of ``text``, the current text of the file at ``path`` (absolute). Only attributed
    lines are listed. ValueError for a relative path; TextTooLarge past MAX_TEXT_BYTES."""
    path = normalize_file_path(path)
    if len(text) > MAX_TEXT_BYTES:
        raise TextTooLarge(f"the text is larger than {MAX_TEXT_BYTES >> 20} MiB")
    file_id = path_id(conn, path)
    if file_id is None:
        return LineHistory(path, [], False)
    digest = _digest(text)
    info = _text_info(path, text, digest)
    end = len(info.lines) if end_line is None else min(end_line, len(info.lines))
    start = max(0, start_line)
    if start >= end:
        return LineHistory(path, [], False)
    chosen, unconfirmed, known = _match(conn, path, file_id, info, start, end)
    if not chosen:
        return LineHistory(path, [], False)
    # the spans _match read already (their order), the rest (none, normally) read now
    wanted = {span for _, span, _ in chosen.values()}
    spans = {span: known[span] for span in wanted if span in known}
    if len(spans) < len(wanted):
        spans.update(span_infos(conn, wanted - set(spans)))
    git_used = False
    if git:
        # blamed in pages of GIT_PAGE lines, kept per text: a cursor moving in a file runs git once a page
        first = min(chosen) // GIT_PAGE * GIT_PAGE + 1
        last = min(len(info.lines), (max(chosen) // GIT_PAGE + 1) * GIT_PAGE)
        times = _git_times(path, text, digest, first, last)
        if times is not None:
            git_used = True
            confirming: list[int] = []
            older: list[int] = []
            for line in list(chosen):
                committed, written = times.get(line), spans[chosen[line][1]].ts
                if committed is not None and committed < written - GIT_SLACK_MS:
                    older.append(line)
                elif line in unconfirmed and committed is not None and committed > written + GIT_SLACK_MS:
                    confirming.append(line)
            for line in older:
                if not _swapped_by_git(path, text, digest, info, line, spans[chosen[line][1]].ts, times):
                    del chosen[line]
            if confirming and GIT_BLAME_MATCH:
                moved = _git_times(path, text, digest, first, last, GIT_BLAME_MATCH)
                confirming = [line for line in confirming if moved is not None and (moved.get(line) or 0)
                              > spans[chosen[line][1]].ts + GIT_SLACK_MS]
            unconfirmed.difference_update(confirming)   # first committed well after the write: not older than it
    # precision first: a line only a whole-file write over unknown content claims is not attributed
    # unless git confirms it
    for line in unconfirmed:
        chosen.pop(line, None)
    # a prompt another program stored as invalid UTF-8 is read tolerantly and shown empty (pimem.store.text)
    return LineHistory(path, tolerating(conn, lambda: _attributions(conn, chosen, spans)), git_used)


def attribute_lines(conn: sqlite3.Connection, path: str, text: str, start_line: int = 0, end_line: int | None = None,
                    *, git: bool = True) -> list[LineAttribution]:
    """:func:`line_history`'s attributed lines."""
    return line_history(conn, path, text, start_line, end_line, git=git).lines


# line -> (confidence, span id, edit start line or -1)
_Chosen = dict[int, tuple[Confidence, int, int]]


def _match(conn: sqlite3.Connection, path: str, file_id: int, info: _TextInfo, start: int, end: int,
           ) -> tuple[_Chosen, set[int], dict[int, SpanInfo]]:
    """The chosen lines, those of them whose write is unconfirmed (:func:`_live`), and the spans read.

    Written for a whole file of thousands of lines (issue 23: ≤ 100 ms): the per-line work is only for
    lines some live call wrote, and a line with one candidate write (most) takes the short paths."""
    low, high = _window(info.normalized, start, end)
    rows_of = [i for i in range(low, high) if info.normalized[i]]
    trivial = {i for i in rows_of if info.trivial(i)}
    strong = {info.hash(i) for i in rows_of if i not in trivial}
    weak = {info.hash(i) for i in trivial}
    if not strong:
        return {}, set(), {}
    if len(strong) > WHOLE_FILE_READ:     # most of a file: one range of the table beats many lookups
        looked_up = strong | weak
        rows = [row for row in file_rows(conn, file_id) if row[0] in looked_up]
    else:
        rows = line_rows(conn, file_id, sorted(strong))
    # layout 9: line -> (span, index) of the calls that kept it next to lines they added (their context):
    # a non-trivial line only (a kept "}" places nothing)
    kept: dict[int, set[tuple[int, int]]] = {}
    # (no line written by a live call: only a trivial line can be placed, by its neighbours)
    context = context_rows(conn, file_id, None if len(strong) > WHOLE_FILE_READ else sorted(strong | weak)) \
        if rows or weak else []
    if not rows and not context:
        return {}, set(), {}
    resets = sorted(whole_spans(conn, file_id))
    spans_read = {span for _, span, _ in rows}
    # only the first whole-file write can have created the file (a later one has it before); asked only
    # when it wrote some of these lines (the touches of a file edited thousands of times are many)
    first_write = resets[0][1] if resets else None
    created = {first_write} if first_write in spans_read and created_file(conn, path, file_id, first_write) else set()
    known: dict[int, SpanInfo] = {}
    order = _orders(conn, spans_read, known)
    gone: dict[int, list[tuple[int, int]]] = {}
    live, unconfirmed = _live([row for row in rows if row[0] in strong], order, resets, created, gone)
    # line -> (span, index among the call's non-blank lines): runs are made of consecutive indexes; who
    # wrote blank lines before a line (the stored position's low bit) decides only blank lines (below)
    # (a line no live call wrote has none: most lines of a large file)
    candidates: dict[int, set[tuple[int, int]]] = {}
    blank_before: set[tuple[int, int, int]] = set()
    line_hash = info.hash
    revived: dict[int, set[tuple[int, int]]] = {}   # line -> removed writes of it, matched only in a run (below)
    for i in rows_of:
        if i not in trivial:
            removed = gone.get(line_hash(i))
            if removed:
                revived[i] = {(span, pos >> 1) for span, pos in removed[-MAX_CANDIDATES:]}
            found = live.get(line_hash(i))
            if not found:
                continue
            if len(found) == 1:   # (_indexed, shortened)
                span, pos = found[0]
                candidates[i] = {(span, pos >> 1)}
                if pos & 1:
                    blank_before.add((i, span, pos >> 1))
            else:
                # the most recent live writes: a line written over and over (an import) is not followed further back
                candidates[i] = _indexed(i, found[-MAX_CANDIDATES:], blank_before)
    kept_weak: dict[int, set[tuple[int, int]]] = {}   # the same for trivial lines: they place only in a chain
    if context:
        kept_by_hash: dict[int, set[tuple[int, int]]] = {}
        for digest, span, pos in context:
            if digest in strong or digest in weak:
                kept_by_hash.setdefault(digest, set()).add((span, pos))
        for i in rows_of:
            found_kept = kept_by_hash.get(line_hash(i))
            if found_kept:
                (kept_weak if i in trivial else kept)[i] = found_kept
    if weak:
        unconfirmed |= _trivial_candidates(conn, file_id, info, rows_of, trivial, candidates, revived, blank_before,
                                           rows, order, known, resets, created, {**kept, **kept_weak},
                                           whole=len(strong) > WHOLE_FILE_READ)
    empty: set[tuple[int, int]] = set()
    idioms_seen: dict[int, bool] = {}

    def distinct(j: int) -> bool:
        """A line that names a write alone (rule 3's tests but the writers'): not trivial, one copy in
        the file, not an idiom."""
        if info.trivial(j) or info.counts[info.normalized[j]] > 1:
            return False
        digest = info.hash(j)
        if digest not in idioms_seen:
            idioms_seen[digest] = bool(written_elsewhere(conn, file_id, [digest]))
        return not idioms_seen[digest]

    call_lines: dict[int, dict[int, int]] = {}   # span -> its added lines (index -> hash), read when first needed
    along: dict[tuple[int, int], list[tuple[int, int]]] = {}   # (span, rank - index) -> its stretches found

    def stretch(s: int, shift: int, r: int) -> tuple[int, int]:
        """The non-blank ranks around rank ``r`` (its line the call's) whose lines are consecutively call ``s``'s
        added lines at index rank - ``shift``: where the call's lines sit in the text around there, by their
        text (the whole text's, whatever the range asked; each stretch walked once)."""
        for low, high in along.get((s, shift), ()):
            if low <= r <= high:
                return low, high
        lines = call_lines.get(s)
        if lines is None:
            lines = call_lines[s] = span_lines(conn, s)
        non_blank = info.non_blank
        low = r
        while low > 0 and lines.get(low - 1 - shift) == line_hash(non_blank[low - 1]):
            low -= 1
        high = r
        while high + 1 < len(non_blank) and lines.get(high + 1 - shift) == line_hash(non_blank[high + 1]):
            high += 1
        along.setdefault((s, shift), []).append((low, high))
        return low, high

    def dominated(i: int, write: tuple[int, int]) -> bool:
        """Whether the lines of call ``write[0]`` around its line ``write[1]`` sit at another copy of line ``i``
        as far back and as far ahead as here, and further on one side: the call wrote its line once, and that
        copy is where its lines are; this one is another's (a person's copy of its block: round q10)."""
        s, p = write
        r = info.rank(i)
        low, high = stretch(s, r - p, r)
        for j in info.copies(i):
            q = info.rank(j)
            other_low, other_high = stretch(s, q - p, q)
            if q - other_low >= r - low and other_high - q >= high - r and other_high - other_low > high - low:
                return True
        return False

    if revived:
        revived = _accepted(rows_of, candidates, revived, distinct, info.trivial,
                            kept if kept else None)
    # the candidates of rows_of[k] at around[k + RUN_CAP + 1]: padded so that no lookup checks bounds
    around = [empty] * (RUN_CAP + 1) + [candidates.get(i, empty) | revived[i] if i in revived
                                        else candidates.get(i, empty) for i in rows_of] + [empty] * (RUN_CAP + 1)
    pad = RUN_CAP + 1
    kept_around = [empty] * pad + [kept.get(i, empty) for i in rows_of] + [empty] * pad
    weak_around = [empty] * pad + [kept_weak.get(i, empty) for i in rows_of] + [empty] * pad

    def kept_side(k: int, s: int, p: int, d: int) -> list[int]:
        """The lines next to rows_of[k] on side d that call s kept there: one non-trivial line, or a
        trivial one then a non-trivial one (a kept "}" places only with the line beyond it)."""
        if (s, p + d) in kept_around[k + pad + d]:
            return [rows_of[k + d]]
        if (s, p + d) in weak_around[k + pad + d] and (s, p + 2 * d) in kept_around[k + pad + 2 * d]:
            return [rows_of[k + d], rows_of[k + 2 * d]]
        return []

    def neighbour(k: int) -> set[tuple[int, int]]:
        return around[k + pad] if k >= -pad else empty

    def kept_at(k: int, s: int, q: int) -> bool:
        """Whether rows_of[k] is a non-trivial line call ``s`` kept at its index ``q`` (its context)."""
        return k >= -pad and (s, q) in kept_around[k + pad]

    def next_to_kept(k: int, s: int, q: int) -> bool:
        """Whether a neighbour of rows_of[k] is a line call ``s`` kept next to its index ``q``."""
        return any((s, q + d) in kept_around[k + pad + d] or (s, q + d) in weak_around[k + pad + d] for d in (-1, 1))

    def run_lines(k: int, s: int, p: int) -> list[int]:
        """The other lines of the run of call ``s`` through rows_of[k] at position ``p`` (up to RUN_CAP a side)."""
        found = []
        for step in (-1, 1):
            d = 1
            while d <= RUN_CAP and (s, p + step * d) in neighbour(k + step * d):
                found.append(rows_of[k + step * d])
                d += 1
        return found

    def run(k: int, s: int, p: int) -> int:
        """The capped length of the run of call ``s`` through line ``rows_of[k]`` at position ``p``."""
        back = 1
        while back < RUN_CAP and (s, p - back) in neighbour(k - back):
            back += 1
        ahead = 1
        while ahead < RUN_CAP and (s, p + ahead) in neighbour(k + ahead):
            ahead += 1
        return back + ahead - 1

    def placed_write(k: int, i: int, mine: set[tuple[int, int]], runs: list[tuple[int, int]],
                     ) -> tuple[int, int] | Literal[False] | None:
        """The write rule 2's context says line ``i`` (rows_of[k]) is: between the lines the call kept next to
        it, the line is where the call put it (the most recent such call; with ``runs``, only a call more
        recent than every run through the line: round 11, the line written again). Not by a call that also
        kept a copy of the line elsewhere than right next to it, when a neighbour of the line is one the call
        kept next to that copy (this may be the copy it kept). False: placed, but which copy is the call's is
        not known; None: not placed (the runs decide)."""
        newest = max((order[t] for t, _ in runs), default=None)
        kept_here = kept_around[k + pad]
        found = [(s, p) for s, p in mine if (newest is None or order[s] > newest)
                 and (kept_side(k, s, p, -1) or kept_side(k, s, p, 1))
                 and not any(t == s and abs(q - p) > editspans.CONTEXT_LINES and next_to_kept(k, s, q)
                             for t, q in kept_here)]
        if not found:
            return None
        best = found[0] if len(found) == 1 else max(found, key=lambda c: order[c[0]])
        s, p = best
        sides = [d for d in (-1, 1) if kept_side(k, s, p, d)]
        other = k - sides[0]
        if len(sides) == 1 and 0 <= other < len(rows_of) and info.normalized[rows_of[other]] == info.normalized[i] \
                and sum(1 for t, _ in mine if t == s) == 1:
            # placed on one side, a copy of itself on the other, and the call wrote one: which of the two it
            # added is the diff's convention (the call's diff of its texts and git's of the file may differ),
            # not known (a run through the line still decides)
            return None if runs else False
        # the line and its kept neighbours, found in the same order elsewhere: which copy is not known
        placed = [j for d in sides for j in kept_side(k, s, p, d)]
        if info.counts[info.normalized[i]] > 1 and info.elsewhere(sorted([i, *placed])):
            return False
        return best

    def exact_write(k: int, i: int, mine: set[tuple[int, int]]) -> tuple[int, int] | Literal[False] | None:
        """The write an exact run through line ``i`` (rows_of[k]) or its call's kept lines (rule 2) say it is;
        None when neither says one (the line may still be matched alone, rule 3); False when they do but
        which copy is the call's is not known (the line is not attributed)."""
        before, after = around[k + pad - 1], around[k + pad + 1]
        if len(mine) == 1:   # one candidate write (most lines): no list, no ranking
            for s, p in mine:
                runs = [(s, p)] if (s, p - 1) in before or (s, p + 1) in after else []
        else:
            runs = [(s, p) for s, p in mine if (s, p - 1) in before or (s, p + 1) in after]
        # the kept lines decide when no run does, or (round 11) when the runs' other lines name no write alone,
        # or (round 12) when the line has copies in the file: which copy the older run's call wrote is not known
        if kept and (not runs or (len(mine) > len(runs) and (info.counts[info.normalized[i]] > 1 or not any(
                distinct(j) for s, p in runs for j in run_lines(k, s, p))))):
            placed = placed_write(k, i, mine, runs)
            if placed is not None:
                return placed
        if not runs:
            return None
        others = info.counts[info.normalized[i]] - 1
        if others and len(runs) * others <= WHOLE_RUNS_COMPARED:
            # (round q10) a run whose call's lines sit longer at another copy of the line is not the call's
            # copy: its whole length tells a person's copy of a block from the call's (past RUN_CAP, where the
            # runs' capped lengths are equal), and an earlier call's block from a later call's like it
            held = [c for c in runs if not dominated(i, c)]
            if not held:
                return False
            runs = held
        if len(runs) == 1:
            best, longest = runs[0], runs
        else:
            lengths = [run(k, *c) for c in runs]
            length = max(lengths)
            longest = [c for c, n in zip(runs, lengths, strict=True) if n == length]
            best = max(longest, key=lambda c: order[c[0]])
        if info.counts[info.normalized[i]] > 1:
            if _copied_run(k, best, rows_of, neighbour, info, kept_at):
                return False
            # (round q9) another call's run through the line as long (capped) and over the same lines (as
            # far as they are looked at): both calls wrote these lines in this order here, and the file
            # holds copies of the line (blocks of one repeated line, a block two calls wrote): which copy
            # is whose is not known, recency does not say it; unless only this call's run (at any of its
            # positions: a repeated line is at several of one call) reaches a line its call kept right
            # next to it (round 11's anchor). Runs over other lines (one reaching back, the other ahead)
            # are told apart by those lines: the most recent call, as before.
            if any(s != best[0] for s, _ in longest):
                bounds = {c: _run_bounds(k, c, neighbour) for c in longest}
                if _same_lines(best[0], bounds) and not (
                        any(_beside_kept(k, c, bounds[c], rows_of, kept_at) for c in longest if c[0] == best[0])
                        and not any(_beside_kept(k, c, bounds[c], rows_of, kept_at)
                                    for c in longest if c[0] != best[0])):
                    return False
        return best

    chosen: _Chosen = {}
    weak_lines: set[int] = set()
    writers: dict[int, set[int]] | None = None   # line hash -> the calls that ever wrote it (when needed)
    alone: list[tuple[int, int, Confidence, int, bool]] = []   # (line, hash, confidence, span, unconfirmed)
    picked: dict[int, tuple[int, int]] = {}
    # the line after blank lines that end the range decides them: it is matched too, then dropped
    following = next((i for i in rows_of if i >= end), None) if not info.normalized[end - 1] else None
    for k, i in enumerate(rows_of):
        if not start <= i < end and i != following:
            continue
        mine = around[k + pad]
        if not mine:      # no live write of the line (most lines of a large file): nothing to match
            continue
        best = exact_write(k, i, mine)
        if best is False:   # a run or the call's kept lines name writes, but not which copy is whose
            continue
        if best is not None:
            s, p = picked[i] = best
            if k > 0 and picked.get(rows_of[k - 1]) == (s, p - 1):
                first = chosen[rows_of[k - 1]][2]
            else:
                back = 0
                while (s, p - back - 1) in around[k - back - 1 + pad]:   # the padding (empty) ends it
                    back += 1
                first = rows_of[k - back]
            chosen[i] = ("exact", s, first)
            if best in unconfirmed:
                weak_lines.add(i)
            continue
        if i in trivial:
            continue
        digest = info.hash(i)
        entries = live.get(digest, [])
        if not entries or info.counts[info.normalized[i]] > 1:   # copies outside a block: whose is whose?
            continue
        if writers is None:
            rewrites = {span for _, span in resets} - created   # they repeat the lines they kept (see _live)
            writers = {}
            for row_digest, row_span, row_pos in rows:
                if row_pos >= 0 and row_span not in rewrites:
                    writers.setdefault(row_digest, set()).add(row_span)
        if len(writers.get(digest, ())) > 1:
            # a common line (``return result``) several calls wrote: alone, it says nothing of which
            continue
        span, pos = entries[0] if len(entries) == 1 else max(entries, key=lambda entry: order[entry[0]])
        neighbours = rows_of[max(0, k - RUN_CAP):k] + rows_of[k + 1:k + 1 + RUN_CAP]
        alone.append((i, digest, "line" if _in_order(i, span, candidates, neighbours) else "moved", span,
                      (span, pos >> 1) in unconfirmed))
    # a line some call also wrote in another file is an idiom (``return result;``): a person's copy of it
    # is as likely as the call's, so alone it names no write
    idioms = written_elsewhere(conn, file_id, {digest for _, digest, _, _, _ in alone}) if alone else set()
    for i, digest, confidence, span, weak_write in alone:
        if digest in idioms:
            continue
        chosen[i] = (confidence, span, -1)
        if weak_write:
            weak_lines.add(i)
    # A blank line is the call's when the next non-blank line is in an exact run of that call and the
    # call wrote blank lines right before it.
    next_line: int | None = None
    for i in range(min(end, len(info.normalized)) - 1, start - 1, -1):
        if info.normalized[i]:
            next_line = i
            continue
        if i < end and next_line is None:
            next_line = following
        if next_line is None or next_line not in picked:
            continue
        s, p = picked[next_line]
        if (next_line, s, p) in blank_before:
            chosen[i] = ("exact", s, min(i, chosen[next_line][2]))
            if next_line in weak_lines:
                weak_lines.add(i)
    if following is not None:
        chosen.pop(following, None)
        weak_lines.discard(following)
    return chosen, weak_lines, known


def _accepted(rows_of: list[int], candidates: dict[int, set[tuple[int, int]]],
              revived: dict[int, set[tuple[int, int]]], distinct: Callable[[int], bool],
              trivial: Callable[[int], bool], kept: dict[int, set[tuple[int, int]]] | None = None,
              ) -> dict[int, set[tuple[int, int]]]:
    """Of the removed writes of each line, those a run says are back (:func:`_anchored`), or those the
    call's kept lines place (``kept``: a non-trivial line it kept right before or after it, rule 2's
    context), decided before any line is matched, so that no line is made exact by a removed write next
    to it that is not back."""
    empty: set[tuple[int, int]] = set()
    every = [candidates.get(i, empty) | revived[i] if i in revived else candidates.get(i, empty) for i in rows_of]

    def neighbour(k: int) -> set[tuple[int, int]]:
        return every[k] if 0 <= k < len(every) else empty

    def placed(k: int, s: int, p: int) -> bool:
        return kept is not None and ((k > 0 and (s, p - 1) in kept.get(rows_of[k - 1], empty))
                                     or (k + 1 < len(rows_of) and (s, p + 1) in kept.get(rows_of[k + 1], empty)))

    accepted: dict[int, set[tuple[int, int]]] = {}
    for k, i in enumerate(rows_of):
        if i in revived:
            back = {(s, p) for s, p in revived[i]
                    if (((s, p - 1) in neighbour(k - 1) or (s, p + 1) in neighbour(k + 1))
                        and _anchored(k, (s, p), rows_of, neighbour, revived, distinct, trivial))
                    or placed(k, s, p)}
            if back:
                accepted[i] = back
    return accepted


def _anchored(k: int, best: tuple[int, int], rows_of: list[int],
              neighbour: Callable[[int], set[tuple[int, int]]], revived: dict[int, set[tuple[int, int]]],
              distinct: Callable[[int], bool], trivial: Callable[[int], bool]) -> bool:
    """Whether the run of call ``best[0]`` through line ``rows_of[k]`` (a write of it that a later call
    removed) says the line is back where the call wrote it: the run reaches, within RUN_CAP lines, a line
    of that call still live, or is REVIVED_RUN lines long with a line in it that names a write alone
    (``distinct``: not trivial, one copy in the file, no idiom). For a trivial line (``}``) the live line
    must be such a line too: a person's ``}`` + ``return result;`` matches any call that wrote those two."""
    s, p = best
    weak = trivial(rows_of[k])
    lines = [rows_of[k]]
    ends: list[tuple[int, int]] = []   # (side, how far the run goes on it + 1)
    for step in (-1, 1):
        d = 1
        while d <= RUN_CAP and (s, p + step * d) in neighbour(k + step * d):
            j = rows_of[k + step * d]
            if (s, p + step * d) not in revived.get(j, ()) and (not weak or distinct(j)):
                return True
            lines.append(j)
            d += 1
        ends.append((step, d))
    if len(lines) >= REVIVED_RUN and any(distinct(j) for j in lines):
        return True
    if len(lines) < 2:
        return False
    # round 11: a run of two, one line away from a live line of the call where the call's order puts it
    # (the line between them one the call wrote and a person rewrote since)
    for step, d in ends:
        at = k + step * (d + 1)
        if d <= RUN_CAP and 0 <= at < len(rows_of) and (s, p + step * (d + 1)) in neighbour(at) \
                and (s, p + step * (d + 1)) not in revived.get(rows_of[at], ()) \
                and (not weak or distinct(rows_of[at])):
            return True
    return False


def _run_bounds(k: int, best: tuple[int, int], neighbour: Callable[[int], set[tuple[int, int]]]) -> tuple[int, int]:
    """How many lines the exact run of call ``best[0]`` through line ``rows_of[k]`` reaches back and ahead
    (together at most RUN_CAP + 1 beyond the line)."""
    s, p = best
    back = 0
    while back <= RUN_CAP and (s, p - back - 1) in neighbour(k - back - 1):
        back += 1
    ahead = 0
    while back + ahead <= RUN_CAP and (s, p + ahead + 1) in neighbour(k + ahead + 1):
        ahead += 1
    return back, ahead


def _same_lines(call: int, bounds: dict[tuple[int, int], tuple[int, int]]) -> bool:
    """Whether another call's run (its :func:`_run_bounds` in ``bounds``, by (call, position)) reaches as far
    back and as far ahead as a run of ``call`` through the same line: it holds every line of that run."""
    mine = {reach for c, reach in bounds.items() if c[0] == call}
    others = {reach for c, reach in bounds.items() if c[0] != call}
    return any(back >= low and ahead >= high for back, ahead in others for low, high in mine)


def _beside_kept(k: int, best: tuple[int, int], reach: tuple[int, int], rows_of: list[int],
                 kept_at: Callable[[int, int, int], bool]) -> bool:
    """Whether the exact run of call ``best[0]`` through line ``rows_of[k]``, reaching ``reach`` lines back and
    ahead (:func:`_run_bounds`), has right before (after) it the non-trivial line its call kept right before
    (after) it."""
    s, p = best
    back, ahead = reach
    return (k - back > 0 and kept_at(k - back - 1, s, p - back - 1)) or \
        (k + ahead + 1 < len(rows_of) and kept_at(k + ahead + 1, s, p + ahead + 1))


def _copied_run(k: int, best: tuple[int, int], rows_of: list[int],
                neighbour: Callable[[int], set[tuple[int, int]]], info: _TextInfo,
                kept_at: Callable[[int, int, int], bool]) -> bool:
    """Whether the exact run of call ``best[0]`` through line ``rows_of[k]`` is short (at most RUN_CAP
    lines) and its lines occur in the same order at another place of the text: which copy the call
    wrote is not known (a person's identical ``return result;`` / ``}``, or the call's own copy in a
    longer run elsewhere), so neither names it. With the non-trivial line the call kept right before
    (after) the run, where that line is right before (after) it here (its context, layout 9): the copy
    between the call's run and the line it kept next to it is the call's (round 11). Decided on the
    whole text, whatever the range asked."""
    s, p = best
    back, ahead = _run_bounds(k, best, neighbour)
    if back + ahead + 1 > RUN_CAP:
        return False
    low, high = k - back, k + ahead
    if low > 0 and kept_at(low - 1, s, p - back - 1):
        low -= 1
    if high + 1 < len(rows_of) and kept_at(high + 1, s, p + ahead + 1):
        high += 1
    return info.elsewhere(rows_of[low:high + 1])


def _indexed(line: int, found: list[tuple[int, int]], blank_before: set[tuple[int, int, int]],
             ) -> set[tuple[int, int]]:
    """(span, index) of live writes (span, stored position); notes those written after blank lines."""
    indexed = set()
    for span, pos in found:
        indexed.add((span, pos >> 1))
        if pos & 1:
            blank_before.add((line, span, pos >> 1))
    return indexed


def _trivial_candidates(conn: sqlite3.Connection, file_id: int, info: _TextInfo, rows_of: list[int],
                        trivial: set[int], candidates: dict[int, set[tuple[int, int]]],
                        revived: dict[int, set[tuple[int, int]]], blank_before: set[tuple[int, int, int]],
                        rows: list[tuple[int, int, int]],
                        order: dict[int, Order], known: dict[int, SpanInfo], resets: list[Order],
                        created: set[int], kept: dict[int, set[tuple[int, int]]], *, whole: bool,
                        ) -> set[tuple[int, int]]:
    """Trivial lines ("}", "else:") count only inside a run, so only the calls that wrote the nearest
    non-trivial lines around them are looked at (not every call that ever wrote a "}"), and the calls
    that kept the line right next to them (``kept``: their context, which places a "}" too)."""
    before: dict[int, set[int]] = {}
    after: dict[int, set[int]] = {}
    last: set[int] = set()
    # the calls that wrote the nearest non-trivial line on each side, or kept it next to lines they added
    # (round 11: "}" + "}" + a line the call kept after them: the first "}" is in the call's run too)
    for i in rows_of:
        if i in trivial:
            before[i] = last
        else:
            last = {s for s, _ in candidates.get(i, ())} | {s for s, _ in kept.get(i, ())}
    last = set()
    for i in reversed(rows_of):
        if i in trivial:
            after[i] = last
        else:
            last = {s for s, _ in candidates.get(i, ())} | {s for s, _ in kept.get(i, ())}
    for k, i in enumerate(rows_of):
        if i in trivial:
            for j in (rows_of[k - 1] if k > 0 else None, rows_of[k + 1] if k + 1 < len(rows_of) else None):
                if j is not None and j in kept:
                    before[i] = before[i] | {s for s, _ in kept[j]}
    wanted: set[int] = set()
    for spans in (*before.values(), *after.values()):
        wanted |= spans
    if not wanted:
        return set()
    weak = {info.hash(i) for i in trivial}
    if whole:   # every row of these hashes was read: counted here as the window counts them in the store
        written = Counter(digest for digest, _, _ in rows if digest in weak)
        crowded = {digest for digest, count in written.items() if count > TRIVIAL_FOLLOWED}
    else:
        crowded = {digest for digest in weak if more_rows_than(conn, file_id, digest, TRIVIAL_FOLLOWED)}
        rows = line_rows(conn, file_id, sorted(weak - crowded))
        if crowded:   # only the near calls' rows of them (bounded by the calls, not by the file's history)
            rows += line_rows(conn, file_id, sorted(crowded), sorted(wanted))
        order.update(_orders(conn, {span for _, span, _ in rows} - set(order), known))
    gone: dict[int, list[tuple[int, int]]] = {}
    found, unconfirmed = _live([row for row in rows if row[0] in weak and row[0] not in crowded], order, resets,
                               created, gone)
    # a crowded line: its writes followed through its near calls' rows only (TRIVIAL_FOLLOWED), the same
    # in a window and in the whole file
    by_span: dict[int, dict[int, list[tuple[int, int, int]]]] = {}
    if crowded:
        for row in rows:
            if row[0] in crowded:
                by_span.setdefault(row[0], {}).setdefault(row[1], []).append(row)
    followed: dict[tuple[int, frozenset[int]], tuple[dict[int, list[tuple[int, int]]],
                                                      dict[int, list[tuple[int, int]]]]] = {}
    for i in trivial:
        near = before[i] | after[i]
        digest = info.hash(i)
        writes, removals = found, gone
        if digest in crowded:
            key = (digest, frozenset(near))
            if key not in followed:
                mine: dict[int, list[tuple[int, int]]] = {}
                near_rows = [row for s in sorted(near) for row in by_span.get(digest, {}).get(s, ())]
                live_near, unconfirmed_near = _live(near_rows, order, resets, created, mine)
                unconfirmed |= unconfirmed_near
                followed[key] = (live_near, mine)
            writes, removals = followed[key]
        candidates[i] = _indexed(i, [(s, p) for s, p in writes.get(digest, []) if s in near], blank_before)
        removed = [(s, p >> 1) for s, p in removals.get(digest, ()) if s in near]
        if removed:
            revived[i] = set(removed)
    return unconfirmed


def _live(rows: list[tuple[int, int, int]], order: dict[int, Order], resets: list[Order], created: set[int],
          removed_writes: dict[int, list[tuple[int, int]]] | None = None,
          ) -> tuple[dict[int, list[tuple[int, int]]], set[tuple[int, int]]]:
    """Per line hash, the writes of it still live (span, position), oldest first, and the unconfirmed
    ones among them as (span, index). In the calls' order: a call's removals of the line cancel the most
    recent live writes, then its own writes are added. A call that wrote the whole file over content
    its transcript does not give (``resets``, ordered) keeps the earlier live writes of the lines it
    repeats (it kept them; up to as many as it wrote) and forgets the others; the lines it wrote that
    no earlier call did are its own or were already there (a person's): unconfirmed, unless the write
    created the file (``created``: no call touched it before; its lines are all its own). When given,
    ``removed_writes`` gets, per hash, the writes later calls' removals cancelled (since the last
    whole-file write over unknown content): rule 2's revived lines."""
    # most line hashes have one row (one call wrote the line once): kept apart, they skip the general case
    single: dict[int, tuple[int, int]] = {}          # hash -> (span, position) of its only row
    by_digest: dict[int, dict[int, list[int]]] = {}   # hash -> span -> its positions (< 0: removed)
    for digest, span, pos in rows:
        spans = by_digest.get(digest)
        if spans is None:
            first = single.pop(digest, None)
            if first is None:
                single[digest] = (span, pos)
                continue
            spans = by_digest[digest] = {first[0]: [first[1]]}
        if span in spans:
            spans[span].append(pos)
        else:
            spans[span] = [pos]
    whole = {span for _, span in resets}
    last_reset = resets[-1] if resets else None
    live: dict[int, list[tuple[int, int]]] = {}
    unconfirmed: set[tuple[int, int]] = set()
    for digest, (span, pos) in single.items():
        if span in whole and span not in created:
            unconfirmed.add((span, pos >> 1))
        elif last_reset is not None and last_reset > order[span]:
            live[digest] = []
            continue
        live[digest] = [(span, pos)] if pos >= 0 else []
    for digest, by_span in by_digest.items():
        if len(by_span) == 1:   # written by one call (the general case below, shortened)
            span, positions = next(iter(by_span.items()))
            if span in whole and span not in created:
                unconfirmed.update((span, pos >> 1) for pos in positions)
            elif last_reset is not None and last_reset > order[span]:
                live[digest] = []
                continue
            live[digest] = [(span, pos) for pos in sorted(positions) if pos >= 0]
            continue
        entries: list[tuple[int, int]] = []
        gone: list[tuple[int, int]] = []   # writes a later call's removal cancelled
        previous: Order | None = None
        for span in sorted(by_span, key=order.__getitem__):
            at = order[span]
            # a whole-file write in between that did not write this line: every earlier write of it is gone
            if (entries or gone) and previous is not None and bisect_left(resets, at) > bisect_right(resets, previous):
                entries = []
                gone = []
            previous = at
            positions = by_span[span]
            added = sorted(pos for pos in positions if pos >= 0)
            if span in whole:
                kept = entries[len(entries) - min(len(added), len(entries)):]
                claimed = added[len(kept):]
                if span not in created:
                    unconfirmed.update((span, pos >> 1) for pos in claimed)
                entries = kept + [(span, pos) for pos in claimed]
                gone = []
                continue
            removed = len(positions) - len(added)
            if removed:
                gone.extend(entries[max(0, len(entries) - removed):])
                del entries[max(0, len(entries) - removed):]
            entries.extend((span, pos) for pos in added)
        if (entries or gone) and last_reset is not None and previous is not None and last_reset > previous:
            entries = []
            gone = []
        live[digest] = entries
        if gone and removed_writes is not None:
            removed_writes[digest] = gone
    return live, unconfirmed


def _in_order(i: int, span: int, candidates: dict[int, set[tuple[int, int]]], near: list[int]) -> bool:
    """Whether the neighbouring lines that the same call wrote sit on the same side of line ``i`` as in
    the call (lines in between may have changed); False when the order is broken (a moved line)."""
    mine = [p for s, p in candidates[i] if s == span]
    theirs: list[tuple[bool, list[int]]] = []   # (after line i, the call's positions of that line)
    for j in near:
        written = candidates.get(j)
        if written:
            found = [q for s, q in written if s == span]
            if found:
                theirs.append((j > i, found))
    if not theirs:   # the call wrote none of the neighbours: nothing out of order
        return bool(mine)
    return any(all(any((q > p) == after for q in found) for after, found in theirs) for p in mine)


def _orders(conn: sqlite3.Connection, spans: set[int], known: dict[int, SpanInfo]) -> dict[int, Order]:
    """The spans' order; their rows kept in ``known`` (the chosen ones are shown: read once)."""
    found: dict[int, Order] = {}
    for batch in chunks(sorted(spans)):
        for span_id, turn_id, ts, tool, call_id, whole in conn.execute(
                f"SELECT span_id, turn_id, ts, tool, call_id, whole FROM pimem_edit_spans "
                f"WHERE span_id IN ({placeholders(len(batch))})", batch):
            span_id, ts = int(span_id), int(ts)
            found[span_id] = (ts, span_id)
            known[span_id] = SpanInfo(span_id, str(turn_id), ts, str(tool), None if call_id is None else str(call_id),
                                      bool(whole))
    return found


def _attributions(conn: sqlite3.Connection, chosen: _Chosen, spans: dict[int, SpanInfo]) -> list[LineAttribution]:
    """The chosen lines with their turns' sessions, sources and prompts (a span whose turn is no longer
    stored is left out)."""
    turn_ids = sorted({spans[span].turn_id for _, span, _ in chosen.values()})
    turns: dict[str, tuple[str, str]] = {}    # turn id -> (session id, prompt)
    for batch in chunks(turn_ids):
        for turn_id, session_id, user_text in conn.execute(
                f"SELECT turn_id, session_id, user_text FROM turns WHERE turn_id IN ({placeholders(len(batch))})",
                batch):
            turns[shown_text(turn_id)] = (shown_text(session_id),
                                          shown_text(user_text).strip().split("\n", 1)[0][:PROMPT_CHARS])
    sources: dict[str, str] = {}
    for batch in chunks(sorted({session for session, _ in turns.values()})):
        for session_id, source in conn.execute(
                f"SELECT session_id, source FROM sessions WHERE session_id IN ({placeholders(len(batch))})", batch):
            sources[shown_text(session_id)] = shown_text(source)
    # what a span's lines share, worked out once per span (a whole file has thousands of lines, few spans)
    shared: dict[int, tuple[str, str, str, int, str, str, str | None] | None] = {}
    for span_id, span in spans.items():
        turn = turns.get(span.turn_id)
        shared[span_id] = None if turn is None else (
            turn[0], span.turn_id, sources.get(turn[0]) or turn[0].split(":", 1)[0], span.ts, turn[1], span.tool,
            span.call_id)
    found = []
    for line in sorted(chosen):
        confidence, span_id, start = chosen[line]
        common = shared.get(span_id)
        if common is None:
            continue
        found.append(LineAttribution(line, confidence, *common, start if start >= 0 else None))
    return found


def _swapped_by_git(path: str, text: str, digest: bytes, info: _TextInfo, line: int, written: int,
                    times: dict[int, int | None]) -> bool:
    """Whether git's date of ``line``, older than the call that wrote it, says nothing of that call (rule
    4, round 11): the line is trivial or has copies in the file, and git dates no copy of it in the file
    at or after the call (within GIT_SLACK_MS; a copy not committed yet counts as after). The call's
    commit added a copy of the line; git's diff, matching identical lines by its own convention, gave
    that copy an older commit and this one's date to another line. Where git dates another copy after
    the call, this one is taken as older than the call (a person's ``return result;`` next to the
    call's)."""
    normalized = info.normalized[line]
    copies = info.copies(line)
    if not copies and not info.trivial(line):
        return False
    if copies and not all(copy in times for copy in copies):
        found = _git_times(path, text, digest, copies[0] + 1, copies[-1] + 1)
        if found is None:
            return False
        times = {**times, **found}
    return bool(normalized) and not any(times.get(copy) is None or (times[copy] or 0) >= written - GIT_SLACK_MS
                                        for copy in copies)


def _git_times(path: str, text: str, digest: bytes, first: int, last: int, match: tuple[str, ...] = (),
               ) -> dict[int, int | None] | None:
    """0-based line -> the committer time (ms) of the commit ``git blame`` names for it (None: not
    committed yet), for lines ``first``..``last`` (1-based) of ``text``; None when the file is not in
    a git work tree or git fails. Run without a shell, the path after ``--``, nothing of the
    repository's configuration that runs a program (textconv, fsmonitor)."""
    key = (path, digest, first, last, match)
    now = time.monotonic()
    cached = _git.get(key)
    if cached is not None and now - cached[0] <= GIT_TTL_S:
        _git.move_to_end(key)
        return cached[1]
    found = _run_blame(path, text, first, last, match)
    _git[key] = (now, found)
    _git.move_to_end(key)
    while len(_git) > _GIT_CACHE:
        _git.popitem(last=False)
    return found


def _run_blame(path: str, text: str, first: int, last: int, match: tuple[str, ...] = (),
               ) -> dict[int, int | None] | None:
    folder = os.path.dirname(path)
    if not os.path.isdir(folder):
        return None
    command = ["git", "-c", "core.fsmonitor=false", "blame", "--porcelain", "--no-textconv", *match,
               "--contents", "-", "-L", f"{first},{last}", "--", path]
    # the repository is found from the file's folder, whatever the server's environment points at
    env = {key: value for key, value in os.environ.items()
           if key not in ("GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "GIT_CONFIG_PARAMETERS")}
    env.update({"GIT_OPTIONAL_LOCKS": "0", "GIT_TERMINAL_PROMPT": "0", "LC_ALL": "C"})
    try:
        done = subprocess.run(command, input=text.encode("utf-8", "surrogateescape"), cwd=folder, env=env,
                              capture_output=True, timeout=GIT_TIMEOUT_S, check=False)
    except (OSError, subprocess.SubprocessError):
        return None
    if done.returncode != 0:
        return None
    return _parse_porcelain(done.stdout)


def _parse_porcelain(output: bytes) -> dict[int, int | None]:
    times: dict[str, int] = {}
    lines_of: dict[int, str] = {}
    commit: str | None = None
    for raw in output.split(b"\n"):
        if raw.startswith(b"\t"):
            continue
        parts = raw.split(b" ")
        if len(parts) >= 3 and len(parts[0]) in (40, 64) and parts[1].isdigit() and parts[2].isdigit():
            commit = parts[0].decode("ascii", "replace")
            lines_of[int(parts[2]) - 1] = commit
        elif commit is not None and parts[0] == b"committer-time" and len(parts) == 2 and parts[1].isdigit():
            times[commit] = int(parts[1]) * 1000
    return {line: None if set(sha) == {"0"} else times.get(sha) for line, sha in lines_of.items()}
