"""Codex → Pi migration (pimem.migrate, ``pimem migrate-codex``), checked against the real Pi 1.6.0.

Expectations are derived independently of pimem: which sessions belong to a folder and what each
must contain come from tests/fixtures/expected/codex/*.json (derived by hand), file locations from
Pi's documented encoding (formats.md 3.1) and the rollouts' own ``session_meta``; whether Pi accepts
the files is asked of the real Pi (tests/support/pi_real.py, tests marked ``e2e``).
"""

from __future__ import annotations

import builtins
import errno
import hashlib
import json
import os
import secrets
import shlex
import shutil
import signal
import subprocess
import sys
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

import pimem.jsonl
import pimem.migrate
from pimem import wire
from pimem.cli import main as pimem_main
from pimem.jsonl import open_transcript
from pimem.migrate import MigrationError, encode_cwd, migrate_codex_sessions
from pimem.paths import SourceRoots
from pimem.recall import RecallRow, make_query, recall, recall_scan
from pimem.store import connect
from pimem.sync import SyncRequest, run_sync
from support.history import LEGACY, REPO, SAMPLES, load_expected
from support.pi_real import pi_rpc_resume, verify_pi_sessions

WEBSHOP = "/tmp/pimem-demo/webshop"
PAYROLL = "/tmp/pimem-demo/payroll-api"
ZH = "/tmp/pimem-demo/中文项目"
LEGACY_APP = "/tmp/pimem-demo/legacy-app"
FOLDERS = (WEBSHOP, PAYROLL, ZH, LEGACY_APP)
# Pi's per-cwd folder names, written out by hand (formats.md 3.1: strip one leading / or \, / \ : -> -).
PI_DIR_NAMES = {
    WEBSHOP: "--tmp-pimem-demo-webshop--",
    PAYROLL: "--tmp-pimem-demo-payroll-api--",
    ZH: "--tmp-pimem-demo-中文项目--",
    LEGACY_APP: "--tmp-pimem-demo-legacy-app--",
}
TITLE_PREFIX = "Migrated from Codex: "
CRASH_HOOK_DIR = REPO / "tests" / "support" / "crash_on_link"

CODEX_CASES = [case for case in load_expected() if case["source"] == "codex"]


# ---------------------------------------------------------------------------------------------
# Expectations (from the hand-derived expected files and the rollouts themselves)
# ---------------------------------------------------------------------------------------------

def expected_sessions(folder: str) -> dict[str, dict[str, Any]]:
    """Codex session id -> expected case, for the sessions whose cwd is ``folder``."""
    return {str(c["nativeSessionId"]): c for c in CODEX_CASES if c["imported"] and c["cwd"] == folder}


def expected_messages(case: dict[str, Any]) -> list[dict[str, str]]:
    """Per turn: the user message, then ONE assistant message with the reply (when there is one)."""
    messages = []
    for turn in case["turns"]:
        messages.append({"role": "user", "text": turn["userText"]})
        if turn["replyText"]:
            messages.append({"role": "assistant", "text": turn["replyText"]})
    return messages


def codex_relpath(case: dict[str, Any]) -> Path:
    """The fixture's path below its codex home (``sessions/…`` or ``archived_sessions/…``)."""
    parts = Path(case["file"]).parts
    return Path(*parts[parts.index("codex") + 1:])


def codex_records(path: Path) -> Iterator[dict[str, Any]]:
    with open_transcript(str(path)) as stream:  # decompresses .zst
        for raw in stream.read().decode("utf-8").splitlines():
            if raw.strip():
                yield json.loads(raw)


def codex_meta(path: Path) -> dict[str, Any]:
    return next(r["payload"] for r in codex_records(path) if r.get("type") == "session_meta")


def codex_model_at_last_reply(path: Path) -> str:
    """The turn_context model in effect when the last assistant text of the rollout was written."""
    current, at_reply = None, None
    for record in codex_records(path):
        payload = record.get("payload") or {}
        if record.get("type") == "turn_context":
            current = payload.get("model") or current
        elif (record.get("type") == "response_item" and payload.get("type") == "message"
              and payload.get("role") == "assistant"
              and any(c.get("type") == "output_text" and c.get("text", "").strip()
                      for c in payload["content"])):
            at_reply = current
    assert at_reply, f"no assistant text after a turn_context in {path}"
    return at_reply


def expected_pi_path(agent_dir: Path, folder: str, codex_file: Path) -> Path:
    """Where Pi itself would keep a session started in ``folder`` at the Codex session's start."""
    meta = codex_meta(codex_file)
    stamp = meta["timestamp"].replace(":", "-").replace(".", "-")
    return agent_dir / "sessions" / PI_DIR_NAMES[folder] / f"{stamp}_{meta['id']}.jsonl"


def pi_lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def tree_state(root: Path) -> dict[str, tuple[str, int, int] | str]:
    """Every path under ``root``: files by (sha256, inode, mtime_ns), directories and links by kind."""
    state: dict[str, tuple[str, int, int] | str] = {}
    if not os.path.lexists(root):
        return state
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames:
            state[os.path.relpath(os.path.join(dirpath, name), root)] = "dir"
        for name in filenames:
            path = os.path.join(dirpath, name)
            info = os.lstat(path)
            if os.path.islink(path):
                state[os.path.relpath(path, root)] = "link:" + os.readlink(path)
                continue
            with open(path, "rb") as handle:
                digest = hashlib.sha256(handle.read()).hexdigest()
            state[os.path.relpath(path, root)] = (digest, info.st_ino, info.st_mtime_ns)
    return state


def report_of(folder: str, codex_home: Path, agent_dir: Path, dry_run: bool = False) -> dict[str, Any]:
    env = {"CODEX_HOME": str(codex_home), "PI_CODING_AGENT_DIR": str(agent_dir),
           "HOME": str(agent_dir.parent)}
    return wire.migration_report(migrate_codex_sessions(folder, dry_run, env=env))


# ---------------------------------------------------------------------------------------------
# Crafted rollouts
# ---------------------------------------------------------------------------------------------

