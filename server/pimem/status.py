"""What the store holds (``pimem status`` and ``pimem/status``; the JSON view is pimem.wire.store_status), and
which sources there are (``pimem/sources``: the clients' agent filters are this list)."""

from __future__ import annotations

import json
import os
import sqlite3
from collections.abc import Collection
from dataclasses import dataclass
from pathlib import Path

from pimem.importers import IMPORTERS
from pimem.index import unindexed_count
from pimem.models import SOURCE_REGISTRY, Source
from pimem.paths import SourceRoots
from pimem.store import count_turns_by_source, get_meta, upgrade_notice


@dataclass(frozen=True)
class StoreStatus:
    db_path: str
    sessions: int
    turns: dict[str, int]           # per source
    turns_to_index: int             # stored turns not in the index yet (recall scans them)
    last_sync: object               # what the last sync recorded (its own JSON object), or None
    upgrade_required: str | None    # a newer pimem's store: the one line asking for an upgrade
    shared_configured: bool = False  # a shared store is configured beside it (pimem share config)

    @property
    def total_turns(self) -> int:
        return sum(self.turns.values())


def store_status(conn: sqlite3.Connection, db_path: str) -> StoreStatus:
    last_sync: object = None
    raw = get_meta(conn, "last_sync")
    if raw:
        try:
            last_sync = json.loads(raw)
        except ValueError:
            last_sync = None
    return StoreStatus(
        db_path=db_path,
        sessions=int(conn.execute("SELECT count(*) FROM sessions").fetchone()[0]),
        turns=count_turns_by_source(conn),
        turns_to_index=unindexed_count(conn),
        last_sync=last_sync,
        upgrade_required=upgrade_notice(conn),
        shared_configured=shared_configured(Path(db_path)),
    )


def shared_configured(db_path: Path) -> bool:
    """Whether a shared store is configured for this store (its ``memory-share.json`` names one). A
    configuration that cannot be read counts as configured: the client then shows the scope switch, and
    each scoped answer says what is wrong, instead of hiding the shared memory without a word."""
    from pimem.share.state import ShareConfigError, load_config

    try:
        config = load_config(db_path)
    except ShareConfigError:
        return True
    return config is not None and bool(config.conninfo)


@dataclass(frozen=True)
class SourceState:
    """One source as a client shows it in its agent filters."""

    source: Source
    label: str
    read: bool                  # this pimem has an importer for it (else it is known but not read yet)
    enabled: bool               # synced by this process (a server's initializationOptions.sources)
    present: bool               # one of its roots exists on this machine
    roots: tuple[str, ...]


def source_states(roots: SourceRoots, enabled: Collection[Source]) -> list[SourceState]:
    """Every source, in the registry's order (one ``isdir`` per root)."""
    return [SourceState(source, spec.label, source in IMPORTERS, source in enabled,
                        any(os.path.isdir(root) for root in roots.for_source(source)),
                        tuple(str(root) for root in roots.for_source(source)))
            for source, spec in SOURCE_REGISTRY.items()]
