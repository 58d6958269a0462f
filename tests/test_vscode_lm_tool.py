"""The VS Code extension's language-model tool `pimem_recall` tells a model what `recall_memory` tells it
(issue 14, section 3): the same description and input schema. Their one source is
server/pimem/agent_tools.py; client-vscode/package.json holds a copy because VS Code reads a tool's
description and schema from the manifest only. When this test fails, refresh the copy with

    .venv/bin/python tests/test_vscode_lm_tool.py --write
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from pimem.agent_tools import RECALL_DESCRIPTION, RECALL_INPUT_SCHEMA

PACKAGE = Path(__file__).resolve().parent.parent / "client-vscode" / "package.json"
TOOL_NAME = "pimem_recall"
REFRESH = "run: .venv/bin/python tests/test_vscode_lm_tool.py --write"


def read_package() -> dict[str, Any]:
    package: dict[str, Any] = json.loads(PACKAGE.read_text(encoding="utf-8"))
    return package


def tool_entry(package: dict[str, Any]) -> dict[str, Any]:
    tools = [tool for tool in package["contributes"]["languageModelTools"] if tool["name"] == TOOL_NAME]
    assert len(tools) == 1, f"package.json contributes one {TOOL_NAME} tool"
    entry: dict[str, Any] = tools[0]
    return entry


def as_json(value: object) -> object:
    """The value as package.json would hold it (tuples become lists)."""
    return json.loads(json.dumps(value))


def test_the_tool_has_recall_memorys_description_and_input_schema() -> None:
    entry = tool_entry(read_package())
    assert entry["modelDescription"] == RECALL_DESCRIPTION, REFRESH
    assert entry["inputSchema"] == as_json(RECALL_INPUT_SCHEMA), REFRESH


def test_the_tool_can_be_referenced_in_a_prompt_and_the_editor_is_recent_enough() -> None:
    package = read_package()
    entry = tool_entry(package)
    assert entry["toolReferenceName"] == "pimemRecall" and entry["canBeReferencedInPrompt"] is True
    # language-model tools are stable from VS Code 1.95; the e2e suite runs code-server 4.139.1 (VS Code 1.139.1)
    engine = package["engines"]["vscode"]
    assert engine.startswith("^1."), engine
    minor = int(engine.removeprefix("^1.").split(".")[0])
    assert 95 <= minor <= 139, engine
    types = package["devDependencies"]["@types/vscode"]
    assert int(types.split(".")[1]) <= minor, f"@types/vscode {types} is newer than engines.vscode {engine}"


def write() -> None:
    """Copy the description and schema from agent_tools into package.json, keeping its formatting (npm's)."""
    package = read_package()
    entry = tool_entry(package)
    entry["modelDescription"] = RECALL_DESCRIPTION
    entry["inputSchema"] = as_json(RECALL_INPUT_SCHEMA)
    PACKAGE.write_text(json.dumps(package, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    print(f"updated {TOOL_NAME} in {PACKAGE}")


if __name__ == "__main__":
    if sys.argv[1:] != ["--write"]:
        sys.exit(f"usage: {sys.argv[0]} --write")
    write()