def write_rollout(path: Path, session_id: str, cwd: str, exchanges: list[tuple[str, str]],
                  *, start: str = "2026-11-30T10:00:00.000Z", model: str = "gpt-5.5") -> Path:
    """A minimal Codex 0.171-style rollout: session_meta, turn_context, then user/assistant items."""
    records: list[dict[str, Any]] = [
        {"timestamp": start, "type": "session_meta",
         "payload": {"id": session_id, "timestamp": start, "cwd": cwd, "originator": "codex_exec",
                     "cli_version": "0.171.0", "source": "exec", "model_provider": "openai"}},
        {"timestamp": start, "type": "turn_context", "payload": {"cwd": cwd, "model": model}},
    ]
    for n, (user, reply) in enumerate(exchanges):
        when = f"2026-11-30T10:00:{n + 1:02d}.{n:03d}Z"
        records.append({"timestamp": when, "type": "event_msg", "payload": {"type": "task_started"}})
        records.append({"timestamp": when, "type": "response_item", "payload": {
            "type": "message", "role": "user", "content": [{"type": "input_text", "text": user}]}})
        if reply:
            records.append({"timestamp": when.replace(f".{n:03d}Z", f".{n + 500:03d}Z"),
                            "type": "response_item", "payload": {"type": "message", "role": "assistant",
                                        "content": [{"type": "output_text", "text": reply}]}})
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records), encoding="utf-8")
    return path


def copy_fixture(case_name: str, codex_home: Path) -> Path:
    case = next(c for c in CODEX_CASES if c["name"] == f"codex/{case_name}")
    target = codex_home / codex_relpath(case)
    target.parent.mkdir(parents=True, exist_ok=True)
    shutil.copy2(REPO / case["file"], target)
    return target


# ---------------------------------------------------------------------------------------------
# Fixtures
# ---------------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def codex_home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The real rollouts and the hand-crafted older generations under one CODEX_HOME (read only)."""
    home = tmp_path_factory.mktemp("codex-home") / "codex"
    shutil.copytree(SAMPLES / "codex", home)
    shutil.copytree(LEGACY / "codex", home, dirs_exist_ok=True)
    return home


@pytest.fixture
def agent_dir(tmp_path: Path) -> Path:
    return tmp_path / "pi" / "agent"


def test_expected_fixture_sets_are_what_the_tests_rely_on() -> None:
    """Guards the derivations below: the folders hold the sessions the issue talks about."""
    assert len(expected_sessions(WEBSHOP)) == 3
    assert len(expected_sessions(PAYROLL)) == 2
    assert len(expected_sessions(ZH)) == 1
    # G2, G2 archived, G3, G3 .zst, G3 with an image-only prompt; not G0/G1 (no cwd) nor the sub-agent
    # thread (imported: false)
    legacy = expected_sessions(LEGACY_APP)
    assert sorted(Path(c["file"]).name.split("-", 1)[1][:10] for c in legacy.values()) == [
        "2025-10-14", "2025-10-20", "2026-06-10", "2026-06-11", "2026-11-12"]
    subagent = next(c for c in CODEX_CASES if c["name"] == "codex/legacy-g3-subagent")
    assert codex_meta(REPO / subagent["file"])["cwd"] == LEGACY_APP  # same folder, must still be left out


# ---------------------------------------------------------------------------------------------
# 1 + 2: which sessions, one Pi v3 file each, where Pi itself would put it
# ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize("folder", FOLDERS)
def test_each_codex_session_of_the_folder_becomes_one_pi_v3_session_where_pi_keeps_it(
        folder: str, codex_home: Path, agent_dir: Path) -> None:
    report = report_of(folder, codex_home, agent_dir)

    expected = expected_sessions(folder)
    assert report["issues"] == [] and report["skipped"] == []
    assert sorted(m["codexSessionId"] for m in report["migrated"]) == sorted(expected)
    written = sorted(p for p in (agent_dir / "sessions").rglob("*") if p.is_file())
    assert written == sorted(Path(m["piPath"]) for m in report["migrated"])  # nothing else, no other folder
    for entry in report["migrated"]:
        case = expected[entry["codexSessionId"]]
        codex_file = codex_home / codex_relpath(case)
        assert entry["codexPath"] == str(codex_file)
        assert Path(entry["piPath"]) == expected_pi_path(agent_dir, folder, codex_file)
        lines = pi_lines(Path(entry["piPath"]))
        header = lines[0]
        assert header["type"] == "session" and header["version"] == 3
        assert header["id"] == entry["codexSessionId"] and header["cwd"] == folder
        assert header["timestamp"] == codex_meta(codex_file)["timestamp"]
        messages = [line["message"] for line in lines if line["type"] == "message"]
        assert entry["messages"] == len(messages) == len(expected_messages(case))


def test_other_projects_and_subagent_threads_are_not_migrated(codex_home: Path, agent_dir: Path) -> None:
    for folder in FOLDERS:
        report_of(folder, codex_home, agent_dir)
    names = {p.name for p in (agent_dir / "sessions").iterdir()}
    assert names == set(PI_DIR_NAMES.values())
    every_id = {json.loads(p.read_text(encoding="utf-8").splitlines()[0])["id"]
                for p in (agent_dir / "sessions").rglob("*.jsonl")}
    wanted = {i for folder in FOLDERS for i in expected_sessions(folder)}
    assert every_id == wanted
    subagent = next(c for c in CODEX_CASES if c["name"] == "codex/legacy-g3-subagent")
    assert codex_meta(REPO / subagent["file"])["id"] not in every_id
    for name in ("legacy-g0", "legacy-g1"):  # no cwd: they belong to no folder
        case = next(c for c in CODEX_CASES if c["name"] == f"codex/{name}")
        assert case["nativeSessionId"] not in every_id


