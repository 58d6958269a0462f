"""Recall rows for people: plain text (the CLI), Markdown (editors: hover, chat), one whole turn, and
the shell command that resumes a row's session (:func:`resume_command`).

Transcript text is data, never markup or a command: the text forms are made terminal-safe by the CLI
(:func:`pimem.terminal.visible`), the Markdown escapes everything Markdown would interpret.
"""

from __future__ import annotations

import os
import re
import shlex
from collections.abc import Sequence
from datetime import datetime

from pimem.recall.query import MAX_PATH_CHARS, MAX_TURN_ID_CHARS, TEXT_CUT_CHARS, TOOL_NAME_CUT_CHARS, TOOL_NAMES_CUT
from pimem.recall.rows import RecallRow

# Claude Code session ids are UUIDs (v4), Codex thread ids UUIDs (v7 now, v4 in older rollouts).
_UUID = re.compile(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}")
# Pi's assertValidSessionId (UUIDv7 ids, and the custom ids `--session-id` accepts).
_PI_SESSION_ID = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?")
# OpenCode's session ids: "ses_", 12 hex digits of time, 14 base-62 characters (packages/opencode/src/id/id.ts).
_OPENCODE_SESSION_ID = re.compile(r"ses_[0-9A-Za-z]{12,40}")
_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def _safe_absolute(path: str) -> bool:
    """A path a resume command may hold: absolute, no longer than a real path can be, and without
    control characters (a newline would end the command where a terminal shows one line)."""
    return bool(path) and len(path) <= MAX_PATH_CHARS and os.path.isabs(path) and _CONTROL.search(path) is None


def resume_command(row: RecallRow) -> str | None:
    """The shell command that resumes a row's session in its own agent, or None.

    Everything in it comes from a transcript, so nothing may become an option or a second
    command: the session id must have its agent's real shape (a UUID for Claude Code and Codex;
    for Pi, Pi's own session-id rule, though only the file path is passed), paths must be
    absolute (an argument starting with ``/`` is never an option) and free of control
    characters, and ``cd`` gets ``--``. Anything else gets no command, nor does a row of the shared
    store (another machine's session: nothing to resume here).
    """
    if row.author is not None:
        return None
    return session_resume_command(row.source, row.session_id, row.cwd, row.jsonl_path)


def session_resume_command(source: str, session_id: str, cwd: str, jsonl_path: str) -> str | None:
    """The resume command of a session by its stored fields (:func:`resume_command`'s rules)."""
    native = session_id.split(":", 1)[1] if ":" in session_id else ""
    if source == "pi":
        if not (_PI_SESSION_ID.fullmatch(native) and _safe_absolute(jsonl_path)):
            return None
        return f"pi --session {shlex.quote(jsonl_path)}"
    if source == "claude":
        if not _UUID.fullmatch(native):
            return None
        resume = f"claude --resume {native}"
        if not cwd:
            return resume
        return f"cd -- {shlex.quote(cwd)} && {resume}" if _safe_absolute(cwd) else None
    if source == "codex":
        return f"codex resume {native}" if _UUID.fullmatch(native) else None
    # Gemini CLI looks a session up among its project's only (~/.gemini/tmp/<project of the working
    # folder>/chats, SessionSelector.findSession): without the folder there is nothing to resume.
    if source == "gemini" and _UUID.fullmatch(native):
        return f"cd -- {shlex.quote(cwd)} && gemini --resume {native}" if _safe_absolute(cwd) else None
    # OpenCode opens the session in the working folder's project: the command starts there.
    if source == "opencode" and _OPENCODE_SESSION_ID.fullmatch(native):
        return _in_folder(cwd, f"opencode --session {native}")
    # Copilot CLI's --resume takes an optional value: given as one argument (``--resume=<id>``, the form
    # the CLI prints itself), nothing after it can be read as the id or the id as something else.
    if source == "copilot-cli" and _UUID.fullmatch(native):
        return _in_folder(cwd, f"copilot --resume={native}")
    # Copilot Chat and Cursor have no command line that resumes a conversation: no command.
    return None


def _in_folder(cwd: str, command: str) -> str | None:
    """``command`` run in the session's folder (as is without one; None for a folder a command refuses)."""
    if not cwd:
        return command
    return f"cd -- {shlex.quote(cwd)} && {command}" if _safe_absolute(cwd) else None


PREVIEW_CHARS = 500
MARKDOWN_PREVIEW_CHARS = 300
_MARKDOWN_SPECIALS = set("\\`*_{}[]()#+-.!|<>~&")
# The backslash first, so that the backslashes put before the others are not escaped again.
_MARKDOWN_ORDER = ("\\", *sorted(_MARKDOWN_SPECIALS - {"\\"}))


