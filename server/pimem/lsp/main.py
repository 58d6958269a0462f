"""Builds the pimem language server (its state, pimem.lsp.server, plus the handlers) and runs it.

Kept apart from the state so that the handlers can name the server's type without an import cycle.
"""

from __future__ import annotations

from pimem.lsp import handlers, history, lines
from pimem.lsp.errors import guarded
from pimem.lsp.runtime import configure_logging, run_stdio
from pimem.lsp.server import PimemServer
from pimem.recall import dense, docmap


def create_server() -> PimemServer:
    dense.enable()   # a long-lived process: keep the index lists of multi-entity queries (pimem.recall.dense)
    docmap.enable()  # and the word index's docs, for free-text ranking (pimem.recall.docmap)
    server = PimemServer()
    handlers.register(server)
    history.register(server, guarded)   # pimem/sessions, pimem/session, pimem/fileHistory
    lines.register(server, guarded)     # pimem/lineHistory
    return server


def serve() -> int:
    """Run the server on stdin/stdout until ``exit``; returns the exit code (pimem.lsp.runtime).
    Logs go to stderr, never transcript text at the default level."""
    configure_logging()
    return run_stdio(create_server())
