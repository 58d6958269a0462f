"""One source per protocol fact, checked across languages: the method names and error codes of
client-vscode/src/protocol.ts, the limits of client-vscode/package.json and src/query.ts, the
server's (pimem.lsp.methods, pimem.lsp.errors, pimem.recall.query) and docs/lsp-extensions.md agree."""

from __future__ import annotations

import json
import re

from pimem.lsp import errors, methods
from pimem.recall.query import MAX_ENTITIES, MAX_LIMIT
from support.history import REPO

CLIENT = REPO / "client-vscode"
DOC = (REPO / "docs" / "lsp-extensions.md").read_text(encoding="utf-8")


def _namespace(source: str, name: str) -> dict[str, str]:
    """The ``export const NAME = value;`` members of a TypeScript ``export namespace``."""
    body = re.search(rf"export namespace {name} \{{(.*?)\n\}}", source, flags=re.DOTALL)
    assert body is not None, f"protocol.ts has no namespace {name}"
    return dict(re.findall(r"export const (\w+) = ([^;]+);", body.group(1)))


def test_client_method_names_are_the_servers() -> None:
    client = {value.strip("'") for value in _namespace((CLIENT / "src" / "protocol.ts").read_text("utf-8"),
                                                        "Methods").values()}
    server = set(methods.REQUESTS) | set(methods.NOTIFICATIONS)
    assert client <= server, f"the client calls methods the server does not have: {client - server}"
    assert not client & set(methods.DEPRECATED), "the client calls a deprecated method"
    documented = set(re.findall(r"^### Method: `(pimem/\w+)`", DOC, flags=re.MULTILINE))
    assert client <= documented


def test_client_error_codes_are_the_servers_and_the_documented_ones() -> None:
    client = {name: int(value) for name, value in
              _namespace((CLIENT / "src" / "protocol.ts").read_text("utf-8"), "ErrorCodes").items()}
    server = {"InvalidParams": errors.INVALID_PARAMS, "RequestCancelled": errors.REQUEST_CANCELLED,
              "RequestFailed": errors.REQUEST_FAILED}
    assert client == server
    for name, code in server.items():
        assert f"**{code} {name}**" in DOC, f"docs/lsp-extensions.md does not name {code} {name}"


def test_limits_are_the_same_in_package_json_the_client_the_server_and_the_doc() -> None:
    package = json.loads((CLIENT / "package.json").read_text("utf-8"))
    setting = package["contributes"]["configuration"]["properties"]["pimem.recall.limit"]
    assert (setting["minimum"], setting["maximum"]) == (1, MAX_LIMIT)
    assert setting["minimum"] <= setting["default"] <= setting["maximum"]
    query_ts = (CLIENT / "src" / "query.ts").read_text("utf-8")
    assert re.search(rf"export const MAX_ENTITIES = {MAX_ENTITIES};", query_ts), "client-vscode/src/query.ts"
    assert f"| `limit` | 1 to {MAX_LIMIT} rows |" in DOC
    assert f"| `entities` | 1 to {MAX_ENTITIES} strings" in DOC
