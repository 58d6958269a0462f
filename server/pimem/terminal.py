"""Text for a terminal: stored data (transcript text, file names, paths) is never a terminal escape.

A transcript may hold ESC sequences (OSC 52 writes the clipboard, OSC 0 sets the window title,
``ESC[2J`` clears the screen), C1 controls (U+009B is CSI on terminals that take 8-bit controls), a
carriage return that overwrites what was printed before it, or bidirectional overrides that show
text in another order than it is (the "Trojan Source" characters). Human output shows each of them
as a visible escape (``\\x1b``, ``\\u202e``) and keeps newlines and tabs; the escape sequence after an
ESC is then plain text. JSON output stays exact: the same characters as ``\\uXXXX`` escapes, which
``json.loads`` reads back unchanged.
"""

from __future__ import annotations

import json
import logging
import re

# C0 controls except tab and newline, DEL, C1 controls, and the bidi embeddings, overrides and
# isolates (LRE RLE PDF LRO RLO, LRI RLI FSI PDI).
_UNSAFE = re.compile("[\\x00-\\x08\\x0b-\\x1f\\x7f-\\x9f\\u202a-\\u202e\\u2066-\\u2069]")
# What json.dumps(ensure_ascii=False) leaves raw among those (it escapes the C0 controls itself).
_UNSAFE_IN_JSON = re.compile("[\\x7f-\\x9f\\u202a-\\u202e\\u2066-\\u2069]")


def _visible_escape(match: re.Match[str]) -> str:
    code = ord(match.group(0))
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def visible(text: str) -> str:
    """``text`` with every control character a terminal could act on shown as an escape."""
    return _UNSAFE.sub(_visible_escape, text)


def json_text(value: object) -> str:
    """Indented JSON (non-ASCII text kept readable) with no character a terminal acts on."""
    encoded = json.dumps(value, ensure_ascii=False, indent=2)
    # These characters can only stand inside JSON strings, where \uXXXX means the same character.
    return _UNSAFE_IN_JSON.sub(lambda match: f"\\u{ord(match.group(0)):04x}", encoded)


class VisibleFormatter(logging.Formatter):
    """Log lines on stderr may name files (and a file name may hold an escape)."""

    def format(self, record: logging.LogRecord) -> str:
        return visible(super().format(record))
