"""Edit spans: what one edit tool call wrote, as lines that can be looked up again (issue 23).

The importers say what a call wrote (:class:`pimem.importers.base.EditCall`: the replaced text where the
call says, the new text); this module, shared by every importer, the sync and the attribution
(pimem.lineblame), turns it into lines:

* **Normalized line**: the line without any whitespace (so reindentation and reformatting of spaces
  still match) nor a leading byte-order mark (a file's mark, that a write may drop or add); a blank
  line is never a line of a span (it carries no evidence). Its key is a signed 64-bit BLAKE2b hash of
  the normalized text (:func:`line_hash`).
* **Added lines**: the lines of the new text that the old text did not have (a line diff of old →
  new, so the context an ``Edit`` repeats is not claimed; when both are long, past
  :data:`MAX_DIFF_WORK`, only the common first and last lines count as context, else the diff also
  compares :data:`DIFF_CONTEXT` of them next to the change, so that of two identical lines the one
  kept is the one whose neighbours were kept too; the diff's own search is bounded too, to
  :data:`MAX_DIFF_WORK` pairs of equal lines visited (:class:`_BoundedMatcher`: texts of a few
  alternating lines made it cubic), past which a line is added only in the copies the new text has
  beyond the old text's count (:func:`_counted`)), each with its position
  among the new text's non-blank lines (consecutive positions = consecutive lines: what makes an exact
  block) and whether blank lines came right before it (:func:`position`). The diff compares lines with
  their indentation (:func:`_compared`): a line the call reindented (code it wrapped in a block) is the
  call's, as ``git blame`` says, and is still found by its normalized line wherever a person moves or
  reindents it later.
  **Removed lines**: the lines of the old text the new one no longer has. Where the importer knows what
  a whole-file write replaced only as line hashes (a Pi ``read`` earlier in the turn: :func:`line_keys`,
  :func:`span_against`), the same diff is made on the hashes (of normalized lines: there a line the
  write only reindented keeps its earlier writer).
* **Context lines** (:func:`context_of`, store layout 9): the lines a call kept right next to each block
  of lines it added, :data:`CONTEXT_LINES` a side: its own unchanged lines, and for a block at the start
  or end of its new text the file's lines right before / after the text it replaced, where the
  importer read them from the call's result (:func:`kept_around`: a Claude Code ``Edit``'s
  ``originalFile``; a Pi ``edit``'s patch). They say where the call put its lines (pimem.lineblame
  rule 2), never that it wrote them. At most 2 × CONTEXT_LINES rows per block (docs/benchmarks.md,
  round 8: the store's growth).
* **Bound rule** (:func:`bounded`): a call is recorded only if its new text is at most
  :data:`MAX_CALL_LINES` lines and :data:`MAX_CALL_BYTES` bytes; lines longer than
  :data:`MAX_LINE_CHARS` characters are left out (minified code); files whose name says they are
  generated or locked (:func:`skipped_path`: lock files, ``*.min.js``, source maps…) get no spans.
  The file touch is recorded either way (pimem.store.touches), and a whole-file write over the bound
  still replaces what earlier calls wrote (a span without lines: pimem.sync.ingest).
* **Trivial lines** (:func:`is_trivial`): blank, only brackets/punctuation, a lone keyword (``else:``,
  ``end``, ``pass``…) or fewer than 4 letters and digits. They are stored (they chain an exact block)
  but never attributed on their own.
"""

from __future__ import annotations

import difflib
import hashlib
import posixpath
import re
from collections import Counter
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass, field
from itertools import accumulate

MAX_CALL_LINES = 2_000
MAX_CALL_BYTES = 256 * 1024
MAX_LINE_CHARS = 1_000
MAX_DIFF_WORK = 250_000      # old × new lines a call's line diff may compare (past it: head/tail only),
                             # and pairs of equal lines its matcher may visit (past it: _counted)
DIFF_CONTEXT = 8             # lines of the common head and tail the diff still compares
CONTEXT_LINES = 2            # lines a call kept, stored on each side of each block of lines it added
EARLIER_RUN = 2              # consecutive lines a write must add to an earlier turn's view of the file to claim them

