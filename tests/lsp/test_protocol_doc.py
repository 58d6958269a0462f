"""docs/lsp-extensions.md is the protocol contract: it must list exactly the methods the server has."""

from __future__ import annotations

import re

from pimem.lsp import methods
from pimem.lsp.main import create_server
from support.history import REPO


def test_protocol_doc_matches_registered_methods() -> None:
    doc = (REPO / "docs" / "lsp-extensions.md").read_text(encoding="utf-8")
    documented = set(re.findall(r"^### Method: `(pimem/[A-Za-z]+)`", doc, flags=re.MULTILINE))
    server = create_server()
    registered = {name for name in server.protocol.fm.features if name.startswith("pimem/")}
    assert registered == set(methods.REQUESTS)
    assert documented == set(methods.REQUESTS) | set(methods.NOTIFICATIONS)
