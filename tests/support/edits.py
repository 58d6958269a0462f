"""Transcripts that edit files, written for the line-memory tests (issue 23): one conversation per call,
each turn a prompt and its tool calls, in the shapes the real Claude Code, Pi and Codex write (the
importers' docstrings, docs/formats.md), laid out as agent roots under ``base`` (support.history)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

Turn = tuple[str, list[tuple[str, dict[str, Any]]]]   # prompt, [(tool name, input)]


def _iso(minute: int) -> str:
    return f"2026-11-01T{10 + minute // 60:02d}:{minute % 60:02d}:00.000Z"


def write_claude(base: Path, session: str, cwd: Path, turns: list[Turn], minute: int = 0) -> None:
    lines: list[dict[str, Any]] = []
    for k, (prompt, calls) in enumerate(turns):
        at = _iso(minute + k)
        lines.append({"type": "user", "sessionId": session, "uuid": f"{session}-u{k}", "timestamp": at,
                      "cwd": str(cwd), "message": {"role": "user", "content": prompt}})
        for c, (name, tool_input) in enumerate(calls):
            # a Write's result line as Claude Code writes it: the file before it (``_originalFile``) or
            # created; ``_noResult``: none (a sync between the call and its result); an Edit's result only
            # with ``_originalFile``
            tool_input = dict(tool_input)
            original, no_result = tool_input.pop("_originalFile", None), tool_input.pop("_noResult", False)
            lines.append({"type": "assistant", "sessionId": session, "uuid": f"{session}-a{k}-{c}", "timestamp": at,
                          "cwd": str(cwd), "message": {"role": "assistant", "model": "m", "content": [
                              {"type": "tool_use", "id": f"toolu_{k}_{c}", "name": name, "input": tool_input}]}})
            if name == "Edit" and original is not None and not no_result:
                # an Edit's result as Claude Code writes it: the file before it, the texts of the call
                lines.append({"type": "user", "sessionId": session, "uuid": f"{session}-r{k}-{c}", "timestamp": at,
                              "cwd": str(cwd), "message": {"role": "user", "content": [
                                  {"tool_use_id": f"toolu_{k}_{c}", "type": "tool_result", "content": "ok"}]},
                              "toolUseResult": {"filePath": tool_input.get("file_path"),
                                                "oldString": tool_input.get("old_string"),
                                                "newString": tool_input.get("new_string"), "originalFile": original,
                                                "structuredPatch": [], "userModified": False, "replaceAll": False}})
            if name == "Write" and not no_result:
                lines.append({"type": "user", "sessionId": session, "uuid": f"{session}-r{k}-{c}", "timestamp": at,
                              "cwd": str(cwd), "message": {"role": "user", "content": [
                                  {"tool_use_id": f"toolu_{k}_{c}", "type": "tool_result", "content": "ok"}]},
                              "toolUseResult": {"type": "create" if original is None else "update",
                                                "filePath": tool_input.get("file_path"),
                                                "content": tool_input.get("content"), "originalFile": original}})
    folder = base / "claude" / "projects" / "p"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"{session}.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")


def write_pi(base: Path, session: str, cwd: Path, turns: list[Turn], minute: int = 0) -> None:
    lines: list[dict[str, Any]] = [{"type": "session", "version": 3, "id": session, "timestamp": _iso(minute),
                                    "cwd": str(cwd)}]
    parent: str | None = None
    for k, (prompt, calls) in enumerate(turns):
        at = _iso(minute + k)
        lines.append({"type": "message", "id": f"u{k}", "parentId": parent, "timestamp": at,
                      "message": {"role": "user", "content": prompt}})
        parent = f"u{k}"
        if not any("_result" in arguments for _, arguments in calls):
            content = [{"type": "toolCall", "id": f"call_{k}_{c}", "name": name, "arguments": arguments}
                       for c, (name, arguments) in enumerate(calls)]
            lines.append({"type": "message", "id": f"a{k}", "parentId": parent, "timestamp": at,
                          "message": {"role": "assistant", "content": content}})
            parent = f"a{k}"
            continue
        # one call a message, each followed by its result where given (``_result``: its text; ``_details``,
        # ``_isError`` as Pi writes them), as the real Pi writes a turn that reads, then writes
        for c, (name, arguments) in enumerate(calls):
            arguments = dict(arguments)
            result, details = arguments.pop("_result", None), arguments.pop("_details", None)
            error = arguments.pop("_isError", False)
            lines.append({"type": "message", "id": f"a{k}_{c}", "parentId": parent, "timestamp": at,
                          "message": {"role": "assistant", "content": [
                              {"type": "toolCall", "id": f"call_{k}_{c}", "name": name, "arguments": arguments}]}})
            parent = f"a{k}_{c}"
            if result is not None:
                message: dict[str, Any] = {"role": "toolResult", "toolCallId": f"call_{k}_{c}", "toolName": name,
                                           "content": [{"type": "text", "text": result}], "isError": error}
                if details is not None:
                    message["details"] = details
                lines.append({"type": "message", "id": f"r{k}_{c}", "parentId": parent, "timestamp": at,
                              "message": message})
                parent = f"r{k}_{c}"
    folder = base / "pi" / "agent" / "sessions" / "--p--"
    folder.mkdir(parents=True, exist_ok=True)
    # compact, as Pi writes it (its tool results are then skipped unparsed unless awaited: pimem.importers.pi)
    (folder / f"2026-11-01T10-00-00-000Z_{session}.jsonl").write_text(
        "".join(json.dumps(line, separators=(",", ":")) + "\n" for line in lines), encoding="utf-8")


def write_codex(base: Path, session: str, cwd: Path, turns: list[tuple[str, list[str]]], minute: int = 0) -> None:
    """Each turn: a prompt and its apply_patch patches (custom_tool_call)."""
    lines: list[dict[str, Any]] = [{"timestamp": _iso(minute), "type": "session_meta",
                                    "payload": {"id": session, "timestamp": _iso(minute), "cwd": str(cwd)}}]
    for k, (prompt, patches) in enumerate(turns):
        at = _iso(minute + k)
        lines.append({"timestamp": at, "type": "response_item", "payload": {
            "type": "message", "role": "user", "content": [{"type": "input_text", "text": prompt}]}})
        for c, patch in enumerate(patches):
            lines.append({"timestamp": at, "type": "response_item", "payload": {
                "type": "custom_tool_call", "call_id": f"call_{k}_{c}", "name": "apply_patch", "input": patch}})
    folder = base / "codex" / "sessions" / "2026" / "11" / "01"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"rollout-2026-11-01T10-00-00-{session}.jsonl").write_text(
        "".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")




def brace_block_edits(path: Path, calls: int) -> tuple[list[tuple[str, dict[str, Any]]], str]:
    """``calls`` Claude Code edits of ``path``, each adding a block that ends in two "}", and the file they
    leave: what makes a file hold many calls' writes of one trivial line (bench/blame/results.py
    brace-calls, tests/test_lineblame.py)."""
    edits: list[tuple[str, dict[str, Any]]] = []
    text = ""
    for k in range(calls):
        block = f"marker_{k}()\nfunc f_{k}() {{\n  if x_{k} {{\n    body_{k}()\n  }}\n}}\n"
        edits.append(("Edit", {"file_path": str(path), "old_string": f"marker_{k}()\n", "new_string": block}))
        text += block
    return edits, text
