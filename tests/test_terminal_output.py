"""Issue 10, item 4: nothing stored reaches the user's terminal as a control sequence.

Real transcripts (the bundled samples) are given escape sequences in a prompt and a reply, imported
with ``pimem sync``, and every human-readable command (recall, show, status, sync issues, migrate
reports, sessions, file history) must print them visibly; ``--json`` must still give back the exact text.
"""

from __future__ import annotations

import json
import logging
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from conftest import SAMPLES, env_for
from pimem.terminal import VisibleFormatter, json_text, visible

OSC52_CLIPBOARD = "\x1b]52;c;ZWNobyBwd25lZA==\x07"   # write "echo pwned" to the clipboard
TITLE = "\x1b]0;pwned title\x07"
CLEAR = "\x1b[2J\x1b[H"
C1_CSI = "\x9b2J"                                     # 8-bit CSI: clear screen on terminals taking C1
CARRIAGE_RETURN = "safe looking\rEVIL"
BIDI = "access = \u202euser\u2066 admin\u2069"
HOSTILE = f"quokka {OSC52_CLIPBOARD}{TITLE}{CLEAR}{C1_CSI} {CARRIAGE_RETURN} {BIDI} bell\x07 del\x7f"
# What a terminal could act on; none of it may appear in human output.
RAW = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")

CLAUDE_FILE = SAMPLES / "claude" / "projects" / "-tmp-pimem-demo-webshop" / "1ed4dd9a-5989-4487-9ac3-d2b870816ee8.jsonl"
PI_FILE = (SAMPLES / "pi" / "agent" / "sessions" / "--tmp-pimem-demo-webshop--"
           / "2026-11-30T09-45-48-861Z_01a22bd8-a83c-7278-b6dd-f7b4c2b178a9.jsonl")


def test_visible_shows_each_control_character_and_keeps_text() -> None:
    assert visible("a\tb\nc") == "a\tb\nc"
    assert visible(OSC52_CLIPBOARD) == "\\x1b]52;c;ZWNobyBwd25lZA==\\x07"
    assert visible(CLEAR + C1_CSI + "\r\x7f\x00") == "\\x1b[2J\\x1b[H\\x9b2J\\x0d\\x7f\\x00"
    assert visible(BIDI) == "access = \\u202euser\\u2066 admin\\u2069"
    assert visible("中文 😀 e\u0301 🏳️\u200d🌈") == "中文 😀 e\u0301 🏳️\u200d🌈"  # text, ZWJ included, untouched
    assert RAW.search(visible(HOSTILE)) is None


def test_json_text_is_exact_and_holds_no_raw_control_character() -> None:
    value = {"text": HOSTILE, "中文": ["😀", "\u2028"]}
    encoded = json_text(value)
    assert json.loads(encoded) == value
    assert RAW.search(encoded) is None


def test_log_lines_show_control_characters() -> None:
    record = logging.LogRecord("pimem", logging.WARNING, __file__, 1, "cannot read %s", (f"/tmp/x{TITLE}",), None)
    assert VisibleFormatter("%(message)s").format(record) == "cannot read /tmp/x\\x1b]0;pwned title\\x07"


# ---------------------------------------------------------------------------------------------
# End to end through `pimem sync`
# ---------------------------------------------------------------------------------------------

def _poison_claude(record: dict[str, Any], done: set[str]) -> None:
    message = record.get("message")
    if record.get("type") == "user" and isinstance(message, dict) and isinstance(message.get("content"), str) \
            and "user" not in done:
        message["content"] = f"{HOSTILE} {message['content']}"
        done.add("user")
    elif record.get("type") == "assistant" and isinstance(message, dict) and "reply" not in done:
        for block in message.get("content") or []:
            if block.get("type") == "text":
                block["text"] = f"{HOSTILE} {block['text']}"
                done.add("reply")


def _poison_pi(record: dict[str, Any], done: set[str]) -> None:
    message = record.get("message")
    if record.get("type") != "message" or not isinstance(message, dict):
        return
    role = {"user": "user", "assistant": "reply"}.get(message.get("role", ""))
    if role is None or role in done:
        return
    for block in message.get("content") or []:
        if isinstance(block, dict) and block.get("type") == "text":
            block["text"] = f"{HOSTILE} {block['text']}"
            done.add(role)
            return


@pytest.fixture
def poisoned(tmp_path: Path) -> tuple[dict[str, str], Path]:
    """A history of two real transcripts (Claude Code, Pi) with HOSTILE in a prompt and a reply."""
    base = tmp_path / "history"
    for source, poison in ((CLAUDE_FILE, _poison_claude), (PI_FILE, _poison_pi)):
        target = base / source.relative_to(SAMPLES)
        target.parent.mkdir(parents=True, exist_ok=True)
        done: set[str] = set()
        records = []
        for line in source.read_text(encoding="utf-8").splitlines():
            record = json.loads(line)
            poison(record, done)
            records.append(record)
        assert done == {"user", "reply"}, source
        target.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return env_for(base, tmp_path / "memory.db"), base


