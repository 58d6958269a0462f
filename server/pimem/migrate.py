"""Codex → Pi: each Codex session of a folder becomes a native Pi v3 session that ``/resume`` lists.

What Pi needs (docs/formats.md 3.1-3.2, and Pi 1.6.0's SessionManager as measured by
tests/pi_verify): the file lives in ``<agent dir>/sessions/--<encoded cwd>--/`` and is named
``<ISO timestamp with : and . as ->_<session id>.jsonl``; line 1 is the header with ``version: 3``
(a file without a version is "v1" and gets rewritten with new ids when opened); entries chain by
``parentId`` and the leaf is the last line; assistant messages carry ``usage`` (Pi's status bar reads
it); a ``thinking_level_change`` entry spares Pi from appending one when the session is resumed.

Messages are the importer's (pimem.importers.codex): the same user/assistant filtering, so a
migrated exchange and its Codex original are copies that recall returns once.

Safety: names are deterministic (a rerun skips what exists and never rewrites it); files are written
to a temporary name and linked into place (no partial session is ever visible, no clobbering; the
temporary file of a run that was killed before linking is removed by the next run); ids
that are not valid Pi session ids are replaced by a UUIDv5 of them, so nothing from a Codex file can
choose a path; nothing is written outside the Pi sessions directory, nor through a symlink out of it.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import uuid
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from pimem.discovery import discover
from pimem.importers.base import Chunk, NotThisFormat, feed_line
from pimem.importers.codex import FILES as CODEX_FILES
from pimem.importers.codex import CodexMessage, CodexMessageLog
from pimem.jsonl import LineReader, UnsupportedFile, open_transcript
from pimem.models import SyncIssue
from pimem.paths import make_private_dirs, normalize_folder, pi_agent_dir, same_folder, source_roots
from pimem.recall.format import session_resume_command
from pimem.textutil import quoted

try:  # what python-zstandard raises for a .zst that is not zstd (a plain Exception subclass)
    from zstandard import ZstdError as _ZstdError
except ImportError:  # pimem.jsonl then uses the zstd command: a bad file yields no session_meta
    class _ZstdError(Exception):  # type: ignore[no-redef]
        pass

# Pi's assertValidSessionId, matched against the whole id (``$`` would also accept a trailing newline).
_PI_SESSION_ID = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?")
_PI_SESSION_ID_MAX = 128  # a longer id would make a file name past NAME_MAX; it gets a UUIDv5 instead
# _write_new_file's ".<name>.<pid>.<random>.tmp" (and the ".<name>.<pid>.tmp" of earlier versions).
_TEMPORARY_NAME = re.compile(r"\..+\.jsonl\.(\d+)(?:\.[0-9a-f]{32})?\.tmp", re.DOTALL)
_NAME_MAX = 255  # bytes in one file name (Linux, macOS, Windows alike)
_ID_NAMESPACE = uuid.UUID("8f7d3c2e-6a1b-4c5d-9e0f-1a2b3c4d5e6f")
SESSION_NAME_PREFIX = "Migrated from Codex: "
_ZERO_USAGE = {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 0,
               "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0}}


class MigrationError(Exception):
    """The migration cannot run at all (e.g. the Pi sessions directory is unusable)."""


@dataclass
class Migrated:
    codex_session_id: str
    codex_path: str
    pi_path: str
    messages: int

    @property
    def resume_command(self) -> str | None:
        """``pi --session <the Pi session file>``, by recall's rules (None for a path it refuses)."""
        return session_resume_command("pi", f"pi:{pi_session_id(self.codex_session_id)}", "", self.pi_path)


@dataclass
class Skipped:
    codex_session_id: str
    pi_path: str
    reason: str


@dataclass
class MigrationReport:
    folder: str
    dry_run: bool
    migrated: list[Migrated] = field(default_factory=list)
    skipped: list[Skipped] = field(default_factory=list)
    issues: list[SyncIssue] = field(default_factory=list)   # its JSON view: pimem.wire.migration_report


def encode_cwd(cwd: str) -> str:
    """Pi's per-folder directory name: strip one leading separator, then / \\ : become -."""
    stripped = cwd[1:] if cwd[:1] in ("/", "\\") else cwd
    return "--" + re.sub(r"[/\\:]", "-", stripped) + "--"


