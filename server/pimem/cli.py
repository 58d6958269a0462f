"""The ``pimem`` command line: sync, recall, show, sessions, file-history, blame, migrate-codex, status, serve, mcp.

Exit status: 0 on success (isolated import issues are reported on stderr but do not fail a sync),
1 when the store or a folder cannot be used (or ``show`` finds no such turn), 2 for bad arguments
(a request over a limit of docs/lsp-extensions.md included), 130 when interrupted.
Status 1 comes with one line on stderr saying why and what to do: no store yet (``recall``, ``show``
and ``status`` never create one), not a store (another program's file, or a damaged store: left as it
is), a store written by a newer pimem (``recall`` and ``status`` still read it; ``sync`` refuses),
locked by another program past the busy timeout (``$PIMEM_BUSY_TIMEOUT_MS``, default 15000), a full
disk, a read-only store. What was stored before stays stored.

Human output goes through :func:`pimem.terminal.visible` (stored text, file names and paths never
reach the terminal as escapes); ``--json`` output is exact JSON (:func:`pimem.terminal.json_text`).

Over ~400 lines for a reason: one small function per command, each only parsing its arguments,
calling a service and printing through :mod:`pimem.terminal`; the shared exit-status and store-failure
rules above are what keeps them consistent, so they stay in one file.
"""

from __future__ import annotations

import argparse
import contextlib
import logging
import os
import re
import sqlite3
import sys
import threading
from collections.abc import Iterator, Sequence
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING

from pimem import __version__, wire
from pimem.cli_share import add_share, cmd_share, push_after_sync
from pimem.models import SOURCES, Source, SyncProgress, source_label
from pimem.paths import default_db_path, source_roots
from pimem.recall import (
    MAX_ENTITIES,
    MAX_ENTITY_CHARS,
    MAX_LIMIT,
    MAX_PAGE_END,
    TEXT_CUT_CHARS,
    TOTAL_CAP,
    RecallError,
    RecallPage,
    RecallQuery,
    check_turn_id,
    get_turn,
    make_query,
    recall_page,
)
from pimem.recall.format import format_text, format_turn_text
from pimem.store import StoreError, connect, store_failure, upgrade_notice
from pimem.terminal import VisibleFormatter, json_text, visible
from pimem.textutil import quoted

if TYPE_CHECKING:
    from pimem.share.scope import SharedReport


def _out(text: str) -> None:
    print(visible(text))


def _err(text: str) -> None:
    print(visible(text), file=sys.stderr)