def pimem(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    done = subprocess.run([sys.executable, "-m", "pimem", *args], env=env, capture_output=True, timeout=120,
                          check=False)
    return subprocess.CompletedProcess(done.args, done.returncode, done.stdout.decode("utf-8"),
                                       done.stderr.decode("utf-8"))


def assert_clean(output: str) -> None:
    found = RAW.search(output)
    where = output[max(0, found.start() - 60):found.end() + 20] if found else ""
    assert found is None, f"raw {found.group(0)!r} in {where!r}" if found else ""


def test_recall_and_show_print_escapes_visibly_and_json_keeps_them_exactly(
        poisoned: tuple[dict[str, str], Path]) -> None:
    env, _ = poisoned
    assert pimem(env, "sync").returncode == 0
    human = pimem(env, "recall", "quokka", "--limit", "10")
    assert human.returncode == 0, human.stderr
    assert_clean(human.stdout + human.stderr)
    assert human.stdout.count("quokka \\x1b]52;c;ZWNobyBwd25lZA==\\x07\\x1b]0;pwned title\\x07") >= 4  # 2 turns
    assert "\\x9b2J" in human.stdout and "\\u202euser" in human.stdout and "looking\\x0dEVIL" in human.stdout

    rows = json.loads(pimem(env, "recall", "quokka", "--limit", "10", "--json").stdout)
    assert {row["source"] for row in rows} == {"claude", "pi"}
    assert all(row["userText"].startswith(HOSTILE) for row in rows)  # exact, as stored
    assert any(HOSTILE in row["replyText"] for row in rows)
    raw_json = pimem(env, "recall", "quokka", "--limit", "10", "--json").stdout
    assert_clean(raw_json)

    for row in rows:
        shown = pimem(env, "show", row["turnId"])
        assert shown.returncode == 0, shown.stderr
        assert_clean(shown.stdout)
        assert "\\x1b]52;c;" in shown.stdout
        exact = pimem(env, "show", row["turnId"], "--json")
        assert_clean(exact.stdout)
        assert json.loads(exact.stdout)["userText"] == row["userText"]


def test_sync_issues_status_and_migration_reports_show_file_names_visibly(
        poisoned: tuple[dict[str, str], Path], tmp_path: Path) -> None:
    env, base = poisoned
    # A file whose name holds a title change and whose content is damaged: an issue naming it.
    damaged = base / "codex" / "sessions" / "2026" / "11" / "30" / f"rollout-{TITLE}.jsonl.zst"
    damaged.parent.mkdir(parents=True)
    damaged.write_bytes(b"not zstd at all")
    synced = pimem(env, "sync")
    assert synced.returncode == 0
    assert "rollout-\\x1b]0;pwned title\\x07.jsonl.zst" in synced.stderr
    assert_clean(synced.stdout + synced.stderr)
    stats = json.loads(pimem(env, "sync", "--force", "--json").stdout)
    assert any(issue["jsonlPath"] == str(damaged) for issue in stats["issues"])  # JSON: the exact name

    db = tmp_path / f"store{CLEAR}" / "memory.db"
    assert pimem(env, "sync", "--db", str(db)).returncode == 0
    status = pimem(env, "status", "--db", str(db))
    assert status.returncode == 0, status.stderr
    assert_clean(status.stdout + status.stderr)
    assert "store\\x1b[2J\\x1b[H/memory.db" in status.stdout

    folder = f"/tmp/pimem-demo/{TITLE}"
    report = pimem(env, "migrate-codex", "--cwd", folder, "--dry-run")
    assert report.returncode == 0, report.stderr
    assert_clean(report.stdout + report.stderr)
    assert "pimem-demo/\\x1b]0;pwned title\\x07" in report.stdout
    exact = json.loads(pimem(env, "migrate-codex", "--cwd", folder, "--dry-run", "--json").stdout)
    assert exact["folder"] == folder


def test_sessions_and_file_history_print_prompts_and_paths_visibly(tmp_path: Path) -> None:
    """A prompt and a touched file name holding escapes: `pimem sessions` and `pimem file-history`
    show them as text; --json keeps them exactly."""
    base = tmp_path / "history"
    session = (base / "pi/agent/sessions/--work-app--"
               / "2026-12-01T00-00-00-000Z_01a22bd8-0000-7000-8000-00000000e5c0.jsonl")
    session.parent.mkdir(parents=True)
    hostile_file = f"notes {TITLE}{C1_CSI}.md"
    lines = [
        {"type": "session", "version": 3, "id": "01a22bd8-0000-7000-8000-00000000e5c0",
         "timestamp": "2026-12-01T00:00:00.000Z", "cwd": "/work/app"},
        {"type": "message", "id": "u1", "parentId": None, "timestamp": "2026-12-01T00:00:01.000Z",
         "message": {"role": "user", "content": [{"type": "text", "text": HOSTILE}], "timestamp": 1796083201000}},
        {"type": "message", "id": "a1", "parentId": "u1", "timestamp": "2026-12-01T00:00:02.000Z",
         "message": {"role": "assistant", "timestamp": 1796083202000, "content": [
             {"type": "toolCall", "id": "c1", "name": "write", "arguments": {"path": hostile_file, "content": ""}}]}},
    ]
    session.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    env = env_for(base, tmp_path / "memory.db")
    assert pimem(env, "sync").returncode == 0
    listing = pimem(env, "sessions")
    assert listing.returncode == 0, listing.stderr
    assert_clean(listing.stdout)
    assert "\\x1b]52;c;" in listing.stdout
    history = pimem(env, "file-history", f"/work/app/{hostile_file}")
    assert history.returncode == 0, history.stderr
    assert_clean(history.stdout)
    assert "\\x1b]0;pwned title\\x07\\x9b2J.md" in history.stdout and "\\x1b]52;c;" in history.stdout
    exact = json.loads(pimem(env, "file-history", f"/work/app/{hostile_file}", "--json").stdout)
    assert exact["path"] == f"/work/app/{hostile_file}" and exact["sessions"][0]["prompt"] == HOSTILE