def pi_session_id(codex_id: str) -> str:
    if len(codex_id) <= _PI_SESSION_ID_MAX and _PI_SESSION_ID.fullmatch(codex_id):
        return codex_id
    return str(uuid.uuid5(_ID_NAMESPACE, codex_id))


def _iso(ms: int) -> str:
    return datetime.fromtimestamp(ms / 1000, tz=UTC).strftime("%Y-%m-%dT%H:%M:%S.") + f"{ms % 1000:03d}Z"


def pi_file_name(timestamp_iso: str, session_id: str) -> str:
    return f"{re.sub(r'[:.]', '-', timestamp_iso)}_{session_id}.jsonl"


@dataclass
class CodexSession:
    codex_id: str
    path: str
    cwd: str
    started_at: int
    excluded: str | None
    messages: list[CodexMessage]


def read_codex_session(path: str) -> CodexSession:
    """Parse one rollout into its accepted messages (raises NotThisFormat / OSError / UnsupportedFile)."""
    log = CodexMessageLog(path)
    chunk = Chunk()
    if CODEX_FILES.is_document(path):
        document, _size = CODEX_FILES.read_document(path)
        log.feed_document(document, chunk)
    else:
        with contextlib.closing(open_transcript(path)) as stream:
            for line in LineReader(stream):
                feed_line(log, line, chunk)
                chunk.turns.clear()  # the message log is all we keep: memory stays bounded
    info = log.session()
    if info.native_id is None:
        raise NotThisFormat("no session_meta with an id")
    return CodexSession(info.native_id, path, info.cwd, info.started_at or 0, info.excluded, log.messages)


def pi_messages(messages: list[CodexMessage]) -> list[CodexMessage]:
    """Consecutive assistant messages of one turn (progress notes, then the answer) become one Pi
    assistant message, so the session alternates user/assistant as every model API expects. The
    reply Pi's importer reads back is the same text (parts joined by newlines)."""
    merged: list[CodexMessage] = []
    for message in messages:
        if message.role == "assistant" and merged and merged[-1].role == "assistant":
            last = merged[-1]
            merged[-1] = CodexMessage("assistant", f"{last.text}\n{message.text}", message.ts,
                                      message.model or last.model, message.provider or last.provider)
        else:
            merged.append(message)
    return merged


def _entry_id(seed: str, number: int, used: set[str]) -> str:
    for attempt in range(100):
        candidate = hashlib.sha256(f"{seed}:{number}:{attempt}".encode()).hexdigest()[:8]
        if candidate not in used:
            used.add(candidate)
            return candidate
    raise RuntimeError("could not derive a unique entry id")


def render_pi_session(session: CodexSession, folder: str, session_id: str, header_iso: str) -> str:
    """The Pi v3 JSONL text for a Codex session (deterministic: same input, same bytes)."""
    used: set[str] = set()
    lines = [{"type": "session", "version": 3, "id": session_id, "timestamp": header_iso, "cwd": folder}]
    parent: str | None = None

    def entry(kind: str, timestamp: str, **fields: object) -> None:
        nonlocal parent
        entry_id = _entry_id(session_id, len(lines), used)
        lines.append({"type": kind, "id": entry_id, "parentId": parent, "timestamp": timestamp, **fields})
        parent = entry_id

    first_model = next((m for m in session.messages if m.role == "assistant" and m.model), None)
    if first_model is not None:
        entry("model_change", header_iso, provider=first_model.provider or "openai", modelId=first_model.model)
    entry("thinking_level_change", header_iso, thinkingLevel="off")
    entry("session_info", header_iso, name=f"{SESSION_NAME_PREFIX}{session.codex_id}")
    for message in pi_messages(session.messages):
        when = _iso(message.ts)
        content = [{"type": "text", "text": message.text}]
        if message.role == "user":
            entry("message", when, message={"role": "user", "content": content, "timestamp": message.ts})
        else:
            entry("message", when, message={
                "role": "assistant", "content": content, "api": "openai-responses",
                "provider": message.provider or "openai", "model": message.model or "unknown",
                "usage": _ZERO_USAGE, "stopReason": "stop", "timestamp": message.ts,
            })
    return "".join(json.dumps(line, ensure_ascii=False, separators=(",", ":")) + "\n" for line in lines)