@pytest.mark.parametrize("spelling", [
    "/tmp/pimem-demo/webshop/", "/tmp/pimem-demo/webshop//", "/tmp/pimem-demo/payroll-api/../webshop",
    "/tmp/pimem-demo/./webshop", "relative",
])
def test_folder_spellings_are_normalised(spelling: str, codex_home: Path, agent_dir: Path,
                                         monkeypatch: pytest.MonkeyPatch) -> None:
    if spelling == "relative":
        monkeypatch.chdir("/tmp")
        spelling = "pimem-demo/webshop"
    canonical = report_of(WEBSHOP, codex_home, agent_dir.parent / "canonical", dry_run=True)
    report = report_of(spelling, codex_home, agent_dir.parent / "canonical", dry_run=True)
    assert report["folder"] == WEBSHOP
    assert report["migrated"] == canonical["migrated"] and len(report["migrated"]) == 3


def test_codex_side_cwd_is_normalised_but_must_be_the_same_folder(tmp_path: Path, agent_dir: Path) -> None:
    home = tmp_path / "codex"
    day = home / "sessions" / "2026" / "11" / "30"
    same = {"trailing": f"{WEBSHOP}/", "dotdot": "/tmp/pimem-demo/x/../webshop",
            "dot": "/tmp/pimem-demo/./webshop"}
    other = {"prefix": f"{WEBSHOP}-old", "child": f"{WEBSHOP}/src", "parent": "/tmp/pimem-demo"}
    for n, (name, cwd) in enumerate({**same, **other}.items()):
        write_rollout(day / f"rollout-2026-11-30T10-00-0{n}-{name}.jsonl", f"{name}-session", cwd,
                      [(f"question {name}", f"answer {name}")], start=f"2026-11-30T10:00:0{n}.000Z")

    report = report_of(WEBSHOP, home, agent_dir)

    assert sorted(m["codexSessionId"] for m in report["migrated"]) == sorted(f"{n}-session" for n in same)
    for entry in report["migrated"]:
        assert Path(entry["piPath"]).parent == agent_dir / "sessions" / PI_DIR_NAMES[WEBSHOP]
        assert pi_lines(Path(entry["piPath"]))[0]["cwd"] == WEBSHOP  # the folder, not the Codex spelling


@pytest.mark.parametrize(("cwd", "encoded"), [
    ("/tmp/pimem-demo/webshop", "--tmp-pimem-demo-webshop--"),
    ("/tmp/work space/my.proj_ü", "--tmp-work space-my.proj_ü--"),  # measured with Pi (pi_verify/README)
    ("C:\\Users\\me\\proj", "--C--Users-me-proj--"),
    ("\\\\server\\share", "---server-share--"),  # only ONE leading separator is stripped
    ("/", "----"),
])
def test_encode_cwd_is_pis_encoding(cwd: str, encoded: str) -> None:
    assert encode_cwd(cwd) == encoded


# ---------------------------------------------------------------------------------------------
# 3: the real Pi lists, opens, continues and resumes the migrated sessions
# ---------------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def pi_migration(codex_home: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """One migration of every folder, and what the real Pi's SessionManager makes of each folder."""
    for folder in FOLDERS:
        os.makedirs(folder, exist_ok=True)  # Pi's /resume refuses a session whose cwd does not exist
    agent = tmp_path_factory.mktemp("pi-e2e") / "agent"
    reports = {folder: report_of(folder, codex_home, agent) for folder in FOLDERS}
    for report in reports.values():
        assert report["issues"] == [] and report["migrated"]
    verified = {folder: verify_pi_sessions(agent, folder, sorted(m["piPath"] for m in report["migrated"]))
                for folder, report in reports.items()}
    return {"agent": agent, "reports": reports, "verified": verified}


@pytest.mark.e2e
@pytest.mark.parametrize("folder", FOLDERS)
def test_real_pi_lists_every_migrated_session_with_its_title(
        folder: str, pi_migration: dict[str, Any]) -> None:
    report, verified = pi_migration["reports"][folder], pi_migration["verified"][folder]
    assert verified["listError"] is None
    listed = {entry["path"]: entry for entry in verified["list"]}
    assert set(listed) == {m["piPath"] for m in report["migrated"]}
    for migrated in report["migrated"]:
        entry = listed[migrated["piPath"]]
        assert entry["titleDisplayed"] == entry["title"] == TITLE_PREFIX + migrated["codexSessionId"]
        assert entry["id"] == migrated["codexSessionId"] and entry["cwd"] == folder
        assert entry["messageCount"] == migrated["messages"]
    assert {m["codexSessionId"] for m in report["migrated"]} == set(expected_sessions(folder))


@pytest.mark.e2e
@pytest.mark.parametrize("folder", FOLDERS)
def test_real_pi_opens_each_session_with_the_expected_messages_model_and_leaf(
        folder: str, pi_migration: dict[str, Any], codex_home: Path) -> None:
    report, verified = pi_migration["reports"][folder], pi_migration["verified"][folder]
    expected = expected_sessions(folder)
    by_path = {f["path"]: f for f in verified["files"]}
    assert set(by_path) == {m["piPath"] for m in report["migrated"]}
    for migrated in report["migrated"]:
        case = expected[migrated["codexSessionId"]]
        opened = by_path[migrated["piPath"]]
        assert opened["error"] is None
        assert opened["unchanged"] is True  # no v1/v2 migration, no trailing-newline fix by Pi
        session = opened["open"]
        assert session["messages"] == expected_messages(case)
        assert session["contextRoles"] == [m["role"] for m in expected_messages(case)]
        assert session["sessionName"] == TITLE_PREFIX + migrated["codexSessionId"]
        assert session["header"]["version"] == 3 and session["cwd"] == folder
        codex_file = codex_home / codex_relpath(case)
        assert session["model"] == {"provider": codex_meta(codex_file)["model_provider"],
                                    "modelId": codex_model_at_last_reply(codex_file)}
        lines = pi_lines(Path(migrated["piPath"]))
        assert session["leafId"] == lines[-1]["id"] and session["leafType"] == "message"
        assert lines[-1]["message"]["role"] == expected_messages(case)[-1]["role"]
        assert session["treeRoots"] == 1 and session["branchLength"] == len(lines) - 1
        assert session["assistantWithoutUsage"] == 0


