"""Fuzzing the importers with mutated real records (hypothesis).

Real transcripts (samples/history and the legacy fixtures, every generation of every agent) are
mutated line by line: fields dropped, values replaced by random JSON of another type (lone
surrogates included), keys reordered, lines duplicated, deleted, swapped, cut at a random byte,
garbage lines inserted. The mutated file is imported with ``run_sync(paths=[file])`` into a fresh
store. Properties:

* nothing escapes the isolation boundary: run_sync returns, an issue names only that file and is
  never an importer crash ("unexpected …");
* the store is consistent: PRAGMA integrity_check, FTS5 integrity-check, indexed recall == the
  oracle recall_scan for entities taken from the stored texts;
* a second sync changes nothing; and importing the file in two appends gives the same rows as
  importing it whole (the incremental contract of pimem/importers/base.py, on hostile input).
"""

from __future__ import annotations

import json
import random
import tempfile
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pimem.store import connect
from pimem.sync import SyncRequest, run_sync
from support.history import LEGACY, SAMPLES, roots_under
from support.ids import fresh_ids

from ._support import SCRATCH, check_store, snapshot

FILES = sorted(
    [p for p in SAMPLES.rglob("rollout-*") if p.suffix in (".jsonl", ".json")]
    + [p for p in SAMPLES.rglob("*.jsonl") if "subagents" not in p.parts and "codex" not in p.parts]
    + [p for p in LEGACY.rglob("*.json*") if p.suffix in (".jsonl", ".json") and "subagents" not in p.parts
       and not p.name.startswith("agent-")]
)
IMPORT_EXAMPLES = 300
INCREMENTAL_EXAMPLES = 120

LEAVES = (st.none() | st.booleans() | st.integers(-(2**70), 2**70) | st.floats(allow_nan=False, allow_infinity=False)
          | st.text(max_size=12) | st.sampled_from(["\ud800", "x\udfffy", "\x00", "", "user", "assistant",
                                                      "message", "text", "input_text", "response_item"]))
JSON = st.recursive(LEAVES, lambda children: st.lists(children, max_size=3)
                    | st.dictionaries(st.text(max_size=8), children, max_size=3), max_leaves=8)

MUTATION = st.one_of(
    st.tuples(st.just("drop-field"), st.integers(0, 10**6), st.integers(0, 10**6)),
    st.tuples(st.just("retype"), st.integers(0, 10**6), st.integers(0, 10**6), JSON),
    st.tuples(st.just("reorder-keys"), st.integers(0, 10**6), st.randoms(use_true_random=False)),
    st.tuples(st.just("duplicate-line"), st.integers(0, 10**6), st.integers(0, 10**6)),
    st.tuples(st.just("delete-line"), st.integers(0, 10**6)),
    st.tuples(st.just("swap-lines"), st.integers(0, 10**6), st.integers(0, 10**6)),
    st.tuples(st.just("cut-line"), st.integers(0, 10**6), st.integers(0, 10**6), st.booleans()),
    st.tuples(st.just("garbage-line"), st.integers(0, 10**6), st.binary(max_size=60) | JSON.map(json.dumps)
              .map(str.encode)),
)


def _paths(value: Any, prefix: tuple[Any, ...] = (), depth: int = 0) -> list[tuple[Any, ...]]:
    """Every key path in a record (dict keys and list indices), to depth 5."""
    found: list[tuple[Any, ...]] = []
    if depth > 5:
        return found
    items = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else ()
    for key, child in items:
        found.append((*prefix, key))
        found.extend(_paths(child, (*prefix, key), depth + 1))
    return found


def _set(value: Any, path: tuple[Any, ...], new: Any, delete: bool) -> None:
    for key in path[:-1]:
        value = value[key]
    if delete:
        del value[path[-1]]
    else:
        value[path[-1]] = new


def _edit_record(line: bytes, edit: Any) -> bytes:
    """Apply ``edit(record) -> record`` to a JSON line (an unparsable line stays as it is)."""
    try:
        record = json.loads(line)
    except ValueError:
        return line
    record = edit(record)
    ending = b"\n" if line.endswith(b"\n") else b""
    return json.dumps(record, separators=(",", ":")).encode() + ending


def mutate(lines: list[bytes], mutation: tuple[Any, ...]) -> list[bytes]:
    if not lines:
        return [mutation[-1] + b"\n"] if mutation[0] == "garbage-line" else lines
    kind, at = mutation[0], mutation[1] % len(lines)
    lines = list(lines)
    if kind in ("drop-field", "retype"):
        def edit(record: Any) -> Any:
            paths = _paths(record)
            if paths:
                path = paths[mutation[2] % len(paths)]
                _set(record, path, mutation[3] if kind == "retype" else None, kind == "drop-field")
            return record
        lines[at] = _edit_record(lines[at], edit)
    elif kind == "reorder-keys":
        def shuffle(record: Any) -> Any:
            if isinstance(record, dict):
                keys = list(record)
                mutation[2].shuffle(keys)
                return {key: record[key] for key in keys}
            return record
        lines[at] = _edit_record(lines[at], shuffle)
    elif kind == "duplicate-line":
        lines.insert(mutation[2] % (len(lines) + 1), lines[at])
    elif kind == "delete-line":
        del lines[at]
    elif kind == "swap-lines":
        other = mutation[2] % len(lines)
        lines[at], lines[other] = lines[other], lines[at]
    elif kind == "cut-line":
        line = lines[at]
        cut = line[: mutation[2] % (len(line) + 1)]
        lines[at] = cut + (b"\n" if mutation[3] and not cut.endswith(b"\n") else b"")
    else:
        lines.insert(at, mutation[2].replace(b"\n", b" ") + b"\n")
    return lines


