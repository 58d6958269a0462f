"""Mask secrets in text handed to an agent (a model prompt) or to another machine: ``[REDACTED:<kind>]``
replaces the secret, the words around it stay. The store is never changed (it is shared with the Pi
extension); redaction applies to what pimem hands out (the MCP tools, the editor's language-model tool).

:func:`redact` gives the masked text; :func:`redact_kinds` also says which kinds it masked (and how
many of each), for callers that report or refuse. Both take time linear in the text on any input
(every pattern is anchored on a literal, its quantifiers are possessive or bounded, a match never
starts inside a word it could have started earlier, and the assignment scan reads each name once);
they never cut: a caller that holds huge values bounds them first (:func:`bounded`).

What is masked (``KINDS``, docs/mcp.md has the table and what is deliberately left out): credentials
with a recognisable shape (AWS access key ids and request signatures, GitHub, OpenAI, Anthropic,
Slack, Google, Stripe, npm, PyPI, GitLab and Hugging Face tokens, Azure SAS signatures, JWTs, PEM and
PuTTY private keys, bearer and HTTP Basic credentials), the password of a
``scheme://user:password@host`` URL, passwords on ``mysql -p…``, ``curl -u user:pass`` and ``.netrc``
lines, and the value of an assignment whose name says it is a secret (``password=…``,
``"api_key": "…"``, ``{\\"password\\": \\"…\\"}``, ``_authToken=…``, ``AccountKey=…``,
``clientSecret: …``, a YAML ``password: |`` block). Shapes are matched with their known prefixes and
lengths, never by entropy alone, so hex hashes, git SHAs, image digests, UUIDs and base64 data are
left alone; placeholders (``$VAR``, ``${…}``, ``<token>``, ``***``), code (``password = get()``,
``if not token: return``, ``password: string``), paths (``PWD=/home/…``) and prose after
``password:`` are not secrets and stay.

Users who want raw text turn redaction off (``pimem mcp --no-redact`` or ``PIMEM_REDACT=0``).
"""

from __future__ import annotations

import binascii
import functools
import os
import re
from base64 import b64decode
from collections import Counter
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass

MARKER = "[REDACTED:{kind}]"
ENV_SWITCH = "PIMEM_REDACT"
_OFF_VALUES = {"0", "false", "no", "off"}


def enabled_by_env(env: Mapping[str, str] | None = None) -> bool:
    """``PIMEM_REDACT=0`` (or false/no/off) turns redaction off; anything else, or unset, keeps it on."""
    env = os.environ if env is None else env
    return env.get(ENV_SWITCH, "").strip().lower() not in _OFF_VALUES


BOUND_CHARS = 1_000_000
_BOUND_MARKER = "… [{more} more characters not read]"


def bounded(text: str, limit: int = BOUND_CHARS) -> str:
    """``text`` cut to ``limit`` characters plus a marker: what a caller hands to :func:`redact` when
    it will cut the result to far less anyway (an answer's limit), so that a huge stored value costs
    no more than ``limit`` characters of work. Redact after this cut and cut to the answer after
    redacting, so that no half of a secret survives a cut."""
    return text if len(text) <= limit else text[:limit] + _BOUND_MARKER.format(more=len(text) - limit)


@dataclass(frozen=True)
class Redacted:
    text: str
    kinds: Mapping[str, int]    # kind → how many secrets of that kind were masked


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


_BASE64 = re.compile(r"[A-Za-z0-9+/]++={0,2}")


def _basic_credentials(value: str) -> bool:
    """HTTP Basic / Docker ``auth`` / npm ``_auth``: base64 of ``user:password`` (printable text)."""
    if not 8 <= len(value) <= 1024 or not _BASE64.fullmatch(value):
        return False
    try:
        decoded = b64decode(value + "=" * (-len(value) % 4), validate=True).decode("utf-8")
    except (binascii.Error, ValueError):
        return False
    user, colon, password = decoded.partition(":")
    return bool(colon and user and password and decoded.isprintable())


