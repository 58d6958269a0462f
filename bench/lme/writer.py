"""Haystack sessions as agent transcripts: each session once as a Claude Code transcript and once as a
Codex rollout, in one of two shapes.

* ``day0``: exactly the lines deja-vu's ``scripts/day0bench`` writes. Claude: ``{type, sessionId,
  timestamp, message}`` only (no ``uuid``, ``cwd``, ``parentUuid``), user content a string, assistant
  content a list of text blocks. Codex: bare ``response_item`` message lines, no ``session_meta``, both
  roles' text as ``input_text``.
* ``real``: what Claude Code 2.1 and Codex 0.171 write (docs/formats.md, samples/history): Claude lines
  with ``uuid``/``parentUuid``/``cwd``/``version``; a Codex ``session_meta`` then, per user message,
  ``task_started``, the user ``input_text`` message, its ``user_message`` event, the assistant
  ``output_text`` message, ``agent_message`` and ``task_complete``.

Message *i* of a session is stamped at the session's haystack date + *i* minutes (as day0bench does).
Session ids are UUIDs derived from the LME session id (one for the Claude copy, one for the Codex
copy); :func:`write_corpus` returns the map ``pimem session id (source:native id) -> LME session id``.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterable
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any, Literal

from data import Session

Shape = Literal["day0", "real"]
SHAPES: tuple[Shape, ...] = ("day0", "real")
_NAMESPACE = uuid.UUID("6f0d7a52-2c1e-4d0b-9a57-1d3f2b8e0c11")
DAY0_PROJECT = "-work-day0"          # day0bench's Claude project folder
REAL_CWD = "/work/lme"               # the real shape's (fictitious) project folder
REAL_PROJECT = "-work-lme"


def session_uuid(agent: str, lme_id: str) -> str:
    return str(uuid.uuid5(_NAMESPACE, f"{agent}:{lme_id}"))


def _stamp(date: datetime, index: int, millis: int = 0) -> str:
    moment = date + timedelta(minutes=index, milliseconds=millis)
    if millis:
        return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


def _write_lines(path: Path, records: Iterable[dict[str, Any]]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", encoding="utf-8") as handle:
        for record in records:
            handle.write(json.dumps(record, ensure_ascii=False, separators=(",", ":")))
            handle.write("\n")


def claude_lines(session: Session, session_id: str, shape: Shape) -> list[dict[str, Any]]:
    lines: list[dict[str, Any]] = []
    parent: str | None = None
    for index, turn in enumerate(session.turns):
        role = turn["role"]
        content: Any = turn["content"]
        if role == "assistant":
            content = [{"type": "text", "text": turn["content"]}]
        if shape == "day0":
            lines.append({"type": role, "sessionId": session_id, "timestamp": _stamp(session.date, index),
                          "message": {"role": role, "content": content}})
            continue
        line_uuid = str(uuid.uuid5(_NAMESPACE, f"{session_id}:{index}"))
        record: dict[str, Any] = {"parentUuid": parent, "isSidechain": False, "userType": "external",
                                  "cwd": REAL_CWD, "sessionId": session_id, "version": "2.1.332",
                                  "gitBranch": "", "type": role}
        if role == "assistant":
            record["message"] = {"id": f"msg_{line_uuid.replace('-', '')[:26]}", "type": "message",
                                 "role": "assistant", "model": "claude-opus-5-5", "content": content,
                                 "stop_reason": "end_turn", "stop_sequence": None,
                                 "usage": {"input_tokens": 10, "output_tokens": 10}}
            record["requestId"] = f"req_{line_uuid.replace('-', '')[:24]}"
        else:
            record["message"] = {"role": "user", "content": content}
            record["permissionMode"] = "default"
        record["uuid"] = line_uuid
        record["timestamp"] = _stamp(session.date, index, 1)
        lines.append(record)
        parent = line_uuid
    return lines


def codex_lines(session: Session, session_id: str, shape: Shape) -> list[dict[str, Any]]:
    if shape == "day0":
        return [{"timestamp": _stamp(session.date, index), "type": "response_item",
                 "payload": {"type": "message", "role": turn["role"],
                             "content": [{"type": "input_text", "text": turn["content"]}]}}
                for index, turn in enumerate(session.turns)]
    lines: list[dict[str, Any]] = []

    def add(index: int, millis: int, kind: str, payload: dict[str, Any]) -> None:
        lines.append({"timestamp": _stamp(session.date, index, millis), "ordinal": len(lines), "type": kind,
                      "payload": payload})

    start = _stamp(session.date, 0, 1)
    add(0, 1, "session_meta", {"session_id": session_id, "id": session_id, "timestamp": start, "cwd": REAL_CWD,
                               "originator": "codex_cli_rs", "cli_version": "0.171.0", "source": "cli",
                               "model_provider": "openai"})
    turn_id: str | None = None
    for index, turn in enumerate(session.turns):
        if turn["role"] == "user":
            if turn_id is not None:
                add(index, 2, "event_msg", {"type": "task_complete", "turn_id": turn_id})
            turn_id = str(uuid.uuid5(_NAMESPACE, f"{session_id}:turn:{index}"))
            add(index, 3, "event_msg", {"type": "task_started", "turn_id": turn_id})
            add(index, 4, "response_item", {"type": "message", "role": "user",
                                            "content": [{"type": "input_text", "text": turn["content"]}]})
            add(index, 5, "event_msg", {"type": "user_message", "message": turn["content"], "images": []})
        else:
            add(index, 4, "response_item", {"type": "message", "role": "assistant",
                                            "content": [{"type": "output_text", "text": turn["content"],
                                                         "annotations": []}]})
            add(index, 5, "event_msg", {"type": "agent_message", "message": turn["content"]})
    if turn_id is not None:
        add(len(session.turns), 0, "event_msg", {"type": "task_complete", "turn_id": turn_id})
    return lines


def claude_path(claude_root: Path, session_id: str, shape: Shape) -> Path:
    project = DAY0_PROJECT if shape == "day0" else REAL_PROJECT
    return claude_root / "projects" / project / f"{session_id}.jsonl"


def codex_path(codex_home: Path, session: Session, session_id: str) -> Path:
    day = session.date.strftime("%Y/%m/%d")
    return codex_home / "sessions" / day / f"rollout-{session.date.strftime('%Y-%m-%dT%H-%M-%S')}-{session_id}.jsonl"


def agent_env(root: Path, base: dict[str, str]) -> dict[str, str]:
    """``base`` pointing pimem at the corpus under ``root`` and its store only (no Pi sessions)."""
    return {**base, "MEMORY_DB_PATH": str(root / "memory.db"), "CLAUDE_CONFIG_DIR": str(root / "claude"),
            "CODEX_HOME": str(root / "codex"), "PI_CODING_AGENT_DIR": "/nonexistent"}


def write_corpus(sessions: Iterable[Session], root: Path, shape: Shape) -> dict[str, str]:
    """Write every session under ``root/claude`` (a CLAUDE_CONFIG_DIR) and ``root/codex`` (a CODEX_HOME);
    returns ``{pimem session id: LME session id}`` (also written to ``root/mapping.json``)."""
    mapping: dict[str, str] = {}
    for session in sessions:
        claude_id = session_uuid("claude", session.lme_id)
        codex_id = session_uuid("codex", session.lme_id)
        _write_lines(claude_path(root / "claude", claude_id, shape), claude_lines(session, claude_id, shape))
        _write_lines(codex_path(root / "codex", session, codex_id), codex_lines(session, codex_id, shape))
        mapping[f"claude:{claude_id}"] = session.lme_id   # pimem's sessions.session_id: source:native id
        mapping[f"codex:{codex_id}"] = session.lme_id
    (root / "mapping.json").write_text(json.dumps(mapping, indent=0), encoding="utf-8")
    return mapping
