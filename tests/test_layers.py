"""Architecture invariants: only pimem.lsp knows about pygls and lsprotocol; only pimem.mcp knows the MCP SDK."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "server" / "pimem"
LSP_ONLY = ("pygls", "lsprotocol")
MCP_ONLY = ("mcp", "mcp_types")


def imported_modules(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
    return names


def test_services_do_not_import_pygls_or_lsprotocol() -> None:
    offenders = {}
    for path in PACKAGE.rglob("*.py"):
        if "lsp" in path.relative_to(PACKAGE).parts:
            continue
        bad = {name for name in imported_modules(path) if name.split(".")[0] in LSP_ONLY}
        if bad:
            offenders[str(path.relative_to(PACKAGE))] = bad
    assert offenders == {}


def test_lsp_package_exists_and_uses_pygls() -> None:
    # The check above must be able to fail: the adapter really does import pygls.
    assert any(name.startswith("pygls") for name in imported_modules(PACKAGE / "lsp" / "server.py"))


def test_only_the_mcp_adapter_imports_the_mcp_sdk() -> None:
    offenders = {}
    for path in PACKAGE.rglob("*.py"):
        if path.relative_to(PACKAGE).parts[0] == "mcp" and path.name != "__init__.py":
            continue
        bad = {name for name in imported_modules(path) if name.split(".")[0] in MCP_ONLY}
        if bad:
            offenders[str(path.relative_to(PACKAGE))] = bad
    assert offenders == {}


def test_mcp_adapter_exists_and_uses_the_sdk() -> None:
    assert any(name.split(".")[0] == "mcp" for name in imported_modules(PACKAGE / "mcp" / "server.py"))