@pytest.mark.e2e
def test_real_pi_reports_the_model_of_the_last_turn_after_a_model_switch(
        pi_migration: dict[str, Any]) -> None:
    """payroll-x2 switches gpt-6.2-sol -> gpt-5.5: Pi must see the model of the latest Codex turn_context."""
    x2 = next(c for c in CODEX_CASES if c["name"] == "codex/payroll-x2-codemode")
    (opened,) = [f for f in pi_migration["verified"][PAYROLL]["files"] if x2["nativeSessionId"] in f["path"]]
    assert opened["open"]["model"] == {"provider": "mock", "modelId": "gpt-5.5"}
    lines = pi_lines(Path(opened["path"]))
    models = [line["message"]["model"] for line in lines if line["type"] == "message"
              and line["message"]["role"] == "assistant"]
    assert models[0] == "gpt-6.2-sol" and models[-1] == "gpt-5.5"


@pytest.mark.e2e
@pytest.mark.parametrize("folder", [WEBSHOP, LEGACY_APP])
def test_a_message_appended_by_real_pi_chains_to_the_last_message_and_is_recalled(
        folder: str, pi_migration: dict[str, Any], tmp_path: Path) -> None:
    agent = tmp_path / "agent"
    shutil.copytree(pi_migration["agent"], agent)  # appending writes: work on a copy
    files = sorted(agent / "sessions" / PI_DIR_NAMES[folder] / Path(m["piPath"]).name
                   for m in pi_migration["reports"][folder]["migrated"])
    before = {f: f.read_bytes() for f in files}
    word = f"quokka{secrets.token_hex(3)}"

    report = verify_pi_sessions(agent, folder, files, append_user_message=f"Later in Pi: {word}?")

    for result in report["files"]:
        path = Path(result["path"])
        last = pi_lines(path)[len(before[path].splitlines()) - 1]  # the migration's last line
        append = result["append"]
        assert append["previousLeafId"] == last["id"] == append["parentId"]
        assert append["chainsToPreviousLeaf"] is True and append["lastLineIsNewEntry"] is True
        assert path.read_bytes().startswith(before[path])
        assert append["reopened"]["leafId"] == append["entryId"]
        assert append["reopened"]["lastMessage"]["text"] == f"Later in Pi: {word}?"
    db = tmp_path / "memory.db"
    run_sync(SyncRequest(db_path=str(db), roots=SourceRoots(pi=(agent / "sessions",), claude=(), codex=()),
                         workers=1))
    conn = connect(db)
    try:
        rows = recall_scan(conn, make_query([word], limit=50))
        imported = [row[0] for row in conn.execute(
            "SELECT s.jsonl_path FROM turns t JOIN sessions s ON s.session_id = t.session_id "
            "WHERE t.user_text = ?", (f"Later in Pi: {word}?",))]
    finally:
        conn.close()
    assert sorted(imported) == sorted(str(f) for f in files)  # a new turn in every continued session
    # the same text appended in the same millisecond is a copy that recall shows once
    assert rows and all(r.source == "pi" and r.user_text == f"Later in Pi: {word}?" for r in rows)
    assert {r.jsonl_path for r in rows} <= set(imported)


@pytest.mark.e2e
@pytest.mark.parametrize("folder", FOLDERS)
def test_real_pi_cli_resumes_each_migrated_session_untouched(
        folder: str, pi_migration: dict[str, Any]) -> None:
    expected = expected_sessions(folder)
    for migrated in pi_migration["reports"][folder]["migrated"]:
        result = pi_rpc_resume(pi_migration["agent"], folder, migrated["piPath"])
        assert result["failure"] is None, result["stderr"]
        assert result["responses"]["switch_session"]["success"] is True
        state = result["responses"]["get_state"]["data"]
        assert state["sessionFile"] == migrated["piPath"]
        assert state["sessionId"] == migrated["codexSessionId"]
        assert state["sessionName"] == TITLE_PREFIX + migrated["codexSessionId"]
        assert result["messages"] == expected_messages(expected[migrated["codexSessionId"]])
        assert result["responses"]["get_session_stats"]["success"] is True  # every assistant has usage
        assert result["unchanged"] is True and result["appendedLines"] == []  # thinking level was written
        assert result["exitCode"] == 0


# ---------------------------------------------------------------------------------------------
# 4: idempotent, dry run
# ---------------------------------------------------------------------------------------------

def test_second_migration_skips_everything_and_changes_no_byte(codex_home: Path, agent_dir: Path) -> None:
    first = {folder: report_of(folder, codex_home, agent_dir) for folder in FOLDERS}
    before = tree_state(agent_dir)
    files = sum(isinstance(v, tuple) for v in before.values())
    assert files == sum(len(r["migrated"]) for r in first.values())

    for folder in FOLDERS:
        again = report_of(folder, codex_home, agent_dir)
        assert again["migrated"] == [] and again["issues"] == []
        assert sorted((s["codexSessionId"], s["piPath"]) for s in again["skipped"]) == sorted(
            (m["codexSessionId"], m["piPath"]) for m in first[folder]["migrated"])
        assert {s["reason"] for s in again["skipped"]} == {"already migrated"}
    assert tree_state(agent_dir) == before  # same bytes, same inodes, same mtimes, nothing added


def test_a_session_edited_in_pi_after_migration_is_not_rewritten(codex_home: Path, agent_dir: Path) -> None:
    (migrated, *_) = report_of(WEBSHOP, codex_home, agent_dir)["migrated"]
    path = Path(migrated["piPath"])
    with path.open("a", encoding="utf-8") as handle:
        handle.write('{"type":"label","id":"abcd0123","parentId":null,"timestamp":"2026-12-01T00:00:00.000Z"}\n')
    edited = path.read_bytes()
    again = report_of(WEBSHOP, codex_home, agent_dir)
    assert migrated["codexSessionId"] in {s["codexSessionId"] for s in again["skipped"]}
    assert path.read_bytes() == edited