def _inside(path: Path, root: Path) -> bool:
    try:
        Path(os.path.realpath(path)).relative_to(os.path.realpath(root))
        return True
    except ValueError:
        return False


def _write_new_file(target: Path, text: str) -> bool:
    """Write ``text`` to ``target`` only if it does not exist, atomically. False when it existed.

    The temporary name is unique per write (pid and a random part): two migrations of one folder in
    one process (the server runs requests on several threads) never share it."""
    temporary = target.with_name(f".{target.name}.{os.getpid()}.{uuid.uuid4().hex}.tmp")
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0)
    fd = os.open(temporary, flags, 0o600)
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        try:
            os.link(temporary, target)  # fails if target exists: never clobbers
        except FileExistsError:
            return False
        except OSError:
            if os.path.lexists(target):
                return False
            os.replace(temporary, target)  # file systems without hard links
        return True
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temporary)


def _name_too_long(target_dir: Path) -> str | None:
    """Why Pi cannot keep sessions for this folder at all, or None. Pi names the directory after the
    whole path (encode_cwd), and a file name has at most NAME_MAX bytes."""
    size = len(os.fsencode(target_dir.name))
    if size <= _NAME_MAX:
        return None
    return (f"the folder's path is too long for a Pi session directory (Pi names it after the whole path: "
            f"{size} bytes, more than the {_NAME_MAX} a file name may have)")


def _process_alive(pid: int) -> bool:
    if os.name == "nt":
        return True  # os.kill(pid, 0) would terminate the process there: assume it is alive
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True  # exists, owned by someone else
    return True


def _remove_stale_temporaries(target_dir: Path) -> None:
    """Temporary files of runs killed between writing and linking (their process is gone)."""
    try:
        names = os.listdir(target_dir)
    except OSError:
        return
    for name in names:
        match = _TEMPORARY_NAME.fullmatch(name)
        if match and int(match.group(1)) != os.getpid() and not _process_alive(int(match.group(1))):
            with contextlib.suppress(OSError):
                os.unlink(target_dir / name)


_THREAD_ID = re.compile(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}")


class UnknownSession(LookupError):
    """No Codex session with that thread id among the rollouts (or it cannot be migrated on its own)."""


def _rollouts_of(codex_id: str, env: dict[str, str] | None, issues: list[SyncIssue]) -> list[str]:
    """The rollouts whose name holds ``codex_id`` (Codex names them ``rollout-<time>-<thread id>``)."""
    found = discover(source_roots(env), {"codex"}, issues)
    return sorted(f.path for f in found if codex_id in os.path.basename(f.path))


def migrate_codex_session(codex_id: str, dry_run: bool = False, *,
                          env: dict[str, str] | None = None) -> MigrationReport:
    """Convert one Codex session (its thread id) into a Pi session; its cwd decides the Pi folder.
    UnknownSession when no readable rollout holds it, or it has no cwd or is a sub-agent thread."""
    if not _THREAD_ID.fullmatch(codex_id):
        raise UnknownSession(f"{quoted(codex_id)} is not a Codex thread id (a UUID)")
    issues: list[SyncIssue] = []
    for path in _rollouts_of(codex_id, env, issues):
        try:
            session = read_codex_session(path)
        except (NotThisFormat, UnsupportedFile, OSError, ValueError, RecursionError, _ZstdError):
            continue
        if session.codex_id != codex_id:
            continue
        if session.excluded:
            raise UnknownSession(f"Codex session {codex_id} is a sub-agent thread; it is not migrated")
        if not session.cwd:
            raise UnknownSession(f"Codex session {codex_id} records no folder to migrate it to")
        return migrate_codex_sessions(session.cwd, dry_run, env=env, only_id=codex_id)
    raise UnknownSession(f"no Codex session {codex_id} among the Codex rollouts")