# A value that stands for a secret rather than being one: $VAR, ${VAR}, %(name)s, <token>, {{ x }}, ***, xxx, ….
_PLACEHOLDER = re.compile(r"\$|%\(|<|\{\{|\*{3,}|x{3,}|X{3,}|\.\.\.|…")
_WORD_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-")
_END = r"(?![A-Za-z0-9_-])"  # a token ends at a word boundary (``_`` and ``-`` included)


def _token_start(prefix: str) -> str:
    """``prefix`` not continuing a word, as a lookbehind placed *after* the literal (re's prefix search
    still finds the literal): a run like ``xoxb-xoxb-xoxb-…`` is then tried once, not at every copy."""
    return f"{prefix}(?<![A-Za-z0-9_-]{prefix})"


def _rx(pattern: str, flags: int = 0) -> re.Pattern[str]:
    return re.compile(pattern, flags)


def _run_end(run: re.Pattern[str], text: str, position: int, stop: int | None = None) -> int:
    match = run.match(text, position, len(text) if stop is None else stop)  # a run (``[…]*+``) always matches
    return match.end() if match else position


_SHAPES: tuple[_Shape, ...] = (
    _Shape("jwt", _rx(_token_start("eyJ") + r"[A-Za-z0-9_-]{8,}+\.eyJ[A-Za-z0-9_-]{8,}+\.[A-Za-z0-9_-]*+")),
    _Shape("anthropic-key", _rx(_token_start("sk-ant-") + r"[A-Za-z0-9_-]{20,}+"), accept=_mixed),
    # sk-proj-/sk-svcacct-/sk-admin- keys, and plain sk- keys of 32+ letters and digits (no hyphen:
    # CSS classes such as sk-circle-bounce1 have them)
    _Shape("openai-key", _rx(_token_start("sk-")
                             + r"(?:(?:proj|svcacct|admin)-[A-Za-z0-9_-]{20,}+|[A-Za-z0-9]{32,}+" + _END + ")"),
           accept=_mixed),
    _Shape("aws-access-key-id", _rx(
        r"A(?:KIA|SIA|BIA|CCA|GPA|IDA|IPA|NPA|NVA|ROA|PKA|SCA)[A-Z0-9]{16}(?![A-Za-z0-9])")),
    # the signature of a presigned S3 URL (X-Amz-Signature=) or of a SigV4 Authorization header
    _Shape("aws-signature", _rx(r"Signature=([0-9a-f]{64})(?![0-9A-Za-z])"), group=1, word_start=False),
    _Shape("github-token", _rx(r"gh[pousr]_[A-Za-z0-9]{36,255}+" + _END)),
    _Shape("github-token", _rx(_token_start("github_pat_") + r"[A-Za-z0-9_]{22,255}+" + _END)),
    _Shape("gitlab-token", _rx(_token_start("glpat-") + r"[A-Za-z0-9_-]{20,}+")),
    _Shape("slack-webhook", _rx(
        r"https://hooks\.slack\.com/(?:services|workflows|triggers)/[A-Za-z0-9_/-]{16,}+"),
        word_start=False),
    _Shape("slack-token", _rx(_token_start("xox[abposre]-") + r"[A-Za-z0-9-]{10,}+(?![A-Za-z0-9_])"),
           accept=_mixed),
    _Shape("slack-token", _rx(_token_start("xapp-") + r"[A-Za-z0-9-]{20,}+(?![A-Za-z0-9_])"), accept=_mixed),
    _Shape("google-api-key", _rx(_token_start("AIza") + r"[0-9A-Za-z_-]{35}" + _END)),
    _Shape("google-oauth-token", _rx(_token_start(r"ya29\.") + r"[0-9A-Za-z_-]{20,}+"), accept=_mixed),
    _Shape("google-client-secret", _rx(_token_start("GOCSPX-") + r"[A-Za-z0-9_-]{20,}+")),
    # secret and restricted keys, webhook signing secrets (pk_ keys are publishable, not secret)
    _Shape("stripe-key", _rx(r"sk_(?:live|test)_[0-9A-Za-z]{16,}+" + _END)),
    _Shape("stripe-key", _rx(r"rk_(?:live|test)_[0-9A-Za-z]{16,}+" + _END)),
    _Shape("stripe-key", _rx(r"whsec_[A-Za-z0-9+/]{24,}+" + _END), accept=_mixed),
    _Shape("npm-token", _rx(r"npm_[A-Za-z0-9]{36}" + _END), accept=_mixed),
    _Shape("pypi-token", _rx(_token_start("pypi-") + r"AgE[A-Za-z0-9_-]{50,}+")),
    _Shape("huggingface-token", _rx(r"hf_[A-Za-z0-9]{30,}+" + _END), accept=_mixed),
    _Shape("alibaba-access-key-id", _rx(_token_start("LTAI") + r"[A-Za-z0-9]{20}" + _END), accept=_mixed),
    _Shape("age-secret-key", _rx(r"AGE-SECRET-KEY-1[QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L]{58}(?![A-Za-z0-9])")),
    _Shape("1password-token", _rx(_token_start("ops_") + r"eyJ[A-Za-z0-9+/]{250,}+={0,3}")),
    _Shape("azure-sas-signature", _rx(r"sig=(?<=[?&;]sig=)([A-Za-z0-9%+/]{20,}+(?:=|%3[Dd]){0,2})"),
           group=1, accept=_mixed, word_start=False),
    _Shape("bearer-token", _rx(r"earer(?<=[Bb]earer)[ \t]++([A-Za-z0-9._~+/-]{16,}+=*+)"),
           group=1, accept=_mixed, word_start=False),
    _Shape("basic-auth", _rx(r"asic(?<=[Bb]asic)[ \t]++([A-Za-z0-9+/]{8,}+={0,2})(?![A-Za-z0-9+/=])"),
           group=1, accept=_basic_credentials, word_start=False),
    # PuTTY .ppk: the private lines and their MAC (the public lines and the comment stay)
    _Shape("private-key", _rx(r"Private-Lines: [0-9]{1,4}((?:(?:\r?\n|\\n)[A-Za-z0-9+/=]++)+"
                              r"(?:(?:\r?\n|\\n)Private-(?:MAC|Hash): [0-9a-fA-F]++)?)"), group=1),
)

