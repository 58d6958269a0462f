"""Editing a file that belongs to the user: minimal text edits of JSON and TOML, and a careful replacement.

An edit sets some values and keeps every other byte: formatting, comments, key order, line ends,
number literals the parser could not write back (``1e400``, ``1.10``), escapes (``"\\ud800"``). New
text follows the file's line ends and indentation. What cannot be read (not UTF-8, not JSON or TOML,
``NaN``) is refused in one line and never rewritten.

:func:`edit_file` replaces the file atomically (a temporary file in the same folder, fsync, rename),
keeping its owner, group and mode; a file whose mode does not let its user write it is refused. The
previous content is kept in ``<file>.pimem-backup`` (owner-only: configurations hold tokens). Just
before the rename the file is read again: if another program (the agent itself) changed it, the
edit is made again from the new content, once, else refused.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import stat
import tempfile
import tomllib
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

BACKUP_SUFFIX = ".pimem-backup"
_NEW_FILE_MODE = 0o600
_WS = " \t\n\r"


class EditError(Exception):
    """The file cannot be read, edited or written; the message is one line."""


def shown(text: str) -> str:
    """``text`` with lone surrogates as ``\\udXXX``, so it can be printed and encoded."""
    return text.encode("utf-8", "backslashreplace").decode("utf-8")


def _eol(text: str) -> str:
    """The file's line end: CRLF when its first line ends so, else LF."""
    first = text.find("\n")
    return "\r\n" if first > 0 and text[first - 1] == "\r" else "\n"


# -- JSON ---------------------------------------------------------------------------------------------

def _not_json(constant: str) -> float:
    raise ValueError(f"{constant} is not JSON")


_DECODER = json.JSONDecoder(parse_constant=_not_json)


def load_json(text: str, name: str) -> Any:
    """The value of a JSON document; ``NaN`` and ``Infinity`` (Python's extensions) are refused."""
    try:
        return _DECODER.decode(text)
    except ValueError as error:
        raise EditError(f"{name} is not valid JSON ({error}); not touching it") from None
    except RecursionError:
        raise EditError(f"{name} nests too deeply to be read; not touching it") from None


def json_text(value: Any, name: str) -> str:
    """``value`` as JSON on one line; text that is not Unicode (a path of undecodable bytes) is refused."""
    text = json.dumps(value, ensure_ascii=False)
    if shown(text) != text:
        raise EditError(f"{shown(text)} is not UTF-8 text and cannot be written into {name}")
    return text


@dataclass(frozen=True)
class _Member:
    key: str
    key_start: int
    value_start: int
    value_end: int


def _skip(text: str, i: int) -> int:
    while i < len(text) and text[i] in _WS:
        i += 1
    return i


def _members(text: str, start: int) -> tuple[list[_Member], int]:
    """The members of the object starting at ``text[start]`` (``{``) and the index of its ``}``.
    The text was checked by :func:`load_json`."""
    members: list[_Member] = []
    i = _skip(text, start + 1)
    if text[i] == "}":
        return members, i
    while True:
        key, after_key = json.decoder.scanstring(text, i + 1)  # type: ignore[attr-defined]
        value_start = _skip(text, _skip(text, after_key) + 1)   # past the colon
        _, value_end = _DECODER.raw_decode(text, value_start)
        members.append(_Member(key, i, value_start, value_end))
        i = _skip(text, value_end)
        if text[i] == "}":
            return members, i
        i = _skip(text, i + 1)  # past the comma


def _line_indent(text: str, at: int) -> str:
    """The whitespace that starts the line holding ``text[at]``."""
    start = text.rfind("\n", 0, at) + 1
    end = start
    while end < at and text[end] in " \t":
        end += 1
    return text[start:end]


def _on_own_line(text: str, at: int) -> bool:
    start = text.rfind("\n", 0, at) + 1
    return not text[start:at].strip(" \t")


