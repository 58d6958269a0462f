"""docs/mcp.md documents the agent tools: its schemas and result fields must be agent_tools' own."""

from __future__ import annotations

import json
import re

import pytest

from pimem.agent_tools import TOOLS
from support.history import REPO

DOC = (REPO / "docs" / "mcp.md").read_text(encoding="utf-8")


def block(kind: str, tool: str) -> str:
    match = re.search(rf"<!-- {kind}: {tool} -->\n```\w+\n(.*?)\n```", DOC, flags=re.DOTALL)
    assert match, f"docs/mcp.md has no {kind} block for {tool}"
    return match.group(1)


@pytest.mark.parametrize("tool", TOOLS, ids=[tool.name for tool in TOOLS])
def test_documented_input_schema_is_the_tools(tool: object) -> None:
    assert json.loads(block("input", tool.name)) == tool.input_schema  # type: ignore[attr-defined]


@pytest.mark.parametrize("tool", TOOLS, ids=[tool.name for tool in TOOLS])
def test_documented_result_fields_are_the_tools(tool: object) -> None:
    documented = set(re.findall(r"(\w+)\??:", block("output", tool.name)))
    schema = tool.output_schema  # type: ignore[attr-defined]
    fields = set(schema["properties"])
    for value in schema["properties"].values():
        if value.get("type") == "array" and "properties" in value.get("items", {}):
            fields |= set(value["items"]["properties"])
    assert documented == fields


def test_every_documented_tool_exists() -> None:
    names = set(re.findall(r"^## Tool `(\w+)`", DOC, flags=re.MULTILINE))
    assert names == {tool.name for tool in TOOLS}
