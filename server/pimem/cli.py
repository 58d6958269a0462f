"""The ``pimem`` command line: sync, recall, migrate-codex, status, serve.

Exit status: 0 on success (isolated import issues are reported on stderr but do not fail a sync),
1 when the store or a folder cannot be used, 2 for bad arguments.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
import threading
from collections.abc import Sequence
from datetime import datetime
from pathlib import Path

from pimem import __version__
from pimem.models import SOURCES, Source, SyncProgress
from pimem.paths import default_db_path, source_roots
from pimem.recall import MAX_ENTITIES, MAX_LIMIT, RecallError, format_text, make_query, recall
from pimem.store import StoreError, connect


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

    rec = commands.add_parser("recall", help="find past turns mentioning the given entity words, or free text")
    _add_db(rec)
    rec.add_argument("entities", nargs="*", metavar="ENTITY", help="1 to 8 words, matched literally, any case")
    rec.add_argument("--text", metavar="TEXT",
                     help="free text instead of entities (a question, a line of code, an error): pimem picks "
                          "its rarest words and weighs them by rarity")
    rec.add_argument("--limit", type=int, default=5, help=f"results, 1..{MAX_LIMIT} (default 5)")
    rec.add_argument("--source", action="append", choices=SOURCES, help="only this agent (repeatable)")
    rec.add_argument("--cwd", metavar="DIR", help="only sessions whose folder is DIR or below")
    rec.add_argument("--json", action="store_true", help="print the rows as JSON")

    migrate = commands.add_parser("migrate-codex", help="convert a folder's Codex sessions into Pi sessions")
    migrate.add_argument("--cwd", metavar="DIR", default=None, help="the project folder (default: current directory)")
    migrate.add_argument("--dry-run", action="store_true", help="report what would be written, write nothing")
    migrate.add_argument("--json", action="store_true", help="print the report as JSON")

    status = commands.add_parser("status", help="what the store holds")
    _add_db(status)
    status.add_argument("--json", action="store_true")

    serve = commands.add_parser("serve", help="run the language server over stdio")
    serve.add_argument("--stdio", action="store_true", help="accepted for vscode-languageclient (stdio is the default)")
    return parser


def _db(args: argparse.Namespace) -> Path:
    return Path(os.path.expanduser(args.db)) if getattr(args, "db", None) else default_db_path()


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
        print(f"pimem: {issue.error}", file=sys.stderr)
    if args.json:
        print(json.dumps(stats.to_dict(), ensure_ascii=False, indent=2))
    else:
        print(f"imported {stats.turns} turns from {stats.pi} Pi, {stats.claude} Claude, {stats.codex} Codex "
              f"sessions ({stats.scanned_files} files parsed, {stats.skipped_files} unchanged, "
              f"{len(stats.issues)} issues, {stats.duration_ms} ms)")
    return 0


def cmd_recall(args: argparse.Namespace) -> int:
    if (args.text is None) == (not args.entities):
        print("pimem recall: give either entity words or --text TEXT", file=sys.stderr)
        return 2
    if args.text is not None:
        return _recall_text(args)
    try:
        query = make_query(args.entities, args.limit, args.source, args.cwd)
    except RecallError as error:
        print(f"pimem recall: {error}", file=sys.stderr)
        return 2
    conn = connect(_db(args))
    try:
        rows = recall(conn, query)
    finally:
        conn.close()
    if args.json:
        print(json.dumps([row.to_dict() for row in rows], ensure_ascii=False, indent=2))
    else:
        print(format_text(rows))
    return 0


def _recall_text(args: argparse.Namespace) -> int:
    """``--text``: JSON is ``{entities, terms, results}`` (the ``pimem/recall {text}`` result without its
    Markdown); the readable form starts with the terms searched."""
    from pimem.freetext import parse_text, recall_candidates

    try:
        found = parse_text(args.text)
        base = make_query([candidate.term for candidate in found[:MAX_ENTITIES]], args.limit, args.source, args.cwd)
    except RecallError as error:
        print(f"pimem recall: {error}", file=sys.stderr)
        return 2
    conn = connect(_db(args))
    try:
        answer = recall_candidates(conn, found, base)
    finally:
        conn.close()
    if args.json:
        print(json.dumps({"entities": answer.entities, "terms": [term.to_dict() for term in answer.terms],
                          "results": [row.to_dict() for row in answer.rows]}, ensure_ascii=False, indent=2))
    else:
        print(f"Searched: {', '.join(answer.entities) or '(nothing: no word of the text occurs in the store)'}")
        print(format_text(answer.rows))
    return 0


def cmd_migrate(args: argparse.Namespace) -> int:
    from pimem.migrate import MigrationError, format_report, migrate_codex_sessions

    folder = args.cwd or os.getcwd()
    try:
        report = migrate_codex_sessions(folder, dry_run=args.dry_run)
    except MigrationError as error:
        print(f"pimem migrate-codex: {error}", file=sys.stderr)
        return 1
    if args.json:
        print(json.dumps(report.to_dict(), ensure_ascii=False, indent=2))
    else:
        print(format_report(report))
    return 0


def cmd_status(args: argparse.Namespace) -> int:
    from pimem.status import store_status

    conn = connect(_db(args))
    try:
        status = store_status(conn, str(_db(args)))
    finally:
        conn.close()
    if args.json:
        print(json.dumps(status, ensure_ascii=False, indent=2))
    else:
        turns = status["turns"]
        assert isinstance(turns, dict)
        print(f"store: {status['dbPath']}")
        print(f"sessions: {status['sessions']}; turns: {status['totalTurns']} "
              f"(pi {turns['pi']}, claude {turns['claude']}, codex {turns['codex']})")
        last = status["lastSync"]
        if isinstance(last, dict):
            when = datetime.fromtimestamp(int(last.get("finishedAt", 0)) / 1000).strftime("%Y-%m-%d %H:%M:%S")
            kind = "full" if last.get("force") else "incremental"
            outcome = ", cancelled" if last.get("cancelled") else ""
            print(f"last sync: {when} ({kind}{outcome}): {last.get('turns', 0)} turns changed, "
                  f"{last.get('issues', 0)} issues")
        else:
            print("last sync: never")
        if status["turnsToIndex"]:
            print(f"not indexed yet: {status['turnsToIndex']} turns (found by recall, more slowly; "
                  "the next sync indexes them)")
    return 0


def cmd_serve(args: argparse.Namespace) -> int:
    from pimem.lsp.server import serve

    serve()
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    level = logging.WARNING - 10 * min(args.verbose, 2)
    logging.basicConfig(level=level, format="pimem %(levelname)s %(name)s: %(message)s", stream=sys.stderr)
    handlers = {"sync": cmd_sync, "recall": cmd_recall, "migrate-codex": cmd_migrate, "status": cmd_status,
                "serve": cmd_serve}
    try:
        return handlers[args.command](args)
    except StoreError as error:
        print(f"pimem: {error}", file=sys.stderr)
        return 1
    except BrokenPipeError:
        return 0


if __name__ == "__main__":
    sys.exit(main())