def migrate_codex_sessions(folder: str, dry_run: bool = False, *, env: dict[str, str] | None = None,
                           only_id: str | None = None) -> MigrationReport:
    """Convert every Codex session whose cwd is ``folder`` into a Pi session (see module doc);
    ``only_id``: only the session with this thread id."""
    folder = normalize_folder(folder)
    report = MigrationReport(folder=folder, dry_run=dry_run)
    roots = source_roots(env)
    sessions_root = pi_agent_dir(env) / "sessions"
    target_dir = sessions_root / encode_cwd(folder)
    unusable = _name_too_long(target_dir)
    # os.path (not Path) checks: they answer False instead of raising on a name the system refuses.
    if unusable is None and not dry_run and os.path.exists(target_dir) and not _inside(target_dir, sessions_root):
        raise MigrationError(f"{target_dir} points outside the Pi sessions directory; refusing to write there")
    if unusable is None and not dry_run and os.path.isdir(target_dir):
        _remove_stale_temporaries(target_dir)
    discovered = discover(roots, {"codex"}, report.issues)
    if only_id is not None:   # (by name first: the other rollouts are not read)
        discovered = [f for f in discovered if only_id in os.path.basename(f.path)]
    seen: set[str] = set()
    for source_file in sorted(discovered, key=lambda f: f.path):
        try:
            session = read_codex_session(source_file.path)
        except (NotThisFormat, UnsupportedFile, OSError, ValueError, RecursionError, _ZstdError) as error:
            cause = getattr(error, "strerror", None) or str(error)
            report.issues.append(SyncIssue("codex", source_file.path, f"cannot read this Codex rollout: {cause}"))
            continue
        if (session.excluded or not same_folder(session.cwd, folder) or session.codex_id in seen
                or (only_id is not None and session.codex_id != only_id)):
            continue
        seen.add(session.codex_id)
        if unusable is not None:
            report.issues.append(SyncIssue("codex", session.path, f"cannot migrate this session: {unusable}"))
            continue
        _migrate_one(session, folder, target_dir, sessions_root, dry_run, report)
    return report


def _migrate_one(session: CodexSession, folder: str, target_dir: Path, sessions_root: Path, dry_run: bool,
                 report: MigrationReport) -> None:
    session_id = pi_session_id(session.codex_id)
    header_iso = _iso(session.started_at or (session.messages[0].ts if session.messages else 0))
    target = target_dir / pi_file_name(header_iso, session_id)
    if not session.messages:
        report.skipped.append(Skipped(session.codex_id, str(target), "no user or assistant text to migrate"))
        return
    if os.path.lexists(target):
        report.skipped.append(Skipped(session.codex_id, str(target), "already migrated"))
        return
    count = len(pi_messages(session.messages))
    if dry_run:
        report.migrated.append(Migrated(session.codex_id, session.path, str(target), count))
        return
    try:
        make_private_dirs(target_dir)
        if not _inside(target_dir, sessions_root):
            raise MigrationError(f"{target_dir} points outside the Pi sessions directory")
        written = _write_new_file(target, render_pi_session(session, folder, session_id, header_iso))
    except (OSError, MigrationError) as error:
        cause = getattr(error, "strerror", None) or str(error)
        report.issues.append(SyncIssue("codex", session.path, f"cannot write the Pi session {target}: {cause}"))
        return
    if written:
        report.migrated.append(Migrated(session.codex_id, session.path, str(target), count))
    else:
        report.skipped.append(Skipped(session.codex_id, str(target), "already migrated"))


def format_report(report: MigrationReport) -> str:
    verb = "would migrate" if report.dry_run else "migrated"
    lines = [f"{report.folder}: {verb} {len(report.migrated)} Codex session(s), skipped {len(report.skipped)}, "
             f"{len(report.issues)} issue(s)"]
    lines += [f"  {verb}: {m.codex_session_id} ({m.messages} messages) -> {m.pi_path}" for m in report.migrated]
    lines += [f"  skipped: {s.codex_session_id}: {s.reason} ({s.pi_path})" for s in report.skipped]
    lines += [f"  issue: {i.jsonl_path}: {i.error}" for i in report.issues]
    return "\n".join(lines)