_SKIPPED_NAMES = frozenset({
    "package-lock.json", "npm-shrinkwrap.json", "yarn.lock", "pnpm-lock.yaml", "bun.lockb", "cargo.lock",
    "poetry.lock", "pipfile.lock", "uv.lock", "composer.lock", "gemfile.lock", "go.sum", "flake.lock",
    "packages.lock.json", "podfile.lock", "pubspec.lock", "mix.lock",
})
_SKIPPED_SUFFIXES = (".min.js", ".min.css", ".min.mjs", ".map", ".lock", ".snap", ".pb.go", "_pb2.py",
                     ".generated.ts", ".g.dart", ".svg", ".ipynb_checkpoints")
_TRIVIAL_WORDS = frozenset({
    "else", "else:", "end", "fi", "done", "esac", "try:", "finally:", "except:", "pass", "break", "continue",
    "return", "returnnone", "returnnil", "return;", "break;", "continue;", "default:", "do", "then", "begin",
    "}else{", "};", "});", "]);", "))", "returnfalse", "returntrue", "returnfalse;", "returntrue;", "<div>",
    "</div>", "else{", "}else", "#endif", "#else", "end;", '"""', "'''", "```", "/**", "*/", "//", "#", "--",
})
_WORDISH = re.compile(r"[^\W_]", re.UNICODE)


_LINE_BREAK = re.compile(r"\r\n|\r|\n")


def split_lines(text: str) -> list[str]:
    """The lines of a text as editors and LSP count them: only ``\n``, ``\r\n`` and ``\r`` end a line
    (``str.splitlines`` also splits at form feeds, ``\x1c``–``\x1e``, U+0085, U+2028/9: line numbers
    would drift from the editor's); a final line break opens no line."""
    lines = _LINE_BREAK.split(text)
    if lines and lines[-1] == "":
        lines.pop()
    return lines


def normalize(line: str) -> str:
    """The line without any whitespace, nor a byte-order mark before it (U+FEFF, which is not whitespace: a
    file read with its mark and written back without it, or the other way, keeps its first line)."""
    return "".join(line.split()).lstrip("\ufeff")


def line_hash(normalized: str) -> int:
    """The lookup key of a normalized line: a signed 64-bit integer (SQLite's INTEGER)."""
    digest = hashlib.blake2b(normalized.encode("utf-8", "surrogatepass"), digest_size=8).digest()
    return int.from_bytes(digest, "big", signed=True)


def is_trivial(normalized: str) -> bool:
    """A line that says nothing on its own (see the module doc)."""
    if not normalized or normalized.lower() in _TRIVIAL_WORDS:
        return True
    return len(_WORDISH.findall(normalized)) < 4


def skipped_path(path: str) -> bool:
    """A generated, minified or lock file: no spans (the bound rule)."""
    name = posixpath.basename(path.replace("\\", "/")).lower()
    return name in _SKIPPED_NAMES or name.endswith(_SKIPPED_SUFFIXES)


def bounded(new: str) -> bool:
    """Whether a call's new text is within the bound rule (see the module doc)."""
    return len(new) <= MAX_CALL_BYTES and len(new.encode("utf-8", "surrogatepass")) <= MAX_CALL_BYTES \
        and new.count("\n") < MAX_CALL_LINES


@dataclass(frozen=True)
class Span:
    """What one call did to one file's lines: ``added`` (:func:`position`, hash), ``removed`` (hashes,
    one per removed line), ``context`` (index among the new text's non-blank lines, hash: the
    :data:`CONTEXT_LINES` lines the call kept next to each block of added lines, :func:`context_of`)."""

    added: list[tuple[int, int]]
    removed: list[int]
    context: list[tuple[int, int]] = field(default_factory=list)


def _kept(text: str) -> tuple[list[str], list[int], list[str]]:
    """The normalized non-blank lines of a text (lines too long to be code a person reads are kept as
    an empty marker so positions stay right, and never looked up), for each 1 when blank lines come
    right before it in the text, else 0, and the same lines as the diff compares them (:func:`_compared`)."""
    lines: list[str] = []
    blank_before: list[int] = []
    compared: list[str] = []
    blank = 0
    for line in split_lines(text):
        normalized = "\0" if len(line) > MAX_LINE_CHARS else normalize(line)
        if not normalized:
            blank = 1
            continue
        lines.append(normalized)
        blank_before.append(blank)
        compared.append(normalized if normalized == "\0" else _compared(line))
        blank = 0
    return lines, blank_before, compared


def _compared(line: str) -> str:
    """A line as a call's line diff compares it: its indentation and inner spaces kept (a call that
    reindents a line, wrapping code in a block, wrote it again, as ``git blame`` says), trailing
    whitespace and a leading byte-order mark not."""
    return line.rstrip().lstrip("\ufeff")


