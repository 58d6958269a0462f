"""Importer rules versions: when what an importer makes of a transcript changes (a new fact recorded,
such as file touches, or a fix, such as Claude's queued prompts and Pi's rewritten v1 sessions), every
file of that source is parsed again once, so stores imported before get what a fresh import would.

The versions a store was parsed with are one ``pimem_meta`` row (``importer_rules``, JSON by source;
a source missing from it is at version 1, before this mechanism). A sync reads that row first: a
no-change sync costs one row whatever the number of files. For a source whose version is older than
its importer's (``importers.RULES_VERSIONS``), its files are marked to be parsed again and the new
version is written, in one transaction; the parses then happen as for any changed file, so a
cancelled sync leaves the rest to the next one, and each file is parsed again once. An older pimem's
versions are never lowered: a store a newer pimem parsed is not parsed again by an older one.
"""

from __future__ import annotations

import json
import logging
import sqlite3

from pimem.importers import RULES_VERSIONS
from pimem.models import Source
from pimem.store import get_meta, set_meta, transaction
from pimem.store.files import parse_again

log = logging.getLogger("pimem.sync")

META_KEY = "importer_rules"


def _stored_versions(conn: sqlite3.Connection) -> dict[str, int]:
    try:
        value = json.loads(get_meta(conn, META_KEY) or "{}")
    except ValueError:
        return {}
    if not isinstance(value, dict):
        return {}
    return {str(key): version for key, version in value.items() if isinstance(version, int)}


def outdated_sources(conn: sqlite3.Connection) -> list[Source]:
    """The sources whose files were parsed under older rules than this pimem's (one meta row read)."""
    stored = _stored_versions(conn)
    return [source for source, version in RULES_VERSIONS.items() if stored.get(source, 1) < version]


def apply_rules_versions(conn: sqlite3.Connection) -> None:
    """Mark the files of every outdated source to be parsed again and record the new versions."""
    if not outdated_sources(conn):
        return
    with transaction(conn):
        stored = _stored_versions(conn)   # again, under the write lock: another sync may have done it
        outdated = [source for source, version in RULES_VERSIONS.items() if stored.get(source, 1) < version]
        if not outdated:
            return
        files = parse_again(conn, outdated)
        set_meta(conn, META_KEY, json.dumps({**stored, **{source: RULES_VERSIONS[source] for source in outdated}},
                                            sort_keys=True))
    if files:
        log.info("importer rules changed for %s: %d files are parsed again", ", ".join(outdated), files)