def json_set(text: str, path: Sequence[str], value: Any, name: str) -> str:
    """``text`` (a JSON object) with the member at ``path`` set to ``value``: its value's text
    replaced, or the member added (with the objects missing on the way) after the last member of its
    object, in the object's layout. Every other character is kept."""
    if not text.strip():
        nested = value
        for key in reversed(path):
            nested = {key: nested}
        rendered = json.dumps(nested, ensure_ascii=False, indent=2)
        json_text(nested, name)  # refuses text that is not Unicode
        return rendered + "\n"
    at = _skip(text, 0)
    for depth, key in enumerate(path):
        if text[at] != "{":
            where = ".".join(path[:depth]) or "the top level"
            raise EditError(f"{where} in {name} is not an object; not touching it")
        members, close = _members(text, at)
        found = [member for member in members if member.key == key]
        if not found:
            nested = value
            for inner in reversed(path[depth + 1:]):
                nested = {inner: nested}
            return _json_insert(text, at, close, members, key, nested, name)
        if depth == len(path) - 1:
            member = found[-1]  # a repeated key: the last one is what every reader takes
            return text[:member.value_start] + json_text(value, name) + text[member.value_end:]
        at = found[-1].value_start
    raise AssertionError("unreachable: an empty path")


def _json_insert(text: str, start: int, close: int, members: list[_Member], key: str, value: Any,
                 name: str) -> str:
    member = f"{json_text(key, name)}: {json_text(value, name)}"
    if members:
        last = members[-1]
        if _on_own_line(text, last.key_start):
            separator = _eol(text) + _line_indent(text, last.key_start)
        elif len(members) > 1:  # as between the members before: ", " or ","
            separator = text[text.rfind(",", 0, last.key_start) + 1:last.key_start]
        else:
            separator = " "
        return f"{text[:last.value_end]},{separator}{member}{text[last.value_end:]}"
    if "\n" in text[:start] or "\n" in text[close:]:  # a multi-line document: the member on a line of its own
        outer = _line_indent(text, start)
        unit = "\t" if outer.startswith("\t") else "  "
        body = f"{_eol(text)}{outer}{unit}{member}{_eol(text)}{outer}"
    else:
        body = member
    return f"{text[:start + 1]}{body}{text[close:]}"


# -- TOML ---------------------------------------------------------------------------------------------

_LINE = re.compile(r"[^\n]*\n|[^\n]+\Z")
_CLOSERS = ('"""', "'''", "]")
_SIMPLE_KEY = re.compile(r"""[ \t]*(?:[A-Za-z0-9_-]+|"[^"\\\n]*"|'[^'\n]*')[ \t]*=[ \t]*""")


def load_toml(text: str, name: str) -> dict[str, Any]:
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as error:
        raise EditError(f"{name} is not valid TOML ({error}); not touching it") from None
    except RecursionError:
        raise EditError(f"{name} nests too deeply to be read; not touching it") from None


def toml_value(value: Any, name: str) -> str:
    """A string or a list of strings as TOML (a JSON string with DEL escaped is a TOML basic string)."""
    if isinstance(value, list):
        return "[" + ", ".join(toml_value(item, name) for item in value) + "]"
    return json_text(str(value), name).replace("\x7f", "\\u007f")


def _parses(text: str) -> dict[str, Any] | None:
    try:
        return tomllib.loads(text)
    except (tomllib.TOMLDecodeError, RecursionError):
        return None


def _statements(lines: list[str], name: str) -> Iterator[tuple[int, int, dict[str, Any], bool]]:
    """The statements of a TOML document as (first line, last line, what it declares read alone, is a
    table header); blank and comment lines are skipped, a multi-line value is one statement."""
    i = 0
    while i < len(lines):
        stripped = lines[i].strip()
        if not stripped or stripped.startswith("#"):
            i += 1
            continue
        # a statement longer than a line ends where a multi-line string or an array closes
        ends = (j for j in range(i, len(lines)) if j == i or any(mark in lines[j] for mark in _CLOSERS))
        end = next((j for j in ends if _parses("".join(lines[i:j + 1])) is not None), None)
        if end is None:
            raise EditError(f"{name} has a line pimem cannot read alone (line {i + 1}); not touching it")
        yield i, end, _parses("".join(lines[i:end + 1])) or {}, stripped.startswith("[")
        i = end + 1


