"""The SQLite store shared with the Pi extension *pi-session-memory* (``~/.pi/agent/memory.db``).

Compatibility contract (see ARCHITECTURE.md): the extension's tables keep their names, columns,
types and keys; pimem only adds ``pimem_*`` tables and nullable columns, never a trigger on
``turns``, and never deletes a row of the extension's tables; WAL mode, a busy timeout and short
write transactions, because the extension writes the same file.

* :mod:`~pimem.store.connection`: what may be opened as a store, connections, transactions;
* :mod:`~pimem.store.failures`: a store that cannot be used, as one line;
* :mod:`~pimem.store.schema`: the DDL, the layouts and their forward migrations;
* :mod:`~pimem.store.turns`: ``sessions`` and ``turns`` rows;
* :mod:`~pimem.store.meta`: ``pimem_meta``;
* :mod:`~pimem.store.batches`: :func:`chunks`, the one way to query many ids.

The index's tables (``pimem_docs``, ``pimem_pending``, the FTS5 tables) are written and read by
pimem.index and the recall modules, which keep their SQL.
"""

from pimem.store.batches import chunks
from pimem.store.connection import connect, connection_is_stale, transaction, upgrade_notice
from pimem.store.failures import StoreError, is_store_failure, store_failure
from pimem.store.meta import get_meta, set_meta
from pimem.store.schema import LAYOUT
from pimem.store.turns import (
    SessionRow,
    StoredTurn,
    count_turns_by_source,
    encode_tool_names,
    get_turns,
    parse_tool_names,
    upsert_session,
)

__all__ = [
    "LAYOUT", "SessionRow", "StoreError", "StoredTurn", "chunks", "connect", "connection_is_stale",
    "count_turns_by_source", "encode_tool_names", "get_meta", "get_turns", "is_store_failure", "parse_tool_names",
    "set_meta", "store_failure", "transaction", "upgrade_notice", "upsert_session",
]