def test_dry_run_reports_what_would_happen_and_writes_nothing(codex_home: Path, agent_dir: Path) -> None:
    for folder in FOLDERS:
        dry = report_of(folder, codex_home, agent_dir, dry_run=True)
        assert dry["dryRun"] is True
        assert sorted(m["codexSessionId"] for m in dry["migrated"]) == sorted(expected_sessions(folder))
    assert not agent_dir.exists() and not agent_dir.parent.exists()  # not even a directory

    real = {folder: report_of(folder, codex_home, agent_dir) for folder in FOLDERS}
    state = tree_state(agent_dir)
    for folder in FOLDERS:
        dry = report_of(folder, codex_home, agent_dir.parent.parent / "fresh" / "agent", dry_run=True)
        assert [{**m, "piPath": m["piPath"].replace("/fresh/", "/pi/"),
                 "resumeCommand": m["resumeCommand"].replace("/fresh/", "/pi/")} for m in dry["migrated"]] == \
            real[folder]["migrated"]  # the same files, the same message counts
        after = report_of(folder, codex_home, agent_dir, dry_run=True)
        assert after["migrated"] == [] and {s["reason"] for s in after["skipped"]} == {"already migrated"}
    assert tree_state(agent_dir) == state
    assert not (agent_dir.parent.parent / "fresh").exists()


# ---------------------------------------------------------------------------------------------
# 5: malformed Codex files are isolated issues
# ---------------------------------------------------------------------------------------------

def test_malformed_codex_files_become_issues_naming_them_and_the_rest_migrates(
        tmp_path: Path, agent_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    home = tmp_path / "codex"
    for name in ("webshop-x1", "webshop-fork-x4", "webshop-x5", "legacy-g3-zst"):
        copy_fixture(name, home)
    day = home / "sessions" / "2026" / "11" / "30"  # sorted among the good files
    x1 = next(day.glob("rollout-*8c34*.jsonl"))
    truncated = day / "rollout-2026-11-30T09-45-42-truncated.jsonl"
    truncated.write_bytes(x1.read_bytes().splitlines()[0][:150])  # first line cut mid-JSON, nothing else
    garbage = day / "rollout-2026-11-30T09-45-45-garbage.jsonl"
    garbage.write_bytes(bytes(range(256)) * 8 + b"\n\x00\xff\xfe{\n")
    fake_zst = day / "rollout-2026-11-30T09-45-45-fake.jsonl.zst"
    fake_zst.write_bytes(x1.read_bytes()[:400])  # plain JSON text named .zst
    unreadable = day / "rollout-2026-11-30T09-45-46-unreadable.jsonl"
    shutil.copy2(x1, unreadable)  # a valid webshop rollout that cannot be read
    dangling = day / "rollout-2026-11-30T09-45-47-dangling.jsonl"
    dangling.symlink_to(day / "does-not-exist.jsonl")
    if hasattr(os, "geteuid") and os.geteuid() != 0:
        unreadable.chmod(0)
    else:  # root reads any file: make opening fail the way a permission error does
        real_open = builtins.open
        real_os_open = os.open

        def refusing_open(file: Any, *args: Any, **kwargs: Any) -> Any:
            if os.fspath(file) == str(unreadable):
                raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), str(unreadable))
            return real_open(file, *args, **kwargs)

        def refusing_os_open(file: Any, *args: Any, **kwargs: Any) -> int:  # transcripts: jsonl.open_regular
            if os.fspath(file) == str(unreadable):
                raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), str(unreadable))
            return real_os_open(file, *args, **kwargs)

        monkeypatch.setattr(os, "open", refusing_os_open)
        monkeypatch.setattr(pimem.migrate, "open", refusing_open, raising=False)

    report = report_of(WEBSHOP, home, agent_dir)
    legacy = report_of(LEGACY_APP, home, agent_dir)

    issues = {i["jsonlPath"]: i["error"] for i in report["issues"]}
    assert set(issues) == {str(p) for p in (truncated, garbage, fake_zst, unreadable, dangling)}
    assert all(issues.values())
    assert "Permission denied" in issues[str(unreadable)]
    assert sorted(m["codexSessionId"] for m in report["migrated"]) == sorted(expected_sessions(WEBSHOP))
    assert [m["codexSessionId"] for m in legacy["migrated"]] == ["01a0d4e5-1a2b-7c3d-8e4f-5a6b7c8d9e0f"]
    assert all(Path(m["piPath"]).is_file() for m in report["migrated"] + legacy["migrated"])


# ---------------------------------------------------------------------------------------------
# 6: a crash between write and link
# ---------------------------------------------------------------------------------------------

def run_cli(codex_home: Path, agent_dir: Path, folder: str, *, kill_at_link: int = 0,
            marker: Path | None = None) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PIMEM_TEST_", "PYTHONPATH"))}
    env.update(CODEX_HOME=str(codex_home), PI_CODING_AGENT_DIR=str(agent_dir), HOME=str(agent_dir.parent))
    if kill_at_link:
        assert marker is not None
        env.update(PYTHONPATH=str(CRASH_HOOK_DIR), PIMEM_TEST_KILL_AT_LINK=str(kill_at_link),
                   PIMEM_TEST_KILL_MARKER=str(marker))
    return subprocess.run([sys.executable, "-m", "pimem", "migrate-codex", "--cwd", folder, "--json"],
                          env=env, capture_output=True, text=True, timeout=120, check=False)


def directory_contents(directory: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in directory.iterdir()} if directory.exists() else {}


