"""Valid JSON with wrong types, and missing fields, in every key field of every agent's records.

One test per (format generation, field): the field is replaced in every record that has it by each
value of ``VARIANTS`` (or deleted), one hostile file per variant, all placed among the good
transcripts. Each file must be parsed (counted in ``scanned_files``), may become an issue naming it
(e.g. a Pi file whose header lost its id), and must never make an importer raise (an
"unexpected …" issue); the good files import exactly as without them and the store stays consistent.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from pimem.models import Source
from support.history import LEGACY
from support.ids import fresh_ids
from support.sync import sync

from ._support import TEMPLATES, assert_isolated, write

MISSING = object()
VARIANTS: dict[str, Any] = {
    "missing": MISSING, "null": None, "false": False, "true": True, "zero": 0, "negative": -1,
    "huge-int": 2**70, "float": 1.5e308, "empty-string": "", "string": "flamingo", "empty-list": [],
    "list": [1, "x", None, {"type": "text"}], "empty-object": {}, "object": {"type": "text", "text": 5, "role": 1},
}

PI_FIELDS = ["type", "id", "parentId", "timestamp", "version", "cwd", "message", "message.role", "message.content",
             "message.content.*", "message.content.*.type", "message.content.*.text", "message.content.*.name",
             "message.timestamp", "message.model", "modelId"]
CLAUDE_FIELDS = ["type", "sessionId", "uuid", "parentUuid", "timestamp", "cwd", "isSidechain", "isMeta",
                 "isCompactSummary", "toolUseResult", "message", "message.role", "message.content",
                 "message.content.*", "message.content.*.type", "message.content.*.text",
                 "message.content.*.name", "message.model"]
CODEX_FIELDS = ["timestamp", "type", "payload", "payload.type", "payload.role", "payload.id", "payload.content",
                "payload.content.*", "payload.content.*.type", "payload.content.*.text", "payload.cwd",
                "payload.model", "payload.name", "payload.timestamp", "payload.source", "payload.model_provider",
                "payload.session_id", "payload.internal_chat_message_metadata_passthrough",
                "payload.internal_chat_message_metadata_passthrough.content_item_kinds"]
CODEX_BARE_FIELDS = ["id", "timestamp", "instructions", "type", "role", "content", "content.*", "content.*.type",
                     "content.*.text", "name", "record_type"]
CODEX_G0_FIELDS = ["session", "session.id", "session.timestamp", "items", "items.*", "items.*.type", "items.*.role",
                   "items.*.content", "items.*.content.*", "items.*.content.*.text", "items.*.name"]


def _legacy(pattern: str) -> Path:
    return next(LEGACY.rglob(pattern))


FORMATS: dict[str, tuple[Source, Path, list[str]]] = {
    "pi-v3": ("pi", TEMPLATES["pi"], PI_FIELDS),
    "pi-v1": ("pi", _legacy("2025-11-20T10-14-58-077Z_*.jsonl"), PI_FIELDS),
    "claude-2.1": ("claude", TEMPLATES["claude"], CLAUDE_FIELDS),
    "claude-1.0": ("claude", _legacy("3c0f8a52-*.jsonl"), CLAUDE_FIELDS),
    "claude-compacted": ("claude", _legacy("9a7b6c5d-*.jsonl"), CLAUDE_FIELDS),
    "codex-g3": ("codex", TEMPLATES["codex"], CODEX_FIELDS),
    "codex-g2": ("codex", _legacy("rollout-2025-10-14T*.jsonl"), CODEX_FIELDS),
    "codex-g1": ("codex", _legacy("rollout-2025-07-02T*.jsonl"), CODEX_BARE_FIELDS),
    "codex-g0": ("codex", _legacy("rollout-2025-04-18-*.json"), CODEX_G0_FIELDS),
}


def mutate(value: Any, path: list[str], new: Any) -> Any:
    """``value`` with the field at ``path`` (``*``: every list element) set to ``new`` or deleted."""
    if not path:
        return new
    key, rest = path[0], path[1:]
    if key == "*":
        if not isinstance(value, list):
            return value
        if not rest:
            return [] if new is MISSING else [copy.deepcopy(new) for _ in value]
        return [mutate(item, rest, new) for item in value]
    if not isinstance(value, dict) or key not in value:
        return value
    if not rest:
        return {k: v for k, v in value.items() if k != key} if new is MISSING else {**value, key: copy.deepcopy(new)}
    return {**value, key: mutate(value[key], rest, new)}


def mutated_file(template: Path, field: str, new: Any, salt: int) -> tuple[bytes, int]:
    """The template with fresh ids and ``field`` mutated; and how many records changed."""
    text = fresh_ids(template.read_text(encoding="utf-8"), salt)
    path = field.split(".")
    if template.suffix == ".json":
        document = json.loads(text)
        changed = mutate(document, path, new)
        return json.dumps(changed, ensure_ascii=False).encode("utf-8"), int(changed != document)
    out, count = [], 0
    for line in text.splitlines(keepends=True):
        try:
            record = json.loads(line)
        except ValueError:
            out.append(line)
            continue
        changed = mutate(record, path, new)
        if changed == record and type(changed) is type(record):
            out.append(line)
        else:
            count += 1
            out.append(json.dumps(changed, ensure_ascii=False, separators=(",", ":")) + "\n")
    return "".join(out).encode("utf-8"), count


# Every (format, field) where the field occurs in the format's template.
CASES = [(name, field) for name, (_, template, fields) in FORMATS.items() for field in fields
         if mutated_file(template, field, MISSING, 0)[1]]


def test_every_field_is_exercised_by_some_format() -> None:
    for source in ("pi", "claude", "codex"):
        fields = {field for fmt, (src, _, fields) in FORMATS.items() if src == source for field in fields}
        covered = {field for fmt, field in CASES if FORMATS[fmt][0] == source}
        assert covered == fields, f"{source}: never present in a template: {sorted(fields - covered)}"
    assert len(CASES) >= 100


def target_path(base: Path, source: Source, template: Path, field: str, variant: str, salt: int) -> Path:
    label = f"{field.replace('*', 'all')}-{variant}"
    directory = {"pi": f"pi/agent/sessions/--tmp-{label}--", "claude": f"claude/projects/-tmp-{label}",
                 "codex": f"codex/sessions/2026/12/{label}"}[source]
    return base / directory / fresh_ids(template.name, salt)


@pytest.mark.parametrize(("fmt", "field"), CASES, ids=[f"{fmt}-{field}" for fmt, field in CASES])
def test_wrong_types_and_missing_fields_are_isolated(fmt: str, field: str, base: Path, db: Path) -> None:
    source, template, _ = FORMATS[fmt]
    hostile, touched = [], 0
    for number, (variant, new) in enumerate(VARIANTS.items()):
        salt = 1000 + number
        content, count = mutated_file(template, field, new, salt)
        touched += count
        hostile.append(write(target_path(base, source, template, field, variant, salt), content))
    assert touched
    stats = sync(base, db)
    assert stats.scanned_files >= len(hostile)
    extra = assert_isolated(stats, db, base, hostile)
    for info, _turns in extra.values():
        assert info is not None and info[0] == source
