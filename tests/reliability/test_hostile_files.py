"""Hostile transcript files, each placed among the good transcripts (samples/history + legacy fixtures).

For every case: ``run_sync`` returns (never raises), every good file imports exactly as it does
without the hostile file (``assert_isolated`` compares with a baseline run), the hostile file either
becomes an issue naming it or is skipped the way pimem/jsonl.py and the importers document, and the
store stays consistent (SQLite and FTS integrity, indexed recall == the oracle). Where the outcome is
precisely predictable, the hostile file's own rows are compared with an oracle: the same file with
the hostile line replaced by a plain non-JSON line (a skipped line), imported alone.
"""

from __future__ import annotations

import errno
import json
import os
import random
import shutil
import subprocess
import sys
import threading
import time
import zlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from pimem import jsonl
from pimem.models import Source
from pimem.store import connect
from support.env import env_for
from support.ids import fresh_ids
from support.sync import sync

from ._support import (
    assert_isolated,
    baseline_files,
    hostile_path,
    import_alone,
    issues_for,
    line_index,
    pi_session_lines,
    replace_line,
    template_lines,
    write,
)

USER_LINE: dict[Source, Callable[[bytes], bool]] = {
    "pi": lambda line: b'"role":"user"' in line,
    "claude": lambda line: b'"type":"user"' in line and b"toolUseResult" not in line and b'"isMeta":true' not in line,
    "codex": lambda line: b'"type":"response_item"' in line and b'"role":"user"' in line,
}
SKIPPED = b"this line is not JSON\n"   # what a skipped (bad) line is equivalent to
MIB = 1 << 20


def flamingo_line(source: Source, lines: list[bytes]) -> int:
    return line_index(lines, lambda line: USER_LINE[source](line) and b"flamingo" in line)


def oracle(base: Path, path: Path, content: bytes) -> object:
    return import_alone(base, os.path.relpath(path, base), content)


def assert_broken_line_issue(stats: Any, path: Path, line: int | None) -> None:
    """The file's only issue names its broken line (issue 10 item 14), or it has no issue (None: the
    line is one the importer's pre-filter never decodes, e.g. a Claude line without a "type" it reads)."""
    issues = issues_for(stats, path)
    if line is None:
        assert not issues, issues
        return
    assert len(issues) == 1, issues
    assert f"line {line} could not be read" in issues[0] and "the rest was imported" in issues[0], issues


# ---------------------------------------------------------------------------------------------
# Truncated last line
# ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize("source", list(USER_LINE))  # the sources with line templates
def test_truncated_last_line_is_left_for_the_next_sync(source: Source, base: Path, db: Path) -> None:
    lines = template_lines(source, 1)
    last_prompt = line_index(lines, USER_LINE[source], last=True)
    head, cut = b"".join(lines[:last_prompt]), len(lines[last_prompt]) // 2
    path = write(hostile_path(base, source, 1), head + lines[last_prompt][:cut])
    stats = sync(base, db)
    extra = assert_isolated(stats, db, base, [path])
    assert not issues_for(stats, path)
    assert extra and extra == oracle(base, path, head)   # everything before the cut line, nothing of it
    # The agent finishes the line and writes more: the next sync completes the session.
    with open(path, "ab") as handle:
        handle.write(lines[last_prompt][cut:] + b"".join(lines[last_prompt + 1:]))
    stats = sync(base, db)
    extra = assert_isolated(stats, db, base, [path])
    full = oracle(base, path, b"".join(lines))
    assert extra == full and len(next(iter(extra.values()))[1]) > len(next(iter(oracle(base, path, head).values()))[1])