@pytest.mark.parametrize("kill_at_link", [1, 3])
def test_a_crash_between_write_and_link_leaves_no_partial_session_and_a_rerun_completes(
        kill_at_link: int, codex_home: Path, tmp_path: Path) -> None:
    clean_agent = tmp_path / "clean" / "agent"
    assert run_cli(codex_home, clean_agent, WEBSHOP).returncode == 0
    clean = directory_contents(clean_agent / "sessions" / PI_DIR_NAMES[WEBSHOP])
    assert len(clean) == 3

    agent = tmp_path / "crashed" / "agent"
    target_dir = agent / "sessions" / PI_DIR_NAMES[WEBSHOP]
    marker = tmp_path / "killed.json"
    crashed = run_cli(codex_home, agent, WEBSHOP, kill_at_link=kill_at_link, marker=marker)

    assert crashed.returncode == -signal.SIGKILL, crashed.stderr
    killed = json.loads(marker.read_text(encoding="utf-8"))
    dst = Path(killed["dst"])
    assert dst.parent == target_dir and killed["dstExists"] is False
    assert killed["srcSize"] == len(clean[dst.name])  # the temporary file was completely written
    assert Path(killed["src"]).exists()  # ... and is still there: a real crash cleans nothing up
    visible = sorted(p.name for p in target_dir.glob("*.jsonl"))  # what Pi lists
    assert len(visible) == kill_at_link - 1 and dst.name not in visible
    assert all(directory_contents(target_dir)[name] == clean[name] for name in visible)

    rerun = run_cli(codex_home, agent, WEBSHOP)
    assert rerun.returncode == 0, rerun.stderr
    report = json.loads(rerun.stdout)
    assert len(report["migrated"]) == 3 - (kill_at_link - 1) and len(report["skipped"]) == kill_at_link - 1
    assert directory_contents(target_dir) == clean  # same files (no leftover temporary), same bytes


def test_a_rerun_leaves_the_temporary_file_of_a_live_run_alone(codex_home: Path, tmp_path: Path) -> None:
    """Only temporaries of dead processes are removed: a concurrent run keeps the file it is writing."""
    agent = tmp_path / "pi" / "agent"
    target_dir = agent / "sessions" / PI_DIR_NAMES[WEBSHOP]
    target_dir.mkdir(parents=True)
    sleeper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        live = target_dir / f".2026-01-01T00-00-00-000Z_other.jsonl.{sleeper.pid}.tmp"
        live.write_text("being written", encoding="utf-8")
        dead_pid = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                                  capture_output=True, text=True, check=True).stdout.strip()
        dead = target_dir / f".2026-01-01T00-00-00-000Z_other.jsonl.{dead_pid}.tmp"
        dead.write_text("left by a killed run", encoding="utf-8")

        assert len(report_of(WEBSHOP, codex_home, agent)["migrated"]) == 3

        assert live.read_text(encoding="utf-8") == "being written"
        assert not dead.exists()
    finally:
        sleeper.kill()  # the process started above, by its handle
        sleeper.wait()


# ---------------------------------------------------------------------------------------------
# 7: nothing from a Codex file, nor a symlink, can send a write outside the sessions directory
# ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize("hostile_id", ["../../x", "..", "/tmp/evil", "a/../../b", "..\\..\\x", "x/y", " x "])
def test_a_hostile_codex_id_cannot_choose_the_path(hostile_id: str, tmp_path: Path) -> None:
    home = tmp_path / "base" / "codex"
    agent = tmp_path / "base" / "pi" / "agent"
    write_rollout(home / "sessions" / "2026" / "11" / "30" / "rollout-2026-11-30T10-00-00-evil.jsonl",
                  hostile_id, WEBSHOP, [("Is this safe?", "It should be.")])
    outside_before = tree_state(tmp_path)

    report = report_of(WEBSHOP, home, agent)

    (migrated,) = report["migrated"]
    assert migrated["codexSessionId"] == hostile_id
    target_dir = agent / "sessions" / PI_DIR_NAMES[WEBSHOP]
    written = Path(migrated["piPath"])
    assert written.parent == target_dir and written.is_file()
    pi_id = str(uuid.UUID(written.name.split("_", 1)[1].removesuffix(".jsonl")))  # a UUID, not the id
    assert pi_lines(written)[0]["id"] == pi_id
    (info,) = [line for line in pi_lines(written) if line["type"] == "session_info"]
    assert info["name"] == TITLE_PREFIX + hostile_id  # the id is kept as text only
    changed = {p for p, v in tree_state(tmp_path).items() if outside_before.get(p) != v}
    relative_target = os.path.relpath(target_dir, tmp_path)
    assert changed and all(p == relative_target or p.startswith(relative_target + os.sep)
                           or relative_target.startswith(p + os.sep) for p in changed)
    assert not (tmp_path / "x").exists() and not Path("/tmp/evil.jsonl").exists()


