"""Architecture invariants: only pimem.lsp knows about pygls and lsprotocol; only pimem.mcp knows the MCP SDK;
no import cycle in the package."""

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


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _is_type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _runtime_imports(tree: ast.AST) -> list[ast.Import | ast.ImportFrom]:
    """Every import that runs, at module level or inside a function (a lazy import hides a cycle, it
    does not remove it); only ``if TYPE_CHECKING:`` blocks are left out."""
    found: list[ast.Import | ast.ImportFrom] = []
    stack: list[ast.AST] = [tree]
    while stack:
        node = stack.pop()
        if isinstance(node, ast.If) and _is_type_checking(node):
            stack.extend(node.orelse)
            continue
        if isinstance(node, ast.Import | ast.ImportFrom):
            found.append(node)
        stack.extend(ast.iter_child_nodes(node))
    return found


def import_graph() -> dict[str, set[str]]:
    """pimem module -> the pimem modules it imports (``from pimem.a import b`` is ``pimem.a.b`` when b is a
    module, else ``pimem.a``)."""
    modules = {_module_name(path): path for path in PACKAGE.rglob("*.py")}
    graph: dict[str, set[str]] = {name: set() for name in modules}
    for name, path in modules.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        for node in _runtime_imports(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            else:
                base = node.module or ""
                if node.level:   # relative: from the package, one level up per extra dot
                    parent = package.split(".")[: len(package.split(".")) - node.level + 1]
                    base = ".".join([*parent, base] if base else parent)
                targets = [f"{base}.{alias.name}" if f"{base}.{alias.name}" in modules else base
                           for alias in node.names]
            graph[name].update(target for target in targets if target in modules and target != name)
    return graph


def test_no_import_cycle_in_the_package() -> None:
    graph = import_graph()
    cycles: list[list[str]] = []
    state: dict[str, int] = {}   # 1: on the current path, 2: done

    def visit(module: str, path: list[str]) -> None:
        state[module] = 1
        for target in sorted(graph[module]):
            if state.get(target) == 1:
                cycles.append([*path[path.index(target):], target])
            elif target not in state:
                visit(target, [*path, target])
        state[module] = 2

    for module in sorted(graph):
        if module not in state:
            visit(module, [module])
    assert cycles == []


def test_the_import_graph_sees_lazy_imports() -> None:
    # The cycle check must be able to fail: an import inside a function is an edge.
    assert "pimem.sync" in import_graph()["pimem.cli"]   # cmd_sync imports it when it runs



def test_only_the_share_package_imports_the_postgresql_driver() -> None:
    offenders = {}
    for path in PACKAGE.rglob("*.py"):
        if path.relative_to(PACKAGE).parts[0] == "share":
            continue
        bad = {name for name in imported_modules(path) if name.split(".")[0] == "psycopg"}
        if path.name == "cli_share.py":
            bad = set()   # only to tell a missing driver (the optional share extra) in one line
        if bad:
            offenders[str(path.relative_to(PACKAGE))] = bad
    assert offenders == {}
    assert "psycopg" in imported_modules(PACKAGE / "share" / "push.py")