def toml_table_set(text: str, table: Sequence[str], values: dict[str, Any], name: str) -> str:
    """``text`` with keys of the table ``[a.b]`` (``table``) set: a key's statement is rewritten in
    place (its key as written and a comment after it kept), a missing key is added after the
    table's last statement, a missing table is appended at the end. Every other line is kept."""
    lines = _LINE.findall(text)
    eol = _eol(text)
    declared: dict[str, Any] = {}
    for key in reversed(table):
        declared = {key: declared}
    statements: dict[str, tuple[int, int]] | None = None   # the table's keys -> (first line, last line)
    last = 0
    for first, final, parsed, header in _statements(lines, name):
        if header and statements is not None:
            break
        if header and parsed == declared:
            statements, last = {}, first
        elif statements is not None:
            statements.update((key, (first, final)) for key in parsed)
            last = final
    if statements is None:
        tail = "" if not text or text.endswith("\n") else eol
        if lines and lines[-1].strip():
            tail += eol
        body = [f"[{'.'.join(table)}]"] + [f"{key} = {toml_value(value, name)}" for key, value in values.items()]
        return text + tail + "".join(line + eol for line in body)
    edits: list[tuple[int, int, str]] = []
    added: list[str] = []
    for key, value in values.items():
        if key in statements:
            first, final = statements[key]
            edits.append((first, final, _toml_statement(lines[first:final + 1], key, value, name)))
        else:
            added.append(f"{key} = {toml_value(value, name)}{eol}")
    for first, final, statement in edits:  # indices stay valid: the statement's other lines become empty
        lines[first:final + 1] = [statement] + [""] * (final - first)
    if added:
        while not lines[last]:  # a multi-line statement rewritten on one line
            last -= 1
        if not lines[last].endswith("\n"):
            lines[last] += eol
        lines[last] += "".join(added)
    return "".join(lines)


def _toml_statement(lines: list[str], key: str, value: Any, name: str) -> str:
    """``key = value`` in place of a statement: the key as written, and a comment after the value, kept."""
    statement = "".join(lines)
    body = statement.rstrip("\r\n")
    ending = statement[len(body):]
    prefix = _SIMPLE_KEY.match(body)
    lead = prefix.group(0) if prefix else f"{key} = "
    comment = ""
    parsed = _parses(body)
    for position in (match.start() for match in re.finditer("#", body)):
        if _parses(body[:position]) == parsed:
            kept = body[:position].rstrip(" \t")
            comment = body[len(kept):]
            break
    return f"{lead}{toml_value(value, name)}{comment}{ending}"


# -- the file -----------------------------------------------------------------------------------------

def read_text(path: Path) -> str | None:
    """The file's text, None when there is none."""
    data = _read_bytes(Path(os.path.realpath(path)))
    return None if data is None else _decode(data, path)


def _read_bytes(path: Path) -> bytes | None:
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0))
    except FileNotFoundError:
        return None
    except OSError as error:
        raise EditError(f"cannot read {path}: {error.strerror or error}") from None
    with os.fdopen(fd, "rb") as handle:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise EditError(f"{path} is not a regular file; not touching it")
        try:
            return handle.read()
        except OSError as error:
            raise EditError(f"cannot read {path}: {error.strerror or error}") from None


def _decode(data: bytes, path: Path) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as error:
        raise EditError(f"{path} is not UTF-8 text (byte {error.start}); not touching it") from None


def backup_path(path: Path) -> Path:
    """Where :func:`edit_file` keeps the previous content: next to the file (a symlink's target)."""
    target = Path(os.path.realpath(path))
    return target.with_name(target.name + BACKUP_SUFFIX)