# ---------------------------------------------------------------------------------------------
# Invalid UTF-8 and NUL bytes
# ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize("source", list(USER_LINE))  # the sources with line templates
def test_invalid_utf8_is_replaced_and_binary_lines_are_skipped(source: Source, base: Path, db: Path) -> None:
    lines = template_lines(source, 2)
    broken = b"fl\xff\xfemingo\xc3"
    hostile = [line.replace(b"flamingo", broken) for line in lines]
    hostile.insert(2, bytes(range(128, 256)) + b"\xc3\x28\n")       # a line of invalid UTF-8, not JSON
    path = write(hostile_path(base, source, 2), b"".join(hostile))
    stats = sync(base, db)
    extra = assert_isolated(stats, db, base, [path])
    # Pi decodes every line (all are tree nodes); Claude and Codex never decode a line without the
    # record types they read, so the binary line 3 is reported for Pi only.
    assert_broken_line_issue(stats, path, 3 if source == "pi" else None)
    expected_text = broken.decode("utf-8", "replace")
    clean = [line.replace(b"flamingo", expected_text.encode("utf-8")) for line in lines]
    clean.insert(2, SKIPPED)
    assert extra == oracle(base, path, b"".join(clean))
    texts = [turn[3] for _, turns in extra.values() for turn in turns]
    assert any(expected_text in text for text in texts), texts


NUL_CASES = ["raw-nul-in-a-string", "escaped-nul", "nul-block-before-a-line", "file-of-nul-bytes", "nul-tail"]


@pytest.mark.parametrize("case", NUL_CASES)
@pytest.mark.parametrize("source", list(USER_LINE))  # the sources with line templates
def test_nul_bytes(source: Source, case: str, base: Path, db: Path) -> None:
    lines = template_lines(source, 3)
    target = flamingo_line(source, lines)
    path = hostile_path(base, source, 3)
    if case == "raw-nul-in-a-string":      # a control character inside a JSON string: not JSON
        content = b"".join(replace_line(lines, target, lines[target].replace(b"flamingo", b"flam\0ingo", 1)))
        expected = b"".join(replace_line(lines, target, SKIPPED))
    elif case == "escaped-nul":            # a valid \u0000 escape: stored without the NUL
        content = b"".join(replace_line(lines, target, lines[target].replace(b"flamingo", b"flam\\u0000ingo", 1)))
        expected = b"".join(lines)
    elif case == "nul-block-before-a-line":  # a zeroed region left by a crash, then the data
        content = b"".join(replace_line(lines, target, b"\0" * 4096 + lines[target]))
        expected = b"".join(replace_line(lines, target, SKIPPED))
    elif case == "file-of-nul-bytes":      # a preallocated file that was never written
        content = b"\0" * 65536
        expected = b""
    else:                                  # the data, then zeroes where the last write never landed
        content = b"".join(lines) + b"\0" * 65536
        expected = b"".join(lines)
    write(path, content)
    stats = sync(base, db)
    extra = assert_isolated(stats, db, base, [path])
    broken = case in ("raw-nul-in-a-string", "nul-block-before-a-line")
    assert_broken_line_issue(stats, path, target + 1 if broken else None)
    assert extra == oracle(base, path, expected)
    assert all("\0" not in str(value) for _, turns in extra.values() for turn in turns for value in turn)
    if expected:
        assert extra, "the rest of the file must be imported"


def non_utf8_session(base: Path) -> Path:
    """A Pi session in a project directory, and under a file name, that are not UTF-8 (possible on
    Linux: Pi names the directory after the cwd, whatever its bytes)."""
    directory = os.path.join(os.fsencode(base / "pi/agent/sessions"), b"--tmp-caf\xe9--")
    os.makedirs(directory)
    raw = os.path.join(directory, b"2026-12-01T00-00-00-000Z_caf\xe9.jsonl")
    with open(raw, "wb") as handle:
        handle.write(b"".join(template_lines("pi", 4)))
    return Path(os.fsdecode(raw))


def test_a_file_name_that_is_not_utf8_is_imported(base: Path, db: Path) -> None:
    """Pi lists such a session, so pimem imports it; the stored path writes the odd bytes as \\xNN."""
    path = non_utf8_session(base)
    stats = sync(base, db)
    extra = assert_isolated(stats, db, base, [path])
    assert not stats.issues
    (info, turns), = extra.values()
    assert info is not None and info[4].endswith("--tmp-caf\\xe9--/2026-12-01T00-00-00-000Z_caf\\xe9.jsonl")
    plain = base / "pi/agent/sessions/--tmp-plain--/2026-12-01T00-00-00-000Z_plain.jsonl"
    (_, expected), = oracle(base, plain, b"".join(template_lines("pi", 4))).values()
    assert turns == expected and turns
    again = sync(base, db)
    assert (again.scanned_files, again.turns, again.issues) == (0, 0, [])