def mutated_content(file: Path, salt: int, mutations: list[tuple[Any, ...]]) -> bytes:
    text = fresh_ids(file.read_text(encoding="utf-8"), salt)
    if file.suffix == ".json":   # a G0 rollout is one document: mutate it as one record per item
        document = json.loads(text)
        items = [json.dumps(item).encode() + b"\n" for item in document.get("items", [])]
        for mutation in mutations:
            items = mutate(items, mutation)
        parsed = []
        for item in items:
            try:
                parsed.append(json.loads(item))
            except ValueError:
                parsed.append(item.decode("utf-8", "replace"))
        return json.dumps({**document, "items": parsed}).encode()
    lines = [line.encode("utf-8") for line in text.splitlines(keepends=True)]
    for mutation in mutations:
        lines = mutate(lines, mutation)
    return b"".join(lines)


def _relative(file: Path, salt: int) -> Path:
    base = SAMPLES if SAMPLES in file.parents else LEGACY
    relative = file.relative_to(base)
    return relative.parent / fresh_ids(relative.name, salt)


def _import(root: Path, target: Path, db: Path) -> Any:
    return run_sync(SyncRequest(db_path=str(db), roots=roots_under(root), paths=[str(target)]))


def _check(stats: Any, target: Path) -> None:
    for issue in stats.issues:
        assert issue.jsonl_path == str(target), issue.error
        assert "unexpected" not in issue.error, issue.error


def fuzz_settings(examples: int) -> settings:
    return settings(max_examples=examples, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


@fuzz_settings(IMPORT_EXAMPLES)
@given(file=st.sampled_from(FILES), salt=st.integers(1, 2**32), mutations=st.lists(MUTATION, max_size=8))
def test_mutated_transcripts_never_escape_isolation(file: Path, salt: int, mutations: list[tuple[Any, ...]]) -> None:
    content = mutated_content(file, salt, mutations)
    with tempfile.TemporaryDirectory(prefix="pimem-fuzz-", dir=SCRATCH) as tmp:
        root = Path(tmp)
        target = root / _relative(file, salt)
        target.parent.mkdir(parents=True)
        target.write_bytes(content)
        db = root / "store.db"
        _check(_import(root, target, db), target)
        conn = connect(db)
        try:
            before = snapshot(conn, root)
            again = _import(root, target, db)
            _check(again, target)
            assert again.turns == 0 and snapshot(conn, root) == before   # a second sync changes nothing
            check_store(conn, random.Random(salt), queries=6)
            for (ts, index, user, reply) in conn.execute("SELECT ts, turn_index, user_text, reply_text FROM turns"):
                assert ts >= 0 and isinstance(user, str) and isinstance(reply, str)
                # A turn has a prompt, except assistant text that opens a conversation (docs/formats.md 1.8).
                assert user.strip() or (index == 0 and reply.strip()), (index, user, reply)
                assert "\x00" not in user + reply
                (user + reply).encode("utf-8")   # no lone surrogate reached the store
        finally:
            conn.close()


@fuzz_settings(INCREMENTAL_EXAMPLES)
@given(file=st.sampled_from([f for f in FILES if f.suffix == ".jsonl"]), salt=st.integers(1, 2**32),
       mutations=st.lists(MUTATION, max_size=6), cuts=st.lists(st.floats(0, 1), max_size=3))
def test_mutated_transcripts_import_the_same_in_appends(file: Path, salt: int, mutations: list[tuple[Any, ...]],
                                                        cuts: list[float]) -> None:
    content = mutated_content(file, salt, mutations)
    with tempfile.TemporaryDirectory(prefix="pimem-fuzz-", dir=SCRATCH) as tmp:
        root = Path(tmp)
        relative = _relative(file, salt)
        live, whole = root / "live" / relative, root / "whole" / relative
        live.parent.mkdir(parents=True)
        whole.parent.mkdir(parents=True)
        written = 0
        for cut in [*sorted(int(c * len(content)) for c in cuts), len(content)]:
            with open(live, "ab") as handle:
                handle.write(content[written:cut])
            written = max(written, cut)
            _check(_import(root / "live", live, root / "live.db"), live)
        whole.write_bytes(content)
        _check(_import(root / "whole", whole, root / "whole.db"), whole)
        live_conn, whole_conn = connect(root / "live.db"), connect(root / "whole.db")
        try:
            assert snapshot(live_conn, root / "live") == snapshot(whole_conn, root / "whole")
            check_store(live_conn, random.Random(salt), queries=6)
        finally:
            live_conn.close()
            whole_conn.close()
