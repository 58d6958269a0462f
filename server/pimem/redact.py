"""Mask secrets in text handed to an agent (a model prompt): ``[REDACTED:<kind>]`` replaces the secret,
the words around it stay. The store is never changed (it is shared with the Pi extension); redaction
applies to what pimem returns to agents (the MCP tools, the editor's language-model tool).

What is masked (``KINDS``): credentials with a recognisable shape (AWS access key ids, GitHub, OpenAI,
Anthropic, Slack, Google, Stripe, npm, GitLab and Hugging Face tokens, JWTs, PEM private-key blocks,
bearer tokens), the password of a ``scheme://user:password@host`` URL, and the value of an assignment
whose name says it is a secret (``password=…``, ``"api_key": "…"``, ``AWS_SECRET_ACCESS_KEY=…``,
``clientSecret: …``). Shapes are matched with their known prefixes and lengths, never by entropy alone,
so hex hashes, git SHAs, UUIDs and base64 data are left alone; placeholders (``$VAR``, ``${…}``,
``<token>``, ``***``) are not secrets and stay.

Users who want raw text turn redaction off (``pimem mcp --no-redact`` or ``PIMEM_REDACT=0``).
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass

MARKER = "[REDACTED:{kind}]"
ENV_SWITCH = "PIMEM_REDACT"
_OFF_VALUES = {"0", "false", "no", "off"}


def enabled_by_env(env: Mapping[str, str] | None = None) -> bool:
    """``PIMEM_REDACT=0`` (or false/no/off) turns redaction off; anything else, or unset, keeps it on."""
    env = os.environ if env is None else env
    return env.get(ENV_SWITCH, "").strip().lower() not in _OFF_VALUES


@dataclass(frozen=True)
class _Shape:
    kind: str
    # Starts with a literal (or a few), so that re's prefix search skips most of a long text.
    pattern: re.Pattern[str]
    group: int = 0                                     # the part of the match that is the secret
    accept: Callable[[str], bool] | None = None         # a second look at the secret
    word_start: bool = True     # the match must not continue a word (checked here: a lookbehind
                                # at the start of the pattern would defeat the prefix search)


def _mixed(secret: str) -> bool:
    """Random tokens mix digits and letters; words and kebab-case names (``sk-learn-…``) do not."""
    return any(c.isdigit() for c in secret) and any(c.isalpha() for c in secret)


# A value that stands for a secret rather than being one: $VAR, ${VAR}, %(name)s, <token>, {{ x }}, ***, xxx, ….
_PLACEHOLDER = re.compile(r"\$|%\(|<|\{\{|\*{3,}|x{3,}|X{3,}|\.\.\.|…")
_WORD_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-")
_END = r"(?![A-Za-z0-9_-])"  # a token ends at a word boundary (``_`` and ``-`` included)

_SHAPES: tuple[_Shape, ...] = (
    _Shape("private-key", re.compile(
        r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----"
        # the whole block; when its end was cut off, the key lines that follow (a newline, or a
        # written-out \n inside JSON, then base64 or a "Name: value" header line)
        r"(?:.*?-----END (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----"
        r"|(?:(?:\r?\n|\\n)(?:[A-Za-z0-9+/=]{8,}|[A-Za-z-]+: [^\n\\]*))*)", re.DOTALL), word_start=False),
    _Shape("jwt", re.compile(r"eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]*" + _END)),
    _Shape("anthropic-key", re.compile(r"sk-ant-[A-Za-z0-9_-]{20,}" + _END), accept=_mixed),
    _Shape("openai-key", re.compile(r"sk-(?!ant-)(?:proj-|svcacct-|admin-)?[A-Za-z0-9_-]{20,}" + _END),
           accept=_mixed),
    _Shape("aws-access-key-id", re.compile(
        r"A(?:KIA|SIA|BIA|CCA|GPA|IDA|IPA|NPA|NVA|ROA|PKA|SCA)[A-Z0-9]{16}(?![A-Za-z0-9])")),
    _Shape("github-token", re.compile(r"g(?:h[pousr]_[A-Za-z0-9]{36,255}|ithub_pat_[A-Za-z0-9_]{22,255})" + _END)),
    _Shape("gitlab-token", re.compile(r"glpat-[A-Za-z0-9_-]{20,}" + _END)),
    _Shape("slack-webhook", re.compile(
        r"https://hooks\.slack\.com/(?:services|workflows|triggers)/[A-Za-z0-9_/-]{16,}"),
        word_start=False),
    _Shape("slack-token", re.compile(r"xox[abposre]-[A-Za-z0-9-]{10,}" + _END), accept=_mixed),
    _Shape("google-api-key", re.compile(r"AIza[0-9A-Za-z_-]{35}" + _END)),
    # secret and restricted keys (pk_ keys are publishable, not secret)
    _Shape("stripe-key", re.compile(r"sk_(?:live|test)_[0-9A-Za-z]{16,}" + _END)),
    _Shape("stripe-key", re.compile(r"rk_(?:live|test)_[0-9A-Za-z]{16,}" + _END)),
    _Shape("npm-token", re.compile(r"npm_[A-Za-z0-9]{36}" + _END), accept=_mixed),
    _Shape("huggingface-token", re.compile(r"hf_[A-Za-z0-9]{30,}" + _END), accept=_mixed),
    _Shape("bearer-token", re.compile(r"earer(?<=[Bb]earer)[ \t]+([A-Za-z0-9._~+/-]{16,}=*)"),
           group=1, accept=_mixed, word_start=False),
    # The password of scheme://user:password@host (the user, the scheme and the host stay).
    _Shape("url-password", re.compile(r"://[^\s/:@]+:([^\s/@]+)@"), group=1,
           accept=lambda secret: not _PLACEHOLDER.match(secret), word_start=False),
)

# name = value, name: value, "name": "value" where the name's last word says it is a secret.
# The name is split into words at _ . - and camelCase humps (AWS_SECRET_ACCESS_KEY, clientSecret).
# The scan finds the secret words first (str.find on the lowered text: several times faster than a
# regex alternation), keeps those followed by a separator, then reads the whole assignment from the
# start of the name.
_SECRET_WORD_STEMS = ("pass", "pwd", "secret", "token", "key", "credential")
_THEN_SEPARATOR = re.compile(r"[a-z0-9]*[\"']?[ \t]*[:=]")
_NAME_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.-")
_ASSIGNMENT = re.compile(
    r"(?<![A-Za-z0-9_.])([A-Za-z][A-Za-z0-9_.-]*)[\"']?[ \t]*(?::|=>|:=|=)[ \t]*"
    r"(?:\"([^\"\n]*)\"|'([^'\n]*)'|([^\s\"',;)}\]>]+))")
_SECRET_WORDS = {"pass": "password", "pwd": "password", "token": "token", "credential": "secret",
                 "credentials": "secret"}
# A last word ending like this is a secret's name too (PGPASSWORD, dbpasswd, appsecret).
_SECRET_ENDINGS = (("password", "password"), ("passwd", "password"), ("passphrase", "password"),
                   ("secret", "secret"), ("apikey", "api-key"))
_KEY_QUALIFIERS = {"api": "api-key", "access": "secret", "secret": "secret", "private": "secret",
                   "signing": "secret", "encryption": "secret", "client": "secret", "master": "secret",
                   "auth": "secret", "session": "secret"}
_NAME_WORDS = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|[0-9]+")
_NOT_SECRETS = {"null", "none", "nil", "true", "false", "undefined", "required", "optional", "string", "str",
                "env", "redacted", "changeme", "password", "secret", "token"}


def _secret_name_kind(name: str) -> str | None:
    words = [word.lower() for word in _NAME_WORDS.findall(name)]
    if not words:
        return None
    last = words[-1]
    if last in _SECRET_WORDS:
        return _SECRET_WORDS[last]
    for ending, kind in _SECRET_ENDINGS:
        if last.endswith(ending):
            return kind
    if last == "key" and len(words) > 1 and words[-2] in _KEY_QUALIFIERS:
        return _KEY_QUALIFIERS[words[-2]]
    return None


_Span = tuple[int, int, str, int]  # start, end, kind, rule (0: a shape, 1: an assignment)

_CALL_OR_INDEX = re.compile(r"[(\[]")
_DOTTED_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)+")


def _assigned_secret(value: str, quoted: bool) -> bool:
    if len(value) < 3 or value.lower() in _NOT_SECRETS or value.startswith("[REDACTED:"):
        return False
    if _PLACEHOLDER.match(value):
        return False
    # Unquoted code on the right of the = is an expression, not a secret: get_password(),
    # os.environ["X"], settings.SECRET_KEY.
    return quoted or not (_CALL_OR_INDEX.search(value) or _DOTTED_NAME.fullmatch(value))


def _spans(text: str) -> list[_Span]:
    found: list[_Span] = []
    for shape in _SHAPES:
        for match in shape.pattern.finditer(text):
            if shape.word_start and match.start() > 0 and text[match.start() - 1] in _WORD_CHARS:
                continue
            secret = match.group(shape.group)
            if secret and (shape.accept is None or shape.accept(secret)):
                found.append((match.start(shape.group), match.end(shape.group), shape.kind, 0))
    if "=" in text or ":" in text:
        found += _assignment_spans(text)
    return found


def _secret_word_hits(lowered: str) -> list[tuple[int, int]]:
    """(start of a secret word, end of its separator), in text order."""
    hits = []
    for stem in _SECRET_WORD_STEMS:
        position = lowered.find(stem)
        while position >= 0:
            separator = _THEN_SEPARATOR.match(lowered, position + len(stem))
            if separator:
                hits.append((position, separator.end()))
            position = lowered.find(stem, position + 1)
    hits.sort()
    return hits


def _assignment_spans(text: str) -> list[_Span]:
    found: list[_Span] = []
    read_up_to = 0
    # Lowered A-Z only (bytes.lower() lowers ASCII only), so every offset stays the same (str.lower()
    # can change a string's length: "İ" becomes two characters).
    lowered = (text.lower() if text.isascii()
               else text.encode("utf-8", "surrogatepass").lower().decode("utf-8", "surrogatepass"))
    for word_start, separator_end in _secret_word_hits(lowered):
        start = word_start
        if start < read_up_to:
            continue
        while start > 0 and text[start - 1] in _NAME_CHARS:
            start -= 1
        while start < word_start and not text[start].isalpha():  # a name starts with a letter (--password)
            start += 1
        match = _ASSIGNMENT.match(text, start)
        if match is None or match.end(1) > separator_end:
            continue
        kind = _secret_name_kind(match.group(1))
        if kind is None:  # not a secret's name; its "value" may hold one ("Passwort: password=…")
            continue
        group = next(index for index in (2, 3, 4) if match.group(index) is not None)
        value = match.group(group)
        if group == 4:  # unquoted: a sentence's closing punctuation is not part of the value
            value = value.rstrip(".:!?")
        if _assigned_secret(value, quoted=group != 4):
            found.append((match.start(group), match.start(group) + len(value), kind, 1))
            read_up_to = match.end()
    return found


def redact(text: str) -> str:
    """``text`` with every secret replaced by ``[REDACTED:<kind>]``."""
    if len(text) < 8:
        return text
    spans = _spans(text)
    if not spans:
        return text
    # Overlaps: the earliest start wins; at the same start a shape of _SHAPES beats the generic
    # assignment rule (OPENAI_API_KEY=sk-… is an openai-key), then the longer match wins.
    spans.sort(key=lambda span: (span[0], span[3], -span[1]))
    pieces: list[str] = []
    position = 0
    for start, end, kind, _rule in spans:
        if start < position:
            continue
        pieces.append(text[position:start])
        pieces.append(MARKER.format(kind=kind))
        position = end
    pieces.append(text[position:])
    return "".join(pieces)


def redact_value(value: object) -> object:
    """Every string inside a JSON-like value (dicts, lists), redacted; other values as they are."""
    if isinstance(value, str):
        return redact(value)
    if isinstance(value, dict):
        return {key: redact_value(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [redact_value(item) for item in value]
    return value


KINDS: tuple[str, ...] = tuple(dict.fromkeys([*(shape.kind for shape in _SHAPES), "password", "secret", "api-key",
                                              "token"]))