def _add_db(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--db", metavar="PATH",
                        help="memory store (default: $MEMORY_DB_PATH, else ~/.pi/agent/memory.db)")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="pimem", description="Memory of past AI-coding conversations (Pi, Claude Code, Codex CLI).")
    parser.add_argument("--version", action="version", version=f"pimem {__version__}")
    parser.add_argument("-v", "--verbose", action="count", default=0, help="log more (-vv: debug)")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    sync = commands.add_parser("sync", help="import new and changed transcripts (incremental)")
    _add_db(sync)
    sync.add_argument("--force", action="store_true", help="re-parse every transcript (full backfill)")
    sync.add_argument("--source", action="append", choices=SOURCES, help="only this agent (repeatable)")
    sync.add_argument("--json", action="store_true", help="print the sync statistics as JSON")
    sync.add_argument("--workers", type=int, default=None, help="parser processes (default: automatic)")

    rec = commands.add_parser(
        "recall", help="find past turns mentioning the given entity words, or free text",
        description=f"Past turns mentioning the given words (or free text with --text), best first. Long fields "
                    f"are shortened (texts to {TEXT_CUT_CHARS} characters, \"truncated\": true in --json): "
                    "`pimem show TURN_ID` prints a whole turn.")
    _add_db(rec)
    rec.add_argument("entities", nargs="*", metavar="ENTITY",
                     help=f"1 to {MAX_ENTITIES} words of at most {MAX_ENTITY_CHARS} characters, matched literally, "
                          "any case")
    rec.add_argument("--text", metavar="TEXT",
                     help="free text instead of entities (a question, a line of code, an error): pimem picks "
                          "its rarest words and weighs them by rarity")
    rec.add_argument("--limit", type=int, default=5, help=f"results, 1..{MAX_LIMIT} (default 5)")
    rec.add_argument("--source", action="append", choices=SOURCES, help="only this agent (repeatable)")
    rec.add_argument("--cwd", metavar="DIR", help="only sessions whose folder is DIR or below")
    rec.add_argument("--offset", type=int, default=0,
                     help=f"skip this many of the best rows (paging; offset + limit at most {MAX_PAGE_END})")
    rec.add_argument("--total", action="store_true",
                     help=f"also count the matching turns (exactly up to {TOTAL_CAP:,}); with --json the "
                          "output is then {results, total, totalCapped}")
    rec.add_argument("--scope", choices=("local", "mine", "team", "all"), default="local",
                     help="local: this store only (default); mine: also my turns pushed from my other machines; "
                          "team: every member's turns on the shared store; all: this store and the shared store "
                          "(docs/share.md). With --json the output is then {results, shared, ...}")
    rec.add_argument("--json", action="store_true", help="print the rows as JSON")

    show = commands.add_parser("show", help="print one whole turn (the turn id that recall prints)")
    _add_db(show)
    show.add_argument("turn_id", metavar="TURN_ID", help="a turn id, as in recall's output (\"Turn:\", turnId)")
    show.add_argument("--json", action="store_true", help="print the turn as JSON")

    listing = commands.add_parser("sessions", help="the sessions of some folders, newest first")
    _add_db(listing)
    listing.add_argument("--cwd", metavar="DIR", action="append",
                         help="only sessions whose folder is DIR or below (repeatable; default: all)")
    listing.add_argument("--source", action="append", choices=SOURCES, help="only this agent (repeatable)")
    listing.add_argument("--limit", type=int, default=20, help="sessions, 1..500 (default 20)")
    listing.add_argument("--offset", type=int, default=0, help="skip the first OFFSET sessions")
    listing.add_argument("--json", action="store_true", help="print {sessions, total} as JSON (pimem/sessions)")

    touched = commands.add_parser("file-history", help="the conversations whose tool calls touched a file")
    _add_db(touched)
    touched.add_argument("path", metavar="PATH", help="the file (relative to the current directory, or absolute)")
    touched.add_argument("--limit", type=int, default=20, help="sessions, 1..200 (default 20)")
    touched.add_argument("--json", action="store_true", help="print the history as JSON (pimem/fileHistory)")

    blame = commands.add_parser("blame", help="which past conversation's edit wrote each line of a file")
    _add_db(blame)
    blame.add_argument("target", metavar="FILE[:START[-END]]",
                       help="the file (relative to the current directory, or absolute), optionally lines START to "
                            "END (1-based, inclusive)")
    blame.add_argument("--no-git", action="store_true", help="do not ask git blame to confirm the time windows")
    blame.add_argument("--json", action="store_true", help="print the result as JSON (pimem/lineHistory)")

    migrate = commands.add_parser("migrate-codex", help="convert a folder's Codex sessions into Pi sessions")
    migrate.add_argument("--cwd", metavar="DIR", default=None, help="the project folder (default: current directory)")
    migrate.add_argument("--session", metavar="SESSION_ID", default=None,
                         help="only this Codex session (codex:<thread id>), into the Pi folder of its own cwd")
    migrate.add_argument("--dry-run", action="store_true", help="report what would be written, write nothing")
    migrate.add_argument("--json", action="store_true", help="print the report as JSON")

    status = commands.add_parser("status", help="what the store holds")
    _add_db(status)
    status.add_argument("--json", action="store_true")

    serve = commands.add_parser("serve", help="run the language server over stdio")
    serve.add_argument("--stdio", action="store_true", help="accepted for vscode-languageclient (stdio is the default)")
    _add_mcp(commands)
    add_share(commands)
    return parser


