"""``pimem share …``: the shared PostgreSQL store (docs/share.md), as commands of the ``pimem`` CLI.

Same rules as :mod:`pimem.cli`: one small function per command, parsing arguments, calling a service of
:mod:`pimem.share`, printing through :mod:`pimem.terminal`; exit 0 on success, 1 when the shared store
or the configuration cannot be used (one line on stderr), 2 for bad arguments. psycopg is imported
only when a share command runs (it is the optional ``share`` extra).
"""

from __future__ import annotations

import argparse
import os
import sys
from datetime import UTC, datetime
from pathlib import Path

from pimem.models import SOURCES
from pimem.paths import default_db_path
from pimem.terminal import json_text, visible

_MISSING_DRIVER = ("pimem share: the PostgreSQL driver is not installed (pip install 'pimem[share]', "
                   "i.e. 'psycopg[binary]>=3.2')")


def _out(text: str) -> None:
    print(visible(text))


def _err(text: str) -> None:
    print(visible(text), file=sys.stderr)


def add_share(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    share = commands.add_parser("share", help="share turns with your other machines or your team (PostgreSQL)",
                                description="The shared store: docs/share.md.")
    actions = share.add_subparsers(dest="share_command", required=True, metavar="ACTION")

    def with_db(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
        parser.add_argument("--db", metavar="PATH",
                            help="memory store (default: $MEMORY_DB_PATH, else ~/.pi/agent/memory.db)")
        return parser

    init = actions.add_parser("init", help="the SQL that sets up the shared store (printed, or applied)")
    init.add_argument("--member", action="append", default=[], metavar="NAME", help="a login role to create")
    init.add_argument("--group", default="pimem_team", help="the team's group role (default pimem_team)")
    init.add_argument("--apply", nargs="?", const="", default=None, metavar="ADMIN_CONNINFO",
                      help="apply it with this admin connection string (default: libpq's PG* variables)")

    config = with_db(actions.add_parser("config", help="show or change what this machine shares, and where"))
    config.add_argument("--conninfo", help="libpq connection string or service=NAME (no password: use ~/.pgpass)")
    config.add_argument("--machine", help="this machine's name in the shared store (default: the host name)")
    config.add_argument("--folder", action="append", default=[], metavar="DIR", help="share this folder's sessions")
    config.add_argument("--remove-folder", action="append", default=[], metavar="DIR")
    config.add_argument("--agent", action="append", default=[], choices=SOURCES, help="share all of an agent's")
    config.add_argument("--remove-agent", action="append", default=[], choices=SOURCES)
    config.add_argument("--auto", action=argparse.BooleanOptionalAction, default=None,
                        help="push after each pimem sync")

    push = with_db(actions.add_parser("push", help="push new and changed turns in scope (incremental)"))
    push.add_argument("--json", action="store_true")
    status = with_db(actions.add_parser("status", help="configured? reachable? pushed, pending, held"))
    status.add_argument("--json", action="store_true")
    allow = with_db(actions.add_parser("allow", help="let a held turn (or a session's held turns) be pushed"))
    allow.add_argument("id", metavar="TURN|SESSION")
    forget = with_db(actions.add_parser("forget", help="delete your shared copies of a session or folder"))
    forget.add_argument("target", metavar="SESSION|FOLDER")


def _db(args: argparse.Namespace) -> Path:
    return Path(os.path.expanduser(args.db)) if getattr(args, "db", None) else default_db_path()


def cmd_share(args: argparse.Namespace) -> int:
    try:
        import psycopg  # noqa: F401 - only to say clearly that it is missing
    except ModuleNotFoundError:
        _err(_MISSING_DRIVER)
        return 1
    from pimem.share.db import ShareError
    from pimem.share.schema import ShareSchemaError
    from pimem.share.state import ShareConfigError

    handlers = {"init": _init, "config": _config, "push": _push, "status": _status, "allow": _allow,
                "forget": _forget}
    try:
        return handlers[args.share_command](args)
    except (ShareSchemaError, ShareConfigError) as error:
        _err(f"pimem share {args.share_command}: {error}")
        return 2
    except ShareError as error:
        _err(f"pimem share {args.share_command}: {error}")
        return 1


def _init(args: argparse.Namespace) -> int:
    from pimem.share.db import apply_init
    from pimem.share.schema import init_sql

    members = tuple(args.member)
    if args.apply is None:
        print(init_sql(args.group, members), end="")
        _err("-- pimem share init: printed only; run it as the database's owner (psql -f), or use --apply. "
             "Then give each member a password (\\password NAME) or certificate login.")
        return 0
    layout = apply_init(args.apply, args.group, members)
    _out(f"shared store ready: layout {layout.layout}, group {args.group}"
         + (f", members {', '.join(members)}" if members else ""))
    return 0


def _config(args: argparse.Namespace) -> int:
    from pimem.share.state import ShareConfig, load_config, save_config, updated_config

    db = _db(args)
    current = load_config(db) or ShareConfig()
    changing = any((args.conninfo is not None, args.machine is not None, args.folder, args.remove_folder,
                    args.agent, args.remove_agent, args.auto is not None))
    config = updated_config(current, conninfo=args.conninfo, machine=args.machine, add_folders=tuple(args.folder),
                            remove_folders=tuple(args.remove_folder), add_sources=tuple(args.agent),
                            remove_sources=tuple(args.remove_agent), auto=args.auto) if changing else current
    if changing:
        path = save_config(db, config)
        _out(f"saved {path}")
        if args.remove_folder or args.remove_agent:
            _out("turns already pushed stay in the shared store: pimem share forget FOLDER removes them")
    _out(f"connection: {config.conninfo or '(none)'}\nmachine: {config.machine}\n"
         f"folders: {', '.join(config.folders) or '(none)'}\nagents: {', '.join(config.sources) or '(none)'}\n"
         f"push after sync: {'yes' if config.auto else 'no'}")
    return 0


class _PushBar:
    def __init__(self) -> None:
        self.enabled = sys.stderr.isatty()
        self.shown = False

    def __call__(self, done: int, total: int) -> None:
        if not self.enabled or not total:
            return
        filled = 30 * done // total
        sys.stderr.write(f"\rpushing  [{'#' * filled}{' ' * (30 - filled)}] {done}/{total} turns   ")
        sys.stderr.flush()
        self.shown = True

    def close(self) -> None:
        if self.shown:
            sys.stderr.write("\n")


def _check_configured(args: argparse.Namespace) -> None:
    from pimem.share.db import ShareError
    from pimem.share.state import load_config

    config = load_config(_db(args))
    if config is None or not config.configured:
        raise ShareError("sharing is not configured: pimem share config --conninfo … --folder DIR (or --agent NAME)")


def run_push(db: Path, *, json_out: bool = False) -> int:
    """Push and print one summary line."""
    from pimem.share.push import push
    from pimem.share.state import load_config

    config = load_config(db)
    assert config is not None
    bar = _PushBar()
    try:
        stats = push(db, config, progress=bar)
    finally:
        bar.close()
    if json_out:
        print(json_text(stats.as_dict()))
    else:
        masked = sum(stats.masked.values())
        _out(f"pushed {stats.sent} turns ({stats.unchanged} unchanged, {stats.held} held back, {masked} secrets "
             f"masked{', full comparison' if stats.full else ''}, {stats.duration_ms} ms)")
        if stats.held:
            _out("held turns are listed by pimem share status; pimem share allow TURN|SESSION lets them go")
    return 0


def _push(args: argparse.Namespace) -> int:
    _check_configured(args)
    return run_push(_db(args), json_out=args.json)


def _status(args: argparse.Namespace) -> int:
    from pimem.share.manage import share_status
    from pimem.share.state import load_config

    db = _db(args)
    config = load_config(db)
    status = share_status(db, config)
    if args.json:
        print(json_text(status.as_dict()))
        return 0
    if config is None or not config.configured:
        _out("sharing: not configured (pimem share config --conninfo … --folder DIR)")
    else:
        _out(f"sharing: {', '.join(config.folders + config.sources)} as machine {config.machine}"
             f"{' (after each sync)' if config.auto else ''}")
    if status.reachable is not None:
        _out("shared store: reachable" + (f", layout {status.layout}, {status.remote_rows} rows from this machine"
                                          if status.reachable and status.layout else "")
             if status.reachable and not status.error else f"shared store: not usable: {status.error}")
    _out(f"turns: {status.pushed} pushed, {status.pending} pending, {status.held} held back")
    for held in status.held_turns:
        when = datetime.fromtimestamp(held.ts / 1000, UTC).strftime("%Y-%m-%d %H:%M")
        _out(f"  held {held.turn_id} (session {held.session_id}, {when}): {', '.join(held.reasons)}")
    if status.held > len(status.held_turns):
        _out(f"  … and {status.held - len(status.held_turns)} more")
    last = status.last_push
    _out(f"last push: {last.get('at')}: {last.get('sent')} sent, {last.get('held')} held" if last else
         "last push: never")
    return 0


def _allow(args: argparse.Namespace) -> int:
    from pimem.share.manage import allow

    scope, turns = allow(_db(args), args.id)
    _out(f"allowed {scope} {args.id} ({turns} held turns): pushed at the next pimem share push "
         "(known secrets stay masked)")
    return 0


def _forget(args: argparse.Namespace) -> int:
    from pimem.share.manage import forget
    from pimem.share.state import load_config

    db = _db(args)
    result = forget(db, load_config(db), args.target)
    if result.remote_deleted is None:
        _out(f"forgot {result.scope} {result.value} here: never pushed again")
        _err(f"pimem share forget: the shared store was not changed ({result.error}); the next push deletes "
             "the copies")
        return 1
    _out(f"forgot {result.scope} {result.value}: {result.remote_deleted} shared rows deleted, never pushed again")
    return 0


def push_after_sync(db: Path) -> None:
    """After ``pimem sync``: push when sharing is configured with ``auto``; a failure is one line on
    stderr and does not change the sync's exit status (the next push continues)."""
    if not os.path.exists(db.with_name(db.stem + "-share.json")):
        return
    try:
        import psycopg  # noqa: F401
    except ModuleNotFoundError:
        _err(_MISSING_DRIVER)
        return
    from pimem.share.db import ShareError
    from pimem.share.state import ShareConfigError, load_config

    try:
        config = load_config(db)
        if config is None or not config.configured or not config.auto:
            return
        from pimem.share.push import push

        stats = push(db, config)
        _err(f"pimem share push: {stats.sent} turns pushed, {stats.held} held back ({stats.duration_ms} ms)")
    except (ShareError, ShareConfigError) as error:
        _err(f"pimem share push: {error}")