def position(index: int, blank_before: int) -> int:
    """A stored position: the line's index among the call's non-blank lines, times 2, plus 1 when blank
    lines came right before it (a blank line of the current text is attributed only where the call
    wrote one: pimem.lineblame)."""
    return index * 2 + blank_before


def span_of(old: str | None, new: str, before: Sequence[str] = (), after: Sequence[str] = ()) -> Span | None:
    """The lines a call added and removed (None: outside the bound rule). Without ``old`` every line of
    ``new`` is added. ``before`` / ``after``: the file's lines right before and after the text the call
    replaced, where its result says (:func:`kept_around`): the context of a block of added lines at
    the start or end of the new text (indexes -1… and past the new text's last line)."""
    if not bounded(new) or (old is not None and not bounded(old)):
        return None
    new_lines, blanks, new_compared = _kept(new)
    old_lines, _, old_compared = _kept(old) if old else ([], [], [])
    if not old_lines:
        span = Span([(position(pos, blanks[pos]), line_hash(line)) for pos, line in enumerate(new_lines)
                     if line != "\0"], [])
    else:
        span = _diff(old_compared, new_compared, blanks, [line != "\0" for line in old_lines],
                     lambda i: line_hash(old_lines[i]), lambda j: line_hash(new_lines[j]), new_lines)
    if old is None or not span.added or not (before or after):
        return span
    first, last = span.added[0][0] >> 1, span.added[-1][0] >> 1
    outside: list[tuple[int, int]] = []
    if first == 0:
        outside.extend((-1 - k, line_hash(normalize(line))) for k, line in enumerate(reversed(before)))
    if last == len(new_lines) - 1:
        outside.extend((len(new_lines) + k, line_hash(normalize(line))) for k, line in enumerate(after))
    return Span(span.added, span.removed, sorted(outside + span.context)) if outside else span