def _add_mcp(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    mcp = commands.add_parser("mcp", help="serve recall to agents: an MCP server over stdio (docs/mcp.md)",
                              description="Without a subcommand: run the MCP server over stdio.")
    _add_db(mcp)
    mcp.add_argument("--no-redact", action="store_true",
                     help="return secrets unmasked (default: masked as [REDACTED:<kind>]; also PIMEM_REDACT=0)")
    actions = mcp.add_subparsers(dest="mcp_command", metavar="install")
    install = actions.add_parser("install", help="add pimem to an agent's MCP servers (claude, codex or pi)")
    install.add_argument("agent", choices=("claude", "codex", "pi"))
    install.add_argument("--dry-run", action="store_true", help="print what would change, change nothing")
    # own dest: argparse lets a subcommand's default overwrite the parent's --db
    install.add_argument("--db", dest="install_db", metavar="PATH",
                         help="store the server reads (written into the command; default: $MEMORY_DB_PATH if set)")
    install.add_argument("--no-redact", dest="install_no_redact", action="store_true",
                         help="configure the server to return secrets unmasked")


def _db(args: argparse.Namespace) -> Path:
    return Path(os.path.expanduser(args.db)) if getattr(args, "db", None) else default_db_path()


def _warn_upgrade(conn: sqlite3.Connection) -> None:
    notice = upgrade_notice(conn)
    if notice:
        _err(f"pimem: {notice} (reading it still works)")


@contextlib.contextmanager
def _reading(args: argparse.Namespace) -> Iterator[sqlite3.Connection]:
    """The store opened for a read-only command: never created, a newer pimem's store read with a
    warning, closed afterwards."""
    conn = connect(_db(args), create=False, for_writing=False)
    _warn_upgrade(conn)
    try:
        yield conn
    finally:
        conn.close()


def _sources(args: argparse.Namespace) -> set[Source]:
    return set(args.source) if args.source else set(SOURCES)


class _ProgressBar:
    """A one-line progress bar on stderr, only when stderr is a terminal."""

    def __init__(self) -> None:
        self.enabled = sys.stderr.isatty()
        self.shown = False

    def __call__(self, progress: SyncProgress) -> None:
        if not self.enabled:
            return
        if progress.indexing:
            label, done, total = "indexing", progress.indexed, progress.to_index
        else:
            label, done, total = "syncing", progress.files_done, progress.files_total
        if total == 0:
            return
        width = 30
        filled = width * done // total
        unit = "turns" if progress.indexing else "files"
        sys.stderr.write(f"\r{label:8} [{'#' * filled}{' ' * (width - filled)}] {done}/{total} {unit}   ")
        sys.stderr.flush()
        self.shown = True

    def close(self) -> None:
        if self.shown:
            sys.stderr.write("\n")


def cmd_sync(args: argparse.Namespace) -> int:
    from pimem.sync import SyncRequest, run_sync

    bar = _ProgressBar()
    cancel = threading.Event()
    request = SyncRequest(db_path=str(_db(args)), roots=source_roots(), sources=_sources(args), force=args.force,
                          workers=args.workers)
    try:
        stats = run_sync(request, progress=bar, cancel=cancel)
    except KeyboardInterrupt:
        bar.close()
        print("pimem: sync interrupted; what was committed stays, the next sync continues", file=sys.stderr)
        return 130
    finally:
        bar.close()
    for issue in stats.issues:
        _err(f"pimem: {issue.error}")
    if args.json:
        print(json_text(wire.sync_stats(stats)))
    else:
        others = "".join(f", {count} {source_label(source)}" for source, count in stats.files_by_source.items()
                         if count and source not in ("pi", "claude", "codex"))
        print(f"imported {stats.turns} turns from {stats.pi} Pi, {stats.claude} Claude, {stats.codex} Codex{others} "
              f"sessions ({stats.scanned_files} files parsed, {stats.skipped_files} unchanged, "
              f"{len(stats.issues)} issues, {stats.duration_ms} ms)")
    if not cancel.is_set():
        push_after_sync(_db(args))   # pimem share config --auto (docs/share.md)
    return 0


def cmd_recall(args: argparse.Namespace) -> int:
    if (args.text is None) == (not args.entities):
        _err("pimem recall: give either entity words or --text TEXT")
        return 2
    if args.text is not None:
        return _recall_text(args)
    try:
        query = make_query(args.entities, args.limit, args.source, args.cwd, args.offset, args.total)
    except RecallError as error:
        _err(f"pimem recall: {error}")
        return 2
    with _reading(args) as conn:
        if args.scope != "local":
            return _recall_scoped(args, conn, query)
        page = recall_page(conn, query)
    if args.json and page.total is not None:
        print(json_text({"results": [wire.recall_row(row) for row in page.rows], "total": page.total,
                         "totalCapped": page.total_capped}))
    elif args.json:
        print(json_text([wire.recall_row(row) for row in page.rows]))
    else:
        _out(format_text(page.rows))
        _say_total(page)
    return 0


def _recall_scoped(args: argparse.Namespace, conn: sqlite3.Connection, query: RecallQuery) -> int:
    from pimem.share.scope import recall_scoped

    page, report = recall_scoped(conn, _db(args), query, args.scope)
    assert report is not None
    if args.json:
        answer: dict[str, object] = {"results": [wire.recall_row(row) for row in page.rows],
                                     "shared": wire.shared_report(report)}
        if page.total is not None:
            answer.update(total=page.total, totalCapped=page.total_capped)
        print(json_text(answer))
        return 0
    _out(format_text(page.rows))
    _say_total(page)
    _say_shared(report)
    return 0


def _say_shared(report: SharedReport) -> None:
    if report.state != "ok":
        # Every report's message names the shared store and what went wrong; the state word would repeat it.
        _err(f"pimem recall: {report.message or f'the shared store: {report.state}'}; this machine's rows only")


def _say_total(page: RecallPage) -> None:
    if page.total is not None:
        _out(f"Matching turns: {'more than ' if page.total_capped else ''}{page.total:,}")


def cmd_show(args: argparse.Namespace) -> int:
    try:
        turn_id = check_turn_id(args.turn_id)
    except RecallError as error:
        _err(f"pimem show: {error}")
        return 2
    with _reading(args) as conn:
        row = get_turn(conn, turn_id)
    if row is None:
        _err(f"pimem show: no turn {quoted(turn_id)} in the store")
        return 1
    if args.json:
        print(json_text(wire.turn_row(row)))
    else:
        _out(format_turn_text(row))
    return 0


def _recall_text(args: argparse.Namespace) -> int:
    """``--text``: JSON is ``{entities, terms, results}`` (the ``pimem/recall {text}`` result without its
    Markdown); the readable form starts with the terms searched."""
    from pimem.recall.freetext import parse_text, recall_conversations

    try:
        found = parse_text(args.text)
        base = make_query([candidate.term for candidate in found[:MAX_ENTITIES]], args.limit, args.source, args.cwd,
                          args.offset, args.total)
    except RecallError as error:
        _err(f"pimem recall: {error}")
        return 2
    report: SharedReport | None = None
    with _reading(args) as conn:
        if args.scope != "local":
            from pimem.share.scope import recall_scoped_text

            answer, report = recall_scoped_text(conn, _db(args), found, base, args.scope)
        else:
            answer = recall_conversations(conn, found, base)
    if args.json:
        result = wire.recall_answer(answer.entities, answer.rows, answer.terms, answer.total, answer.total_capped)
        if report is not None:
            result["shared"] = wire.shared_report(report)
        print(json_text(result))
    else:
        _out(f"Searched: {', '.join(answer.entities) or '(nothing: no word of the text occurs in the store)'}")
        _out(format_text(answer.rows))
        _say_total(RecallPage(answer.rows, answer.total, answer.total_capped))
        if report is not None:
            _say_shared(report)
    return 0


def _when(ms: int) -> str:
    return datetime.fromtimestamp(ms / 1000).strftime("%Y-%m-%d %H:%M")


def cmd_sessions(args: argparse.Namespace) -> int:
    from pimem.paths import normalize_folder
    from pimem.sessions import MAX_SESSIONS, list_sessions

    if not 1 <= args.limit <= MAX_SESSIONS or args.offset < 0:
        _err(f"pimem sessions: --limit must be within 1..{MAX_SESSIONS} and --offset at least 0")
        return 2
    folders = [normalize_folder(folder) for folder in args.cwd] if args.cwd else None
    with _reading(args) as conn:
        page = list_sessions(conn, folders, args.source, args.limit, args.offset)
    if args.json:
        print(json_text(wire.sessions_page(page)))
        return 0
    _out(f"{page.total} session(s)" + (f", {len(page.sessions)} shown from {args.offset + 1}" if page.sessions else ""))
    for summary in page.sessions:
        view = wire.session_summary(summary)
        prompt = str(view["firstPrompt"]).replace("\n", " ") + ("…" if view["truncated"] else "")
        _out(f"\n{_when(summary.last_ts)}  {summary.source}  {summary.turn_count} turn(s)  {summary.cwd}\n"
             f"  {prompt}\n  Session: {summary.session_id}")
        if view["resumeCommand"]:
            _out(f"  Resume: {view['resumeCommand']}")
    return 0


_BLAME_RANGE = re.compile(r"^(.*):([0-9]{1,9})(?:-([0-9]{1,9}))?$")


def _blame_target(target: str) -> tuple[str, int, int | None]:
    """FILE[:START[-END]] -> (file, first line 0-based, end exclusive or None). A FILE:N that names an
    existing file is that file (a path may hold a colon)."""
    match = _BLAME_RANGE.match(target)
    if match is None or os.path.exists(target):
        return target, 0, None
    start = int(match.group(2))
    end = int(match.group(3)) if match.group(3) else start
    if start < 1 or end < start:
        raise ValueError(f"{target!r}: lines are 1-based, START <= END")
    return match.group(1), start - 1, end


def cmd_blame(args: argparse.Namespace) -> int:
    from pimem.editspans import split_lines
    from pimem.lineblame import MAX_RANGE_LINES, TextTooLarge, line_history, read_text

    try:
        path, start, end = _blame_target(args.target)
    except ValueError as error:
        _err(f"pimem blame: {error}")
        return 2
    if end is not None and end - start > MAX_RANGE_LINES:
        _err(f"pimem blame: at most {MAX_RANGE_LINES} lines at once")
        return 2
    path = os.path.abspath(path)
    try:
        text = read_text(path)
    except (OSError, TextTooLarge) as error:
        reason = error.strerror if isinstance(error, OSError) and error.strerror else str(error)
        _err(f"pimem blame: cannot read {path}: {reason}")
        return 1
    with _reading(args) as conn:
        history = line_history(conn, path, text, start, end, git=not args.no_git)
    if args.json:
        print(json_text(wire.line_history(history)))
        return 0
    lines = split_lines(text)
    shown = lines[start:end] if end is not None else lines[start:]
    attributed = {found.line: found for found in history.lines}
    _out(f"{history.path}: {len(history.lines)} of {len(shown)} line(s) written by a past conversation"
         + (" (git blame checked)" if history.git_used else ""))
    width = len(str(start + len(shown)))
    for offset, line in enumerate(shown):
        number = start + offset
        found = attributed.get(number)
        note = "" if found is None else f"{found.source} {_when(found.ts)} {found.confidence:5} {found.prompt[:60]}"
        _out(f"{number + 1:>{width}} {note[:72]:<72} | {line}")
    turns = dict.fromkeys(found.turn_id for found in history.lines)
    if turns:
        _out("\nTurns (pimem show TURN_ID):")
        for turn_id in turns:
            _out(f"  {turn_id}")
    return 0


def cmd_file_history(args: argparse.Namespace) -> int:
    from pimem.filehistory import MAX_SESSIONS, file_history

    if not 1 <= args.limit <= MAX_SESSIONS:
        _err(f"pimem file-history: --limit must be within 1..{MAX_SESSIONS}")
        return 2
    with _reading(args) as conn:
        history = file_history(conn, os.path.abspath(args.path), args.limit)
    if args.json:
        print(json_text(wire.file_history(history)))
        return 0
    _out(f"{history.path}: {history.total} past conversation(s) touched it, {history.edited} changed it")
    for session in history.sessions:
        view = wire.file_session(session)
        prompt = str(view["prompt"]).replace("\n", " ") + ("…" if view["truncated"] else "")
        _out(f"\n{_when(session.last_ts)}  {session.source}  {', '.join(session.actions)}  "
             f"{session.turns} turn(s)\n  {prompt}\n  Turn: {session.turn_id}")
        if view["resumeCommand"]:
            _out(f"  Resume: {view['resumeCommand']}")
    return 0


def cmd_migrate(args: argparse.Namespace) -> int:
    from pimem.migrate import (
        MigrationError,
        UnknownSession,
        format_report,
        migrate_codex_session,
        migrate_codex_sessions,
    )

    folder = args.cwd or os.getcwd()
    try:
        if args.session is not None:
            native = args.session.removeprefix("codex:")
            report = migrate_codex_session(native, dry_run=args.dry_run)
        else:
            report = migrate_codex_sessions(folder, dry_run=args.dry_run)
    except UnknownSession as error:
        _err(f"pimem migrate-codex: {error}")
        return 2
    except MigrationError as error:
        _err(f"pimem migrate-codex: {error}")
        return 1
    if args.json:
        print(json_text(wire.migration_report(report)))
    else:
        _out(format_report(report))
    return 0


def cmd_status(args: argparse.Namespace) -> int:
    from pimem.status import store_status

    with _reading(args) as conn:
        status = store_status(conn, str(_db(args)))
    if args.json:
        print(json_text(wire.store_status(status)))
    else:
        turns = status.turns
        _out(f"store: {status.db_path}")
        print(f"sessions: {status.sessions}; turns: {status.total_turns} "
              f"(pi {turns['pi']}, claude {turns['claude']}, codex {turns['codex']}"
              + "".join(f", {source} {count}" for source, count in turns.items()
                        if count and source not in ("pi", "claude", "codex")) + ")")
        last = status.last_sync
        if isinstance(last, dict):
            when = datetime.fromtimestamp(int(last.get("finishedAt", 0)) / 1000).strftime("%Y-%m-%d %H:%M:%S")
            kind = "full" if last.get("force") else "incremental"
            outcome = ", cancelled" if last.get("cancelled") else ""
            print(f"last sync: {when} ({kind}{outcome}): {last.get('turns', 0)} turns changed, "
                  f"{last.get('issues', 0)} issues")
        else:
            print("last sync: never")
        if status.turns_to_index:
            print(f"not indexed yet: {status.turns_to_index} turns (found by recall, more slowly; "
                  "the next sync indexes them)")
    return 0


def cmd_serve(args: argparse.Namespace) -> int:
    from pimem.lsp.main import serve

    return serve()


def cmd_mcp(args: argparse.Namespace) -> int:
    from pimem import redact

    if args.mcp_command == "install":
        from pimem.agent_config import AgentConfigError, InstallArgumentError, install, pimem_command

        db = args.install_db or args.db or os.environ.get("MEMORY_DB_PATH") or None
        command = pimem_command(db, redact=not (args.install_no_redact or args.no_redact))
        try:
            report = install(args.agent, command, dry_run=args.dry_run)
        except AgentConfigError as error:
            _err(f"pimem mcp install: {error}")
            return 2 if isinstance(error, InstallArgumentError) else 1
        _out("\n".join(report.lines()))  # the entry before is the user's text: escapes shown, not acted on
        return 0
    try:
        from pimem.mcp.server import serve
    except ModuleNotFoundError as error:
        if (error.name or "").split(".")[0] not in ("mcp", "mcp_types", "anyio", "pydantic"):
            raise
        print("pimem mcp: the MCP SDK is not installed (pip install 'mcp>=2.3,<3', or reinstall pimem with pip; "
              "the VS Code extension's bundled server does not include it)", file=sys.stderr)
        return 1
    except KeyboardInterrupt:  # an agent that quits at once interrupts the SDK's import
        return 130
    try:
        serve(_db(args), redact_secrets=redact.enabled_by_env() and not args.no_redact)
    except KeyboardInterrupt:  # agents stop their MCP servers with SIGINT
        return 130
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    level = logging.WARNING - 10 * min(args.verbose, 2)
    log_handler = logging.StreamHandler(sys.stderr)
    log_handler.setFormatter(VisibleFormatter("pimem %(levelname)s %(name)s: %(message)s"))
    logging.basicConfig(level=level, handlers=[log_handler])
    handlers = {"sync": cmd_sync, "recall": cmd_recall, "show": cmd_show, "sessions": cmd_sessions,
                "file-history": cmd_file_history, "blame": cmd_blame, "migrate-codex": cmd_migrate,
                "status": cmd_status, "serve": cmd_serve, "mcp": cmd_mcp, "share": cmd_share}
    try:
        return handlers[args.command](args)
    except StoreError as error:
        _err(f"pimem: {error}")
        return 1
    except sqlite3.Error as error:  # the store failed while in use (locked, disk full, damaged, ...)
        _err(f"pimem: {store_failure(error, _db(args))}")
        return 1
    except BrokenPipeError:
        return 0


if __name__ == "__main__":
    sys.exit(main())