def test_a_symlinked_folder_directory_pointing_outside_gets_nothing(
        tmp_path: Path, codex_home: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    agent = tmp_path / "pi" / "agent"
    (agent / "sessions").mkdir(parents=True)
    outside = tmp_path / "outside"
    outside.mkdir()
    (agent / "sessions" / PI_DIR_NAMES[WEBSHOP]).symlink_to(outside, target_is_directory=True)

    with pytest.raises(MigrationError, match="outside"):
        report_of(WEBSHOP, codex_home, agent)
    assert list(outside.iterdir()) == []

    monkeypatch.setenv("CODEX_HOME", str(codex_home))
    monkeypatch.setenv("PI_CODING_AGENT_DIR", str(agent))
    assert pimem_main(["migrate-codex", "--cwd", WEBSHOP, "--json"]) == 1
    assert "outside the Pi sessions directory" in capsys.readouterr().err
    assert list(outside.iterdir()) == []


def test_a_dangling_symlink_for_the_folder_directory_gets_nothing(tmp_path: Path, codex_home: Path) -> None:
    agent = tmp_path / "pi" / "agent"
    (agent / "sessions").mkdir(parents=True)
    outside = tmp_path / "outside" / "not-yet"
    (agent / "sessions" / PI_DIR_NAMES[WEBSHOP]).symlink_to(outside, target_is_directory=True)

    try:
        report = report_of(WEBSHOP, codex_home, agent)
    except MigrationError:
        report = None
    assert not outside.exists() and not outside.parent.exists()
    if report is not None:
        assert report["migrated"] == [] and len(report["issues"]) == 3


def test_a_symlink_at_the_session_file_name_is_not_written_through(tmp_path: Path, codex_home: Path) -> None:
    agent = tmp_path / "pi" / "agent"
    dry = report_of(WEBSHOP, codex_home, agent, dry_run=True)
    victim = tmp_path / "victim.txt"
    planted = Path(dry["migrated"][0]["piPath"])
    planted.parent.mkdir(parents=True)
    planted.symlink_to(victim)

    report = report_of(WEBSHOP, codex_home, agent)

    assert not victim.exists() and planted.is_symlink()
    assert [s["piPath"] for s in report["skipped"]] == [str(planted)]
    assert len(report["migrated"]) == 2


# ---------------------------------------------------------------------------------------------
# 8: recall shows a migrated exchange once; a turn added later in Pi is recalled
# ---------------------------------------------------------------------------------------------

def recall_keys(rows: list[RecallRow]) -> list[tuple[int, int, str, str]]:
    return [(row.hits, row.ts, row.user_text, row.reply_text) for row in rows]


def append_like_pi(path: Path, user: str, reply: str, when_ms: int) -> None:
    """What Pi writes when the user types after /resume: new entries, each chained to the leaf."""
    leaf = pi_lines(path)[-1]["id"]
    user_id, reply_id = secrets.token_hex(4), secrets.token_hex(4)
    iso = datetime.fromtimestamp(when_ms / 1000, tz=UTC).isoformat(timespec="milliseconds")
    iso = iso.replace("+00:00", "Z")
    zero = {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0}
    entries = [
        {"type": "message", "id": user_id, "parentId": leaf, "timestamp": iso,
         "message": {"role": "user", "content": [{"type": "text", "text": user}], "timestamp": when_ms}},
        {"type": "message", "id": reply_id, "parentId": user_id, "timestamp": iso,
         "message": {"role": "assistant", "content": [{"type": "text", "text": reply}],
                     "api": "openai-responses", "provider": "openai", "model": "gpt-5.5",
                     "stopReason": "stop", "timestamp": when_ms + 1,
                     "usage": {"input": 1, "output": 1, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 2,
                               "cost": zero}}},
    ]
    with path.open("a", encoding="utf-8") as handle:
        handle.write("".join(json.dumps(e, separators=(",", ":")) + "\n" for e in entries))


def test_recall_returns_a_migrated_exchange_once_and_recalls_turns_added_in_pi(
        codex_home: Path, tmp_path: Path) -> None:
    agent = tmp_path / "pi" / "agent"
    for folder in FOLDERS:
        assert report_of(folder, codex_home, agent)["migrated"]
    codex_roots = (codex_home / "sessions", codex_home / "archived_sessions")
    only_codex, both = tmp_path / "codex.db", tmp_path / "both.db"
    run_sync(SyncRequest(db_path=str(only_codex), roots=SourceRoots(pi=(), claude=(), codex=codex_roots),
                         workers=1))
    sync_both = SyncRequest(db_path=str(both), roots=SourceRoots(pi=(agent / "sessions",), claude=(),
                                                                 codex=codex_roots), workers=1)
    run_sync(sync_both)
    a, b = connect(only_codex), connect(both)
    try:
        for entities in (["flamingo"], ["cache"], ["payroll"], ["锁"], ["Ärger"], ["make test"],
                         ["flamingo", "price"], ["the"]):
            query = make_query(entities, limit=50)
            expected = recall_keys(recall_scan(a, query))
            assert expected, entities
            assert recall_keys(recall_scan(b, query)) == expected, entities
            assert recall_keys(recall(b, query)) == expected, entities
            # the Pi copies are there (and are exact copies): only their duplication is hidden
            pi_only = recall_scan(b, make_query(entities, limit=50, sources=["pi"]))
            assert pi_only and set(recall_keys(pi_only)) <= set(expected), entities

        session = next(m for m in report_of(WEBSHOP, codex_home, agent)["skipped"])
        path = Path(session["piPath"])
        later = 1_800_000_000_000  # after every fixture turn
        user, reply = "Later in Pi: is the flamingo fix deployed?", "Yes, the flamingo fix is live."
        append_like_pi(path, user, reply, later)
        run_sync(sync_both)
        query = make_query(["flamingo"], limit=50)
        before = recall_keys(recall_scan(a, query))
        for rows in (recall_scan(b, query), recall(b, query)):
            assert recall_keys(rows) == [(3, later, user, reply), *before]
            assert rows[0].source == "pi" and rows[0].jsonl_path == str(path)
    finally:
        a.close()
        b.close()


# ---------------------------------------------------------------------------------------------
# 9: the JSON report
# ---------------------------------------------------------------------------------------------

def test_cli_json_report_shape(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                               monkeypatch: pytest.MonkeyPatch) -> None:
    home = tmp_path / "codex"
    x1 = copy_fixture("webshop-x1", home)
    write_rollout(home / "sessions" / "2026" / "12" / "01" / "rollout-2026-12-01T10-00-00-empty.jsonl",
                  "empty-session", WEBSHOP, [])  # a session_meta, no message
    broken = home / "archived_sessions" / "rollout-2026-12-01T10-00-00-broken.jsonl"
    broken.parent.mkdir(parents=True)
    broken.write_text('{"type":"session_meta","payload":{"id":', encoding="utf-8")
    agent = tmp_path / "pi" / "agent"
    monkeypatch.setenv("CODEX_HOME", str(home))
    monkeypatch.setenv("PI_CODING_AGENT_DIR", str(agent))
    monkeypatch.setenv("HOME", str(tmp_path))

    def run(*extra: str) -> dict[str, Any]:
        assert pimem_main(["migrate-codex", "--cwd", WEBSHOP + "/", "--json", *extra]) == 0
        report: dict[str, Any] = json.loads(capsys.readouterr().out)
        assert list(report) == ["folder", "dryRun", "migrated", "skipped", "issues"]
        for key, fields in (("migrated", ["codexSessionId", "codexPath", "piPath", "messages", "resumeCommand"]),
                            ("skipped", ["codexSessionId", "piPath", "reason"]),
                            ("issues", ["jsonlPath", "error"])):
            assert isinstance(report[key], list)
            assert all(isinstance(item, dict) and list(item) == fields for item in report[key])
        return report

    x1_id = "01a22bd8-8c34-7e91-9282-79d4f5ad872f"
    x1_pi = str(expected_pi_path(agent, WEBSHOP, x1))
    empty_pi = str(agent / "sessions" / PI_DIR_NAMES[WEBSHOP]
                   / "2026-11-30T10-00-00-000Z_empty-session.jsonl")
    dry = run("--dry-run")
    assert dry["folder"] == WEBSHOP and dry["dryRun"] is True
    assert dry["migrated"] == [
        {"codexSessionId": x1_id, "codexPath": str(x1), "piPath": x1_pi, "messages": 6,
         "resumeCommand": f"pi --session {shlex.quote(x1_pi)}"}]
    assert not agent.exists()

    first = run()
    assert first["dryRun"] is False and first["migrated"] == dry["migrated"]
    assert first["skipped"] == [{"codexSessionId": "empty-session", "piPath": empty_pi,
                                 "reason": "no user or assistant text to migrate"}]
    assert [i["jsonlPath"] for i in first["issues"]] == [str(broken)]
    assert isinstance(first["issues"][0]["error"], str) and first["issues"][0]["error"]
    assert Path(x1_pi).is_file() and not Path(empty_pi).exists()

    second = run()
    assert second["migrated"] == []
    assert {(s["codexSessionId"], s["reason"]) for s in second["skipped"]} == {
        (x1_id, "already migrated"), ("empty-session", "no user or assistant text to migrate")}
    assert second["issues"] == first["issues"]


# ---------------------------------------------------------------------------------------------
# Issue 10, item 16: a folder path too long for Pi, an id with a trailing newline, two migrations
# at once in one process
# ---------------------------------------------------------------------------------------------

def test_a_folder_path_too_long_for_a_pi_directory_name_is_a_clear_issue(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    folder = "/tmp/pimem-demo/" + "/".join(["deep-folder-name-" + "x" * 40] * 5)  # 300 bytes
    assert len(encode_cwd(folder).encode()) > 255
    home = tmp_path / "codex"
    rollout = write_rollout(home / "sessions" / "2026" / "11" / "30" / "rollout-2026-11-30T10-00-00-deep.jsonl",
                            "019a0000-0000-7000-8000-0000000000aa", folder, [("Deep question?", "Deep answer.")])
    agent = tmp_path / "pi" / "agent"
    (agent / "sessions").mkdir(parents=True)  # a Pi user's: the long name then fails in stat, not ENOENT
    for dry_run in (False, True):
        report = report_of(folder, home, agent, dry_run=dry_run)
        assert report["migrated"] == [] and report["skipped"] == []
        (issue,) = report["issues"]
        assert issue["jsonlPath"] == str(rollout)
        assert "too long for a Pi session directory" in issue["error"] and "255" in issue["error"]
    assert list((agent / "sessions").iterdir()) == []

    monkeypatch.setenv("CODEX_HOME", str(home))
    monkeypatch.setenv("PI_CODING_AGENT_DIR", str(agent))
    assert pimem_main(["migrate-codex", "--cwd", folder]) == 0
    out = capsys.readouterr()
    assert "Traceback" not in out.err and "too long for a Pi session directory" in out.out


@pytest.mark.parametrize("codex_id", ["019a0000-0000-7000-8000-0000000000bb\n", "abc\n", "a" * 300])
def test_an_id_pi_would_not_take_whole_gets_a_uuid_file_name(codex_id: str, tmp_path: Path) -> None:
    """``re.match`` with ``$`` accepted an id ending in a newline: the file name held the newline."""
    home = tmp_path / "codex"
    write_rollout(home / "sessions" / "2026" / "11" / "30" / "rollout-2026-11-30T10-00-00-nl.jsonl",
                  codex_id, WEBSHOP, [("Question?", "Answer.")])
    agent = tmp_path / "pi" / "agent"
    report = report_of(WEBSHOP, home, agent)
    (migrated,) = report["migrated"]
    assert report["issues"] == [] and migrated["codexSessionId"] == codex_id
    written = Path(migrated["piPath"])
    assert "\n" not in written.name and written.is_file()
    pi_id = written.name.split("_", 1)[1].removesuffix(".jsonl")
    assert str(uuid.UUID(pi_id)) == pi_id == pi_lines(written)[0]["id"]
    assert [p.name for p in written.parent.iterdir()] == [written.name]


def test_two_migrations_of_one_folder_at_once_in_one_process_report_no_issue(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The server runs requests on several threads: both migrations write the same session at the
    same moment (a barrier holds each before it opens its temporary file). With a per-process
    temporary name, one of them failed with "File exists"."""
    import threading

    home = tmp_path / "codex"
    write_rollout(home / "sessions" / "2026" / "11" / "30" / "rollout-2026-11-30T10-00-00-race.jsonl",
                  "019a0000-0000-7000-8000-0000000000cc", WEBSHOP, [("Race?", "No race.")])
    agent = tmp_path / "pi" / "agent"
    target_dir = agent / "sessions" / PI_DIR_NAMES[WEBSHOP]
    barrier = threading.Barrier(2, timeout=20)
    real_open = os.open

    def open_together(path: Any, flags: int, *args: Any, **kwargs: Any) -> int:
        if str(path).endswith(".tmp"):
            barrier.wait()
        return real_open(path, flags, *args, **kwargs)

    monkeypatch.setattr(pimem.migrate.os, "open", open_together)
    reports: list[dict[str, Any]] = []
    errors: list[BaseException] = []

    def migrate() -> None:
        try:
            reports.append(report_of(WEBSHOP, home, agent))
        except BaseException as error:  # reported below, with the other thread's outcome
            errors.append(error)

    threads = [threading.Thread(target=migrate) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert errors == [] and len(reports) == 2
    assert [issue["error"] for report in reports for issue in report["issues"]] == []
    assert sorted(len(report["migrated"]) for report in reports) == [0, 1]
    assert sum(len(report["skipped"]) for report in reports) == 1
    (written,) = target_dir.iterdir()  # the session, and no temporary file left behind
    assert written.suffix == ".jsonl" and not written.name.startswith(".")
    assert [m["text"] for m in ({"text": c["text"]} for line in pi_lines(written) if line["type"] == "message"
                                for c in line["message"]["content"])] == ["Race?", "No race."]