def kept_around(text: str, start: int, end: int) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The :data:`CONTEXT_LINES` nearest non-blank lines of ``text`` (a file before an edit) before
    offset ``start`` and after offset ``end`` (the text the edit replaced), nearest last / first; a side
    is empty unless the replaced text starts at a line's start (ends at a line's end) there: an edit of
    part of a line has no line next to it."""
    before: list[str] = []
    if start == 0 or text[start - 1] in "\n\r":
        for line in reversed(split_lines(text[max(0, start - 4096):start])):
            if len(before) == CONTEXT_LINES:
                break
            if normalize(line) and len(line) <= MAX_LINE_CHARS:
                before.append(line)
        before.reverse()
    after: list[str] = []
    at_end = end > start and text[end - 1] in "\n\r"
    if at_end or end == len(text) or text[end] in "\n\r":
        rest = text[end:end + 4096]
        if not at_end:   # the replaced text ended before its line's break
            rest = rest[2:] if rest.startswith("\r\n") else rest[1:]
        for line in split_lines(rest):
            if len(after) == CONTEXT_LINES:
                break
            if normalize(line) and len(line) <= MAX_LINE_CHARS:
                after.append(line)
    return tuple(before), tuple(after)


# a line too long to be code a person reads, among the keys of line_keys (never equal to a line's hash: a
# normalized line holds no NUL)
_LONG_LINE = line_hash("\0\0")


def line_keys(text: str) -> list[int] | None:
    """What :func:`span_against` needs of a text a file held: the hashes of its normalized non-blank lines,
    in order (None past the bound rule). A Pi ``write`` after a ``read`` of the whole file in the same turn
    (pimem.importers.pi) keeps these, never the text."""
    if not bounded(text):
        return None
    return [_LONG_LINE if line == "\0" else line_hash(line) for line in _kept(text)[0]]


def span_against(before: Sequence[int], new: str) -> Span | None:
    """:func:`span_of` of a whole-file write whose file held the lines ``before`` (:func:`line_keys`): the
    lines it added are those the file did not hold there, the lines it removed those it no longer holds."""
    if not bounded(new) or len(before) >= MAX_CALL_LINES:
        return None
    new_lines, blanks, _ = _kept(new)
    new_keys = [_LONG_LINE if line == "\0" else line_hash(line) for line in new_lines]
    return _diff(before, new_keys, blanks, [key != _LONG_LINE for key in before],
                 before.__getitem__, new_keys.__getitem__, new_lines)


def span_since(earlier: Sequence[int], new: str) -> tuple[Span, Span] | None:
    """A whole-file write over a file its session last saw hold the lines ``earlier`` (:func:`line_keys`)
    in an **earlier** turn (pimem.importers.pi): a person may have changed the file since, so the write is
    not an edit of that view as :func:`span_against` makes it. Two spans, the call's lines split in two:
    its *own* lines (second), those of its lines the view did not hold (beyond the view's count of the line:
    a line a person moved since is no new line) that the diff of the view and the write adds in a run of
    at least :data:`EARLIER_RUN` consecutive non-blank lines, with their context; and every other line it
    wrote (first), to be stored as a write over unknown content (pimem.lineblame rule 1: the earlier
    writers of the lines it repeats kept, the rest unconfirmed). A lone added line stays there: it is as
    likely a line a person rewrote or added between the turns as the write's (docs/benchmarks.md, round
    11). None past the bound rule."""
    if not bounded(new) or len(earlier) >= MAX_CALL_LINES:
        return None
    new_lines, blanks, _ = _kept(new)
    new_keys = [_LONG_LINE if line == "\0" else line_hash(line) for line in new_lines]
    diff = _diff(earlier, new_keys, blanks, [key != _LONG_LINE for key in earlier],
                 earlier.__getitem__, new_keys.__getitem__, new_lines)
    beyond = Counter(new_keys)
    beyond.subtract(Counter(earlier))
    added: list[int] = []
    for pos, digest in reversed(diff.added):   # of a line's copies the diff added, the last ones are new
        if beyond[digest] > 0:
            beyond[digest] -= 1
            added.append(pos >> 1)
    added.reverse()
    taken = set(added)
    own = [index for index in added
           if any(all(k in taken for k in range(start, start + EARLIER_RUN))
                  for start in range(index - EARLIER_RUN + 1, index + 1))]
    mine = set(own)
    kept = Span([(position(index, blanks[index]), new_keys[index]) for index in range(len(new_lines))
                 if index not in mine and new_lines[index] != "\0"], [])
    return kept, Span([(position(index, blanks[index]), new_keys[index]) for index in own],
                      [], [(index, new_keys[index]) for index in context_of(own, len(new_lines))])


def _diff(old_lines: Sequence[Hashable], new_lines: Sequence[Hashable], blanks: list[int], old_real: list[bool],
          old_hash: Callable[[int], int], new_hash: Callable[[int], int],
          shown: Sequence[str] | None = None) -> Span:
    """The line diff of two texts' normalized non-blank lines (or their keys): what was added (positions
    in the new text) and removed. ``shown``: the new text's normalized lines when ``new_lines`` are keys
    (a long line's marker is never added)."""
    new_text = new_lines if shown is None else shown
    # the context an edit repeats is most often its first and last lines: trimmed first, cheaply
    head = 0
    while head < min(len(old_lines), len(new_lines)) and old_lines[head] == new_lines[head]:
        head += 1
    tail = 0
    while (tail < min(len(old_lines), len(new_lines)) - head
           and old_lines[len(old_lines) - 1 - tail] == new_lines[len(new_lines) - 1 - tail]):
        tail += 1
    # but the diff sees DIFF_CONTEXT lines of that context when it can afford to: where the new text
    # repeats a line next to the change, which copy was kept is the one whose neighbours were kept too
    # (the longest matching block), not the first one the trim met
    wider_head, wider_tail = max(0, head - DIFF_CONTEXT), max(0, tail - DIFF_CONTEXT)
    if (len(old_lines) - wider_head - wider_tail) * (len(new_lines) - wider_head - wider_tail) <= MAX_DIFF_WORK:
        head, tail = wider_head, wider_tail
    old_middle = old_lines[head:len(old_lines) - tail]
    new_middle = new_lines[head:len(new_lines) - tail]
    if len(old_middle) * len(new_middle) > MAX_DIFF_WORK:
        # a line diff of two long texts of repeated lines is quadratic: past this, what is between the
        # common head and tail counts as replaced
        old_changed, new_changed = list(range(len(old_middle))), list(range(len(new_middle)))
    else:
        try:
            old_changed, new_changed = _changed(
                _BoundedMatcher(old_middle, new_middle).get_opcodes())
        except _OverBudget:
            old_changed, new_changed = _counted(old_middle, new_middle)
    added = [head + pos for pos in new_changed]
    return Span([(position(index, blanks[index]), new_hash(index)) for index in added if new_text[index] != "\0"],
                [old_hash(head + i) for i in old_changed if old_real[head + i]],
                [(index, new_hash(index)) for index in context_of(added, len(new_lines))
                 if new_text[index] != "\0"])


def context_of(added: Sequence[int], size: int) -> list[int]:
    """The lines a call kept next to the lines it added (indexes among the new text's ``size``
    non-blank lines; ``added`` in order): up to :data:`CONTEXT_LINES` on each side of each block of
    consecutive added lines, not added themselves. They say where the call's lines sit (the line
    before and after them when the call was made: pimem.lineblame rule 2), so of two copies of a line,
    or of many ``}``, the call's is the one still between them. Bounded: at most 2 × CONTEXT_LINES per
    block, never more than the call's own lines."""
    taken = set(added)
    found: list[int] = []
    for k, index in enumerate(added):
        if k == 0 or added[k - 1] != index - 1:      # a block starts: the lines before it
            found.extend(j for j in range(index - CONTEXT_LINES, index) if j >= 0 and j not in taken)
        if k == len(added) - 1 or added[k + 1] != index + 1:   # a block ends: the lines after it
            found.extend(j for j in range(index + 1, index + 1 + CONTEXT_LINES) if j < size and j not in taken)
    return sorted(set(found))


def _changed(opcodes: Sequence[tuple[str, int, int, int, int]]) -> tuple[list[int], list[int]]:
    """The old lines a diff removed and the new lines it added, in order."""
    old_changed: list[int] = []
    new_changed: list[int] = []
    for tag, i1, i2, j1, j2 in opcodes:
        if tag != "equal":
            old_changed.extend(range(i1, i2))
            new_changed.extend(range(j1, j2))
    return old_changed, new_changed


class _OverBudget(Exception):
    """A call's line diff would visit more than :data:`MAX_DIFF_WORK` pairs of equal lines."""


class _BoundedMatcher(difflib.SequenceMatcher[Hashable]):
    """``difflib``'s matcher (no junk: every line counts), with its work bounded. Each search for the
    longest matching block visits, for every old line of its range, the new text's copies of that line
    (its ``b2j`` list, up to the end of the range); ``work`` adds that bound (plus the range's old lines)
    before each search, from prefix sums of the copies made once, and a search that would take it past
    :data:`MAX_DIFF_WORK` is not made (:class:`_OverBudget`). An ordinary edit visits a few pairs (at
    most 4 in the importers' fixtures, 7,122 in 20,000 random ordinary edits: docs/benchmarks.md, round
    q5); 500 × 500 lines of 2 alternating lines visited 3.5 million (the search runs once per matching
    block, each over most of the texts): cubic, where the bound keeps every call linear."""

    def __init__(self, old: Sequence[Hashable], new: Sequence[Hashable]) -> None:
        super().__init__(None, old, new, autojunk=False)
        self.work = 0
        copies = Counter(new)
        self._old_lines = len(old)
        self._visits = list(accumulate((copies[line] for line in old), initial=0))

    def find_longest_match(self, alo: int = 0, ahi: int | None = None, blo: int = 0,
                           bhi: int | None = None) -> difflib.Match:
        end = self._old_lines if ahi is None else ahi
        self.work += end - alo + self._visits[end] - self._visits[alo]
        if self.work > MAX_DIFF_WORK:
            raise _OverBudget
        return super().find_longest_match(alo, ahi, blo, bhi)


def _counted(old: Sequence[Hashable], new: Sequence[Hashable]) -> tuple[list[int], list[int]]:
    """The fallback of a diff over budget (linear): of each line, the copies the new text has beyond the
    old text's count are added (its last ones), and the old text's beyond the new text's count removed.
    No alignment, but no claim the counts deny: a line the old text held as often (context the call
    repeated, a person's line) is never the call's, which the whole middle counted as replaced would
    claim; which copy of a repeated line is the call's is a guess, and such copies are attributed only
    in a run (pimem.lineblame, rule 3 needs a single copy)."""
    def beyond(lines: Sequence[Hashable], other: Sequence[Hashable]) -> list[int]:
        left = Counter(other)
        extra: list[int] = []
        for index, line in enumerate(lines):
            if left[line] > 0:
                left[line] -= 1
            else:
                extra.append(index)
        return extra
    return beyond(old, new), beyond(new, old)

