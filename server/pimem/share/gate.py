"""The privacy gate of the push (fail closed): what of a turn may leave the machine.

Every text is redacted with the rules the MCP tools use (:mod:`pimem.redact`): a secret of a known
shape leaves as ``[REDACTED:<kind>]``, never as itself. Then the redacted text is looked at for what
*looks* secret but that the redactor could not classify; a turn holding any of it is **held back**
(kept on this machine, listed by ``pimem share status``) until the person allows it
(``pimem share allow TURN|SESSION``; the known secrets stay masked even then):

* ``private-key-marker``: a ``PRIVATE KEY`` armour line, a PuTTY key file header or a
  ``Private-Lines:`` line left after redaction (a key in a format the redactor does not cut out);
* ``high-entropy``: a run of 20 or more base64/base64url characters mixing upper case, lower case and
  digits, with a character entropy near that of random text, that is not word-like (identifiers,
  camelCase, paths), not hex (hashes, SHAs, UUIDs), not an OpenSSH public key, an image's ``data:`` URL or an
  integrity hash (``sha512-…``); other base64 (which may encode anything) is held;
* ``env-block``: three or more consecutive ``NAME=value`` lines (upper-case names, as in ``.env``
  files and ``export`` lists) whose values are not placeholders or already masked.

Texts are cut to :data:`SHARED_TEXT_CHARS` (a huge paste adds nothing to recall): redacted first with
a margin, cut after, so that no half of a secret survives the cut. Every check is linear in the text.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from dataclasses import dataclass

from pimem import redact

SHARED_TEXT_CHARS = 200_000
_CUT_MARGIN = 32_768          # longer than any key block the redactor masks whole
_CUT_MARKER = "… [{more} more characters not shared]"

_KEY_MARKER = re.compile(r"PRIVATE KEY|PuTTY-User-Key-File|Private-Lines:|PRIVATE-KEY")
_TOKEN = re.compile(r"[A-Za-z0-9+/_-]{20,}+=*+")
_HEX = re.compile(r"[0-9a-fA-F_/-]++")
# Identifiers, words in camelCase or snake_case, paths and versions: runs of lower-case words, capitalised
# words, acronyms and short numbers with separators between them.
_WORDY = re.compile(r"(?:[A-Z]?[a-z]{2,}+|[A-Z]{2,}+(?![a-z])|[0-9]{1,4}+|[_/+-])++")
# Public data in base64: OpenSSH public keys, images in data: URLs; subresource integrity hashes.
_PUBLIC_BEFORE = re.compile(r"(?:(?:ssh-(?:rsa|dss|ed25519)|ecdsa-sha2-nistp[0-9]+|sk-ssh-ed25519@openssh\.com) "
                            r"|data:image/[a-z0-9.+-]{1,20}+;base64,)$")
_INTEGRITY = re.compile(r"sha(?:256|384|512)-")
_ENV_LINE = re.compile(r"^[ \t]*+(?:export[ \t]++)?[A-Z][A-Z0-9_]{1,}+=([^\n]*+)$", re.MULTILINE)
_ENV_PLACEHOLDER = re.compile(r"""\s*+["']?(?:$|["']|\$|<|\[REDACTED|\*{3}|x{3}|X{3}|changeme|\.\.\.|…)""")
_ENV_RUN = 3


@dataclass(frozen=True)
class GatedText:
    text: str                    # redacted and cut: what may be pushed
    masked: Counter[str]         # kinds of known secrets masked
    suspicious: Counter[str]     # what looked secret but was not classified (the turn is held)


def _entropy(token: str) -> float:
    counts = Counter(token)
    n = len(token)
    return -sum(c / n * math.log2(c / n) for c in counts.values())


def _random_looking(token: str) -> bool:
    body = token.rstrip("=")
    if len(body) < 20 or _HEX.fullmatch(body):
        return False
    if not (any(c.isupper() for c in body) and any(c.islower() for c in body) and any(c.isdigit() for c in body)):
        return False
    if _WORDY.fullmatch(body):
        return False
    # random text over ~64 symbols: nearly every character distinct in short tokens
    threshold = min(4.2, math.log2(len(body)) - 0.75)
    return _entropy(body) >= threshold


def suspicious_kinds(text: str) -> Counter[str]:
    """What in ``text`` (already redacted) looks secret without a known shape."""
    found: Counter[str] = Counter()
    if _KEY_MARKER.search(text):
        found["private-key-marker"] += len(_KEY_MARKER.findall(text))
    for match in _TOKEN.finditer(text):
        start = match.start()
        if start and (text[start - 1].isalnum() or text[start - 1] in "+/_-="):
            continue
        token = match.group(0)
        if _INTEGRITY.match(token) or _PUBLIC_BEFORE.search(text, max(0, start - 40), start):
            continue
        if _random_looking(token):
            found["high-entropy"] += 1
    run, last_end = 0, -2
    for match in _ENV_LINE.finditer(text):
        live = not _ENV_PLACEHOLDER.match(match.group(1))
        contiguous = match.start() == last_end + 1
        run = (run + 1 if contiguous else 1) if live else 0
        last_end = match.end() if live else -2
        if run == _ENV_RUN:
            found["env-block"] += 1
    return found


def gate_text(text: str) -> GatedText:
    """``text`` as it may leave the machine, with what was masked and what looked secret."""
    cut = len(text) > SHARED_TEXT_CHARS
    if len(text) > SHARED_TEXT_CHARS + _CUT_MARGIN:
        text = text[:SHARED_TEXT_CHARS + _CUT_MARGIN]
    redacted = redact.redact_kinds(text)
    out = redacted.text
    if cut:
        more = max(0, len(out) - SHARED_TEXT_CHARS)
        out = out[:SHARED_TEXT_CHARS] + _CUT_MARKER.format(more=more) if more else out
    # NUL cannot be stored in a PostgreSQL text value
    if "\x00" in out:
        out = out.replace("\x00", "\ufffd")
    return GatedText(out, Counter(redacted.kinds), suspicious_kinds(out))