_Span = tuple[int, int, str, int]  # start, end, kind, rule (0: a shape, 1: an assignment)


def _shape_spans(text: str) -> Iterator[_Span]:
    for shape in _SHAPES:
        for match in shape.pattern.finditer(text):
            if shape.word_start and match.start() > 0 and text[match.start() - 1] in _WORD_CHARS:
                continue
            secret = match.group(shape.group)
            if secret and (shape.accept is None or shape.accept(secret)):
                yield match.start(shape.group), match.end(shape.group), shape.kind, 0


# PEM private keys: the whole block, or, when its end was cut off, the key lines that follow (a
# newline, or a written-out \n inside JSON, then base64 or a "Name: value" header line).
_PEM_BEGIN = re.compile(r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----")
_PEM_END = re.compile(r"-----END (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----")
_PEM_LINES = re.compile(r"(?:(?:\r?\n|\\n)(?:[A-Za-z0-9+/=]{8,}+|[A-Za-z-]++: [^\n\\]*+))*+")


def _private_key_spans(text: str) -> Iterator[_Span]:
    position = 0
    end_missing = False   # once no END follows a BEGIN, none follows a later one: not searched again
    while (begin := _PEM_BEGIN.search(text, position)) is not None:
        end = None if end_missing else _PEM_END.search(text, begin.end())
        if end is None:
            end_missing = True
            stop = _PEM_LINES.match(text, begin.end())
            position = stop.end() if stop else begin.end()
        else:
            position = end.end()
        yield begin.start(), position, "private-key", 0


# scheme://user:password@host, the user possibly empty (redis://:pw@host), the password possibly
# holding "/" or "@" (the user, the scheme and the host stay).
_URL_USER = re.compile(r"://[^\s/:@]{0,128}+:")
_URL_REST = re.compile(r"[^\s\"'<>`]{1,256}+")
_HOST_START = re.compile(r"[A-Za-z0-9\[]")


def _url_password_spans(text: str) -> Iterator[_Span]:
    next_at = -1
    for user in _URL_USER.finditer(text):
        start = user.end()
        if next_at < start:
            next_at = text.find("@", start)
            if next_at < 0:
                return
        if next_at - start > 256:
            continue
        rest = _URL_REST.match(text, start)
        if rest is None:
            continue
        part = rest.group()
        slash = part.find("/")
        at = part.rfind("@", 0, slash if slash >= 0 else len(part))
        if at < 0 and slash > 0 and not part[:slash].isdigit():  # not a port: a "/" in the password
            # the password may hold "@" too: the last "@" before a host, so that none of it stays
            at = next((index for index in range(len(part) - 1, slash, -1) if part[index] == "@"
                       and _HOST_START.match(part, index + 1)), -1)
        if (at <= 0 or not _HOST_START.match(part, at + 1) or _PLACEHOLDER.match(part)
                or part[:at].lower() in _NOT_SECRETS):   # scheme://user:password@host in a document
            continue
        yield start, start + at, "url-password", 0


# Passwords on command lines and in .netrc: mysql -pSECRET, curl -u user:SECRET, machine h login u password SECRET.
_COMMANDS = ("mysql", "mariadb", "curl")
# An unquoted value ends at a shell metacharacter (mysql -pX; mkdir -p /y is two commands).
_MYSQL_PASSWORD = re.compile(r"[ \t]-p(?:'([^'\n]++)'|\"([^\"\n]++)\"|([^\s'\"`;|&]++))")
_CURL_USER = re.compile(r"[ \t](?:-u|--user)(?:[ \t]++|=)?(?:'[^\s:']++:([^'\n]++)'|\"[^\s:\"]++:([^\"\n]++)\""
                        r"|[^\s:'\";|&]++:([^\s'\";|&]++))")
# a command's arguments end at a shell separator outside quotes (mysql -e 'x;' -pX ; mkdir -p /y)
_ARGUMENTS = re.compile(r"(?:'[^'\n]*+'|\"[^\"\n]*+\"|[^'\";|&\n])*+")
# .netrc: found from "login" (a literal: re's prefix search), then "machine host" or "default" before it
_NETRC = re.compile(r"login[ \t]++[^\s]++\s++(?:account[ \t]++[^\s]++\s++)?password[ \t]++([^\s]++)")
_NETRC_HEAD = re.compile(r"(?:machine[ \t]++[^\s]{1,256}+|default)\s{1,64}+$")
_LINE_LIMIT = 4096


def _command_starts(text: str) -> list[tuple[int, str]]:
    """Where mysql, mariadb and curl appear (str.find: far faster than a regex without a literal prefix)."""
    starts = []
    for command in _COMMANDS:
        position = text.find(command)
        while position >= 0:
            starts.append((position, command))
            position = text.find(command, position + len(command))
    starts.sort()
    return starts


def _command_spans(text: str) -> Iterator[_Span]:
    read_to = 0
    for start, command in _command_starts(text):
        if start < read_to or (start > 0 and text[start - 1] in _WORD_CHARS):
            continue
        end = start + len(command)
        read_to = _run_end(_ARGUMENTS, text, end, end + _LINE_LIMIT)   # a later command is read on its own
        found = (_CURL_USER if command == "curl" else _MYSQL_PASSWORD).search(text[end:read_to])
        if found is None:
            continue
        group = found.lastindex or 0
        value = found.group(group)
        if value and not _PLACEHOLDER.match(value):
            yield end + found.start(group), end + found.end(group), "password", 0
    for netrc in _NETRC.finditer(text):
        head = _NETRC_HEAD.search(text, max(0, netrc.start() - 400), netrc.start())
        if head is not None and not _PLACEHOLDER.match(netrc.group(1)):
            yield netrc.start(1), netrc.end(1), "password", 0


# name = value, name: value, "name": "value", {\"name\": \"value\"} where the name's last word says it
# is a secret. The name is split into words at _ . - and camelCase humps (AWS_SECRET_ACCESS_KEY,
# clientSecret, _authToken). The scan finds the secret words first (str.find on the lowered text:
# several times faster than a regex alternation), reads the name they are part of once (later words
# of the same name are skipped: linear time on a name made of thousands of them), then its separator
# and value.
_SECRET_WORD_STEMS = ("pass", "pwd", "secret", "token", "key", "credential", "auth")
_NAME_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.-")
_NAME_REST = re.compile(r"[A-Za-z0-9_.-]*+")
_MAX_NAME = 128            # a longer name is not a secret's name (and is not walked back further)
_SEPARATOR = re.compile(r"(?:\\?[\"'])?[ \t]*+(?::=|=>|:(?!:)|=(?!=))[ \t]*+")
_QUOTED = re.compile(r"\\\"((?:[^\"\\\n]|\\[^\"\n]){1,4096}+)\\\"|\"([^\"\n]{1,4096}+)\"|'([^'\n]{1,4096}+)'")
_UNQUOTED = re.compile(r"[^\s\"'`,;)}\]>\\]*+")   # a backtick ends it too (Markdown: `password=x`)
_MAX_VALUE = 4096          # a longer unquoted run is masked whole, unread (a key blob, not a word or a path)
_BLOCK = re.compile(r"[|>][-+0-9]{0,2}[ \t]*+(?:#[^\n]*+)?(?=\r?\n)")
_SECRET_WORDS = {"pass": "password", "pwd": "password", "token": "token", "credential": "secret",
                 "credentials": "secret"}
# A last word ending like this is a secret's name too (PGPASSWORD, dbpasswd, appsecret).
_SECRET_ENDINGS = (("password", "password"), ("passwd", "password"), ("passphrase", "password"),
                   ("secret", "secret"), ("apikey", "api-key"))
_KEY_QUALIFIERS = {"api": "api-key", "access": "secret", "secret": "secret", "private": "secret",
                   "signing": "secret", "encryption": "secret", "client": "secret", "master": "secret",
                   "auth": "secret", "session": "secret", "account": "secret"}
_NAME_WORDS = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|[0-9]+")
_NOT_SECRETS = {"null", "none", "nil", "true", "false", "undefined", "required", "optional", "string", "str",
                "env", "redacted", "changeme", "password", "secret", "token",
                "include", "same-origin", "omit"}   # fetch()'s credentials: 'include'

# Unquoted words on the right of a separator that are code, not a value: keywords (if not token: return)
# and type names (password: string, token: number).
_CODE_WORDS = frozenset((
    "return", "raise", "pass", "continue", "break", "yield", "await", "async", "def", "class", "if", "else", "elif",
    "for", "while", "with", "import", "from", "not", "and", "or", "in", "is", "lambda", "try", "except", "finally",
    "del", "assert", "self", "cls", "this", "new", "const", "let", "var", "function", "typeof", "keyof", "readonly",
    "public", "private", "protected", "static", "final", "override", "abstract", "mut", "ref", "out", "number",
    "boolean", "bool", "int", "integer", "float", "double", "long", "short", "char", "byte", "bytes", "object",
    "any", "unknown", "never", "void", "dict", "list", "tuple", "set", "map", "array", "vec", "option", "result",
    "callable", "sequence", "mapping", "text", "uuid", "date", "datetime", "secretstr", "sensitive", "default",
    "str", "string"))
_PASCAL_CASE = re.compile(r"(?:[A-Z][a-z]+){2,}")
_PATH = re.compile(r"(?:~|\.{1,2})?/[\w.@+…-]+(?:/[\w.@+…-]*)*+|[A-Za-z]:\\[\w.\\ -]*+")
_ELIDED = re.compile(r"[\w-]{0,12}(?:\.\.\.|…)")   # a known prefix and an ellipsis: sk-ant-...
_PROSE_NEXT = re.compile(r"[ \t]++[A-Za-z]")
_IDENTIFIER = re.compile(r"[A-Za-z_]+")
_INNER_HUMP = re.compile(r"[a-z][A-Z]|[A-Za-z]_[A-Za-z]")


@functools.lru_cache(maxsize=4096)   # names repeat (a run of key:key:… asks thousands of times)
def _secret_name_kind(name: str) -> str | None:
    words = [word.lower() for word in _NAME_WORDS.findall(name)]
    if not words:
        return None
    last = words[-1]
    if last in _SECRET_WORDS:
        return _SECRET_WORDS[last]
    if words == ["auth"]:   # Docker config.json "auth", .npmrc _auth: base64 of user:password
        return "basic-auth"
    for ending, kind in _SECRET_ENDINGS:
        if last.endswith(ending):
            return kind
    if last == "key" and len(words) > 1 and words[-2] in _KEY_QUALIFIERS:
        return _KEY_QUALIFIERS[words[-2]]
    if words[-2:] == ["key", "base"] or (words[-2:] == ["storage", "key"] and "azure" in words):
        return "secret"     # Rails' SECRET_KEY_BASE, AZURE_STORAGE_KEY (a bare storage key is a name)
    return None


_CALL_OR_INDEX = re.compile(r"[(\[<{]")  # a call, an index, a generic type (Option<String>), a literal
_DOTTED_NAME = re.compile(r"[A-Za-z_$][A-Za-z0-9_$]*(?:\??\.[A-Za-z_$][A-Za-z0-9_$]*)+")   # a?.b too


def _assigned_secret(value: str, quoted: bool, separator: str, after: int, text: str) -> bool:
    if len(value) < 3 or value.lower() in _NOT_SECRETS or value.startswith("[REDACTED:"):
        return False
    if not any(char.isalnum() for char in value):    # "password=" + "…": the quotes of a concatenation
        return False
    if _PLACEHOLDER.match(value) or _ELIDED.fullmatch(value) or _PATH.fullmatch(value):
        return False
    if quoted:
        return True
    # Unquoted code on the right of the = is an expression, not a secret: get_password(),
    # os.environ["X"], settings.SECRET_KEY, a keyword or a type name.
    if _CALL_OR_INDEX.search(value) or _DOTTED_NAME.fullmatch(value):
        return False
    if value[0] in "&*":    # a reference or pointer type (&str, *const u8) or a dereference
        value = value.lstrip("&*")
    if _IDENTIFIER.fullmatch(value):
        # a keyword, a type or a variable (camelCase, snake_case, PascalCase; ``x = y`` spacing is code's)
        if (value.lower() in _CODE_WORDS or _PASCAL_CASE.fullmatch(value) or _INNER_HUMP.search(value)
                or separator.lstrip("\\\"'")[:1] in (" ", "\t")):
            return False
        # "Password: reset it from the portal" is a sentence, not a password
        if ":" in separator and _PROSE_NEXT.match(text, after):
            return False
    return True


def _block_span(text: str, name_start: int, block_end: int) -> tuple[int, int] | None:
    """The lines of a YAML block scalar (``password: |``): those indented more than the key's line."""
    line_start = text.rfind("\n", 0, name_start) + 1
    line = text[line_start:name_start]
    indent = len(line) - len(line.lstrip(" \t"))
    position = text.find("\n", block_end) + 1
    first = last = -1
    while 0 < position < len(text):
        line_end = text.find("\n", position)
        if line_end < 0:
            line_end = len(text)
        content = text[position:line_end].rstrip("\r")
        stripped = content.lstrip(" \t")
        if stripped:
            if len(content) - len(stripped) <= indent:
                break
            if first < 0:
                first = position + len(content) - len(stripped)
            last = position + len(content)
        position = line_end + 1
    return (first, last) if first >= 0 else None


def _secret_word_hits(lowered: str) -> list[int]:
    hits = []
    for stem in _SECRET_WORD_STEMS:
        position = lowered.find(stem)
        while position >= 0:
            hits.append(position)
            position = lowered.find(stem, position + len(stem))
    hits.sort()
    return hits


def _assignment_spans(text: str) -> Iterator[_Span]:
    # Lowered A-Z only (bytes.lower() lowers ASCII only), so every offset stays the same (str.lower()
    # can change a string's length: "İ" becomes two characters).
    lowered = (text.lower() if text.isascii()
               else text.encode("utf-8", "surrogatepass").lower().decode("utf-8", "surrogatepass"))
    read_to = unquoted_end = 0
    for word_start in _secret_word_hits(lowered):
        if word_start < read_to:
            continue
        name_end = _run_end(_NAME_REST, text, word_start)
        read_to = name_end          # every other secret word of this name is part of the same name
        separator = _SEPARATOR.match(text, name_end)
        if separator is None:
            continue
        start, floor = word_start, max(0, word_start - _MAX_NAME)
        while start > floor and text[start - 1] in _NAME_CHARS:
            start -= 1
        if start > 0 and text[start - 1] in _NAME_CHARS:
            continue
        while start < word_start and not (text[start].isalpha() or text[start] == "_"):  # --password
            start += 1
        kind = _secret_name_kind(text[start:name_end])
        if kind is None:   # not a secret's name; its "value" may hold one ("Passwort: password=…")
            continue
        value_start = separator.end()
        block = _BLOCK.match(text, value_start) if kind != "basic-auth" else None
        if block is not None:
            lines = _block_span(text, start, block.end())
            if lines is not None:
                yield lines[0], lines[1], kind, 1
                read_to = lines[1]
            continue
        quoted = _QUOTED.match(text, value_start)
        if quoted is not None:
            group = quoted.lastindex or 0
            secret_start, value_end = quoted.start(group), quoted.end()
            secret = quoted.group(group)
        else:
            # The unquoted run's end is the same from every position inside it: found once.
            if value_start >= unquoted_end:
                unquoted_end = _run_end(_UNQUOTED, text, value_start)
            if value_start == unquoted_end or _ELIDED.fullmatch(text, value_start, unquoted_end):
                continue
            if unquoted_end - value_start > _MAX_VALUE:   # a blob after a secret's name: masked whole
                if kind != "basic-auth":
                    yield value_start, unquoted_end, kind, 1
                    read_to = unquoted_end
                continue
            secret_start = value_start
            # a sentence's closing punctuation is not part of the value
            secret = text[value_start:unquoted_end].rstrip(".:!?")
            value_end = value_start + len(secret)
        if kind == "basic-auth":
            accepted = _basic_credentials(secret)
        else:
            accepted = _assigned_secret(secret, quoted is not None, separator.group(), secret_start + len(secret), text)
        if accepted:
            yield secret_start, secret_start + len(secret), kind, 1
            read_to = value_end


def _spans(text: str) -> list[_Span]:
    found = [*_shape_spans(text)]
    if "PRIVATE KEY" in text:
        found += _private_key_spans(text)
    if "://" in text:
        found += _url_password_spans(text)
    found += _command_spans(text)
    if "=" in text or ":" in text:
        found += _assignment_spans(text)
    return found


def redact_kinds(text: str) -> Redacted:
    """``text`` with every secret replaced by ``[REDACTED:<kind>]``, and how many of each kind."""
    if len(text) < 8:
        return Redacted(text, {})
    spans = _spans(text)
    if not spans:
        return Redacted(text, {})
    # Overlaps: the earliest start wins; at the same start a shape beats the generic assignment rule
    # (OPENAI_API_KEY=sk-… is an openai-key), then the longer match wins.
    spans.sort(key=lambda span: (span[0], span[3], -span[1]))
    pieces: list[str] = []
    kinds: Counter[str] = Counter()
    position = 0
    for start, end, kind, _rule in spans:
        if start < position:
            continue
        pieces.append(text[position:start])
        pieces.append(MARKER.format(kind=kind))
        kinds[kind] += 1
        position = end
    pieces.append(text[position:])
    return Redacted("".join(pieces), dict(kinds))


def redact(text: str) -> str:
    """``text`` with every secret replaced by ``[REDACTED:<kind>]``."""
    return redact_kinds(text).text


def redact_value(value: object) -> object:
    """Every string inside a JSON-like value (dicts, lists), redacted; other values as they are."""
    if isinstance(value, str):
        return redact(value)
    if isinstance(value, dict):
        return {key: redact_value(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [redact_value(item) for item in value]
    return value


KINDS: tuple[str, ...] = tuple(dict.fromkeys([
    *(shape.kind for shape in _SHAPES), "private-key", "url-password", "password", "secret", "api-key", "token",
    "basic-auth"]))