def check_writable(path: Path) -> None:
    """Refuse a file its mode keeps its user from writing (as root: its owner), as an editor would."""
    target = Path(os.path.realpath(path))
    try:
        info = target.stat()
    except FileNotFoundError:
        return
    except OSError as error:
        raise EditError(f"cannot read {path}: {error.strerror or error}") from None
    mode = stat.S_IMODE(info.st_mode)
    writable = bool(mode & stat.S_IWUSR) if _is_root() else os.access(target, os.W_OK)
    if not writable:
        raise EditError(f"{path} is read-only (mode {mode:04o}); not touching it (make it writable, or edit it "
                        "by hand)")


def _is_root() -> bool:
    return hasattr(os, "geteuid") and os.geteuid() == 0


def edit_file(path: Path, edit: Callable[[str | None], str | None]) -> bool:
    """Replace ``path``'s text (None: no file) with ``edit(text)`` (None: nothing to change), as the
    module docstring says; a symlink is written through. True when the file was changed."""
    target = Path(os.path.realpath(path))
    for _attempt in range(2):
        before = _read_bytes(target)
        text = None if before is None else _decode(before, path)
        new = edit(text)
        if new is None or new == text:
            return False
        check_writable(target)
        if _replace(target, before, new.encode("utf-8")):
            return True
    raise EditError(f"{path} changed while pimem was editing it, twice (is the agent running?); "
                    "nothing changed, try again")


def _owner_for_new(folder: Path) -> tuple[int, int] | None:
    """Run as root (sudo) in a user's folder: a new file is that folder's owner's."""
    if not _is_root():
        return None
    while not folder.exists() and folder != folder.parent:
        folder = folder.parent
    info = folder.stat()
    return info.st_uid, info.st_gid


def _replace(target: Path, before: bytes | None, data: bytes) -> bool:
    """Write ``data`` over ``target`` if it still holds ``before``; False when it changed meanwhile."""
    try:
        if before is None:
            mode, owner = _NEW_FILE_MODE, _owner_for_new(target.parent)
            _make_folders(target.parent, owner)
        else:
            info = target.stat()
            mode, owner = stat.S_IMODE(info.st_mode), (info.st_uid, info.st_gid)
            _write_new(backup_path(target), before, _NEW_FILE_MODE, owner, suffix=BACKUP_SUFFIX, of=target)
        temporary = _write_new(target, data, mode, owner, suffix=".pimem", of=target, rename=False)
        try:
            if _read_bytes(target) != before:  # the agent wrote its config meanwhile
                os.unlink(temporary)
                return False
            os.replace(temporary, target)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(temporary)
            raise
        _sync_folder(target.parent)
        return True
    except OSError as error:
        raise EditError(f"cannot write {target}: {error.strerror or error}") from None


def _make_folders(folder: Path, owner: tuple[int, int] | None) -> None:
    missing = []
    while not folder.exists() and folder != folder.parent:
        missing.append(folder)
        folder = folder.parent
    for made in reversed(missing):
        made.mkdir(mode=0o700)
        if owner:
            os.chown(made, *owner)


def _write_new(target: Path, data: bytes, mode: int, owner: tuple[int, int] | None, *, suffix: str, of: Path,
               rename: bool = True) -> str:
    """A temporary file next to ``target`` holding ``data`` (synced, with its mode and owner); renamed
    over ``target`` when ``rename``, else its name is returned."""
    fd, temporary = tempfile.mkstemp(prefix=f".{target.name}.", suffix=suffix, dir=target.parent)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.chmod(temporary, mode)
            info = os.fstat(handle.fileno())
            if owner and (info.st_uid, info.st_gid) != owner:
                try:
                    os.fchown(handle.fileno(), *owner)
                except PermissionError:  # refused rather than leave the file to another owner or group
                    raise EditError(f"cannot keep the owner and group of {of} ({owner[0]}:{owner[1]}); not "
                                    "touching it") from None
            os.fsync(handle.fileno())
        if rename:
            os.replace(temporary, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise
    return temporary


def _sync_folder(folder: Path) -> None:
    with contextlib.suppress(OSError):
        fd = os.open(folder, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
