"""Small, defensive helpers for reading untrusted JSON records."""

from __future__ import annotations

import os
import re
from datetime import datetime
from typing import Any

_SYSTEM_REMINDER = re.compile(r"<system-reminder>.*?</system-reminder>", re.DOTALL)


def clean_text(text: str) -> str:
    """Make text safe to store: drop NUL characters and replace lone surrogates (invalid UTF-8)."""
    if "\x00" in text:
        text = text.replace("\x00", "")
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        text = text.encode("utf-8", "replace").decode("utf-8")
    return text


def is_storable(text: str) -> bool:
    """Whether UTF-8, hence the store, can hold ``text`` as it is: JSON allows a lone surrogate
    (``"\\ud800"``; JavaScript writes one when it cuts a string inside a pair), UTF-8 does not."""
    if text.isascii():   # ids mostly: checked without encoding
        return True
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def storable_id(text: str) -> str:
    """An id of a transcript (an entry's, a message's, a call's, a session's) as a store key: as it is, but a
    lone surrogate written as ``\\udXXX``. Ids that differ stay apart (what :func:`clean_text` does to a text,
    a ``?`` for each, would join them), and the result is its own key (``storable_id`` of it is itself)."""
    return text if is_storable(text) else text.encode("utf-8", "backslashreplace").decode("utf-8")


def storable_path(path: str) -> str:
    """A path as SQLite and JSON can hold it: a file name that is not valid UTF-8 (Python keeps its
    bytes as lone surrogates) gets its undecodable bytes written as ``\\xNN``."""
    if path.isascii():  # the common case, checked without encoding (discovery calls this per file)
        return path
    try:
        path.encode("utf-8")
    except UnicodeEncodeError:
        return os.fsencode(path).decode("utf-8", "backslashreplace")
    return path


def quoted(value: object, limit: int = 100) -> str:
    """``value`` quoted for a message (its repr), cut to about ``limit`` characters with an ellipsis:
    whatever a request or a file held, a message that echoes it stays one short line."""
    if isinstance(value, str) and len(value) > limit:
        return repr(value[:limit]) + "…"
    text = repr(value)
    return text if len(text) <= limit else text[:limit] + "…"


def strip_system_reminders(text: str) -> str:
    return _SYSTEM_REMINDER.sub("", text) if "<system-reminder>" in text else text


def as_dict(value: Any) -> dict[str, Any] | None:
    return value if isinstance(value, dict) else None


def as_list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def nonempty_str(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


_MAX_MS = (1 << 42) - 1  # year 2109; keeps recall index keys in range


def clamp_ms(value: int) -> int:
    return max(0, min(int(value), _MAX_MS))


def iso_to_ms(value: Any) -> int | None:
    """ISO-8601 string (``2026-11-30T07:36:33.481Z``) to Unix ms; None when unusable."""
    if not isinstance(value, str) or not value:
        return None
    try:
        parsed = datetime.fromisoformat(value)
    except ValueError:
        return None
    if parsed.tzinfo is None:
        # Agents write UTC; a naive value is read as UTC rather than the machine's zone.
        from datetime import UTC

        parsed = parsed.replace(tzinfo=UTC)
    try:
        return clamp_ms(round(parsed.timestamp() * 1000))
    except (OverflowError, OSError, ValueError):
        return None


def number_to_ms(value: Any) -> int | None:
    """A numeric Unix-ms timestamp (Pi's ``message.timestamp``); None when not a sane number."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    if value != value or value in (float("inf"), float("-inf")):
        return None
    return clamp_ms(int(value))


def join_parts(parts: list[str]) -> str:
    return "\n".join(part for part in parts if part)


def merge_names(existing: list[str], new: list[str]) -> list[str]:
    merged = list(existing)
    seen = set(merged)
    for name in new:
        if name not in seen:
            seen.add(name)
            merged.append(name)
    return merged