# ---------------------------------------------------------------------------------------------
# A 100 MB line
# ---------------------------------------------------------------------------------------------

def giant_line(size: int, prefix: bytes, suffix: bytes) -> list[bytes]:
    """One JSON line of ``size`` bytes, as 1 MiB pieces (never held whole in the test either)."""
    body = size - len(prefix) - len(suffix)
    piece = b"flamingo giant reply " * (MIB // 21)
    pieces = [prefix]
    while body > 0:
        pieces.append(piece[:body])
        body -= len(pieces[-1])
    pieces.append(suffix)
    return pieces


GIANT_PREFIX = (b'{"type":"message","id":"giant001","parentId":null,"timestamp":"2026-12-01T00:00:00.000Z",'
                b'"message":{"role":"assistant","content":[{"type":"text","text":"')
GIANT_SUFFIX = b'"}]}}\n'


@pytest.mark.slow
@pytest.mark.parametrize("where", ["middle", "unterminated-last-line"])
def test_a_100_mb_line_is_skipped_without_being_buffered(where: str, base: Path, db: Path) -> None:
    lines = template_lines("pi", 5)
    target = flamingo_line("pi", lines) + 1
    path = hostile_path(base, "pi", 5)
    giant = giant_line(100 * MIB, GIANT_PREFIX, GIANT_SUFFIX if where == "middle" else b"")
    try:
        if where == "middle":
            write(path, [*lines[:target], *giant, *lines[target:]])
            expected = b"".join([*lines[:target], SKIPPED, *lines[target:]])
        else:
            write(path, [*lines, *giant])
            expected = b"".join(lines)
        assert path.stat().st_size > 100 * MIB
        stats = sync(base, db)
        extra = assert_isolated(stats, db, base, [path])
        assert extra == oracle(base, path, expected)
        issues = issues_for(stats, path)
        if where == "middle":
            assert len(issues) == 1 and "longer than 32 MiB were skipped" in issues[0], issues
        else:
            assert not issues   # still being written: left for the next sync
            with open(path, "ab") as handle:
                handle.write(GIANT_SUFFIX + lines[-1])
            stats = sync(base, db)
            assert_isolated(stats, db, base, [path])
            issues = issues_for(stats, path)
            assert len(issues) == 1 and "longer than 32 MiB were skipped" in issues[0], issues
    finally:
        path.unlink(missing_ok=True)


# ---------------------------------------------------------------------------------------------
# Deeply nested JSON
# ---------------------------------------------------------------------------------------------

DEPTH = 100_000
NESTED = {
    "arrays": b"[" * DEPTH + b"]" * DEPTH,
    "objects": b'{"a":' * DEPTH + b"1" + b"}" * DEPTH,
}


@pytest.mark.parametrize("shape", ["arrays", "objects", "inside-a-prompt", "unterminated-last-line"])
@pytest.mark.parametrize("source", list(USER_LINE))  # the sources with line templates
def test_deeply_nested_json_is_a_skipped_line(source: Source, shape: str, base: Path, db: Path) -> None:
    lines = template_lines(source, 6)
    target = flamingo_line(source, lines)
    path = hostile_path(base, source, 6)
    if shape == "inside-a-prompt":
        line = lines[target]
        start = line.index(b'"content":') + len(b'"content":')
        nested = line[:start] + NESTED["arrays"] + b"}}\n"
        content, expected = replace_line(lines, target, nested), replace_line(lines, target, SKIPPED)
    elif shape == "unterminated-last-line":
        content, expected = [*lines, b'{"type":' + NESTED["objects"]], lines
    else:
        content = replace_line(lines, target, NESTED[shape] + b"\n")
        expected = replace_line(lines, target, SKIPPED)
    write(path, b"".join(content))
    stats = sync(base, db)
    extra = assert_isolated(stats, db, base, [path])
    # Too deep to decode: a line pimem cannot read, reported when the importer decodes it (Claude and
    # Codex skip a bare array/object without their record types unread); an unfinished last line waits.
    decoded = shape == "inside-a-prompt" or (source == "pi" and shape != "unterminated-last-line")
    assert_broken_line_issue(stats, path, target + 1 if decoded else None)
    assert extra and extra == oracle(base, path, b"".join(expected))


def test_deeply_nested_codex_json_rollout_is_an_issue(base: Path, db: Path) -> None:
    path = write(base / "codex/sessions/2025/04/19/rollout-2025-04-19-0b6a2f1e-9c8d-4e7f-a6b5-c4d3e2f1a0b0.json",
                 b'{"session":' + NESTED["objects"] + b',"items":[]}')
    stats = sync(base, db)
    assert not assert_isolated(stats, db, base, [path])
    issues = issues_for(stats, path)
    assert len(issues) == 1 and "not valid JSON" in issues[0], issues


# ---------------------------------------------------------------------------------------------
# Empty and near-empty files
# ---------------------------------------------------------------------------------------------

EMPTY_CASES: list[tuple[Source, str, bytes, str | None]] = [
    # source, file name, content, expected issue text (None: silently nothing)
    ("pi", "2026-12-01T00-00-00-000Z_empty.jsonl", b"", None),
    ("pi", "2026-12-01T00-00-00-000Z_blank.jsonl", b"\n\n  \n\r\n", None),
    ("claude", "0e0e0e0e-0000-4000-8000-000000000000.jsonl", b"", None),
    ("claude", "0e0e0e0e-0000-4000-8000-000000000001.jsonl", b"\n \n", None),
    ("codex", "rollout-2026-12-01T00-00-00-0e0e0e0e-0000-4000-8000-000000000002.jsonl", b"", None),
    ("codex", "rollout-2026-12-01T00-00-00-0e0e0e0e-0000-4000-8000-000000000003.jsonl", b"\n\n", None),
    ("codex", "rollout-2026-12-01-0e0e0e0e-0000-4000-8000-000000000004.json", b"", "not valid JSON"),
    ("codex", "rollout-2026-12-01-0e0e0e0e-0000-4000-8000-000000000005.json", b"{}", '"session" and "items"'),
    ("codex", "rollout-2026-12-01T00-00-00-0e0e0e0e-0000-4000-8000-000000000006.jsonl.zst", b"", None),
    ("codex", "rollout-2026-12-01T00-00-00-0e0e0e0e-0000-4000-8000-000000000007.jsonl.zst",
     zlib.compress(b"not zstd at all"), "damaged"),
]


@pytest.mark.parametrize(("source", "name", "content", "issue"), EMPTY_CASES,
                         ids=[f"{case[0]}-{case[1][-12:]}-{len(case[2])}" for case in EMPTY_CASES])
def test_empty_and_blank_files(source: Source, name: str, content: bytes, issue: str | None,
                               base: Path, db: Path) -> None:
    path = write(hostile_path(base, source, 7, name=name), content)
    stats = sync(base, db)
    assert not assert_isolated(stats, db, base, [path])
    issues = issues_for(stats, path)
    if issue is None:
        assert not issues
    else:
        assert len(issues) == 1 and issue in issues[0], issues
    # An empty transcript that the agent then writes is imported by the next sync.
    if source != "codex" or name.endswith(".jsonl"):
        write(path, b"".join(template_lines(source, 7)))
        stats = sync(base, db)
        extra = assert_isolated(stats, db, base, [path])
        assert not issues_for(stats, path)
        assert extra == oracle(base, path, b"".join(template_lines(source, 7)))


# ---------------------------------------------------------------------------------------------
# Symlink loops
# ---------------------------------------------------------------------------------------------

LOOPS = {
    # name: (directory the link is made in, relative target: an ancestor)
    "pi-root": ("pi/agent/sessions/--tmp-pimem-demo-webshop--", ".."),
    "pi-agent-dir": ("pi/agent/sessions/--tmp-pimem-demo-webshop--", "../.."),
    "pi-itself": ("pi/agent/sessions/--tmp-pimem-demo-webshop--", "."),
    "claude-projects": ("claude/projects/-tmp-pimem-demo-webshop", ".."),
    "claude-config-dir": ("claude/projects/-tmp-pimem-demo-webshop", "../.."),
    "codex-sessions": ("codex/sessions/2026/11/30", "../../.."),
    "codex-home": ("codex/sessions/2026/11/30", "../../../.."),
    "history-base": ("codex/archived_sessions", "../.."),
}


@pytest.mark.parametrize("loop", sorted(LOOPS))
def test_directory_symlink_to_an_ancestor_is_walked_once(loop: str, base: Path, db: Path) -> None:
    directory, target = LOOPS[loop]
    link = base / directory / "loop"
    os.symlink(target, link, target_is_directory=True)
    nested = base / directory / "deeper" / "still"
    nested.mkdir(parents=True)
    os.symlink("../../..", nested / "loop-back", target_is_directory=True)
    stats = sync(base, db)                      # the hang guard fails the test if the walk never ends
    extra = assert_isolated(stats, db, base, [])
    assert not extra and not stats.issues
    assert stats.scanned_files == baseline_files()  # every file once, none through the loop
    again = sync(base, db)
    assert (again.scanned_files, again.turns, again.issues) == (0, 0, [])


def test_file_symlink_loops_and_dangling_links(base: Path, db: Path) -> None:
    directory = base / "pi/agent/sessions/--tmp-links--"
    directory.mkdir()
    os.symlink("b.jsonl", directory / "a.jsonl")
    os.symlink("a.jsonl", directory / "b.jsonl")
    os.symlink("self.jsonl", directory / "self.jsonl")
    os.symlink("nowhere.jsonl", directory / "dangling.jsonl")
    os.symlink("nowhere", directory / "dangling-dir", target_is_directory=True)
    stats = sync(base, db)
    assert not assert_isolated(stats, db, base, [], issue_paths=directory.iterdir())
    for issue in stats.issues:   # a broken link is reported as the file that cannot be read
        assert "cannot read the file" in issue.error, issue.error


# ---------------------------------------------------------------------------------------------
# Unreadable files and directories
# ---------------------------------------------------------------------------------------------

def deny(monkeypatch: pytest.MonkeyPatch, *, files: tuple[Path, ...] = (), directories: tuple[Path, ...] = ()) -> None:
    """EACCES for these paths, as a non-root user would get for mode 000 (we run as root). Transcripts
    are opened with os.open (pimem.jsonl.open_regular), so that is where the refusal goes."""
    real_open, real_scandir = os.open, os.scandir
    denied_files = {os.fspath(path) for path in files}
    denied_dirs = {os.fspath(path) for path in directories}

    def fake_open(file: Any, *args: Any, **kwargs: Any) -> Any:
        if isinstance(file, str | Path) and os.fspath(file) in denied_files:
            raise PermissionError(errno.EACCES, "Permission denied", os.fspath(file))
        return real_open(file, *args, **kwargs)

    def fake_scandir(path: Any = ".") -> Any:
        if isinstance(path, str | Path) and os.fspath(path) in denied_dirs:
            raise PermissionError(errno.EACCES, "Permission denied", os.fspath(path))
        return real_scandir(path)

    monkeypatch.setattr(os, "open", fake_open)
    monkeypatch.setattr(os, "scandir", fake_scandir)


def test_unreadable_file_and_directory_are_issues_until_readable(base: Path, db: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    content = b"".join(template_lines("claude", 8))
    unreadable_file = write(hostile_path(base, "claude", 8), content)
    hidden = write(base / "pi/agent/sessions/--tmp-closed--" / "2026-12-01T00-00-00-000Z_closed.jsonl",
                   b"".join(template_lines("pi", 9)))
    with monkeypatch.context() as patch:
        deny(patch, files=(unreadable_file,), directories=(hidden.parent,))
        stats = sync(base, db, workers=1)
    assert not assert_isolated(stats, db, base, [unreadable_file, hidden], issue_paths=[hidden.parent])
    assert len(issues_for(stats, hidden.parent)) == 1
    assert "cannot read the directory (Permission denied)" in issues_for(stats, hidden.parent)[0]
    assert len(issues_for(stats, unreadable_file)) == 1
    assert "cannot read the file (Permission denied)" in issues_for(stats, unreadable_file)[0]
    # Readable again: both are imported by the next sync, and nothing is reported any more.
    stats = sync(base, db)
    extra = assert_isolated(stats, db, base, [unreadable_file, hidden])
    assert not stats.issues
    assert extra == {**oracle(base, unreadable_file, content), **oracle(base, hidden, hidden.read_bytes())}


def _setpriv() -> list[str] | None:
    """As root, a command prefix that drops the capabilities that bypass file permissions."""
    if os.geteuid() != 0:
        return []
    setpriv = shutil.which("setpriv")
    if setpriv is None:
        return None
    drop = "-dac_override,-dac_read_search"
    return [setpriv, f"--bounding-set={drop}", f"--inh-caps={drop}", "--"]


def test_mode_000_file_and_directory_with_real_permission_checks(base: Path, db: Path) -> None:
    """The same through the real kernel check: chmod 000, and `pimem sync` run without the
    capabilities that let root read anything (or as the non-root user running the tests)."""
    prefix = _setpriv()
    if prefix is None:
        pytest.skip("running as root without setpriv: cannot get a real EACCES")
    content = b"".join(template_lines("codex", 10))
    unreadable_file = write(hostile_path(base, "codex", 10), content)
    hidden = write(base / "claude/projects/-tmp-closed" / "0c0c0c0c-0000-4000-8000-00000000000c.jsonl",
                   b"".join(template_lines("claude", 11)))
    db.parent.mkdir(mode=0o700)
    os.chmod(unreadable_file, 0)
    os.chmod(hidden.parent, 0)
    try:
        result = subprocess.run([*prefix, sys.executable, "-m", "pimem", "sync", "--json"], env=env_for(base, db),
                                capture_output=True, text=True, timeout=120, check=False)
    finally:
        os.chmod(unreadable_file, 0o644)
        os.chmod(hidden.parent, 0o755)
    assert result.returncode == 0, result.stderr
    stats = json.loads(result.stdout)
    issues = {issue["jsonlPath"]: issue["error"] for issue in stats["issues"]}
    assert set(issues) == {str(unreadable_file), str(hidden.parent)}, issues
    assert "cannot read the file (Permission denied)" in issues[str(unreadable_file)]
    assert "cannot read the directory (Permission denied)" in issues[str(hidden.parent)]
    assert stats["scannedFiles"] == baseline_files() + 1   # the good ones and the unreadable one
    stats_again = sync(base, db)
    extra = assert_isolated(stats_again, db, base, [unreadable_file, hidden])
    assert not stats_again.issues
    assert extra == {**oracle(base, unreadable_file, content), **oracle(base, hidden, hidden.read_bytes())}


# ---------------------------------------------------------------------------------------------
# Files deleted, truncated or replaced while the sync reads them
# ---------------------------------------------------------------------------------------------

def on_open(monkeypatch: pytest.MonkeyPatch, target: Path, action: Callable[[], None], *, after: bool) -> list[int]:
    """Run ``action`` when the sync opens ``target`` for reading (before or just after the open; the
    sync opens transcripts with os.open, see pimem.jsonl.open_regular)."""
    real_open = os.open
    calls: list[int] = []
    writing = os.O_WRONLY | os.O_RDWR | os.O_CREAT

    def fake_open(file: Any, flags: int, *args: Any, **kwargs: Any) -> int:
        if isinstance(file, str | Path) and os.fspath(file) == str(target) and not flags & writing and not calls:
            calls.append(1)
            if not after:
                action()
                return real_open(file, flags, *args, **kwargs)
            fd = real_open(file, flags, *args, **kwargs)
            action()
            return fd
        return real_open(file, flags, *args, **kwargs)

    monkeypatch.setattr(os, "open", fake_open)
    return calls


def test_file_deleted_before_it_is_opened(base: Path, db: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = write(hostile_path(base, "pi", 12), b"".join(template_lines("pi", 12)))
    with monkeypatch.context() as patch:
        calls = on_open(patch, path, path.unlink, after=False)
        stats = sync(base, db, workers=1)
    assert calls and not path.exists()
    assert not assert_isolated(stats, db, base, [path])
    assert not stats.issues                 # a vanished file is not a problem: nothing to import
    again = sync(base, db)
    assert (again.scanned_files, again.issues) == (0, [])


def test_file_deleted_while_it_is_read(base: Path, db: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    content = b"".join(template_lines("codex", 13))
    path = write(hostile_path(base, "codex", 13), content)
    with monkeypatch.context() as patch:
        calls = on_open(patch, path, path.unlink, after=True)
        stats = sync(base, db, workers=1)
    assert calls and not path.exists()
    extra = assert_isolated(stats, db, base, [path])
    assert not stats.issues
    assert extra == oracle(base, path, content)   # the open descriptor still reads the whole file
    again = sync(base, db)
    assert (again.scanned_files, again.issues) == (0, [])
    assert assert_isolated(again, db, base, [path]) == extra   # turns outlive their files


def big_pi_session(salt: int, turns: int = 3000) -> bytes:
    return b"".join(pi_session_lines(f"big-{salt}", turns, result_bytes=1200, seed=salt))


def test_file_truncated_while_it_is_read(base: Path, db: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    content = big_pi_session(14)
    assert len(content) > 4 * MIB            # larger than the reader's buffer: the cut is seen mid-read
    path = write(hostile_path(base, "pi", 14, name="2026-12-01T00-00-00-000Z_big-14.jsonl"), content)
    with monkeypatch.context() as patch:
        calls = on_open(patch, path, lambda: os.truncate(path, len(content) // 3), after=True)
        stats = sync(base, db, workers=1)
    assert calls
    extra = assert_isolated(stats, db, base, [path])
    assert not stats.issues
    full = oracle(base, path, content)
    (session_id, (_info, turns)), = extra.items()
    assert 0 < len(turns) < len(full[session_id][1])
    assert set(turns) <= set(full[session_id][1])    # what was read is right; nothing half-done
    # The writer puts the data back: the next sync ends with exactly the full import.
    write(path, content)
    stats = sync(base, db)
    assert assert_isolated(stats, db, base, [path]) == full


def test_file_replaced_while_it_is_read(base: Path, db: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    lines = template_lines("claude", 15)
    half = b"".join(lines[: len(lines) // 2])
    path = write(hostile_path(base, "claude", 15), half)
    replacement = path.with_suffix(".tmp")

    def replace() -> None:   # an atomic rewrite (new inode) that adds the rest of the session
        write(replacement, b"".join(lines))
        os.replace(replacement, path)

    with monkeypatch.context() as patch:
        calls = on_open(patch, path, replace, after=True)
        stats = sync(base, db, workers=1)
    assert calls
    extra = assert_isolated(stats, db, base, [path])
    assert not stats.issues and extra == oracle(base, path, half)   # the sync read the file it opened
    stats = sync(base, db)
    assert stats.scanned_files == 1
    assert assert_isolated(stats, db, base, [path]) == oracle(base, path, b"".join(lines))


@pytest.mark.slow
def test_file_rewritten_in_place_during_repeated_syncs(base: Path, db: Path) -> None:
    """A thread rewrites a transcript in place (truncate, then write a growing prefix) while syncs run."""
    content = big_pi_session(16, turns=400)
    path = write(hostile_path(base, "pi", 16, name="2026-12-01T00-00-00-000Z_big-16.jsonl"), content[:1000])
    stop = threading.Event()
    rewrites = [0]

    def writer() -> None:
        rng = random.Random(16)
        while not stop.is_set():
            cut = rng.randrange(len(content))
            with open(path, "wb") as handle:       # truncates: a reader may see it empty or partial
                handle.write(content[: cut // 2])
                handle.flush()
                handle.write(content[cut // 2: cut])
            rewrites[0] += 1
            time.sleep(0.002)

    thread = threading.Thread(target=writer, daemon=True)
    thread.start()
    try:
        for _ in range(8):
            stats = sync(base, db)
            assert_isolated(stats, db, base, [path])
    finally:
        stop.set()
        thread.join(10)
    assert rewrites[0] > 8
    write(path, content)
    stats = sync(base, db)
    assert assert_isolated(stats, db, base, [path]) == oracle(base, path, content)


# ---------------------------------------------------------------------------------------------
# 50,000 tiny files
# ---------------------------------------------------------------------------------------------

TINY = (b'{"type":"session","version":3,"id":"tiny-%05d","timestamp":"2026-12-01T00:00:00.000Z","cwd":"/tmp/t"}\n'
        b'{"type":"message","id":"u%05d","parentId":null,"timestamp":"2026-12-01T00:00:01.000Z","message":'
        b'{"role":"user","content":[{"type":"text","text":"tiny prompt number %05d"}],"timestamp":1796083201000}}\n')


@pytest.mark.slow
def test_fifty_thousand_tiny_files(base: Path, db: Path) -> None:
    """50,000 two-line Pi sessions (a prompt each) beside the good transcripts: all imported, once."""
    count = 50_000
    root = base / "pi/agent/sessions"
    for number in range(count):
        directory = root / f"--tmp-tiny-{number // 1000:02d}--"
        if number % 1000 == 0:
            directory.mkdir()
        with open(directory / f"2026-12-01T00-00-00-000Z_tiny-{number:05d}.jsonl", "wb") as handle:
            handle.write(TINY % (number, number, number))
    started = time.monotonic()
    stats = sync(base, db)
    elapsed = time.monotonic() - started
    assert not stats.issues
    assert stats.scanned_files == baseline_files() + count
    conn = connect(db)
    try:
        tiny = conn.execute("SELECT count(*) FROM turns WHERE session_id LIKE 'pi:tiny-%'").fetchone()[0]
        hit = conn.execute("SELECT count(*) FROM turns WHERE user_text = 'tiny prompt number 31337'").fetchone()[0]
    finally:
        conn.close()
    assert (tiny, hit) == (count, 1)
    assert_isolated(stats, db, base, list(root.glob("--tmp-tiny-*--/*.jsonl")), recall_checks=False)
    again = sync(base, db)
    assert (again.scanned_files, again.skipped_files, again.turns) == (0, baseline_files() + count, 0)
    print(f"\n50,000 tiny files: first sync {elapsed:.1f} s, unchanged sync {again.duration_ms} ms")


# ---------------------------------------------------------------------------------------------
# Damaged compressed rollouts, with either zstd decoder
# ---------------------------------------------------------------------------------------------

def _zstd(content: bytes) -> bytes:
    import zstandard

    return bytes(zstandard.ZstdCompressor(write_checksum=True).compress(content))


ZST_DAMAGE = {
    "not-zstd": lambda frame: zlib.compress(b"not zstd at all"),
    "flipped-bytes": lambda frame: frame[:40] + bytes(b ^ 0x5A for b in frame[40:80]) + frame[80:],
    "truncated-frame": lambda frame: frame[: len(frame) // 2],
}


@pytest.mark.parametrize("damage", sorted(ZST_DAMAGE))
@pytest.mark.parametrize("decoder", ["zstandard", "zstd-command"])
def test_damaged_zst_rollout_is_an_issue(decoder: str, damage: str, base: Path, db: Path,
                                         monkeypatch: pytest.MonkeyPatch) -> None:
    if decoder == "zstd-command":
        if shutil.which("zstd") is None:
            pytest.skip("no zstd command")
        monkeypatch.setattr(jsonl, "_zstandard", None)   # the fallback; the good .zst fixture goes through it too
    frame = _zstd(b"".join(template_lines("codex", 17)))
    name = fresh_ids("rollout-2026-11-30T09-45-41-01a22bd8-8c34-7e91-9282-79d4f5ad872f.jsonl.zst", 17)
    path = write(hostile_path(base, "codex", 17, name=name), ZST_DAMAGE[damage](frame))
    stats = sync(base, db, workers=1)
    extra = assert_isolated(stats, db, base, [path])
    issues = issues_for(stats, path)
    assert len(issues) == 1 and "the compressed rollout is damaged" in issues[0], issues
    if damage != "truncated-frame":
        assert not extra