def escape_markdown(text: str) -> str:
    """Transcript text as inert Markdown: no links, no HTML, no emphasis. Each special character is
    preceded by a backslash, one ``str.replace`` per character that occurs (scans in C: a recall answer's
    Markdown escapes some 30,000 characters; a generator per character cost 1 ms a page, 0.1 ms now)."""
    for char in _MARKDOWN_ORDER:
        if char in text:
            text = text.replace(char, "\\" + char)
    return text


def _when(ts: int) -> str:
    try:
        return datetime.fromtimestamp(ts / 1000).strftime("%Y-%m-%d %H:%M")
    except (OverflowError, OSError, ValueError):
        return "unknown time"


def _preview(text: str, limit: int = PREVIEW_CHARS) -> str:
    return text if len(text) <= limit else text[:limit] + "…"


def format_text(rows: Sequence[RecallRow]) -> str:
    """The readable form (the seed's formatRecallResults, plus where each turn came from), with the
    fields cut as in a recall answer. Plain text: the CLI makes control characters visible."""
    if not rows:
        return "No relevant past conversations found."
    lines = ["## Relevant past conversations", ""]
    for row in rows:
        cwd = _preview(row.cwd, MAX_PATH_CHARS) or "unknown folder"
        lines.append(f"### [{row.source} · {_when(row.ts)} · {cwd} · score {row.hits}]")
        if row.author is not None:
            lines.append(f"From: {_preview(row.author, 100)} on {_preview(row.machine or '?', 100)} (shared store)")
        lines.append(f"You: {_preview(row.user_text, TEXT_CUT_CHARS)}")
        if row.reply_text:
            lines.append(f"Assistant: {_preview(row.reply_text)}")
        if row.tool_names:
            names = [_preview(name, TOOL_NAME_CUT_CHARS) for name in row.tool_names[:TOOL_NAMES_CUT]]
            lines.append(f"Tools: {', '.join(names)}{', …' if len(row.tool_names) > TOOL_NAMES_CUT else ''}")
        if row.matched:
            lines.append(f"Matched: {', '.join(row.matched)}")
        if row.author is None:
            where = _preview(row.jsonl_path, MAX_PATH_CHARS)
            lines.append(f"Source: {where}:{row.line}" if row.line else f"Source: {where}")
        if command := resume_command(row):
            lines.append(f"Resume: {command}")
        if row.author is not None:
            lines.append(f"Turn: {_preview(row.turn_id, MAX_TURN_ID_CHARS)} (on {_preview(row.machine or '?', 100)})")
        elif len(row.turn_id) <= MAX_TURN_ID_CHARS:
            lines.append(f"Turn: {row.turn_id}")
            if row.truncated or len(row.reply_text) > PREVIEW_CHARS:
                lines.append(f"(shortened; the whole turn: pimem show {shlex.quote(row.turn_id)})")
        lines.append("")
    return "\n".join(lines)


def format_turn_text(row: RecallRow) -> str:
    """One whole turn, readable (``pimem show``)."""
    lines = [f"### [{row.source} · {_when(row.ts)} · {row.cwd or 'unknown folder'}]", f"You: {row.user_text}"]
    if row.reply_text:
        lines.append(f"Assistant: {row.reply_text}")
    if row.tool_names:
        lines.append(f"Tools: {', '.join(row.tool_names)}")
    where = f"{row.jsonl_path}:{row.line}" if row.line else row.jsonl_path
    lines += [f"Source: {where}", f"Turn: {row.turn_id}"]
    if command := resume_command(row):
        lines.append(f"Resume: {command}")
    return "\n".join(lines)


def format_markdown(rows: Sequence[RecallRow]) -> str:
    """Markdown for editors (hover, chat): all transcript text escaped, every field short."""
    if not rows:
        return "No relevant past conversations found."
    lines = ["## Relevant past conversations", ""]
    for row in rows:
        lines.append(f"### {escape_markdown(row.source)} · {_when(row.ts)} · "
                     f"{escape_markdown(_preview(row.cwd or '?', MARKDOWN_PREVIEW_CHARS))} · score {row.hits}")
        if row.author is not None:
            lines.append(f"from {escape_markdown(_preview(row.author, 100))} on "
                         f"{escape_markdown(_preview(row.machine or '?', 100))}")
        if row.matched:
            lines.append(f"matched: {escape_markdown(', '.join(row.matched))}")
        lines.append("")
        lines.append(f"**You:** {escape_markdown(_preview(row.user_text, MARKDOWN_PREVIEW_CHARS))}")
        if row.reply_text:
            lines.append("")
            lines.append(f"**Assistant:** {escape_markdown(_preview(row.reply_text, MARKDOWN_PREVIEW_CHARS))}")
        lines.append("")
    return "\n".join(lines)
